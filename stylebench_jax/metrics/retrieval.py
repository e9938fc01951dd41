"""Ranking metrics for retrieval: ranks of relevant targets, MRR (two variants), Success@K.

Rank convention (1-based, shared by every function here): targets are ordered by descending
score; a non-relevant target whose score *equals* a relevant one is placed before it (ties are
broken against the query), and relevant targets tied with each other take consecutive positions.
So for the relevant scores sorted descending ``r_1 >= r_2 >= ...`` the k-th relevant target has rank
``k + #{non-relevant t : s_t >= r_k}``. A model that gives every target the same score therefore
ranks all relevant targets last, instead of scoring a perfect MRR by tie luck.

Two MRR variants (STYLE.md: name both, say which is reported):
  * ``mrr`` (primary): mean over queries of ``1 / rank of the first relevant target``
    (Voorhees, TREC-8 QA 1999; the usual authorship-retrieval definition, e.g. Rivera-Soto et al.
    2021). Perfect retrieval scores 1 whatever the number of relevant targets.
  * STEB's formula (:func:`steb_reciprocal_ranks`): mean over queries of the mean over *all*
    relevant targets of ``1 / rank``, as in STEB's ``calculate_retrieval_metrics`` (steb/metrics.py).
    STEB applies it to pooled episodes where every query has exactly one relevant target, so there
    it equals ``mrr`` (``tasks.retrieval``'s ``mrr_steb``). On per-document ranking with several
    relevant targets even a perfect ranking scores below 1 (two relevant: (1 + 1/2) / 2 = 0.75), so
    it mixes retrieval quality with the number of relevant targets per query; ``tasks.retrieval``
    reports it as ``mrr_all_relevant``, a number STEB does not report.

``success_at_k`` is the share of queries with at least one relevant target in the top K (the
success rate / hit rate; AuthBench's Success@K). Recall@K, the average *fraction* of a query's
relevant targets in the top K (STEB's and AuthBench's "recall@K"), is ``metrics.ranking``'s
``recall@K``. Until 0.1 this module called the hit rate ``recall_at_k`` and results rows
``recall@K``; one name now means one metric: ``recall_at_k`` still works and warns.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

SUCCESS_KS = (1, 8, 16, 32, 64, 128)


def __getattr__(name: str):
    if name == "RECALL_KS":
        warnings.warn("RECALL_KS is deprecated; use SUCCESS_KS (the Ks of success@K, a hit rate)",
                      DeprecationWarning, stacklevel=2)
        return SUCCESS_KS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def relevant_ranks(scores, relevant, candidate=None) -> np.ndarray:
    """Ranks of the relevant targets of one query, ascending, under the module's rank convention.

    ``scores [T]`` similarities of the query to every target; ``relevant [T]`` bool; ``candidate
    [T]`` bool marks targets that take part (False = excluded, e.g. the query itself). Returns
    ``[R]`` int64 ranks of the ``R`` relevant candidates (empty if none). Full-sort reference
    implementation, ``O(T log T)``.
    """
    scores = np.asarray(scores, dtype=np.float64)
    relevant = np.asarray(relevant, dtype=bool)
    candidate = np.ones_like(relevant) if candidate is None else np.asarray(candidate, dtype=bool)
    if not np.isfinite(scores[candidate]).all():
        # a NaN would rank first (nothing scores >= it) and could pass as a hit
        raise ValueError("scores hold NaN or infinity")
    return ranks_of_relevant(scores, relevant, candidate)


def ranks_of_relevant(scores: np.ndarray, relevant: np.ndarray, candidate: np.ndarray) -> np.ndarray:
    """:func:`relevant_ranks` of arrays already checked (float64 finite scores, bool masks): for a
    caller that checks a whole block of queries at once (``tasks.retrieval.rank_relevant``)."""
    rel = np.sort(scores[relevant & candidate])[::-1]
    other = np.sort(scores[~relevant & candidate])
    at_least = other.size - np.searchsorted(other, rel, side="left")  # non-relevant with s >= r_k
    return np.arange(1, rel.size + 1, dtype=np.int64) + at_least


def reciprocal_ranks_first(first_ranks) -> np.ndarray:
    """Per-query ``1 / first_rank`` (``[Q]`` float64) from the 1-based rank of the first relevant hit."""
    ranks = np.asarray(first_ranks, dtype=np.float64)
    if np.any(ranks < 1):
        raise ValueError("ranks are 1-based")
    return 1.0 / ranks


def mean_reciprocal_rank(first_ranks) -> float:
    """MRR = ``(1/Q) sum_q 1 / rank_q`` with ``rank_q`` the rank of the first relevant target
    (Voorhees 1999). ``first_ranks [Q]`` 1-based."""
    values = reciprocal_ranks_first(first_ranks)
    if values.size == 0:
        raise ValueError("MRR needs at least one query")
    return float(values.mean())


def steb_reciprocal_ranks(ranks_per_query: Sequence[np.ndarray]) -> np.ndarray:
    """Per-query reciprocal rank by STEB's formula, ``(1/R_q) sum_j 1 / rank_qj`` over all ``R_q``
    relevant targets (steb/metrics.py ``calculate_retrieval_metrics``). Returns ``[Q]`` float64."""
    out = np.empty(len(ranks_per_query), dtype=np.float64)
    for q, ranks in enumerate(ranks_per_query):
        ranks = np.asarray(ranks, dtype=np.float64)
        if ranks.size == 0 or np.any(ranks < 1):
            raise ValueError(f"query {q}: needs at least one relevant target with a 1-based rank")
        out[q] = np.mean(1.0 / ranks)
    return out


def mean_reciprocal_rank_steb(ranks_per_query: Sequence[np.ndarray]) -> float:
    """MRR by STEB's formula: mean over queries of :func:`steb_reciprocal_ranks`."""
    values = steb_reciprocal_ranks(ranks_per_query)
    if values.size == 0:
        raise ValueError("MRR needs at least one query")
    return float(values.mean())


def hits_at_k(first_ranks, k: int) -> np.ndarray:
    """Per-query 0/1: is the first relevant target within the top ``k``? (``[Q]`` float64)."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return (np.asarray(first_ranks) <= k).astype(np.float64)


def success_at_k(first_ranks, k: int) -> float:
    """Success@K (hit rate): share of queries with at least one relevant target in the top ``k``
    = ``(1/Q) sum_q [first_rank_q <= k]`` (AuthBench A.9's Success@K, macro-averaged)."""
    values = hits_at_k(first_ranks, k)
    if values.size == 0:
        raise ValueError("Success@K needs at least one query")
    return float(values.mean())


def recall_at_k(first_ranks, k: int) -> float:
    """Deprecated name of :func:`success_at_k` (it always computed the hit rate, not a recall)."""
    warnings.warn("recall_at_k is deprecated: it computes a hit rate, now called success_at_k "
                  "(metrics.ranking's recall@K is the fraction of relevant targets found)",
                  DeprecationWarning, stacklevel=2)
    return success_at_k(first_ranks, k)
