"""Exact AUROC and EER from per-score-value counts (the common end of all pair-scoring paths).

Input: for each distinct score value ``t`` in ascending order, ``pos[t]`` positives and ``neg[t]``
negatives carrying that score. Values may be grouped when a group holds only positives or only
negatives (neither the AUROC nor the ROC curve's shape changes).

AUROC (Mann-Whitney U with ties counted one half; Hanley & McNeil 1982, the value of scikit-learn's
``roc_auc_score``)::

    AUROC = (#{(p, n): s_p > s_n} + 1/2 #{(p, n): s_p = s_n}) / (P N)

computed in exact integer arithmetic (2U as a Python int), then rounded once to float64.

EER: the ROC curve is the polyline through (FPR, TPR) at every distinct threshold, from (0, 0)
(threshold above every score) down to (1, 1) -- scikit-learn's ``roc_curve`` with
``drop_intermediate=False``. The EER is where that polyline crosses FNR = 1 - TPR = FPR, found by
linear interpolation on the segment whose ends have FNR - FPR of opposite signs (the common
"ROC-based" EER of speaker and authorship verification, e.g. PAN's and pyannote's).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

LIMB = 21  # bits per limb in exact_dot: products < 2^42, 2^20 of them per partial sum < 2^62


def exact_dot(a: np.ndarray, b: np.ndarray) -> int:
    """Exact ``sum(a * b)`` of non-negative int64 vectors with entries < 2^42, as a Python int."""
    a, b = np.asarray(a, np.int64).ravel(), np.asarray(b, np.int64).ravel()
    if not a.size:
        return 0
    if a.min() < 0 or b.min() < 0 or max(a.max(), b.max()) >= 1 << (2 * LIMB):
        raise ValueError("exact_dot expects non-negative counts below 2^42")
    if int(a.sum()) * int(b.max()) < 1 << 63:  # the sum itself bounds every partial sum
        return int(np.dot(a, b))
    mask = (1 << LIMB) - 1
    a_limbs, b_limbs = (a & mask, a >> LIMB), (b & mask, b >> LIMB)
    total = 0
    for start in range(0, a.size, 1 << 20):
        sl = slice(start, start + (1 << 20))
        for i, ai in enumerate(a_limbs):
            for j, bj in enumerate(b_limbs):
                total += int(np.dot(ai[sl], bj[sl])) << (LIMB * (i + j))
    return total


def roc_from_counts(pos: np.ndarray, neg: np.ndarray) -> dict:
    """``{"auroc", "eer", "n_pos", "n_neg"}`` from counts per distinct score, ascending.

    pos, neg: ``[T]`` non-negative integer counts. Raises ValueError without both classes.
    """
    pos, neg = np.asarray(pos, np.int64), np.asarray(neg, np.int64)
    n_pos, n_neg = int(pos.sum()), int(neg.sum())
    if n_pos == 0 or n_neg == 0:
        raise ValueError(f"AUROC/EER need positive and negative pairs, found {n_pos} and {n_neg}")
    auroc = float(Fraction(twice_u(pos, neg), 2 * n_pos * n_neg))
    return {"auroc": auroc, "eer": eer_from_counts(pos, neg), "n_pos": n_pos, "n_neg": n_neg}


def twice_u(pos: np.ndarray, neg: np.ndarray) -> int:
    """``2 U`` (exact int) for counts ``[..., T]`` ascending along the last axis; leading axes are
    independent groups whose results are summed (used for many histogram bins at once)."""
    neg = np.asarray(neg)
    weight = np.cumsum(neg, axis=-1, dtype=np.int64)  # 2 * (negatives below) + negatives here
    weight *= 2
    weight -= neg
    return exact_dot(np.asarray(pos), weight)


def eer_from_counts(pos: np.ndarray, neg: np.ndarray) -> float:
    """Equal error rate by interpolating the ROC polyline (see module docstring)."""
    n_pos, n_neg = pos.sum(), neg.sum()
    # Walk thresholds from high to low; point 0 is (FPR, TPR) = (0, 0).
    fpr = np.concatenate([[0.0], np.cumsum(neg[::-1]) / n_neg])
    fnr = np.concatenate([[1.0], 1.0 - np.cumsum(pos[::-1]) / n_pos])
    gap = fnr - fpr
    i = int(np.argmax(gap <= 0))  # first point with FNR <= FPR; exists since the last has FNR = 0
    if gap[i] == 0:
        return float(fpr[i])
    w = gap[i - 1] / (gap[i - 1] - gap[i])
    return float(fpr[i - 1] + w * (fpr[i] - fpr[i - 1]))


def auroc_eer(scores: np.ndarray, labels: np.ndarray) -> dict:
    """Exact AUROC and EER of ``scores [M]`` (higher = more likely positive) and ``labels [M]``
    (bool or 0/1), by sorting: O(M log M) time, O(M) memory."""
    scores = np.asarray(scores)
    labels = np.asarray(labels)
    if scores.ndim != 1 or labels.shape != scores.shape:
        raise ValueError(f"scores and labels must be 1-D of equal length, "
                         f"found {scores.shape} and {labels.shape}")
    if labels.dtype != bool:
        if not np.isin(labels, (0, 1)).all():
            raise ValueError("labels must be bool or 0/1")
        labels = labels.astype(bool)
    if not np.isfinite(scores).all():
        raise ValueError("scores hold NaN or infinity")
    order = np.argsort(scores, kind="stable")
    s, y = scores[order], labels[order]
    starts = np.flatnonzero(np.concatenate([[True], s[1:] != s[:-1]]))
    pos = np.add.reduceat(y.astype(np.int64), starts) if s.size else np.zeros(0, np.int64)
    sizes = np.diff(np.concatenate([starts, [s.size]]))
    return roc_from_counts(pos, sizes - pos)
