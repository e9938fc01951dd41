"""AUROC / EER / accuracy: hand-computed cases, scikit-learn and STEB's EER on random inputs."""

import numpy as np
import pytest
from scipy.interpolate import interp1d
from scipy.optimize import brentq
from sklearn.metrics import roc_auc_score, roc_curve

from stylebench_jax.metrics import accuracy, auroc, auroc_eer_batch, equal_error_rate
from stylebench_jax.metrics.verification import eer_threshold_batch


def steb_eer(labels, scores):
    """STEB's steb/metrics.py ``calculate_eer``, the reference definition we must agree with."""
    fpr, tpr, _ = roc_curve(labels, scores, pos_label=1)
    return brentq(lambda x: 1.0 - x - interp1d(fpr, tpr)(x), 0.0, 1.0)


def test_hand_computed_auroc_and_eer():
    # positives 0.9, 0.7; negatives 0.8, 0.6: 3 of the 4 (pos, neg) pairs are ordered -> 0.75.
    # ROC vertices (0,0) (0,.5) (.5,.5) (.5,1) (1,1); FPR = FNR = 0.5 exactly at (.5, .5).
    scores, labels = [0.9, 0.8, 0.7, 0.6], [1, 0, 1, 0]
    assert auroc(scores, labels) == pytest.approx(0.75)
    assert equal_error_rate(scores, labels) == pytest.approx(0.5)


def test_hand_computed_interpolated_eer():
    # P = {0.9, 0.8, 0.6}, N = {0.7, 0.5}: ordered pairs 2 + 2 + 1 = 5 of 6.
    # ROC: (0,0) (0,1/3) (0,2/3) (1/2,2/3) (1/2,1) (1,1). FPR - FNR is -1/3 at (0,2/3) and +1/6 at
    # (1/2,2/3); crossing at t = (1/3)/(1/2) = 2/3 of that segment: FPR = 1/3 (= FNR = 1 - 2/3).
    scores, labels = [0.9, 0.8, 0.7, 0.6, 0.5], [1, 1, 0, 1, 0]
    assert auroc(scores, labels) == pytest.approx(5 / 6)
    assert equal_error_rate(scores, labels) == pytest.approx(1 / 3)


def test_ties_count_half():
    assert auroc([0.5, 0.5], [1, 0]) == pytest.approx(0.5)
    assert equal_error_rate([0.5, 0.5], [1, 0]) == pytest.approx(0.5)
    assert auroc([1.0, 0.5, 0.5], [1, 1, 0]) == pytest.approx(0.75)


def test_perfect_and_reversed():
    assert auroc([3, 2, 1, 0], [1, 1, 0, 0]) == 1.0
    assert equal_error_rate([3, 2, 1, 0], [1, 1, 0, 0]) == 0.0
    assert auroc([0, 1, 2, 3], [1, 1, 0, 0]) == 0.0
    assert equal_error_rate([0, 1, 2, 3], [1, 1, 0, 0]) == 1.0


@pytest.mark.parametrize("seed", range(5))
def test_against_sklearn_and_steb_on_random_scores(seed):
    rng = np.random.default_rng(seed)
    labels = rng.random(300) < 0.3
    scores = rng.normal(size=300) + labels * rng.uniform(0.2, 2.0)
    if seed % 2:
        scores = np.round(scores, 1)  # many ties
    assert auroc(scores, labels) == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    assert equal_error_rate(scores, labels) == pytest.approx(steb_eer(labels, scores), abs=1e-9)


@pytest.mark.parametrize("seed", range(3))
def test_batch_matches_sklearn_with_weights(seed):
    rng = np.random.default_rng(seed)
    labels = rng.random(120) < 0.4
    scores = np.round(rng.normal(size=120) + labels, 1)
    weights = rng.integers(0, 4, size=(6, 120)).astype(float)
    weights[0] = 1.0
    areas, eers = auroc_eer_batch(scores, labels, weights)
    for row in range(6):
        w = weights[row]
        assert areas[row] == pytest.approx(roc_auc_score(labels, scores, sample_weight=w), abs=1e-12)
        assert eers[row] == pytest.approx(equal_error_rate(scores, labels, sample_weight=w), abs=1e-12)
    assert eers[0] == pytest.approx(steb_eer(labels, scores), abs=1e-9)


def test_batch_without_a_class_is_nan():
    areas, eers = auroc_eer_batch([0.1, 0.2, 0.3], [1, 0, 1], np.array([[1.0, 0.0, 2.0], [1.0, 1.0, 1.0]]))
    assert np.isnan(areas[0]) and np.isnan(eers[0])
    assert areas[1] == pytest.approx(0.5)


def test_single_class_is_an_error():
    with pytest.raises(ValueError, match="positive and one negative"):
        auroc([0.1, 0.2], [1, 1])


def test_accuracy():
    assert accuracy([1, 2, 3, 4], [1, 2, 0, 4]) == 0.75
    with pytest.raises(ValueError):
        accuracy([1], [1, 2])


def test_nan_scores_and_labels_other_than_0_1_are_refused():
    # a NaN sorted as the lowest score by one metric and as the highest by another gave AUROC 1.0
    # and a threshold EER of 0.083 on the same scores
    scores = np.array([0.9, 0.2, np.nan, 0.8, 0.3, 0.1, 0.7, 0.4, 0.35])
    labels = np.array([1, 0, 0, 1, 0, 0, 1, 0, 0], bool)
    with pytest.raises(ValueError, match="NaN or infinity"):
        auroc_eer_batch(scores, labels, np.ones((1, 9)))
    with pytest.raises(ValueError, match="NaN or infinity"):
        eer_threshold_batch(scores, labels, np.ones((1, 9)))
    for labels in ([0, 0, 2, 2], [-1, -1, 1, 1], [0, 0, np.nan, 1]):
        with pytest.raises(ValueError, match="bool or 0/1"):
            auroc([0.1, 0.2, 0.3, 0.4], labels)
