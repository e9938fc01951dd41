"""Ranking metrics for authorship attribution (AuthBench App. A.9): Success@K, Recall@K, nDCG@K, MRR.

Definitions (per query ``q`` with candidates ranked by descending similarity, ``rel_i`` = 1 when the
candidate at rank ``i`` is relevant, ``P_q`` the query's relevant candidates):

* ``success@K`` = 1 if ``sum_{i<=K} rel_i > 0`` else 0 (a hit rate; our retrieval task reports the
  same quantity under the same name);
* ``recall@K`` = ``(1 / |P_q|) sum_{i<=K} rel_i`` (the *fraction* of the relevant candidates found;
  STEB's ``recall@K`` in steb/metrics.py is this fraction too);
* ``ndcg@K`` = ``DCG@K / IDCG@K`` with binary gains, ``DCG@K = sum_{i<=K} rel_i / log2(i + 1)`` and
  ``IDCG@K = sum_{i <= min(K, |P_q|)} 1 / log2(i + 1)`` (Järvelin & Kekäläinen 2002; AuthBench A.9);
* ``mrr`` = ``1 / rank of the first relevant candidate`` (Voorhees 1999). Not an AuthBench metric:
  reported as an extra. ``mrr@C`` is the same truncated at rank ``C`` (0 when the first hit lies
  below ``C``), the form a top-``C`` list can give.

Every value is macro-averaged over queries (each query weighs the same). A query without any
relevant candidate has no Recall@K or nDCG@K; the functions refuse it (the caller leaves such
queries out and counts them).

Tie rule (shared with ``metrics.retrieval`` and every ranking metric here): candidates are ordered
by descending score; a non-relevant candidate whose score *equals* a relevant one is placed before
it (ties are broken against the query); relevant candidates tied with each other take consecutive
positions. A model that scores every candidate the same therefore finds nothing in the top K
instead of scoring by tie luck. (scikit-learn's ``ndcg_score`` instead averages over the orders of
tied items, and AuthBench's code (github.com/mao-code/AURA_Bench, commit b73d8de, ``eval/metrics.py``
``ranking_metrics_for_query``) takes ``torch.topk``'s arbitrary order; both agree with
this rule whenever scores are distinct.)

Two entry points: :func:`ranking_metrics` for a dense ``[Q, N]`` score matrix, and
:func:`ranking_metrics_topk` for the output of a top-``L`` search (``kernels.topk_cosine``): the
relevance of the ``L`` returned candidates, their scores and the number of relevant candidates per
query, so a pool of 10^6 documents never materialises ``[Q, N]``. Both produce the same numbers
(tested), provided the top list reaches past the last cutoff with a strictly lower score: see
:func:`topk_ties_unresolved`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stylebench_jax.errors import is_count

DEFAULT_KS = (1, 5, 10)


def _check_ks(ks: Sequence[int]) -> tuple[int, ...]:
    ks = tuple(np.asarray(ks).ravel().tolist()) if isinstance(ks, np.ndarray) else tuple(ks)
    if not ks or not all(is_count(k) for k in ks):
        raise ValueError(f"ks must be a non-empty list of positive integers, got {ks}")
    return tuple(int(k) for k in ks)


def order_hits(hits, scores) -> np.ndarray:
    """Relevance ``[Q, L]`` bool re-ordered by the tie rule: descending ``scores [Q, L]``, and within
    equal scores non-relevant first. Rows may come in any order (e.g. a kernel's lower-index-first)."""
    hits = np.asarray(hits, dtype=bool)
    scores = np.asarray(scores, dtype=np.float64)
    if hits.shape != scores.shape or hits.ndim != 2:
        raise ValueError(f"hits and scores must be [Q, L] of equal shape, got {hits.shape} and "
                         f"{scores.shape}")
    order = np.lexsort((hits, -scores), axis=-1)
    return np.take_along_axis(hits, order, axis=-1)


def per_query_from_hits(ordered_hits, n_relevant, ks: Sequence[int] = DEFAULT_KS, *,
                        mrr_cutoff: int | None = None) -> dict[str, np.ndarray]:
    """Per-query metrics from relevance in rank order.

    ``ordered_hits [Q, L]`` bool, rank order (tie rule applied); ``n_relevant [Q]`` int >= 1, the
    query's relevant candidates in the whole pool (not only those in the list). Every ``K`` must be
    ``<= L`` unless the list holds every candidate (then missing ranks are non-relevant padding).
    ``mrr_cutoff``: None -> ``mrr`` over the whole list (exact only if the list is the whole pool);
    ``C`` -> ``mrr@C``. Returns ``{name: [Q] float64}`` in the order success@K, recall@K, ndcg@K
    (each for all ks), then mrr.
    """
    ks = _check_ks(ks)
    if mrr_cutoff is not None and not is_count(mrr_cutoff):
        raise ValueError(f"mrr_cutoff must be a positive integer or None, got {mrr_cutoff!r}")
    hits = np.asarray(ordered_hits, dtype=bool)
    n_rel = np.asarray(n_relevant, dtype=np.int64)
    if hits.ndim != 2 or n_rel.shape != (hits.shape[0],):
        raise ValueError(f"ordered_hits must be [Q, L] and n_relevant [Q], got {hits.shape} and "
                         f"{n_rel.shape}")
    if np.any(n_rel < 1):
        bad = int(np.flatnonzero(n_rel < 1)[0])
        raise ValueError(f"query {bad} has no relevant candidate; leave such queries out")
    if np.any(hits.sum(axis=1) > n_rel):
        raise ValueError("a query has more relevant candidates in its list than n_relevant says")
    max_k = max(ks + ((mrr_cutoff,) if mrr_cutoff else ()))
    if hits.shape[1] < max_k:
        hits = np.concatenate([hits, np.zeros((hits.shape[0], max_k - hits.shape[1]), bool)], axis=1)
    discount = 1.0 / np.log2(np.arange(2, max_k + 2, dtype=np.float64))
    ideal = np.cumsum(discount)
    cum_hits = np.cumsum(hits[:, :max(ks)], axis=1, dtype=np.int64)
    dcg = np.cumsum(hits[:, :max(ks)] * discount[:max(ks)], axis=1)
    out: dict[str, np.ndarray] = {}
    for k in ks:
        out[f"success@{k}"] = (cum_hits[:, k - 1] > 0).astype(np.float64)
    for k in ks:
        out[f"recall@{k}"] = cum_hits[:, k - 1] / n_rel
    for k in ks:
        out[f"ndcg@{k}"] = dcg[:, k - 1] / ideal[np.minimum(k, n_rel) - 1]
    window = hits if mrr_cutoff is None else hits[:, :mrr_cutoff]
    found = window.any(axis=1)
    first = np.argmax(window, axis=1) + 1
    out["mrr" if mrr_cutoff is None else f"mrr@{mrr_cutoff}"] = np.where(found, 1.0 / first, 0.0)
    return out


def ranking_per_query(scores, relevant, ks: Sequence[int] = DEFAULT_KS, *, candidate=None,
                      mrr_cutoff: int | None = None) -> dict[str, np.ndarray]:
    """Per-query values (``[Q]`` float64 each) of :func:`ranking_metrics`."""
    scores = np.asarray(scores, dtype=np.float64)
    relevant = np.asarray(relevant, dtype=bool)
    if scores.ndim != 2 or relevant.shape != scores.shape:
        raise ValueError(f"scores and relevant must be [Q, N] of equal shape, got {scores.shape} and "
                         f"{relevant.shape}")
    if candidate is not None:
        candidate = np.asarray(candidate, dtype=bool)
        if candidate.shape != scores.shape:
            raise ValueError(f"candidate must be [Q, N] like scores, got {candidate.shape}")
        relevant = relevant & candidate
    admissible = np.ones_like(relevant) if candidate is None else candidate
    if not np.all(np.isfinite(scores[admissible])):
        raise ValueError("scores contain NaN or infinity")
    # Excluded candidates go last: they can never be a hit, so they never move a relevant one.
    scores = np.where(admissible, scores, -np.inf)
    ordered = order_hits(relevant, scores)
    return per_query_from_hits(ordered, relevant.sum(axis=1), ks, mrr_cutoff=mrr_cutoff)


def ranking_metrics(scores, relevant, ks: Sequence[int] = DEFAULT_KS, *, candidate=None,
                    mrr_cutoff: int | None = None) -> dict[str, float]:
    """Macro-averaged ``success@K``, ``recall@K``, ``ndcg@K`` (each K of ``ks``) and ``mrr``.

    scores: ``[Q, N]`` similarities; relevant: ``[Q, N]`` bool; candidate: optional ``[Q, N]`` bool,
    False = not in the query's pool (e.g. the query itself). Every query needs at least one relevant
    candidate. ``mrr_cutoff=C`` reports ``mrr@C`` instead of the full MRR. Definitions and the tie
    rule: module docstring.
    """
    return {name: float(values.mean())
            for name, values in ranking_per_query(scores, relevant, ks, candidate=candidate,
                                                  mrr_cutoff=mrr_cutoff).items()}


def topk_ties_unresolved(scores, cutoff: int, n_candidates) -> np.ndarray:
    """``[Q]`` bool: queries whose top list cannot fix the tie rule down to rank ``cutoff``.

    ``scores [Q, L]`` best first (``-inf`` = no candidate). Ranks ``1..cutoff`` are determined when
    the score at rank ``cutoff`` is strictly above the list's last score (every tie group reaching
    into the first ``cutoff`` ranks then lies wholly inside the list), or when the list already
    holds all ``n_candidates [Q]`` candidates. Otherwise unseen candidates tied with rank
    ``cutoff`` could be non-relevant and, by the tie rule, move ahead of a listed relevant one: search
    those queries again with a longer list.
    """
    scores = np.asarray(scores, dtype=np.float64)
    n_candidates = np.broadcast_to(np.asarray(n_candidates, dtype=np.int64), (scores.shape[0],))
    length = scores.shape[1]
    if cutoff > length:
        return n_candidates > length
    return (scores[:, cutoff - 1] <= scores[:, -1]) & (n_candidates > length)


def ranking_metrics_topk(hits, scores, n_relevant, ks: Sequence[int] = DEFAULT_KS, *, n_candidates,
                         mrr_cutoff: int | None = None) -> dict[str, np.ndarray]:
    """Per-query metrics from a top-``L`` search result, never materialising ``[Q, N]``.

    hits: ``[Q, L]`` bool, relevance of the returned candidates (padding ``-1`` rows: False);
    scores: ``[Q, L]`` their similarities in the search's order (ties in any order: the tie rule is
    applied here); n_relevant: ``[Q]`` relevant candidates in the whole pool; n_candidates: ``[Q]``
    (or scalar) pool size per query. ``mrr_cutoff=C`` (``<= L``) adds ``mrr@C``; without it the
    list must be the whole pool for ``mrr``. Raises ``ValueError`` for queries whose ranks up to the
    largest cutoff are not determined (:func:`topk_ties_unresolved`); search them with a longer list.
    Returns ``{name: [Q] float64}`` like :func:`per_query_from_hits`.
    """
    ks = _check_ks(ks)
    scores = np.asarray(scores, dtype=np.float64)
    n_cand = np.broadcast_to(np.asarray(n_candidates, dtype=np.int64), (scores.shape[0],))
    if mrr_cutoff is None and np.any(n_cand > scores.shape[1]):
        raise ValueError("the full MRR needs the whole pool ranked; pass mrr_cutoff <= L for mrr@C")
    cutoff = max(ks + ((mrr_cutoff,) if mrr_cutoff else ()))
    unresolved = topk_ties_unresolved(scores, cutoff, n_cand)
    if np.any(unresolved):
        first = int(np.flatnonzero(unresolved)[0])
        raise ValueError(f"{int(unresolved.sum())} queries (first: {first}) have "
                         f"ties reaching the end of their top-{scores.shape[1]} list at rank {cutoff}; "
                         "search them with a longer list")
    return per_query_from_hits(order_hits(hits, scores), n_relevant, ks, mrr_cutoff=mrr_cutoff)
