"""Multi-host start-up, gated behind an environment variable (big_vision style).

On a TPU pod slice or a multi-node GPU job every process runs the same ``python -m
stylebench_jax.cli ...`` command; with ``STYLEBENCH_DISTRIBUTED=1`` each calls
``jax.distributed.initialize()`` (coordinator, process count and id come from the TPU metadata or
from SLURM / the ``JAX_COORDINATOR_ADDRESS``, ``JAX_NUM_PROCESSES``, ``JAX_PROCESS_ID`` variables)
before any device is touched. Single-host runs leave it unset.
"""

from __future__ import annotations

import os


def maybe_initialize() -> bool:
    """Initialise multi-process JAX if ``STYLEBENCH_DISTRIBUTED=1``; returns whether it did."""
    if os.environ.get("STYLEBENCH_DISTRIBUTED", "0") != "1":
        return False
    import jax

    kwargs = {}
    if os.environ.get("JAX_COORDINATOR_ADDRESS"):
        kwargs = dict(coordinator_address=os.environ["JAX_COORDINATOR_ADDRESS"],
                      num_processes=int(os.environ["JAX_NUM_PROCESSES"]),
                      process_id=int(os.environ["JAX_PROCESS_ID"]))
    jax.distributed.initialize(**kwargs)
    return True
