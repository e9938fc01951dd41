"""Exact AUROC and EER from per-score-value counts (the common end of all pair-scoring paths).

Input: for each distinct score value ``t`` in ascending order, ``pos[t]`` positives and ``neg[t]``
negatives carrying that score. Values may be grouped when a group holds only positives or only
negatives (neither the AUROC nor the ROC curve's shape changes).

AUROC (Mann-Whitney U with ties counted one half; Hanley & McNeil 1982, the value of scikit-learn's
``roc_auc_score``)::

    AUROC = (#{(p, n): s_p > s_n} + 1/2 #{(p, n): s_p = s_n}) / (P N)

computed in exact integer arithmetic (2U as a Python int), then rounded once to float64.

EER (:func:`eer_from_curve`, the one EER implementation of the package): the ROC curve is the
polyline through (FPR, TPR) at every distinct threshold, from (0, 0) (threshold above every score)
to (1, 1) -- scikit-learn's ``roc_curve`` with ``drop_intermediate=False``. Along it ``FPR - FNR``
(FNR = 1 - TPR) rises from -1 to +1; the EER is the FPR where it crosses 0, linearly interpolated
between the two vertices around the crossing. This is the "ROC-based" EER of speaker verification
(NIST SRE; Bruemmer 2010) and STEB's ``brentq(lambda x: 1 - x - interp1d(fpr, tpr)(x), 0, 1)``
(steb/metrics.py). (PAN's authorship-verification evaluators report AUC, c@1, F0.5u, F1 and Brier,
no EER.)
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np

LIMB = 21  # bits per limb in exact_dot: products < 2^42, 2^20 of them per partial sum < 2^62


@dataclasses.dataclass(frozen=True)
class RocResult:
    """Exact AUROC and EER of a scored pair list: ``n_pos`` positives, ``n_neg`` negatives."""

    auroc: float
    eer: float
    n_pos: int
    n_neg: int


def eer_from_curve(fpr: np.ndarray, tpr: np.ndarray) -> np.ndarray:
    """EER of ROC polylines ``fpr, tpr [..., T]`` (each from (0, 0) to (1, 1), FPR non-decreasing):
    the FPR where ``FPR - FNR`` crosses 0, interpolated on the segment around the crossing (module
    docstring). Leading axes are independent curves (e.g. bootstrap replicates); the arithmetic
    follows the dtype of the inputs. Returns ``[...]`` (a 0-d array for one curve)."""
    fpr, tpr = np.asarray(fpr), np.asarray(tpr)
    gap = fpr - (1.0 - tpr)  # -1 at (0, 0), +1 at (1, 1), non-decreasing along the curve
    i = np.argmax(gap >= 0.0, axis=-1)[..., None]
    previous = np.maximum(i - 1, 0)
    g0, g1 = np.take_along_axis(gap, previous, -1)[..., 0], np.take_along_axis(gap, i, -1)[..., 0]
    f0, f1 = np.take_along_axis(fpr, previous, -1)[..., 0], np.take_along_axis(fpr, i, -1)[..., 0]
    with np.errstate(divide="ignore", invalid="ignore"):  # g1 == 0 needs no interpolation
        t = np.where(g1 == 0.0, 1.0, g0 / (g0 - g1))
        return np.where(g1 == 0.0, f1, f0 + t * (f1 - f0))


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


def roc_from_counts(pos: np.ndarray, neg: np.ndarray) -> RocResult:
    """Exact AUROC and EER from counts per distinct score, ascending.

    pos, neg: ``[T]`` non-negative integer counts. Raises ValueError without both classes.
    """
    pos, neg = np.asarray(pos, np.int64), np.asarray(neg, np.int64)
    n_pos, n_neg = int(pos.sum()), int(neg.sum())
    if n_pos == 0 or n_neg == 0:
        raise ValueError(f"AUROC/EER need positive and negative pairs, found {n_pos} and {n_neg}")
    auroc = float(Fraction(twice_u(pos, neg), 2 * n_pos * n_neg))
    return RocResult(auroc, eer_from_counts(pos, neg), n_pos, n_neg)


def twice_u(pos: np.ndarray, neg: np.ndarray) -> int:
    """``2 U`` (exact int) for counts ``[..., T]`` ascending along the last axis; leading axes are
    independent groups whose results are summed (used for many histogram bins at once)."""
    neg = np.asarray(neg)
    weight = np.cumsum(neg, axis=-1, dtype=np.int64)  # 2 * (negatives below) + negatives here
    weight *= 2
    weight -= neg
    return exact_dot(np.asarray(pos), weight)


def eer_from_counts(pos: np.ndarray, neg: np.ndarray) -> float:
    """EER (:func:`eer_from_curve`) of the ROC polyline of counts per distinct score, ascending."""
    n_pos, n_neg = pos.sum(), neg.sum()
    # Thresholds from high to low; point 0 is (FPR, TPR) = (0, 0).
    fpr = np.concatenate([[0.0], np.cumsum(neg[::-1]) / n_neg])
    tpr = np.concatenate([[0.0], np.cumsum(pos[::-1]) / n_pos])
    return float(eer_from_curve(fpr, tpr))


def binary_inputs(scores, labels) -> tuple[np.ndarray, np.ndarray]:
    """``scores [M]`` as given (an array) and ``labels [M]`` as bool, checked: 1-D of equal length,
    labels bool or 0/1 (a 2 or a -1 is refused, not read as True), scores finite (a NaN would sort
    as the lowest score in one metric and the highest in another)."""
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
    return scores, labels


def auroc_eer(scores: np.ndarray, labels: np.ndarray) -> RocResult:
    """Exact AUROC and EER of ``scores [M]`` (higher = more likely positive) and ``labels [M]``
    (bool or 0/1), by sorting: O(M log M) time, O(M) memory."""
    scores, labels = binary_inputs(scores, labels)
    order = np.argsort(scores, kind="stable")
    s, y = scores[order], labels[order]
    starts = np.flatnonzero(np.concatenate([[True], s[1:] != s[:-1]]))
    pos = np.add.reduceat(y.astype(np.int64), starts) if s.size else np.zeros(0, np.int64)
    sizes = np.diff(np.concatenate([starts, [s.size]]))
    return roc_from_counts(pos, sizes - pos)
