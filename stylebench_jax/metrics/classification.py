"""Binary score-list metrics (AUROC, EER) and accuracy.

Conventions: ``scores [P]`` are similarities (higher = more likely positive), ``labels [P]`` are
0/1 (1 = positive, e.g. same author). Tied scores are handled as scikit-learn's ROC curve does:
one ROC vertex per distinct threshold, so a positive tied with a negative counts 1/2 in AUROC.

``auroc_eer_batch`` scores many weightings of one fixed score list at once (bootstrap replicates
as resample counts); it is tested against scikit-learn with ``sample_weight``.
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import roc_auc_score, roc_curve

from stylebench_jax.metrics.roc import binary_inputs, eer_from_curve


def _check_binary(scores, labels) -> tuple[np.ndarray, np.ndarray]:
    scores, labels = binary_inputs(np.asarray(scores, dtype=np.float64), labels)
    if labels.all() or not labels.any():
        raise ValueError("AUROC/EER need at least one positive and one negative pair")
    return scores, labels


def auroc(scores, labels, sample_weight=None) -> float:
    """Area under the ROC curve = P(score of a random positive > score of a random negative),
    ties counting 1/2 (Mann-Whitney U / (n_pos n_neg); Hanley & McNeil 1982).

    Wraps ``sklearn.metrics.roc_auc_score``. ``sample_weight [P]`` weights pairs (bootstrap counts).
    """
    scores, labels = _check_binary(scores, labels)
    return float(roc_auc_score(labels, scores, sample_weight=sample_weight))


def equal_error_rate(scores, labels, sample_weight=None) -> float:
    """Equal error rate: the value at which FPR = FNR (= 1 - TPR) on the ROC curve.

    The ROC curve is the polyline through scikit-learn's ``roc_curve`` vertices (one per distinct
    threshold, from (0, 0) to (1, 1)); the EER is where it crosses FPR = FNR, interpolated
    (:func:`stylebench_jax.metrics.roc.eer_from_curve`, the same point as STEB's ``brentq`` on
    ``interp1d(fpr, tpr)``). Range [0, 1]; 0.5 for uninformative scores. Lower is better.
    """
    scores, labels = _check_binary(scores, labels)
    fpr, tpr, _ = roc_curve(labels, scores, sample_weight=sample_weight, drop_intermediate=False)
    return float(eer_from_curve(fpr, tpr))


def accuracy(predicted, expected) -> float:
    """Share of positions where ``predicted[i] == expected[i]`` (both ``[N]``)."""
    predicted, expected = np.asarray(predicted), np.asarray(expected)
    if predicted.shape != expected.shape or predicted.ndim != 1 or predicted.size == 0:
        raise ValueError(f"accuracy needs two non-empty 1-D arrays of equal length, got "
                         f"{predicted.shape} and {expected.shape}")
    return float(np.mean(predicted == expected))


def auroc_eer_batch(scores, labels, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """AUROC and EER of one score list under ``b`` weightings: ``weights [b, P]`` -> ``([b], [b])``.

    Same definitions as :func:`auroc` and :func:`equal_error_rate` with ``sample_weight=weights[j]``.
    Sorts once, then per weighting accumulates weighted true/false positives per distinct threshold
    (``O(b P)``), integrates the ROC polyline by the trapezoid rule (ties count 1/2) and finds the
    FPR = FNR crossing by linear interpolation. A weighting with no positive or no negative weight
    gives NaN. ``float32`` weights are computed in float32 (half the memory traffic; counts are
    exact while totals stay below 2^24, rates to ~1e-6), anything else in float64.
    """
    scores, labels = binary_inputs(np.asarray(scores, dtype=np.float64), labels)
    weights = np.atleast_2d(np.asarray(weights))
    if weights.dtype != np.float32:
        weights = weights.astype(np.float64)
    if weights.shape[1] != scores.size or labels.shape != scores.shape:
        raise ValueError(f"weights {weights.shape} do not match {scores.size} scores")
    order = np.argsort(-scores, kind="stable")
    sorted_scores = scores[order]
    starts = np.flatnonzero(np.r_[True, sorted_scores[1:] != sorted_scores[:-1]])
    w = weights[:, order]
    pos = np.add.reduceat(w * labels[order], starts, axis=1)
    neg = np.add.reduceat(w * ~labels[order], starts, axis=1)
    tp = np.cumsum(pos, axis=1)
    fp = np.cumsum(neg, axis=1)
    p_total, n_total = tp[:, -1:], fp[:, -1:]
    valid = (p_total[:, 0] > 0) & (n_total[:, 0] > 0)
    p_safe, n_safe = np.where(p_total > 0, p_total, 1.0), np.where(n_total > 0, n_total, 1.0)
    zeros = np.zeros((w.shape[0], 1), dtype=w.dtype)
    tpr = np.concatenate([zeros, tp / p_safe], axis=1)
    fpr = np.concatenate([zeros, fp / n_safe], axis=1)
    area = np.sum(np.diff(fpr, axis=1) * (tpr[:, 1:] + tpr[:, :-1]) / 2.0, axis=1)
    eer = eer_from_curve(fpr, tpr)  # rows without both classes: NaN below
    return (np.where(valid, area, np.nan).astype(np.float64), np.where(valid, eer, np.nan).astype(np.float64))
