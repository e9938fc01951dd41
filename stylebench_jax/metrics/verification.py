"""Equal error rate for verification, in the two definitions in use.

``scores [P]`` similarities (higher = more likely the same author), ``labels [P]`` 0/1 or bool
(1 = positive pair). ``P_pos`` positives, ``P_neg`` negatives.

* ``method="threshold"`` (AuthBench App. A.9, eqs. 1-2): at a threshold ``tau``
  ``FAR(tau) = #{negatives with s >= tau} / P_neg`` and ``FRR(tau) = #{positives with s < tau} / P_pos``;
  ``tau* = argmin_tau |FAR(tau) - FRR(tau)|`` over every distinct score and ``+inf`` (FAR and FRR
  only change there). The paper writes ``EER = FAR(tau*) = FRR(tau*)``; on finite data the two rarely
  meet exactly, so we report their mean ``(FAR(tau*) + FRR(tau*)) / 2`` (the common reading, e.g.
  in speaker-verification toolkits' "nearest point" EER). Among thresholds with the same gap the
  smallest ``tau`` wins (deterministic). A step function of the scores: changes by multiples of
  ``1/P_pos`` and ``1/P_neg``.
* ``method="roc"``: the ROC-interpolated EER of :func:`metrics.classification.equal_error_rate`
  (the crossing of the ROC polyline with FPR = FNR, linearly interpolated). It is what AuthBench's
  evaluation code computes (``compute_eer`` in ``eval/metrics.py`` of github.com/mao-code/AURA_Bench,
  commit b73d8de, interpolates the first FPR/FNR crossing) and what STEB computes (steb/metrics.py
  ``calculate_eer``). PAN's verification evaluators compute no EER (they report AUC, c@1, F0.5u, F1
  and Brier: ``metrics.pan``). Without tied scores the two agree to within about one step
  ``max(1/P_pos, 1/P_neg)``; a group of tied scores is one step of the threshold rule but a sloped
  segment of the ROC polyline, so with many ties they can differ by much more (e.g. 0.75 vs 0.59
  with steps of 1/8 on 18 pairs of integer scores).
"""

from __future__ import annotations

import numpy as np

from stylebench_jax.metrics.classification import _check_binary, equal_error_rate
from stylebench_jax.metrics.roc import binary_inputs

EER_METHODS = ("threshold", "roc")


def _threshold_counts(scores: np.ndarray, labels: np.ndarray, weights: np.ndarray):
    """Weighted counts at every distinct score (ascending) and at +inf: ``neg_at_or_above [b, T + 1]``
    (FAR's numerator), ``pos_below [b, T + 1]`` (FRR's numerator), ``neg_total [b, 1]``,
    ``pos_total [b, 1]``."""
    order = np.argsort(scores, kind="stable")
    s = scores[order]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    w = weights[:, order]
    pos = np.add.reduceat(w * labels[order], starts, axis=1)   # weight of positives at each value
    neg = np.add.reduceat(w * ~labels[order], starts, axis=1)
    zeros = np.zeros((w.shape[0], 1), dtype=w.dtype)
    pos_below = np.concatenate([zeros, np.cumsum(pos, axis=1)], axis=1)  # positives with s < tau_j
    neg_total = neg.sum(axis=1, keepdims=True)
    neg_at_or_above = neg_total - np.concatenate([zeros, np.cumsum(neg, axis=1)], axis=1)[:, :-1]
    neg_at_or_above = np.concatenate([neg_at_or_above, zeros], axis=1)   # tau = +inf accepts nothing
    return neg_at_or_above, pos_below, neg_total, pos_below[:, -1:]


def eer_threshold_batch(scores, labels, weights) -> np.ndarray:
    """Threshold EER (module docstring) of one score list under ``b`` weightings ``[b, P]`` -> ``[b]``.

    Weight ``w_i`` counts pair ``i`` ``w_i`` times (bootstrap resample counts). A weighting without
    positive or negative weight gives NaN. The gap is compared as the cross product
    ``|neg_at_or_above * P_pos - pos_below * P_neg|`` (``P_pos * P_neg`` times ``|FAR - FRR|``), exact
    for integer weights, so equal gaps tie exactly and the smallest threshold wins; comparing the
    two divided rates would let rounding pick (``|1/2 - 3/7|`` and ``|1/2 - 4/7|`` differ in the last bit).
    """
    scores, labels = binary_inputs(np.asarray(scores, dtype=np.float64), labels)
    weights = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    if weights.shape[1] != scores.size or labels.shape != scores.shape:
        raise ValueError(f"weights {weights.shape} do not match {scores.size} scores")
    neg_ge, pos_below, neg_total, pos_total = _threshold_counts(scores, labels, weights)
    valid = (pos_total[:, 0] > 0) & (neg_total[:, 0] > 0)
    cross = np.abs(neg_ge * pos_total - pos_below * neg_total)
    best = np.argmin(cross, axis=1)[:, None]   # first = smallest threshold
    with np.errstate(divide="ignore", invalid="ignore"):
        far = np.take_along_axis(neg_ge, best, axis=1)[:, 0] / neg_total[:, 0]
        frr = np.take_along_axis(pos_below, best, axis=1)[:, 0] / pos_total[:, 0]
    return np.where(valid, (far + frr) / 2.0, np.nan)


def eer_threshold(scores, labels) -> float:
    """AuthBench's EER: ``(FAR + FRR) / 2`` at ``tau* = argmin |FAR - FRR|`` (module docstring)."""
    scores, labels = _check_binary(scores, labels)
    return float(eer_threshold_batch(scores, labels, np.ones((1, scores.size)))[0])


def eer(scores, labels, method: str = "threshold") -> float:
    """Equal error rate of ``scores [P]`` against ``labels [P]``; ``method`` ``"threshold"``
    (AuthBench's definition, the default) or ``"roc"`` (ROC-interpolated). Lower is better; 0.5 for
    uninformative scores."""
    if method == "threshold":
        return eer_threshold(scores, labels)
    if method == "roc":
        return equal_error_rate(scores, labels)
    raise ValueError(f"method: expected one of {', '.join(EER_METHODS)}, found {method!r}")
