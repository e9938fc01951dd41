"""PAN verification metrics against a verbatim copy of PAN's evaluator (pan_reference.py)."""

from __future__ import annotations

import math
import warnings
from itertools import combinations

import numpy as np
import pan_reference as pan
import pytest

from stylebench_jax.metrics import (
    calibrate_two_thresholds,
    pan_metrics,
    rescale_two_thresholds,
    two_threshold_grid,
)
from stylebench_jax.metrics.pan import threshold_grid


def reference(metric, labels, probs):
    """One PAN metric, with the documented departures where PAN's code raises."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn's one-class / zero-division warnings
        try:
            return float(metric(labels, probs))
        except ZeroDivisionError:  # F0.5u: no positive label, no positive or unanswered prediction
            assert metric in (pan.f_05_u_score, pan.f_05_u_score_pan20)
            return 0.0
        except ValueError:  # F1 with every case unanswered: scikit-learn gets empty arrays
            assert metric is pan.f1 and all(p == 0.5 for p in probs)
            return 0.0


def random_case(rng: np.random.Generator, index: int) -> tuple[np.ndarray, np.ndarray]:
    n = int(rng.integers(1, 60))
    kind = index % 6
    labels = (rng.random(n) < rng.uniform(0.2, 0.8)).astype(np.float64)
    if kind == 0:  # one-class labels
        labels[:] = float(rng.integers(2))
    probs = rng.random(n)
    if kind == 1:  # all non-answers
        probs[:] = 0.5
    elif kind == 2:  # coarse values: ties, exact 0 / 1
        probs = np.round(probs * 4) / 4
    unanswered = rng.random(n) < rng.uniform(0.0, 0.5)
    probs[unanswered] = 0.5
    return probs, labels


def test_hand_computed_case():
    # probs/labels: (0.9, 1) correct, (0.5, 1) unanswered, (0.2, 0) correct, (0.7, 0) false positive.
    probs, labels = [0.9, 0.5, 0.2, 0.7], [1, 1, 0, 0]
    got = pan_metrics(probs, labels)
    assert got["c_at_1"] == pytest.approx((2 + 1 * 2 / 4) / 4)  # n_c = 2, n_u = 1, n = 4
    assert got["f05u"] == pytest.approx(1.25 / (1.25 + 0.25 * (0 + 1) + 1))  # TP 1, FN 0, n_u 1, FP 1
    assert got["f1"] == pytest.approx(2 / 3)  # answered: TP 1, FP 1, FN 0
    assert got["auc"] == pytest.approx(0.75)  # (0.9 > 0.2, 0.9 > 0.7, 0.5 > 0.2; 0.5 < 0.7)
    assert got["brier"] == pytest.approx(1 - (0.01 + 0.25 + 0.04 + 0.49) / 4)
    assert got["overall"] == pytest.approx((0.75 + 0.625 + 0.5 + 2 / 3) / 4)
    pan21 = pan_metrics(probs, labels, overall="pan21")
    assert pan21["overall"] == pytest.approx((0.75 + 0.625 + 0.5 + 2 / 3 + 0.8025) / 5)
    # PAN 2020's F0.5u counts the 0.5 as a positive answer: TP 2, FP 1, FN 0, n_u 0
    assert pan_metrics(probs, labels, f05u="pan20")["f05u"] == pytest.approx(2.5 / 3.5)


def test_raven_overall_is_the_mean_of_four_as_table_2_shows():
    """RAVEN Table 2 (HITS rows): Overall = mean(AUC, c@1, F0.5u, F1) to rounding; with Brier it
    could not be (Brier is not reported)."""
    rows = [(0.964, 0.959, 0.859, 0.921, 0.926), (0.976, 0.944, 0.854, 0.877, 0.913),
            (0.950, 0.908, 0.724, 0.826, 0.852), (0.904, 0.672, 0.458, 0.560, 0.648),
            (0.964, 0.931, 0.775, 0.880, 0.887), (0.966, 0.962, 0.863, 0.918, 0.927),
            (0.977, 0.955, 0.879, 0.893, 0.926), (0.961, 0.928, 0.754, 0.852, 0.874)]
    for *parts, overall in rows:
        assert abs(np.mean(parts) - overall) <= 0.0011


@pytest.mark.parametrize("index", range(300))
def test_agrees_with_pan_evaluator_on_random_cases(index):
    rng = np.random.default_rng([13, index])
    probs, labels = random_case(rng, index)
    one_class = labels.min() == labels.max()
    got = pan_metrics(probs, labels, one_class="nan")
    expected = {
        "c_at_1": reference(pan.c_at_1, labels, probs),
        "f05u": reference(pan.f_05_u_score, labels, probs),
        "f1": reference(pan.f1, labels, probs),
        "brier": reference(pan.brier_score, labels, probs),
        "auc": reference(pan.auc, labels, probs),
    }
    for name, value in expected.items():
        if name == "auc" and one_class:
            assert math.isnan(got["auc"]) and math.isnan(value)  # sklearn 1.9: NaN, not ValueError
            continue
        assert got[name] == pytest.approx(value, abs=1e-12), name
    raven = np.mean([expected[k] for k in ("auc", "c_at_1", "f05u", "f1")])
    pan21 = np.mean([expected[k] for k in ("auc", "c_at_1", "f05u", "f1", "brier")])
    assert got["overall"] == pytest.approx(raven, abs=1e-12, nan_ok=True)
    assert pan_metrics(probs, labels, one_class="nan", overall="pan21")["overall"] == \
        pytest.approx(pan21, abs=1e-12, nan_ok=True)
    assert pan_metrics(probs, labels, one_class="nan", f05u="pan20")["f05u"] == \
        pytest.approx(reference(pan.f_05_u_score_pan20, labels, probs), abs=1e-12)
    if not one_class and (probs != 0.5).any():  # where PAN's own functions all return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                whole = pan.evaluate_all_raven(labels, probs)
            except ZeroDivisionError:
                return
        assert got["overall"] == pytest.approx(whole["overall"], abs=1e-12)


def test_cases_cover_the_edge_kinds():
    rng_cases = [random_case(np.random.default_rng([13, i]), i) for i in range(300)]
    assert sum(bool(np.all(p == 0.5)) for p, _ in rng_cases) >= 50
    assert sum(bool(lab.min() == lab.max()) for _, lab in rng_cases) >= 50
    assert sum(bool(np.any(p == 0.5) and np.any(p != 0.5)) for p, _ in rng_cases) >= 150


def test_one_class_and_bad_input_errors():
    with pytest.raises(ValueError, match="one-class"):
        pan_metrics([0.2, 0.8], [1, 1])
    assert math.isnan(pan_metrics([0.2, 0.8], [1, 1], one_class="nan")["overall"])
    with pytest.raises(ValueError, match="at least one"):
        pan_metrics([], [])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        pan_metrics([0.2, 1.5], [0, 1])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        pan_metrics([0.2, float("nan")], [0, 1])
    with pytest.raises(ValueError, match="0 or 1"):
        pan_metrics([0.2, 0.7], [0, 2])
    with pytest.raises(ValueError, match="equal length"):
        pan_metrics([0.2, 0.7], [0])
    with pytest.raises(ValueError, match="overall"):
        pan_metrics([0.2, 0.7], [0, 1], overall="pan2020")


def test_rescale_matches_pan_correct_scores():
    rng = np.random.default_rng(3)
    scores = np.concatenate([rng.random(200), [0.0, 1.0, 0.3, 0.6, 0.30000000000000004]])
    for p1, p2 in [(0.3, 0.6), (0.01, 0.98), (0.55, 0.56)]:
        expected = np.array(list(pan.correct_scores(scores, p1, p2)))
        np.testing.assert_array_equal(rescale_two_thresholds(scores, p1, p2), expected)


def brute_force_grid(scores, labels, thresholds, overall_parts):
    values = []
    for p1, p2 in combinations(thresholds, 2):
        corrected = np.array(list(pan.correct_scores(scores, p1=p1, p2=p2)))
        parts = {"auc": reference(pan.auc, labels, corrected),
                 "c_at_1": reference(pan.c_at_1, labels, corrected),
                 "f05u": reference(pan.f_05_u_score, labels, corrected),
                 "f1": reference(pan.f1, labels, corrected),
                 "brier": reference(pan.brier_score, labels, corrected)}
        values.append(np.mean([parts[k] for k in overall_parts]))
    return np.array(values)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("overall", ["raven", "pan21"])
def test_grid_equals_brute_force_pan(seed, overall):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(8, 50))
    labels = (rng.random(n) < 0.5).astype(np.float64)
    labels[:2] = [0.0, 1.0]
    scores = np.clip(rng.normal(0.45 + 0.2 * labels, 0.2), 0, 1)
    if seed % 2:
        scores = np.round(scores * 10) / 10  # ties, and scores exactly on grid thresholds
    thresholds = threshold_grid(0.1)
    pairs, values = two_threshold_grid(scores, labels, thresholds, overall=overall)
    parts = ("auc", "c_at_1", "f05u", "f1") + (("brier",) if overall == "pan21" else ())
    expected = brute_force_grid(scores, labels, thresholds, parts)
    assert pairs.shape == (len(thresholds) * (len(thresholds) - 1) // 2, 2)
    np.testing.assert_allclose(values, expected, rtol=0, atol=1e-12)


def mann_whitney_auc(labels, probs):
    pos, neg = probs[labels == 1], probs[labels == 0]
    return float(np.mean((pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])))


def answered_f1(labels, probs):
    answered = probs != 0.5
    tp = np.sum((probs > 0.5) & (labels == 1))
    wrong = np.sum(answered & ((probs > 0.5) != (labels == 1)))
    return 2 * tp / (2 * tp + wrong) if tp + wrong else 0.0


def test_calibration_on_pan_grid_picks_pan_choice():
    """Full 98-value grid (4,753 pairs): the first maximiser, as PAN's ``max(params, key=params.get)``.
    The brute force uses PAN's own c@1 and F0.5u loops and a Mann-Whitney AUC / count F1 (scikit-learn
    per pair would take minutes; those two are checked against scikit-learn above)."""
    rng = np.random.default_rng(11)
    labels = np.r_[np.ones(12), np.zeros(12)]
    scores = np.clip(rng.normal(0.4 + 0.25 * labels, 0.15), 0, 1)
    thresholds = np.arange(0.01, 0.99, 0.01)
    params = {}
    for p1, p2 in combinations(thresholds, 2):
        corrected = np.array(list(pan.correct_scores(scores, p1=p1, p2=p2)))
        params[(p1, p2)] = np.mean([mann_whitney_auc(labels, corrected), pan.c_at_1(labels, corrected),
                                    reference(pan.f_05_u_score, labels, corrected),
                                    answered_f1(labels, corrected)])
    best = max(params, key=params.get)
    p1, p2, value = calibrate_two_thresholds(scores, labels)
    assert (p1, p2) == (float(best[0]), float(best[1]))
    assert value == pytest.approx(params[best], abs=1e-12)
    _, values = two_threshold_grid(scores, labels)
    np.testing.assert_allclose(values, list(params.values()), rtol=0, atol=1e-12)


def test_pan21_calibration_compares_values_rounded_as_pan_returns_them():
    """PAN 2021/22's ``evaluate_all`` rounds ``overall`` to 3 decimals, so its ``max(params, ...)``
    keeps the first of pairs that tie after rounding (seed 25: (0.45, 0.65) at 0.81887 before
    (0.60, 0.65) at 0.81944, both 0.819)."""
    thresholds = threshold_grid(0.05)
    for seed in (25, 3, 7):
        rng = np.random.default_rng(seed)
        labels = (rng.random(30) < 0.5).astype(np.float64)
        labels[:2] = (0, 1)
        scores = np.clip(rng.normal(0.45 + 0.2 * labels, 0.2), 0, 1)
        params = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for p1, p2 in combinations(thresholds, 2):
                corrected = np.array(list(pan.correct_scores(scores, p1, p2)))
                try:
                    params[(p1, p2)] = pan.evaluate_all(labels, corrected)["overall"]
                except ValueError:  # every case unanswered: PAN's F1 raises; never the best
                    params[(p1, p2)] = -1.0
        best = max(params, key=params.get)
        p1, p2, value = calibrate_two_thresholds(scores, labels, thresholds, overall="pan21")
        assert (p1, p2) == (float(best[0]), float(best[1])), seed
        assert round(value, 3) == params[best]


def test_grid_needs_two_classes_and_unit_scores():
    with pytest.raises(ValueError, match="both"):
        two_threshold_grid([0.2, 0.4], [1, 1])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        two_threshold_grid([-0.2, 0.4], [0, 1])
