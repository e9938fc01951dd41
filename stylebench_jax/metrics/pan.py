"""PAN authorship-verification metrics (AUC, c@1, F0.5u, F1, Brier) and their two-threshold grid.

Reference: PAN's evaluator ``pan20_verif_evaluator.py`` / ``pan22_verif_evaluator.py`` in
github.com/pan-webis-de/pan-code (commit db0391d, clef20/, clef21/ and clef22/authorship-verification/),
and RAVEN's copy of it (github.com/jitkapat/hits_authorship, commit 70aa982, ``hits/utils/evaluate.py``).

A verification case has a predicted probability ``p`` in [0, 1] that the two texts share an author and a
label ``y`` in {0, 1}. A prediction of *exactly* 0.5 is a non-answer. With ``n`` cases, ``n_u``
non-answers, ``n_c`` answered cases with ``(p > 0.5) == (y == 1)``, and on answered cases TP (p > 0.5,
y = 1), FP (p > 0.5, y = 0), FN (p < 0.5, y = 1):

- ``auc``: area under the ROC curve of ``p`` over *all* cases (non-answers enter as 0.5; ties count
  1/2; Stamatatos et al. 2014);
- ``c_at_1 = (n_c + n_u * n_c / n) / n`` (Peñas & Rodrigo 2011): unanswered cases are credited with
  the accuracy of the answered ones;
- ``f05u = 1.25 TP / (1.25 TP + 0.25 (FN + n_u) + FP)`` (Bevendorff et al. 2019): F0.5 with
  non-answers counted as false negatives;
- ``f1 = 2 TP / (2 TP + FP + FN)`` over answered cases only;
- ``brier = 1 - mean((p - y)^2)`` over all cases (PAN 2021/22: the complement of the Brier loss);
- ``overall``: ``overall="raven"`` (default) is the mean of **four** (auc, c@1, f05u, f1), as RAVEN's
  ``evaluate_all`` and PAN 2020's evaluator (and RAVEN Table 2's rows check arithmetically, e.g.
  CharNGram HITS (0.964 + 0.959 + 0.859 + 0.921) / 4 = 0.926); ``overall="pan21"`` is PAN 2021/22's
  mean of five, Brier included.

Where we depart from the evaluator's code (every value it *does* return is reproduced, see
``tests/metrics/test_pan.py`` which runs a verbatim copy of it):

- no rounding: PAN rounds every metric to 3 decimals in ``evaluate_all``; we return full floats;
- ``f05u="pan21"`` (default) is the evaluator after commit 4a56c34 ("Fix F_0.5 calculation", May
  2021): 0.5 is a non-answer. ``f05u="pan20"`` is the evaluator as used for PAN 2020 (before that
  commit): ``binarize`` maps ``p >= 0.5`` to 1, so a non-answer counts as a *positive* answer
  (TP or FP) and ``n_u`` is always 0 in F0.5u;
- F0.5u when its denominator is 0 (no positive label, no positive or unanswered prediction): PAN
  raises ``ZeroDivisionError``; we return 0.0. F1 when every case is unanswered: PAN's call to
  scikit-learn raises ``ValueError`` (empty input); we return 0.0 (no answer, no credit). F1 with no
  positive label and no positive prediction: 0.0, as scikit-learn's ``zero_division`` default;
- one-class labels (AUC undefined): ``one_class="raise"`` (default) raises ``ValueError``;
  ``one_class="nan"`` returns ``auc = NaN`` (and so ``overall = NaN``) with the other metrics
  computed as usual - exactly what the evaluator's code returns with the installed scikit-learn
  (1.9), whose ``roc_auc_score`` warns and returns NaN. With the scikit-learn of 2020-2022 it raised
  ``ValueError`` and the evaluator's ``except`` returned ``auc = 0.0``;
- PAN maps NaN predictions to 0.5 in some metrics and not in others; we reject NaN, infinite and
  out-of-[0, 1] predictions and labels other than 0/1 with ``ValueError``.
"""

from __future__ import annotations

from itertools import combinations
from typing import Literal

import numpy as np

from stylebench_jax.metrics.classification import auroc

Overall = Literal["raven", "pan21"]
F05uVariant = Literal["pan21", "pan20"]
OneClass = Literal["raise", "nan"]
METRIC_NAMES = ("auc", "c_at_1", "f05u", "f1", "brier", "overall")
OVERALL_PARTS = {"raven": ("auc", "c_at_1", "f05u", "f1"), "pan21": ("auc", "c_at_1", "f05u", "f1", "brier")}
GRID_STEP = 0.01


def _check(probs, labels) -> tuple[np.ndarray, np.ndarray]:
    probs = np.asarray(probs, dtype=np.float64)
    labels = np.asarray(labels)
    if probs.ndim != 1 or labels.shape != probs.shape:
        raise ValueError(f"probs and labels must be 1-D of equal length, got shapes {probs.shape} "
                         f"and {labels.shape}")
    if probs.size == 0:
        raise ValueError("PAN metrics need at least one verification case, got none")
    if not np.all(np.isfinite(probs)) or probs.min() < 0.0 or probs.max() > 1.0:
        raise ValueError("probs must be finite probabilities in [0, 1] (0.5 = non-answer)")
    as_float = labels.astype(np.float64)
    if not np.all((as_float == 0.0) | (as_float == 1.0)):
        raise ValueError(f"labels must be 0 or 1, found {sorted(set(as_float.tolist()) - {0.0, 1.0})[:5]}")
    return probs, as_float.astype(bool)


def f05u_from_counts(tp, fp, fn, n_u):
    """``1.25 TP / (1.25 TP + 0.25 (FN + n_u) + FP)``, 0 where the denominator is 0 (arrays broadcast)."""
    tp, fp, fn, n_u = (np.asarray(x, dtype=np.float64) for x in (tp, fp, fn, n_u))
    denominator = 1.25 * tp + 0.25 * (fn + n_u) + fp
    return np.where(denominator > 0, (1.25 * tp) / np.where(denominator > 0, denominator, 1.0), 0.0)


def c_at_1_from_counts(n_correct, n_unanswered, n):
    """``(n_c + n_u * n_c / n) / n`` written as PAN's ``(1 / n) * (nc + (nu * nc / n))``."""
    n_correct, n_unanswered, n = (np.asarray(x, dtype=np.float64) for x in (n_correct, n_unanswered, n))
    return (1 / n) * (n_correct + (n_unanswered * n_correct / n))


def f1_from_counts(tp, fp, fn):
    """``2 TP / (2 TP + FP + FN)`` on answered cases, 0 where the denominator is 0."""
    tp, fp, fn = (np.asarray(x, dtype=np.float64) for x in (tp, fp, fn))
    denominator = 2 * tp + fp + fn
    return np.where(denominator > 0, 2 * tp / np.where(denominator > 0, denominator, 1.0), 0.0)


def pan_metrics(probs, labels, *, overall: Overall = "raven", f05u: F05uVariant = "pan21",
                one_class: OneClass = "raise") -> dict[str, float]:
    """PAN verification metrics of ``probs [n]`` (float in [0, 1], 0.5 = non-answer) against
    ``labels [n]`` (0/1, 1 = same author); definitions and departures from PAN's code in the module
    docstring. Returns ``{"auc", "c_at_1", "f05u", "f1", "brier", "overall"}`` as Python floats."""
    if overall not in OVERALL_PARTS:
        raise ValueError(f"overall must be one of {', '.join(OVERALL_PARTS)}, got {overall!r}")
    if f05u not in ("pan21", "pan20"):
        raise ValueError(f"f05u must be 'pan21' or 'pan20', got {f05u!r}")
    if one_class not in ("raise", "nan"):
        raise ValueError(f"one_class must be 'raise' or 'nan', got {one_class!r}")
    probs, labels = _check(probs, labels)
    n = probs.size
    unanswered = probs == 0.5
    yes, no = (probs > 0.5), (probs < 0.5)
    tp, fp, fn = int(np.sum(yes & labels)), int(np.sum(yes & ~labels)), int(np.sum(no & labels))
    n_correct = int(np.sum(yes & labels) + np.sum(no & ~labels))
    n_u = int(unanswered.sum())
    if labels.all() or not labels.any():
        if one_class == "raise":
            raise ValueError(f"labels are all {int(labels[0])}: AUC (and so overall) is undefined for "
                             "one-class labels (pass one_class='nan' to get NaN)")
        auc = float("nan")
    else:
        auc = auroc(probs, labels)
    if f05u == "pan21":
        f05 = f05u_from_counts(tp, fp, fn, n_u)
    else:  # PAN 2020: p >= 0.5 is a positive answer, nothing is unanswered
        positive = probs >= 0.5
        f05 = f05u_from_counts(np.sum(positive & labels), np.sum(positive & ~labels),
                               np.sum(~positive & labels), 0)
    result = {
        "auc": float(auc),
        "c_at_1": float(c_at_1_from_counts(n_correct, n_u, n)),
        "f05u": float(f05),
        "f1": float(f1_from_counts(tp, fp, fn)),
        "brier": float(1.0 - np.mean((probs - labels.astype(np.float64)) ** 2)),
    }
    result["overall"] = float(np.mean([result[name] for name in OVERALL_PARTS[overall]]))
    return result


# --------------------------------------------------------------------------- two-threshold calibration


def threshold_grid(step: float = GRID_STEP) -> np.ndarray:
    """PAN's grid ``np.arange(0.01, 0.99, 0.01)`` (98 values 0.01 ... 0.98) for another ``step``."""
    return np.arange(step, 0.99, step)


def rescale_two_thresholds(scores, p1: float, p2: float) -> np.ndarray:
    """PAN's ``correct_scores``: ``s <= p1 -> [0, 0.49]`` linearly from ``[0, p1]``; ``p1 < s < p2 ->
    0.5`` (non-answer); ``s >= p2 -> [0.51, 1]`` linearly from ``[p2, 1]``. ``scores`` are similarities
    in [0, 1]. Same floating-point operations as ``rescale`` in pan22-verif-baseline-cngdist.py."""
    scores = np.asarray(scores, dtype=np.float64)
    if not 0.0 < p1 < p2 < 1.0:
        raise ValueError(f"need 0 < p1 < p2 < 1, got p1={p1}, p2={p2}")
    low = 0 + ((scores - 0) / (p1 - 0)) * (0.49 - 0)
    high = 0.51 + ((scores - p2) / (1 - p2)) * (1 - 0.51)
    return np.where(scores <= p1, low, np.where(scores < p2, 0.5, high))


def two_threshold_grid(scores, labels, thresholds=None, *, overall: Overall = "raven",
                       f05u: F05uVariant = "pan21") -> tuple[np.ndarray, np.ndarray]:
    """Overall PAN score of ``rescale_two_thresholds(scores, p1, p2)`` for every ``p1 < p2`` of
    ``thresholds`` (default :func:`threshold_grid`), in ``itertools.combinations`` order.

    Returns ``(pairs [G, 2] float64, overall [G] float64)``; ``G = T (T - 1) / 2`` (4,753 for PAN's
    98 thresholds). Equal to calling :func:`pan_metrics` on each rescaled score list (tested), but in
    ``O(n log n + G)`` instead of ``O(n G)``: the rescaling keeps the order of scores outside
    ``(p1, p2)`` and ties those inside, so counts come from sorted prefix sums and the AUC of the
    rescaled scores is the raw AUC minus the (positive, negative) pairs ordered inside the band plus
    half of all pairs inside it. ``scores [n]`` in [0, 1]; ``labels [n]`` 0/1 with both classes.
    """
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels).astype(bool)
    if scores.ndim != 1 or labels.shape != scores.shape or scores.size == 0:
        raise ValueError(f"scores and labels must be non-empty 1-D of equal length, got {scores.shape} "
                         f"and {labels.shape}")
    if not np.all(np.isfinite(scores)) or scores.min() < 0.0 or scores.max() > 1.0:
        raise ValueError("scores must be finite similarities in [0, 1]")
    if labels.all() or not labels.any():
        raise ValueError("two-threshold calibration needs both same-author and different-author pairs")
    thresholds = threshold_grid() if thresholds is None else np.asarray(thresholds, dtype=np.float64)
    pairs = np.array(list(combinations(thresholds.tolist(), 2)), dtype=np.float64).reshape(-1, 2)
    pairs = pairs[pairs[:, 0] < pairs[:, 1]]
    p1, p2 = pairs[:, 0], pairs[:, 1]
    pos, neg = np.sort(scores[labels]), np.sort(scores[~labels])
    n_pos, n_neg, n = pos.size, neg.size, scores.size
    pos_low = np.searchsorted(pos, p1, "right")  # s <= p1: answered "different author"
    neg_low = np.searchsorted(neg, p1, "right")
    pos_high = n_pos - np.searchsorted(pos, p2, "left")  # s >= p2: answered "same author"
    neg_high = n_neg - np.searchsorted(neg, p2, "left")
    tp, fp, fn, tn = pos_high, neg_high, pos_low, neg_low
    n_u = n - tp - fp - fn - tn
    parts = {"c_at_1": c_at_1_from_counts(tp + tn, n_u, n), "f1": f1_from_counts(tp, fp, fn)}
    if f05u == "pan21":
        parts["f05u"] = f05u_from_counts(tp, fp, fn, n_u)
    else:  # 0.5 counts as positive: the band joins the "same author" answers
        parts["f05u"] = f05u_from_counts(n_pos - pos_low, n_neg - neg_low, pos_low, 0)
    # AUC: positive i adds g_i = #neg below + 1/2 #neg tied; prefix sums over sorted positives
    g = np.searchsorted(neg, pos, "left") + 0.5 * (np.searchsorted(neg, pos, "right")
                                                   - np.searchsorted(neg, pos, "left"))
    prefix = np.concatenate([[0.0], np.cumsum(g)])
    band_pos_lo, band_pos_hi = pos_low, n_pos - pos_high
    band_neg = n_neg - neg_high - neg_low
    inside = (prefix[band_pos_hi] - prefix[band_pos_lo]) - (band_pos_hi - band_pos_lo) * neg_low
    parts["auc"] = (prefix[-1] - inside + 0.5 * (band_pos_hi - band_pos_lo) * band_neg) / (n_pos * n_neg)
    if overall == "pan21":
        parts["brier"] = 1.0 - _grid_squared_error(scores, labels, p1, p2) / n
    total = parts[OVERALL_PARTS[overall][0]]
    for name in OVERALL_PARTS[overall][1:]:
        total = total + parts[name]
    return pairs, total / len(OVERALL_PARTS[overall])


def _grid_squared_error(scores, labels, p1, p2) -> np.ndarray:
    """``sum_i (rescaled_i - y_i)^2`` for every (p1, p2), from prefix sums of s, s^2 and y*s."""
    order = np.argsort(scores, kind="stable")
    s, y = scores[order], labels[order].astype(np.float64)

    def prefix(values):
        return np.concatenate([[0.0], np.cumsum(values)])

    c1, cs, cs2, cy, cys = prefix(np.ones_like(s)), prefix(s), prefix(s * s), prefix(y), prefix(y * s)
    lo = np.searchsorted(s, p1, "right")  # [0, lo): low region
    hi = np.searchsorted(s, p2, "left")   # [hi, n): high region; [lo, hi): band

    def range_sum(c, a, b):
        return c[b] - c[a]

    n = s.size
    # low: p = a s with a = 0.49 / p1; (a s - y)^2 = a^2 s^2 - 2 a y s + y
    a = 0.49 / p1
    low = a * a * range_sum(cs2, 0, lo) - 2 * a * range_sum(cys, 0, lo) + range_sum(cy, 0, lo)
    # band: (0.5 - y)^2 = 0.25 for y in {0, 1}
    band = 0.25 * range_sum(c1, lo, hi)
    # high: p = b + c s with c = 0.49 / (1 - p2), b = 0.51 - c p2; (b + c s - y)^2 expanded
    c = 0.49 / (1 - p2)
    b = 0.51 - c * p2
    m = n - hi
    sum_s, sum_s2 = range_sum(cs, hi, n), range_sum(cs2, hi, n)
    sum_y, sum_ys = range_sum(cy, hi, n), range_sum(cys, hi, n)
    high = (b * b * m + 2 * b * c * sum_s + c * c * sum_s2 - 2 * b * sum_y - 2 * c * sum_ys + sum_y)
    return low + band + high


def calibrate_two_thresholds(scores, labels, thresholds=None, *, overall: Overall = "raven",
                             f05u: F05uVariant = "pan21") -> tuple[float, float, float]:
    """``(p1, p2, best overall)``: the first maximiser in ``combinations`` order, like PAN's
    ``max(params, key=params.get)`` over a dict filled in that order. With ``overall="pan21"`` the
    values compared are rounded to 3 decimals first, as PAN 2021/22's ``evaluate_all`` returns them
    (so a pair ahead only in the 4th decimal does not win); RAVEN's ``evaluate_all`` does not round.
    The returned overall is the unrounded value of the chosen pair."""
    pairs, values = two_threshold_grid(scores, labels, thresholds, overall=overall, f05u=f05u)
    # numpy's rounding, as PAN's round() of a numpy float64
    best = int(np.argmax(np.round(values, 3) if overall == "pan21" else values))
    return float(pairs[best, 0]), float(pairs[best, 1]), float(values[best])
