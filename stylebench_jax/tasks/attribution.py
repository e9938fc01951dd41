"""Authorship attribution as same-author retrieval (AuthBench A.8-A.9, Table 3).

Every document of the split is a query against the *full within-split pool*, itself excluded
(A.8: "each test document is used as a query and ranked against a candidate pool drawn from the
same split"); its relevant candidates are the other documents by its author. A document whose author
has no other document in the split stays in the pool as a distractor but is not scored (each
Score's ``n`` counts the scored queries, so the split's size minus ``n`` is how many were left out;
``AttributionRun.unscored`` holds that count; the builder's default ``min_docs_per_author: 2`` with
author-disjoint splits leaves none). Reported per query, then macro-averaged (``metrics.ranking``):
``success@K``, ``recall@K`` (fraction of the author's other documents found), ``ndcg@K`` (binary
gains, IDCG over min(K, |relevant|)) for K in ``ks`` (default 1, 5, 10), and ``mrr@C`` (C = 100 by
default) -- an extra, **not an AuthBench metric** -- with one tie rule (ties against the query).
The primary metric is ``success@5`` (AuthBench's headline S@5).

Search: the exact sharded top-k kernel (``kernels.topk_cosine``) over L2-normalised embeddings,
so a 10^6-document pool never materialises ``[Q, N]``; each query's list has ``C' + 1`` entries
(``C'`` = the largest of the Ks and the MRR cutoff), so ties at the last cutoff can be detected, and
queries whose ties reach the end of their list are searched again with a doubled list until the
tie rule is determined (``metrics.topk_ties_unresolved``). Similarity-only scorers (no vectors)
score every pair through the scorer, up to ``MAX_SIMILARITY_PAIRS``.

Breakdowns (``tasks.breakdowns``): by language, genre (blog / social_media macro-averaged over
subgenres) and length bucket, each with its query count; and, when the documents carry a topic,
F.5's topic-selected pool diagnostic (``|pool=topic``): each query searches only the documents of
its own topic (still within the split, itself excluded), which favours lexical matching (Table 17).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

import numpy as np

from stylebench_jax.metrics import DEFAULT_KS, ranking_metrics_topk, ranking_per_query, topk_ties_unresolved
from stylebench_jax.tasks.base import NotApplicable, Score, TaskContext, TextScorer, TooFewInstances
from stylebench_jax.tasks.breakdowns import mean_scores, query_strata, stratum_groups

MRR_CUTOFF = 100
REPORT_K = 5
MAX_SIMILARITY_PAIRS = 8_000_000  # ~2,800 documents: similarity-only baselines such as char3gram


@dataclasses.dataclass(frozen=True)
class AttributionRun:
    """Per-query results: ``queries [Q]`` pool indices of the scored queries, ``values`` name ->
    ``[Q]`` float64, ``unscored`` documents without another document by their author,
    ``search_s`` / ``metrics_s`` wall times, ``re_searched`` queries searched again for ties."""

    queries: np.ndarray
    values: dict[str, np.ndarray]
    unscored: int
    search_s: float
    metrics_s: float
    re_searched: int


def author_codes(authors: Sequence) -> np.ndarray:
    """``[N]`` int64 codes of the author labels (equal labels, equal codes)."""
    return np.unique(np.asarray(authors, dtype=object).astype(str), return_inverse=True)[1].astype(np.int64)


def _search(vectors: np.ndarray, queries: np.ndarray, pool: np.ndarray, k: int, mesh, precision: str):
    """Top ``k`` of each query row among ``pool`` rows (query itself excluded): pool-local indices
    ``[Q, k]`` and scores."""
    from stylebench_jax.kernels.topk import topk_cosine

    position = np.full(vectors.shape[0], -1, dtype=np.int64)
    position[pool] = np.arange(pool.size)
    candidates = vectors if pool.size == vectors.shape[0] else np.ascontiguousarray(vectors[pool])
    result = topk_cosine(vectors[queries], candidates, k, mesh=mesh, query_ids=position[queries],
                         precision=precision)
    return result.indices, result.scores


def attribution_per_query(vectors: np.ndarray, codes: np.ndarray, *, ks: Sequence[int] = DEFAULT_KS,
                          mrr_cutoff: int = MRR_CUTOFF, mesh=None, precision: str = "float32",
                          pool: np.ndarray | None = None,
                          queries: np.ndarray | None = None) -> AttributionRun:
    """Per-query attribution metrics of ``vectors [N, D]`` (L2-normalised) with author ``codes [N]``.

    ``pool``: indices of the documents forming the pool (default all); queries are the pool's
    documents with another document of their author in the pool, or only those among ``queries``
    (pool indices, e.g. a sample for a benchmark).
    """
    n = vectors.shape[0]
    pool = np.arange(n) if pool is None else np.asarray(pool, dtype=np.int64)
    pool_codes = codes[pool]
    counts = np.bincount(pool_codes, minlength=codes.max() + 1 if codes.size else 0)
    scored = pool[counts[pool_codes] >= 2]
    if queries is not None:
        scored = np.intersect1d(scored, np.asarray(queries, dtype=np.int64))
    n_relevant = counts[codes[scored]] - 1
    cutoff = max(max(ks), mrr_cutoff)
    n_candidates = pool.size - 1
    length = min(cutoff + 1, max(n_candidates, 1))
    start = time.perf_counter()
    idx = np.full((scored.size, length), -1, dtype=np.int64)
    top = np.full((scored.size, length), -np.inf, dtype=np.float32)
    todo, re_searched = np.arange(scored.size), 0
    while todo.size:
        found_idx, found_scores = _search(vectors, scored[todo], pool, length, mesh, precision)
        if found_idx.shape[1] > idx.shape[1]:
            grow = found_idx.shape[1] - idx.shape[1]
            idx = np.concatenate([idx, np.full((idx.shape[0], grow), -1, np.int64)], axis=1)
            top = np.concatenate([top, np.full((top.shape[0], grow), -np.inf, np.float32)], axis=1)
        idx[todo, :found_idx.shape[1]], top[todo, :found_idx.shape[1]] = found_idx, found_scores
        unresolved = topk_ties_unresolved(found_scores, cutoff, n_candidates)
        todo = todo[unresolved]
        re_searched += int(todo.size)
        length = min(2 * length, n_candidates)
    search_s = time.perf_counter() - start
    start = time.perf_counter()
    safe = np.where(idx >= 0, idx, 0)
    hits = (pool_codes[safe] == codes[scored][:, None]) & (idx >= 0)
    values = ranking_metrics_topk(hits, top, n_relevant, ks, n_candidates=n_candidates, mrr_cutoff=mrr_cutoff)
    unscored = int(np.sum(counts[pool_codes] < 2))
    return AttributionRun(scored, values, unscored, search_s, time.perf_counter() - start, re_searched)


def _dense_per_query(scorer: TextScorer, texts: Sequence[str], codes: np.ndarray, ks,
                     mrr_cutoff) -> AttributionRun:
    """Similarity-only scorers: the full ``[N, N]`` score matrix through ``scorer.similarity``."""
    n = len(texts)
    if n * (n - 1) > MAX_SIMILARITY_PAIRS:
        raise NotApplicable(f"{scorer.name} is similarity-only; attribution needs {n * (n - 1)} pairwise "
                            f"calls (limit {MAX_SIMILARITY_PAIRS})")
    start = time.perf_counter()
    a = [texts[i] for i in range(n) for _ in range(n)]
    b = list(texts) * n
    scores = np.asarray(scorer.similarity(a, b), dtype=np.float64).reshape(n, n)
    search_s = time.perf_counter() - start
    counts = np.bincount(codes)
    scored = np.flatnonzero(counts[codes] >= 2)
    relevant = codes[scored][:, None] == codes[None, :]
    candidate = np.ones((scored.size, n), dtype=bool)
    candidate[np.arange(scored.size), scored] = False
    start = time.perf_counter()
    values = ranking_per_query(scores[scored], relevant, ks, candidate=candidate, mrr_cutoff=mrr_cutoff)
    return AttributionRun(scored, values, n - scored.size, search_s, time.perf_counter() - start, 0)


def ordered_names(ks: Sequence[int], mrr_cutoff: int) -> list[str]:
    """Metric order of the results: success/recall/nDCG at the report K first (primary = success@5)."""
    head = REPORT_K if REPORT_K in ks else ks[0]
    names = [f"success@{head}", f"recall@{head}", f"ndcg@{head}"]
    names += [f"{m}@{k}" for m in ("success", "recall", "ndcg") for k in ks if k != head]
    return names + [f"mrr@{mrr_cutoff}"]


def attribution_scores(run: AttributionRun, strata: dict[str, np.ndarray], ks: Sequence[int], mrr_cutoff: int,
                       *, seed: int, n_boot: int, suffix: str = "", breakdowns: bool = True) -> list[Score]:
    """Overall Scores (first = primary) and the mandatory breakdowns of one run."""
    if run.queries.size == 0:
        raise TooFewInstances("no document has another document by its author in the pool")
    names = ordered_names(ks, mrr_cutoff)
    matrix = np.stack([run.values[name] for name in names])
    scores = mean_scores(names, matrix, seed=seed, n_boot=n_boot, suffix=suffix)
    if breakdowns:
        for axis, value, positions, sub in stratum_groups(strata, run.queries):
            scores += mean_scores(names, matrix[:, positions], seed=seed, n_boot=n_boot, sub=sub,
                                  suffix=f"{suffix}|{axis}={value}")
    return scores


def evaluate_attribution(scorer: TextScorer, texts: Sequence[str], authors: Sequence[str], *,
                         languages: Sequence[str], genres: Sequence[str], subgenres: Sequence[str],
                         token_lengths: Sequence[int], topics: Sequence[str | None] | None = None,
                         ks: Sequence[int] = DEFAULT_KS, mrr_cutoff: int = MRR_CUTOFF, seed: int = 0,
                         n_boot: int = 1000, mesh=None) -> list[Score]:
    """Attribution on one within-split pool (module docstring); first Score = ``success@5``."""
    ks = tuple(sorted(set(int(k) for k in ks)))
    codes = author_codes(authors)
    strata = query_strata(languages, genres, subgenres, token_lengths)
    if scorer.has_vectors:
        vectors = np.ascontiguousarray(scorer.embed(list(texts)), dtype=np.float32)
        run = attribution_per_query(vectors, codes, ks=ks, mrr_cutoff=mrr_cutoff, mesh=mesh)
    else:
        vectors = None
        run = _dense_per_query(scorer, list(texts), codes, ks, mrr_cutoff)
    scores = attribution_scores(run, strata, ks, mrr_cutoff, seed=seed, n_boot=n_boot)
    if topics is not None and vectors is not None:
        scores += topic_pool_scores(vectors, codes, topics, strata, ks, mrr_cutoff, seed=seed, n_boot=n_boot,
                                    mesh=mesh)
    return scores


def topic_pool_scores(vectors, codes, topics, strata, ks, mrr_cutoff, *, seed, n_boot, mesh) -> list[Score]:
    """F.5's topic-selected pool: per topic, the topic's documents search only each other."""
    topics = np.asarray([t if t is not None else "" for t in topics], dtype=object)
    queries, values = [], []
    for topic in sorted(set(topics.tolist()) - {""}):
        pool = np.flatnonzero(topics == topic)
        if pool.size < 2:
            continue
        run = attribution_per_query(vectors, codes, ks=ks, mrr_cutoff=mrr_cutoff, mesh=mesh, pool=pool)
        if run.queries.size:
            queries.append(run.queries)
            values.append(run.values)
    if not queries:
        return []
    merged = AttributionRun(np.concatenate(queries),
                            {k: np.concatenate([v[k] for v in values]) for k in values[0]}, 0, 0.0, 0.0, 0)
    return attribution_scores(merged, strata, ks, mrr_cutoff, seed=seed, n_boot=n_boot, suffix="|pool=topic",
                              breakdowns=False)


def run_attribution(scorer: TextScorer, payload, context: TaskContext, *, seed: int,
                    n_boot: int) -> list[Score]:
    """Task-table runner (``tasks.registry``): :func:`evaluate_attribution` on an ``AuthorshipSet``."""
    return evaluate_attribution(scorer, payload.texts, payload.authors, languages=payload.languages,
                                genres=payload.genres, subgenres=payload.subgenres,
                                token_lengths=payload.token_lengths, topics=payload.topics, ks=payload.ks,
                                mrr_cutoff=payload.mrr_cutoff, seed=seed, n_boot=n_boot, mesh=context.mesh)
