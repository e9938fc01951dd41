"""Retrieval protocol (authorship retrieval, STEB §3.1): rank a target pool for every query.

A target is *relevant* to a query when their labels (author ids) are equal. Two protocols, both
reported for every embedder:

**Ours, per document** (:func:`evaluate_retrieval`): every query text ranks every target text.
Reported, in order:

* ``mrr`` (primary): mean reciprocal rank of the first relevant target;
* ``success@K`` for K in ``metrics.SUCCESS_KS`` = (1, 8, 16, 32, 64, 128): share of queries with a
  relevant target in the top K (a hit rate; called ``recall@K`` before, renamed so that
  ``recall@K`` in results always means the fraction of relevant targets found, as in STEB and
  AuthBench);
* ``mrr_all_relevant``: the per-query mean of 1/rank over *all* relevant targets (the formula of
  STEB's ``calculate_retrieval_metrics``, applied to per-document ranking; reported as ``mrr_steb``
  before, but STEB never ranks single documents against many relevant targets, so it never reports
  this number).

Definitions, tie convention and references are in ``metrics.retrieval``. Ranks are exact: query
rows of the score matrix are computed block by block (at most ``_MAX_BLOCK_SCORES`` scores at once)
and each relevant target's rank is counted against every other candidate, not read off a top-k list.
The top-k kernel (``kernels.topk_cosine``) is therefore not used here: MRR needs the first relevant
rank even when it lies beyond any fixed k, and ``mrr_all_relevant`` needs every relevant target's rank.

Pools. ``targets=None`` means leave-one-out: every query searches all *other* queries. When the
queries are also inside a separate target list, ``query_target_index[q]`` names the target that is
query ``q`` itself (``-1``: not in the pool); it is excluded from that query's candidates. A query
with no relevant candidate cannot be scored and is left out; ``n`` in the Scores counts the scored
queries. Unlike STEB we keep targets whose label no query has: they are legitimate distractors.

**STEB's, episodes** (:func:`retrieval_steb`, metric ``mrr_steb``; seed paper 000 §3.1, code
github.com/rrivera1849/STEB: ``steb/core.py`` ``extract_features`` at 0f9c583, ``steb/presets.py``
retrieval ``episode_sizes=[-1]`` at 2a17f03, ``steb/tasks/retrieval.py`` and ``steb/metrics.py``
``calculate_retrieval_metrics`` at 022c32b). Texts are grouped into *episodes* per label and side
(queries, targets): with ``episode_size=-1`` (STEB's benchmark) all of an author's query texts form
one episode and all its target texts another; with ``episode_size=n`` (LUAR's episodes, Rivera Soto
et al. 2021) each label keeps its first ``n * n_episodes_per_class`` texts, cut into consecutive
episodes of ``n``, and labels with fewer texts are dropped. An episode's vector is the mean of its
texts' vectors *as the embedder returns them* (STEB's models average before any normalisation;
``TextScorer.embed_raw``). Labels present on only one side are dropped (so target authors without
queries are *not* distractors in STEB's protocol), pooled vectors are L2-normalised, each query
episode ranks every target episode by cosine distance (``sklearn.metrics.pairwise_distances``,
``np.argsort`` as STEB, so exact ties fall as NumPy's sort leaves them) and ``mrr_steb`` is STEB's
MRR, the mean over query episodes of the mean of 1/rank over its relevant target episodes (with
``episode_size=-1`` exactly one: the plain MRR). Needs vectors: similarity-only scorers get no
``mrr_steb``.

Why we keep ours. Pooling every text of an author into one vector answers "which author wrote this
collection", which is much easier than ranking single documents (and with few authors, e.g. the
Federalist papers' three, trivially so); the per-document protocol is the usual authorship-retrieval
setting and keeps distractor authors. Results labelled STEB (``mrr_steb``, STEB's aggregate scores)
use STEB's episodes.

CIs: percentile bootstrap over scored queries (query episodes for ``mrr_steb``) of the per-query
values, seeded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from sklearn.metrics import pairwise_distances

from stylebench_jax.data.units import RetrievalSet
from stylebench_jax.metrics import (
    SUCCESS_KS,
    bootstrap_replicates,
    hits_at_k,
    percentile_interval,
    reciprocal_ranks_first,
    steb_reciprocal_ranks,
)
from stylebench_jax.metrics.labels import encode_labels
from stylebench_jax.metrics.retrieval import ranks_of_relevant
from stylebench_jax.tasks.base import NotApplicable, Score, TaskContext, TextScorer

_MAX_BLOCK_SCORES = 1 << 22
MAX_SIMILARITY_PAIRS = 200_000

ScoreRows = Callable[[int, int], np.ndarray]


def _codes(query_labels: Sequence, target_labels: Sequence) -> tuple[np.ndarray, np.ndarray]:
    return encode_labels(query_labels, target_labels)


def rank_relevant(score_rows: ScoreRows, query_codes: np.ndarray, target_codes: np.ndarray,
                  query_target_index: np.ndarray | None = None) -> tuple[np.ndarray, list[np.ndarray]]:
    """Ranks of every query's relevant candidates.

    ``score_rows(start, stop) -> [stop - start, T]`` similarities of queries ``start:stop`` to all
    targets. ``query_codes [Q]``, ``target_codes [T]`` int labels. ``query_target_index [Q]``: target
    to exclude per query (-1 none). Returns ``(kept [Q'] query indices, ranks [Q'] arrays)``, queries
    without relevant candidates left out; ``ranks[k]`` ascending, ``ranks[k][0]`` = first hit.
    """
    n_queries, n_targets = query_codes.size, target_codes.size
    exclude = np.full(n_queries, -1) if query_target_index is None else np.asarray(query_target_index)
    if exclude.shape != (n_queries,) or np.any(exclude >= n_targets) or np.any(exclude < -1):
        raise ValueError(f"query_target_index must be [{n_queries}] ints in [-1, {n_targets})")
    block = max(1, _MAX_BLOCK_SCORES // max(n_targets, 1))
    kept, ranks = [], []
    for start in range(0, n_queries, block):
        stop = min(n_queries, start + block)
        scores = np.asarray(score_rows(start, stop), dtype=np.float64)
        if scores.shape != (stop - start, n_targets):
            raise ValueError(f"score_rows returned {scores.shape}, expected ({stop - start}, {n_targets})")
        bad = np.flatnonzero(~np.isfinite(scores).all(axis=1))
        if bad.size:
            raise ValueError(f"query {start + bad[0]}: similarity scores hold NaN or infinity (NaN or "
                             "infinity in the model's outputs?)")
        relevant = query_codes[start:stop, None] == target_codes[None, :]
        candidate = np.ones_like(relevant)
        rows = np.flatnonzero(exclude[start:stop] >= 0)
        candidate[rows, exclude[start:stop][rows]] = False
        for row in range(stop - start):
            row_ranks = ranks_of_relevant(scores[row], relevant[row], candidate[row])  # block checked above
            if row_ranks.size:
                kept.append(start + row)
                ranks.append(row_ranks)
    return np.asarray(kept, dtype=np.int64), ranks


def retrieval_scores(ranks: Sequence[np.ndarray], *, seed: int = 0, n_boot: int = 1000) -> list[Score]:
    """Scores from per-query relevant ranks: ``mrr``, ``success@K`` (K in SUCCESS_KS),
    ``mrr_all_relevant``."""
    if not ranks:
        raise ValueError("no query has a relevant target in its pool")
    first = np.array([r[0] for r in ranks], dtype=np.int64)
    names = ["mrr"] + [f"success@{k}" for k in SUCCESS_KS] + ["mrr_all_relevant"]
    per_query = np.stack([reciprocal_ranks_first(first)] + [hits_at_k(first, k) for k in SUCCESS_KS]
                         + [steb_reciprocal_ranks(ranks)])
    n = first.size
    reps = bootstrap_replicates(lambda w: per_query @ w.T / n, n, n_boot=n_boot, seed=seed)
    return [Score(name, float(values.mean()), *percentile_interval(rep), n)
            for name, values, rep in zip(names, per_query, reps)]


def retrieve_embeddings(query_vectors: np.ndarray, query_labels: Sequence,
                        target_vectors: np.ndarray | None = None, target_labels: Sequence | None = None, *,
                        query_target_index=None, seed: int = 0, n_boot: int = 1000) -> list[Score]:
    """Retrieval protocol on L2-normalised ``[Q, D]`` queries and ``[T, D]`` targets (cosine scores).

    ``target_vectors=None``: leave-one-out within the queries (see module docstring).
    """
    queries = np.asarray(query_vectors, dtype=np.float32)
    if target_vectors is None:
        if target_labels is not None or query_target_index is not None:
            raise ValueError("target_labels/query_target_index need target_vectors")
        targets, target_labels = queries, query_labels
        query_target_index = np.arange(queries.shape[0])
    else:
        targets = np.asarray(target_vectors, dtype=np.float32)
    q_codes, t_codes = _codes(query_labels, target_labels)
    if queries.shape[0] != q_codes.size or targets.shape[0] != t_codes.size:
        raise ValueError(f"vectors {queries.shape}/{targets.shape} do not match "
                         f"{q_codes.size}/{t_codes.size} labels")

    def score_rows(start, stop):
        return queries[start:stop] @ targets.T

    _, ranks = rank_relevant(score_rows, q_codes, t_codes, query_target_index)
    return retrieval_scores(ranks, seed=seed, n_boot=n_boot)


def _similarity_rows(scorer: TextScorer, queries: list[str], targets: list[str]) -> ScoreRows:
    def score_rows(start, stop):
        block = queries[start:stop]
        a = [q for q in block for _ in targets]
        b = targets * len(block)
        return np.asarray(scorer.similarity(a, b)).reshape(len(block), len(targets))

    return score_rows


def evaluate_retrieval(scorer: TextScorer, queries: Sequence[str], query_labels: Sequence,
                       targets: Sequence[str] | None = None, target_labels: Sequence | None = None, *,
                       query_target_index: Sequence[int] | None = None, seed: int = 0, n_boot: int = 1000,
                       max_similarity_pairs: int = MAX_SIMILARITY_PAIRS) -> list[Score]:
    """Our per-document retrieval: ``[mrr, success@1, ..., success@128, mrr_all_relevant]`` Scores
    (first = primary).

    ``targets=None``: leave-one-out over ``queries``. Similarity-only scorers score every
    (query, target) pair with ``scorer.similarity``, up to ``max_similarity_pairs`` pairs
    (``NotApplicable`` beyond).
    """
    if len(queries) != len(query_labels):
        raise ValueError(f"{len(queries)} queries but {len(query_labels)} labels")
    if targets is not None and len(targets) != len(target_labels if target_labels is not None else []):
        raise ValueError("targets need target_labels of the same length")
    if scorer.has_vectors:
        target_vectors = None if targets is None else scorer.embed(targets)
        return retrieve_embeddings(scorer.embed(queries), query_labels, target_vectors, target_labels,
                                   query_target_index=query_target_index, seed=seed, n_boot=n_boot)
    queries = list(queries)
    if targets is None:
        if query_target_index is not None:
            raise ValueError("query_target_index needs targets")
        targets, target_labels, query_target_index = queries, query_labels, np.arange(len(queries))
    targets = list(targets)
    n_pairs = len(queries) * len(targets)
    if n_pairs > max_similarity_pairs:
        raise NotApplicable(f"{scorer.name} is similarity-only; retrieval needs {n_pairs} pairwise calls "
                            f"(limit {max_similarity_pairs})")
    q_codes, t_codes = _codes(query_labels, target_labels)
    _, ranks = rank_relevant(_similarity_rows(scorer, queries, targets), q_codes, t_codes,
                             None if query_target_index is None else np.asarray(query_target_index))
    return retrieval_scores(ranks, seed=seed, n_boot=n_boot)


# ------------------------------------------------------------------------------------ STEB's episodes

STEB_KS = (1, 8, 16, 32, 64, 128)


def steb_episodes(labels: Sequence, episode_size: int = -1,
                  n_episodes_per_class: int = 1) -> tuple[list[list[int]], list]:
    """STEB's episodes of one side (queries or targets): ``(episodes, episode_labels)``.

    ``episodes[e]`` lists indices into ``labels``. Labels in first-appearance order.
    ``episode_size=-1``: one episode per label with all its texts. ``episode_size=n``: labels with at
    least ``N = n * n_episodes_per_class`` texts keep their first ``N``, cut into ``n_episodes_per_class``
    consecutive episodes of ``n`` (steb/dataset_loader.py ``DatasetLoader.load``, steb/core.py
    ``extract_features``); other labels are dropped.
    """
    if episode_size == 0 or episode_size < -1:
        raise ValueError(f"episode_size must be -1 or >= 1, got {episode_size}")
    if n_episodes_per_class < 1:
        raise ValueError(f"n_episodes_per_class must be >= 1, got {n_episodes_per_class}")
    members: dict = {}
    for index, label in enumerate(labels):
        members.setdefault(label, []).append(index)
    episodes, episode_labels = [], []
    for label, indices in members.items():
        if episode_size == -1:
            episodes.append(indices)
            episode_labels.append(label)
            continue
        needed = episode_size * n_episodes_per_class
        if len(indices) < needed:
            continue
        for start in range(0, needed, episode_size):
            episodes.append(indices[start:start + episode_size])
            episode_labels.append(label)
    return episodes, episode_labels


def pool_episodes(vectors: np.ndarray, episodes: Sequence[Sequence[int]]) -> np.ndarray:
    """``[E, D]`` float64: the mean of each episode's rows of ``vectors [N, D]`` (not normalised)."""
    x = np.asarray(vectors, dtype=np.float64)
    return np.stack([x[list(episode)].mean(axis=0) for episode in episodes]) if episodes else \
        np.zeros((0, x.shape[1]))


def steb_relevant_ranks(query_vectors: np.ndarray, query_labels: Sequence, target_vectors: np.ndarray,
                        target_labels: Sequence) -> tuple[list[np.ndarray], list]:
    """STEB's ranking of pooled vectors: ``(ranks per query, kept query labels)``.

    Labels on one side only are dropped; rows are L2-normalised (zero rows stay zero), cosine
    distances from ``sklearn.metrics.pairwise_distances``, candidates ordered by ``np.argsort`` (as
    steb/metrics.py); ``ranks[q]`` are the 1-based positions of the query's relevant targets.
    """
    q_labels, t_labels = list(query_labels), list(target_labels)
    common = set(q_labels) & set(t_labels)
    keep_q = [i for i, label in enumerate(q_labels) if label in common]
    keep_t = [i for i, label in enumerate(t_labels) if label in common]
    if not keep_q:
        raise ValueError("no query label has a target episode (STEB keeps only labels on both sides)")
    queries = _unit_rows(np.asarray(query_vectors, dtype=np.float64)[keep_q])
    targets = _unit_rows(np.asarray(target_vectors, dtype=np.float64)[keep_t])
    q_codes, t_codes = _codes([q_labels[i] for i in keep_q], [t_labels[i] for i in keep_t])
    distances = pairwise_distances(queries, targets, metric="cosine")
    ranks = [np.flatnonzero(t_codes[np.argsort(row)] == code) + 1 for row, code in zip(distances, q_codes)]
    return ranks, [q_labels[i] for i in keep_q]


def _unit_rows(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(norms == 0, 1.0, norms)


def steb_metrics(ranks: Sequence[np.ndarray], ks: Sequence[int] = STEB_KS) -> dict[str, float]:
    """STEB's ``mrr``, ``mean_rank`` and ``recall@K`` from per-query ranks, summed in query order and
    divided by the number of queries, as ``calculate_retrieval_metrics`` does (same floats)."""
    mrr_sum, rank_sum = 0.0, 0.0
    recall = dict.fromkeys(ks, 0.0)
    for query_ranks in ranks:
        mrr_sum += np.mean(1.0 / query_ranks)
        rank_sum += np.mean(query_ranks)
        for k in ks:
            found = int(np.sum(query_ranks <= k))
            if found:
                recall[k] += found / query_ranks.size
    n = len(ranks)
    return {"mrr": mrr_sum / n, "mean_rank": rank_sum / n, **{f"recall@{k}": recall[k] / n for k in ks}}


def retrieval_steb(query_vectors: np.ndarray, query_labels: Sequence, target_vectors: np.ndarray,
                   target_labels: Sequence, *, episode_size: int = -1, n_episodes_per_class: int = 1,
                   seed: int = 0, n_boot: int = 1000) -> tuple[Score, dict[str, float]]:
    """STEB's retrieval on per-text vectors (module docstring): ``(Score("mrr_steb"), STEB's metrics)``.

    ``query_vectors [Q, D]`` / ``target_vectors [T, D]``: the embedder's own vectors, before any
    normalisation (they are averaged per episode). The Score's value is STEB's MRR; its interval
    resamples query episodes; ``n`` = query episodes scored.
    """
    q_episodes, q_episode_labels = steb_episodes(query_labels, episode_size, n_episodes_per_class)
    t_episodes, t_episode_labels = steb_episodes(target_labels, episode_size, n_episodes_per_class)
    ranks, _ = steb_relevant_ranks(pool_episodes(query_vectors, q_episodes), q_episode_labels,
                                   pool_episodes(target_vectors, t_episodes), t_episode_labels)
    metrics = steb_metrics(ranks)
    per_query = steb_reciprocal_ranks(ranks)
    reps = bootstrap_replicates(lambda w: w @ per_query / per_query.size, per_query.size, n_boot=n_boot,
                                seed=seed)
    return Score("mrr_steb", float(metrics["mrr"]), *percentile_interval(reps), len(ranks)), metrics


def evaluate_retrieval_steb(scorer: TextScorer, queries: Sequence[str], query_labels: Sequence,
                            targets: Sequence[str], target_labels: Sequence, *, episode_size: int = -1,
                            n_episodes_per_class: int = 1, seed: int = 0, n_boot: int = 1000) -> list[Score]:
    """``[Score("mrr_steb")]`` of :func:`retrieval_steb` for a scorer with vectors (``NotApplicable``
    for a similarity-only scorer: episodes average vectors)."""
    if not scorer.has_vectors:
        raise NotApplicable(f"{scorer.name} gives only pairwise similarities; STEB's episodes "
                            "average vectors")
    score, _ = retrieval_steb(scorer.embed_raw(queries), query_labels, scorer.embed_raw(targets),
                              target_labels, episode_size=episode_size,
                              n_episodes_per_class=n_episodes_per_class, seed=seed, n_boot=n_boot)
    return [score]


def run_retrieval(scorer: TextScorer, payload: RetrievalSet, context: TaskContext, *, seed: int,
                  n_boot: int) -> list[Score]:
    """Task-table runner (``tasks.registry``): our :func:`evaluate_retrieval`, then (scorers with
    vectors) STEB's :func:`evaluate_retrieval_steb` with ``episode_size=-1`` (``mrr_steb``)."""
    scores = evaluate_retrieval(scorer, payload.query_texts, payload.query_labels, payload.target_texts,
                                payload.target_labels, seed=seed, n_boot=n_boot)
    if scorer.has_vectors:
        scores += evaluate_retrieval_steb(scorer, payload.query_texts, payload.query_labels,
                                          payload.target_texts, payload.target_labels, seed=seed,
                                          n_boot=n_boot)
    return scores
