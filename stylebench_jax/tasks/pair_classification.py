"""Pair classification (STEB §3.1): is a pair of texts same-label? Scored by similarity.

Two variants, both reporting AUROC (primary) and EER (``metrics.classification``):

* **All-to-all**: every unordered pair ``i < j`` of a labelled set, positive iff ``label_i ==
  label_j`` (as STEB's ``AllToAllPairClassificationTask``). For embedders the point estimate comes
  from the streaming kernel ``kernels.all_pairs_auroc_eer`` (exact, never materialises the N^2
  scores). Similarity-only scorers are supported up to ``max_similarity_pairs`` pairs.
* **Predefined**: a given list of ``(text_a, text_b, label)`` trials; works for embedders (cosine)
  and similarity-only scorers alike (``TextScorer.similarity``).

Confidence intervals
  * Predefined: percentile bootstrap over pairs, stratified by label (positives and negatives are
    each resampled to their own count, so AUROC is defined in every replicate).
  * All-to-all: the instances are the *items*, not the pairs (pairs sharing an item are dependent).
    A bootstrap replicate resamples items with replacement, within each label (label counts stay
    fixed, as the predefined bootstrap keeps the class counts), and scores the pairs between
    distinct drawn items, each weighted by the product of its items' draw counts (the usual
    U-statistic bootstrap; copies of one item are never paired). A replicate without a same-label
    pair is an error: the set is too small for an item-level interval. To stay cheap for large
    sets, this runs on a seeded random subset of ``m = min(N, max_boot_items)`` items and the
    interval is rescaled to size N (m-out-of-n bootstrap; Bickel, Götze & van Zwet 1997): AUROC
    over all pairs is a U-statistic whose variance shrinks as 1/N, so with ``q`` the replicate
    quantiles and ``theta_m`` the subset's estimate, ``CI = theta_N + sqrt(m / N) (q - theta_m)``
    (clipped to [0, 1]). When ``N <= max_boot_items`` this is the plain percentile interval.
    The rescaling is conservative: all-pairs AUROC is a U-statistic whose variance also has terms
    shrinking faster than 1/N, which ``sqrt(m/N)`` over-credits. Measured (N = 1500, 8 labels,
    64-d, 200 replicates, widths of the AUROC interval): with item-level difficulty (AUROC 0.67) the
    interval from m = 200 is 0.021-0.025 wide against 0.020-0.022 from all 1500 items; with almost
    no item-level signal (AUROC 0.52) 0.012-0.015 against 0.006.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stylebench_jax.data.units import LabelledTexts, TextPairs
from stylebench_jax.kernels import all_pairs_auroc_eer
from stylebench_jax.metrics import (
    auroc,
    auroc_eer_batch,
    bootstrap_replicates,
    equal_error_rate,
    percentile_interval,
)
from stylebench_jax.metrics.labels import encode_labels
from stylebench_jax.metrics.roc import binary_inputs
from stylebench_jax.tasks.base import NotApplicable, Score, TaskContext, TextScorer, TooFewInstances

MAX_BOOT_ITEMS = 200
MAX_SIMILARITY_PAIRS = 200_000
# Largest number of (replicate, pair) weights scored at once inside one bootstrap statistic.
_MAX_PAIR_WEIGHTS = 1 << 21


def _label_codes(labels: Sequence) -> np.ndarray:
    return encode_labels(labels)[0]


def _check_both_classes(same: np.ndarray, what: str) -> None:
    if same.all() or not same.any():
        kind = "different" if same.all() else "same"
        raise TooFewInstances(f"{what}: no {kind}-label pairs, so AUROC is undefined")


def all_pairs_scores(embeddings: np.ndarray, labels: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """Cosine scores and same-label flags of all pairs ``i < j`` (row-major order), in NumPy.

    ``embeddings [N, D]`` L2-normalised. Returns ``(scores [N(N-1)/2] float64, same [..] bool)``.
    Materialises the pairs: the reference for small N; large N goes through the kernel.
    """
    codes = _label_codes(labels)
    vectors = np.asarray(embeddings, dtype=np.float64)
    i, j = np.triu_indices(codes.size, k=1)
    return np.einsum("pd,pd->p", vectors[i], vectors[j]), codes[i] == codes[j]


def _weighted_pair_stat(pair_scores: np.ndarray, same: np.ndarray, i: np.ndarray, j: np.ndarray):
    """Bootstrap statistic over item weights ``[b, m]`` -> (auroc [b], eer [b]) of weighted pairs."""
    rows = max(1, _MAX_PAIR_WEIGHTS // max(pair_scores.size, 1))

    def stat(item_weights: np.ndarray) -> np.ndarray:
        aurocs, eers = [], []
        for start in range(0, item_weights.shape[0], rows):
            w = item_weights[start:start + rows].astype(np.float32)  # small integer counts: exact
            a, e = auroc_eer_batch(pair_scores, same, w[:, i] * w[:, j])
            aurocs.append(a)
            eers.append(e)
        return np.stack([np.concatenate(aurocs), np.concatenate(eers)])

    return stat


def _item_bootstrap(pair_scores_of, n_items: int, codes: np.ndarray, point: tuple[float, float], *,
                    seed: int, n_boot: int, max_boot_items: int) -> list[tuple[float, float]]:
    """CIs ``[(lo, hi) auroc, (lo, hi) eer]`` by the (m-out-of-n) item bootstrap of the module docstring.

    ``pair_scores_of(subset [m] int) -> scores [m(m-1)/2]`` in ``np.triu_indices(m, 1)`` order.
    """
    rng = np.random.default_rng(seed)
    m = min(n_items, max_boot_items)
    subset = np.sort(rng.choice(n_items, size=m, replace=False)) if m < n_items else np.arange(n_items)
    i, j = np.triu_indices(m, k=1)
    sub_scores = np.asarray(pair_scores_of(subset), dtype=np.float64)
    sub_same = codes[subset][i] == codes[subset][j]
    _check_both_classes(sub_same, f"bootstrap subset of {m} items")
    theta_m = auroc(sub_scores, sub_same), equal_error_rate(sub_scores, sub_same)
    try:
        reps = bootstrap_replicates(_weighted_pair_stat(sub_scores, sub_same, i, j), m, n_boot=n_boot,
                                    seed=seed + 1, strata=codes[subset])
    except ValueError as error:
        raise TooFewInstances(f"all-to-all item bootstrap on {m} items: {error}; every label needs several "
                         f"items for an item-level interval") from None
    scale = np.sqrt(m / n_items)
    out = []
    for row, theta_sub, theta_n in zip(reps, theta_m, point):
        low, high = percentile_interval(row)
        out.append((float(np.clip(theta_n + scale * (low - theta_sub), 0.0, 1.0)),
                    float(np.clip(theta_n + scale * (high - theta_sub), 0.0, 1.0))))
    return out


def all_to_all_from_embeddings(embeddings: np.ndarray, labels: Sequence, *, seed: int = 0,
                               n_boot: int = 1000, max_boot_items: int = MAX_BOOT_ITEMS,
                               block_size: int | None = None, mesh=None) -> list[Score]:
    """All-to-all protocol on ``[N, D]`` L2-normalised embeddings: ``[Score("auroc"), Score("eer")]``.

    The point estimate is exact over all ``N(N-1)/2`` pairs (streaming kernel, optionally sharded
    over ``mesh``); ``n`` in the Scores is the number of items N (the bootstrap unit).
    """
    embeddings = np.asarray(embeddings, dtype=np.float32)
    codes = _label_codes(labels)
    if embeddings.ndim != 2 or embeddings.shape[0] != codes.size:
        raise ValueError(f"embeddings {embeddings.shape} do not match {codes.size} labels")
    sizes = np.bincount(codes).astype(np.int64)
    n_pos = int((sizes * (sizes - 1) // 2).sum())
    n_neg = codes.size * (codes.size - 1) // 2 - n_pos
    if n_pos == 0 or n_neg == 0:  # known from the labels: checked before the kernel runs
        raise TooFewInstances(f"all-to-all pairs: {n_pos} same-label and {n_neg} "
                              f"different-label pairs; AUROC needs both")
    kwargs = {} if block_size is None else {"block_size": block_size}
    result = all_pairs_auroc_eer(embeddings, codes, mesh=mesh, **kwargs)
    point = float(result.auroc), float(result.eer)
    vectors = embeddings.astype(np.float64)

    def pair_scores_of(subset):
        sub = vectors[subset]
        return (sub @ sub.T)[np.triu_indices(subset.size, k=1)]

    (a_lo, a_hi), (e_lo, e_hi) = _item_bootstrap(pair_scores_of, codes.size, codes, point, seed=seed,
                                                 n_boot=n_boot, max_boot_items=max_boot_items)
    n = int(codes.size)
    return [Score("auroc", point[0], a_lo, a_hi, n), Score("eer", point[1], e_lo, e_hi, n)]


def all_to_all_from_similarity(scorer: TextScorer, texts: Sequence[str], labels: Sequence, *, seed: int = 0,
                               n_boot: int = 1000, max_boot_items: int = MAX_BOOT_ITEMS,
                               max_similarity_pairs: int = MAX_SIMILARITY_PAIRS) -> list[Score]:
    """All-to-all protocol for a similarity-only scorer: scores every pair with ``scorer.similarity``.

    Raises ``NotApplicable`` when ``N(N-1)/2 > max_similarity_pairs`` (too slow pairwise).
    """
    codes = _label_codes(labels)
    n = codes.size
    n_pairs = n * (n - 1) // 2
    if n_pairs > max_similarity_pairs:
        raise NotApplicable(f"{scorer.name} is similarity-only; all-to-all on {n} texts needs {n_pairs} "
                            f"pairwise calls (limit {max_similarity_pairs})")
    i, j = np.triu_indices(n, k=1)
    texts = list(texts)
    scores = scorer.similarity([texts[k] for k in i], [texts[k] for k in j])
    same = codes[i] == codes[j]
    _check_both_classes(same, "all-to-all pairs")
    matrix = np.zeros((n, n))
    matrix[i, j] = scores
    point = auroc(scores, same), equal_error_rate(scores, same)

    def pair_scores_of(subset):
        return matrix[np.ix_(subset, subset)][np.triu_indices(subset.size, k=1)]

    (a_lo, a_hi), (e_lo, e_hi) = _item_bootstrap(pair_scores_of, n, codes, point, seed=seed, n_boot=n_boot,
                                                 max_boot_items=max_boot_items)
    return [Score("auroc", point[0], a_lo, a_hi, n), Score("eer", point[1], e_lo, e_hi, n)]


def evaluate_all_to_all(scorer: TextScorer, texts: Sequence[str], labels: Sequence, *, seed: int = 0,
                        n_boot: int = 1000, max_boot_items: int = MAX_BOOT_ITEMS, mesh=None) -> list[Score]:
    """STEB all-to-all pair classification: ``[Score("auroc"), Score("eer")]`` (first = primary)."""
    if len(texts) != len(labels):
        raise ValueError(f"{len(texts)} texts but {len(labels)} labels")
    if scorer.has_vectors:
        return all_to_all_from_embeddings(scorer.embed(texts), labels, seed=seed, n_boot=n_boot,
                                          max_boot_items=max_boot_items, mesh=mesh)
    return all_to_all_from_similarity(scorer, texts, labels, seed=seed, n_boot=n_boot,
                                      max_boot_items=max_boot_items)


def predefined_pair_scores(scores, labels, *, seed: int = 0, n_boot: int = 1000) -> list[Score]:
    """AUROC and EER of given pair ``scores [P]`` with 0/1 ``labels [P]``; CIs by a label-stratified
    bootstrap over pairs. Returns ``[Score("auroc"), Score("eer")]`` with ``n = P``."""
    scores, same = binary_inputs(np.asarray(scores, dtype=np.float64), labels)  # labels bool or 0/1
    _check_both_classes(same, "predefined pairs")
    point = auroc(scores, same), equal_error_rate(scores, same)
    reps = bootstrap_replicates(lambda w: np.stack(auroc_eer_batch(scores, same, w)), scores.size,
                                n_boot=n_boot, seed=seed, strata=same)
    n = int(scores.size)
    return [Score("auroc", point[0], *percentile_interval(reps[0]), n),
            Score("eer", point[1], *percentile_interval(reps[1]), n)]


def evaluate_predefined_pairs(scorer: TextScorer, pairs: Sequence[tuple[str, str, object]], *, seed: int = 0,
                              n_boot: int = 1000) -> list[Score]:
    """STEB predefined pair classification on ``(text_a, text_b, label)`` trials.

    ``label`` is truthy for a same-label (positive) trial. Works for embedders and similarity-only
    scorers. Returns ``[Score("auroc"), Score("eer")]`` (first = primary).
    """
    if not pairs:
        raise TooFewInstances("no pairs given")
    a = [p[0] for p in pairs]
    b = [p[1] for p in pairs]
    labels = np.array([bool(p[2]) for p in pairs])
    return predefined_pair_scores(scorer.similarity(a, b), labels, seed=seed, n_boot=n_boot)


def run_all_to_all(scorer: TextScorer, payload: LabelledTexts, context: TaskContext, *, seed: int,
                   n_boot: int) -> list[Score]:
    """Task-table runner (``tasks.registry``) of :func:`evaluate_all_to_all` on the run's mesh."""
    return evaluate_all_to_all(scorer, payload.texts, payload.labels, seed=seed, n_boot=n_boot,
                               mesh=context.mesh)


def run_predefined_pairs(scorer: TextScorer, payload: TextPairs, context: TaskContext, *, seed: int,
                         n_boot: int) -> list[Score]:
    """Task-table runner (``tasks.registry``) of :func:`evaluate_predefined_pairs`."""
    pairs = list(zip(payload.a, payload.b, payload.labels))
    return evaluate_predefined_pairs(scorer, pairs, seed=seed, n_boot=n_boot)
