"""Temperature scaling and threshold search: the NLL minimiser against a dense grid, the known
temperature of logits scaled from calibrated ones, and hand-checked threshold choices."""

import numpy as np
import pytest
from sklearn.metrics import balanced_accuracy_score

from stylebench_jax.calibration import fit_temperature, nll, probabilities, search_threshold, threshold_table


def _calibrated_logits(n=4000, seed=0, scale=1.0):
    """Labels drawn from softmax(z): z is calibrated at T = 1, so z * scale is calibrated at T = scale."""
    rng = np.random.default_rng(seed)
    margin = rng.normal(0, 2.0, n)
    z = np.stack([-margin / 2, margin / 2], axis=1)
    labels = (rng.random(n) < 1 / (1 + np.exp(-margin))).astype(int)
    return z * scale, labels


def test_recovers_the_temperature_of_overconfident_logits():
    logits, labels = _calibrated_logits(scale=3.0)
    t = fit_temperature(logits, labels)
    assert t == pytest.approx(3.0, rel=0.08)
    assert nll(logits, labels, t) < nll(logits, labels, 1.0)


def test_fit_is_the_grid_minimum():
    logits, labels = _calibrated_logits(n=500, seed=1, scale=0.4)
    t = fit_temperature(logits, labels)
    grid = np.exp(np.linspace(np.log(0.05), np.log(5), 4001))
    best = grid[np.argmin([nll(logits, labels, g) for g in grid])]
    assert t == pytest.approx(best, rel=2e-3)
    assert nll(logits, labels, t) <= min(nll(logits, labels, g) for g in grid) + 1e-9


def test_temperature_keeps_the_argmax():
    logits, labels = _calibrated_logits(n=300, seed=2, scale=5.0)
    t = fit_temperature(logits, labels)
    np.testing.assert_array_equal(probabilities(logits, t) > 0.5, probabilities(logits) > 0.5)


def test_rejects_bad_logits():
    with pytest.raises(ValueError, match=r"\[N, 2\]"):
        fit_temperature(np.zeros((3, 3)), [0, 1, 0])
    with pytest.raises(ValueError, match="labels"):
        fit_temperature(np.zeros((2, 2)), [0, 2])


def test_threshold_table_matches_sklearn():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 200)
    probs = np.clip(labels * 0.3 + rng.random(200) * 0.7, 0, 1)
    table = threshold_table(probs, labels)
    for i in (0, 30, 60, 98):
        predicted = (probs >= table["threshold"][i]).astype(int)
        assert table["balanced_accuracy"][i] == pytest.approx(balanced_accuracy_score(labels, predicted))


def test_threshold_search_with_constraints():
    # positives at 0.6, 0.7, 0.8, 0.9; negatives at 0.1, 0.2, 0.65, 0.75
    probs = np.array([0.6, 0.7, 0.8, 0.9, 0.1, 0.2, 0.65, 0.75])
    labels = np.array([1, 1, 1, 1, 0, 0, 0, 0])
    best = search_threshold(probs, labels)
    # t in (0.20, 0.60]: recall 1, specificity 0.5 -> 0.75; t in (0.75, 0.80]: 0.5 + 1 -> 0.75;
    # (0.65, 0.70]: recall .75, spec .75 -> .75; ties go to the lowest threshold, 0.21
    assert best.threshold == pytest.approx(0.21) and best.row["balanced_accuracy"] == pytest.approx(0.75)
    assert best.constraints_met
    impossible = search_threshold(probs, labels, min_accuracy=0.99, min_recall=0.8)
    assert not impossible.constraints_met and impossible.threshold == pytest.approx(0.21)


def test_accuracy_constraint_moves_the_threshold():
    # 4 positives, 8 negatives. Unconstrained: t in (0.50, 0.55] has recall 1, specificity 5/8
    # (balanced accuracy 0.8125, accuracy 0.75). With accuracy >= 0.8 only t in (0.85, 0.90] remains
    # (TP 2, TN 8: accuracy 10/12, balanced accuracy 0.75).
    probs = np.array([0.55, 0.6, 0.9, 0.95, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 0.8, 0.85])
    labels = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0])
    free = search_threshold(probs, labels)
    assert free.threshold == pytest.approx(0.51) and free.row["balanced_accuracy"] == pytest.approx(0.8125)
    strict = search_threshold(probs, labels, min_accuracy=0.8)
    assert strict.threshold == pytest.approx(0.86) and strict.row["accuracy"] == pytest.approx(10 / 12)
    assert strict.row["balanced_accuracy"] == pytest.approx(0.75) and strict.constraints_met
    recall = search_threshold(probs, labels, min_recall=0.8, metric="accuracy")
    assert recall.row["recall"] >= 0.8 and recall.threshold == pytest.approx(0.51)
