"""Evaluation protocols run by ``stylebench eval``, one module per task type; the task table
(``registry``) names each task's runner, payload and metrics.

- STEB (seed 000) and MTEB: ``clustering``, ``pair_classification`` (all-to-all and predefined),
  ``order_alignment`` (STEB's ordered lists; STEL's quadruple, triple and STEL-or-Content rules, seed
  002), ``retrieval``, ``probing``; STEB's operational and definitional scores in ``scores``. Where
  our protocol differs from STEB's, both are reported (STEB's as ``<metric>_steb``) and the
  module docstring says why we keep ours.
- AuthBench (seed 001): ``attribution`` and ``verification`` over a benchmark built by
  ``stylebench data build``, with the stratified ``breakdowns``.

RAVEN/HITS (seed 004) is not an eval task: it has its own pipeline in ``stylebench_jax.raven``
(``stylebench raven``); Writing7's data preparation and training live in ``stylebench_jax.data.pairs``
and ``stylebench_jax.training``.
"""
