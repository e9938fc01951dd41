"""Authorship verification on query-candidate pairs (AuthBench A.8-A.9, Table 3's EER).

Pairs (A.8, "labeled query-candidate pairs derived from the same within-split pools"; Sec. 4,
"verification EER uses sampled 50 negatives per query"): every document with another document by
its author is a query; its pairs are *all* its positives (the author's other documents in the split)
and ``n_negatives`` = 50 negatives drawn uniformly without replacement from the documents of other
authors (all of them when fewer exist), by one generator seeded with ``seed``, queries in pool
order. AuthBench's evaluation code (github.com/mao-code/AURA_Bench, commit b73d8de,
``eval/evaluators.py`` ``evaluate_eer``) does the same per query: every positive its ground truth
lists and 50 negatives drawn with ``random.Random(13)``; a docstring of its ``eval/data.py`` says
the released splits cap positives at 1-2 per query, which we have not checked. We keep every
positive the split holds. The score of a pair is the cosine
of the two embeddings (or the scorer's similarity for similarity-only baselines).

Reported: ``eer`` = AuthBench's threshold EER (``metrics.eer(method="threshold")``:
``tau* = argmin |FAR - FRR|``, FAR counting ``s >= tau``), the primary metric, lower is better;
``eer_roc``, the ROC-interpolated EER (``method="roc"``, STEB / PAN / ``compute_eer`` of AuthBench's
``eval/metrics.py``); ``auroc``.
CIs: percentile bootstrap over *queries* (a query's pairs are resampled together: they share the
query document). Breakdowns by the query's language, genre (blog / social_media macro-averaged
over subgenres) and length bucket, ``n`` = queries; with topics, F.5's topic-selected pool
(``|pool=topic``): positives and negatives both restricted to the query's topic.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stylebench_jax.metrics import auroc_eer_batch, eer_threshold_batch
from stylebench_jax.tasks.attribution import author_codes
from stylebench_jax.tasks.base import Score, TaskContext, TextScorer
from stylebench_jax.tasks.breakdowns import query_strata, statistic_scores, stratum_groups

N_NEGATIVES = 50
NAMES = ("eer", "eer_roc", "auroc")
_MAX_WEIGHT_ENTRIES = 1 << 22
_PAIR_BLOCK = 1 << 18


def verification_pairs(codes: np.ndarray, *, n_negatives: int = N_NEGATIVES, seed: int = 0,
                       pool: np.ndarray | None = None
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(query [P], candidate [P], label [P] bool, query position [P])`` of the pairs (module
    docstring); indices are into the whole document list, ``query position`` into the queries."""
    pool = np.arange(codes.size) if pool is None else np.asarray(pool, dtype=np.int64)
    pool_codes = codes[pool]
    order = np.argsort(pool_codes, kind="stable")
    starts = np.searchsorted(pool_codes[order], pool_codes[order], side="left")
    ends = np.searchsorted(pool_codes[order], pool_codes[order], side="right")
    same_start, same_end = np.empty(pool.size, np.int64), np.empty(pool.size, np.int64)
    same_start[order], same_end[order] = starts, ends
    rng = np.random.default_rng(seed)
    queries, candidates, labels, positions = [], [], [], []
    q_pos = 0
    for i in range(pool.size):
        n_same = same_end[i] - same_start[i]
        if n_same < 2:
            continue
        own = order[same_start[i]:same_end[i]]
        positives = pool[own[own != i]]
        n_other = pool.size - n_same
        take = min(n_negatives, n_other)
        if take:
            draw = rng.choice(pool.size, size=min(pool.size, take + n_same), replace=False)
            negatives = pool[draw[pool_codes[draw] != pool_codes[i]][:take]]
        else:
            negatives = np.zeros(0, np.int64)
        chosen = np.concatenate([positives, negatives])
        queries.append(np.full(chosen.size, pool[i]))
        candidates.append(chosen)
        labels.append(np.r_[np.ones(positives.size, bool), np.zeros(negatives.size, bool)])
        positions.append(np.full(chosen.size, q_pos))
        q_pos += 1
    if not queries:
        empty = np.zeros(0, np.int64)
        return empty, empty, np.zeros(0, bool), empty
    return tuple(np.concatenate(x) for x in (queries, candidates, labels, positions))


def pair_scores(vectors: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``[P]`` float64 inner products of rows ``a[p]`` and ``b[p]``, in blocks."""
    out = np.empty(a.size, np.float64)
    for start in range(0, a.size, _PAIR_BLOCK):
        sl = slice(start, start + _PAIR_BLOCK)
        out[sl] = np.einsum("pd,pd->p", vectors[a[sl]].astype(np.float64), vectors[b[sl]].astype(np.float64))
    return out


def _statistic(scores: np.ndarray, labels: np.ndarray, positions: np.ndarray):
    """Bootstrap statistic over query weights ``[b, Q]`` -> ``[3, b]`` (eer, eer_roc, auroc)."""
    def statistic(weights: np.ndarray) -> np.ndarray:
        out = np.empty((3, weights.shape[0]))
        rows = max(1, _MAX_WEIGHT_ENTRIES // max(scores.size, 1))
        for start in range(0, weights.shape[0], rows):
            pair_w = weights[start:start + rows][:, positions]
            area, eer_roc = auroc_eer_batch(scores, labels, pair_w)
            out[0, start:start + rows] = eer_threshold_batch(scores, labels, pair_w)
            out[1, start:start + rows], out[2, start:start + rows] = eer_roc, area
        return out
    return statistic


def _macro_statistic(parts):
    """Average of several per-subgenre statistics, each reading its own slice of the weights."""
    def statistic(weights: np.ndarray) -> np.ndarray:
        return np.mean([stat(weights[:, cols]) for cols, stat in parts], axis=0)
    return statistic


def verification_scores(scores: np.ndarray, labels: np.ndarray, positions: np.ndarray, query_ids: np.ndarray,
                        strata: dict[str, np.ndarray], *, seed: int, n_boot: int, suffix: str = "",
                        breakdowns: bool = True) -> list[Score]:
    """Overall and per-stratum Scores from the pair scores; ``query_ids [Q]`` pool index per query."""
    n_queries = query_ids.size
    if not (labels.any() and (~labels).any()):
        raise ValueError("verification needs positive and negative pairs")
    out = statistic_scores(NAMES, _statistic(scores, labels, positions), n_queries, seed=seed, n_boot=n_boot,
                           suffix=suffix)
    if not breakdowns:
        return out
    for axis, value, members, sub in stratum_groups(strata, query_ids):
        groups = [members] if sub is None else [members[sub == s] for s in sorted(set(sub.tolist()))]
        parts, offset = [], 0
        for group in groups:
            local = np.full(n_queries, -1, np.int64)
            local[group] = np.arange(group.size)
            keep = local[positions] >= 0
            if not (labels[keep].any() and (~labels[keep]).any()):
                break  # a stratum without both kinds of pairs has no EER
            parts.append((np.arange(offset, offset + group.size),
                          _statistic(scores[keep], labels[keep], local[positions[keep]])))
            offset += group.size
        else:
            sub_labels = None if sub is None else np.concatenate(
                [np.full(g.size, k) for k, g in enumerate(groups)])
            out += statistic_scores(NAMES, _macro_statistic(parts), offset, seed=seed, n_boot=n_boot,
                                    strata=sub_labels, suffix=f"{suffix}|{axis}={value}")
    return out


def evaluate_verification(scorer: TextScorer, texts: Sequence[str], authors: Sequence[str], *,
                          languages: Sequence[str], genres: Sequence[str], subgenres: Sequence[str],
                          token_lengths: Sequence[int], topics: Sequence[str | None] | None = None,
                          n_negatives: int = N_NEGATIVES, seed: int = 0, n_boot: int = 1000) -> list[Score]:
    """Verification on one within-split pool (module docstring); first Score = ``eer``."""
    codes = author_codes(authors)
    strata = query_strata(languages, genres, subgenres, token_lengths)
    texts = list(texts)
    vectors = np.ascontiguousarray(scorer.embed(texts), dtype=np.float32) if scorer.has_vectors else None

    def score(a, b):
        if vectors is not None:
            return pair_scores(vectors, a, b)
        return np.asarray(scorer.similarity([texts[i] for i in a], [texts[j] for j in b]), dtype=np.float64)

    q, c, labels, positions = verification_pairs(codes, n_negatives=n_negatives, seed=seed)
    query_ids = np.unique(q)  # pool order = query position order
    out = verification_scores(score(q, c), labels, positions, query_ids, strata, seed=seed, n_boot=n_boot)
    if topics is not None:
        topic = np.asarray([t if t is not None else "" for t in topics], dtype=object)
        parts = []
        for value in sorted(set(topic.tolist()) - {""}):
            pool = np.flatnonzero(topic == value)
            tq, tc, tl, _ = verification_pairs(codes, n_negatives=n_negatives, seed=seed, pool=pool)
            if tq.size:
                parts.append((tq, tc, tl))
        if parts:
            tq, tc, tl = (np.concatenate(x) for x in zip(*parts))
            t_ids, t_pos = np.unique(tq, return_inverse=True)
            if tl.any() and (~tl).any():
                out += verification_scores(score(tq, tc), tl, t_pos, t_ids, strata, seed=seed, n_boot=n_boot,
                                           suffix="|pool=topic", breakdowns=False)
    return out


def run_verification(scorer: TextScorer, payload, context: TaskContext, *, seed: int,
                     n_boot: int) -> list[Score]:
    """Task-table runner (``tasks.registry``): :func:`evaluate_verification` on an ``AuthorshipSet``."""
    return evaluate_verification(scorer, payload.texts, payload.authors, languages=payload.languages,
                                 genres=payload.genres, subgenres=payload.subgenres,
                                 token_lengths=payload.token_lengths, topics=payload.topics,
                                 n_negatives=payload.negatives_per_query, seed=seed, n_boot=n_boot)
