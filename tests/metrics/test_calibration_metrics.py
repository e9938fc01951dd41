"""ECE, Brier, reliability bins, threshold metrics and topic checks: hand-computed cases and
scikit-learn / NumPy references on random inputs."""

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss, f1_score, precision_score, recall_score

from stylebench_jax.metrics import (
    brier,
    classification_metrics,
    cross_topic_consistency,
    ece,
    pr_auc,
    reliability_bins,
    topic_sliced_negatives,
)


def test_ece_hand_computed():
    # 4 bins of width 0.25. Bin 0: p = 0.1, 0.2 (labels 0, 1): conf 0.15, freq 0.5 -> |0.35| x 2/5.
    # Bin 3: p = 0.8, 0.9, 1.0 (labels 1, 1, 0): conf 0.9, freq 2/3 -> |0.2333| x 3/5.
    probs, labels = [0.1, 0.2, 0.8, 0.9, 1.0], [0, 1, 1, 1, 0]
    expected = 2 / 5 * 0.35 + 3 / 5 * abs(2 / 3 - 0.9)
    assert ece(probs, labels, n_bins=4) == pytest.approx(expected)
    bins = reliability_bins(probs, labels, n_bins=4)
    assert bins["count"].tolist() == [2, 0, 0, 3]  # p = 1.0 falls in the last bin
    assert np.isnan(bins["confidence"][1])


def test_ece_zero_when_frequencies_match_and_bin_edges():
    # every bin's mean probability equals its positive fraction
    probs = [0.5, 0.5, 0.25, 0.25, 0.25, 0.25]
    labels = [1, 0, 1, 0, 0, 0]
    assert ece(probs, labels, n_bins=15) == pytest.approx(0.0)
    # p exactly on an inner edge goes to the upper bin: 0.5 with 2 bins is bin 1
    assert reliability_bins([0.5], [1], n_bins=2)["count"].tolist() == [0, 1]


def test_ece_against_sklearn_calibration_curve():
    rng = np.random.default_rng(0)
    probs = rng.random(500)
    labels = (rng.random(500) < probs ** 2).astype(int)
    freq, conf = calibration_curve(labels, probs, n_bins=15, strategy="uniform")
    bins = reliability_bins(probs, labels, 15)
    filled = bins["count"] > 0
    np.testing.assert_allclose(bins["frequency"][filled], freq, rtol=1e-12)
    np.testing.assert_allclose(bins["confidence"][filled], conf, rtol=1e-12)
    weights = bins["count"][filled] / 500
    assert ece(probs, labels) == pytest.approx(np.sum(weights * np.abs(freq - conf)))
    assert ece(probs, labels) > 0.05  # p^2 calibration is off: the metric sees it


def test_brier_matches_sklearn_and_rejects_bad_input():
    rng = np.random.default_rng(1)
    probs, labels = rng.random(100), rng.integers(0, 2, 100)
    assert brier(probs, labels) == pytest.approx(brier_score_loss(labels, probs))
    assert brier([0.5, 0.5], [0, 1]) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="probabilities"):
        brier([1.2], [1])
    with pytest.raises(ValueError, match="0 or 1"):
        ece([0.2], [2])


def test_classification_metrics_against_sklearn():
    rng = np.random.default_rng(2)
    labels = rng.integers(0, 2, 200)
    scores = labels * 0.3 + rng.random(200)
    predicted = (scores > 0.6).astype(int)
    m = classification_metrics(predicted, labels, scores)
    assert m["precision"] == pytest.approx(precision_score(labels, predicted))
    assert m["recall"] == pytest.approx(recall_score(labels, predicted))
    assert m["f1"] == pytest.approx(f1_score(labels, predicted))
    (tn, fp), (fn, tp) = m["confusion"]
    assert tn + fp + fn + tp == 200 and tp == int(np.sum((predicted == 1) & (labels == 1)))
    assert m["balanced_accuracy"] == pytest.approx((tp / (tp + fn) + tn / (tn + fp)) / 2)
    assert 0.5 < m["roc_auc"] < 1.0 and m["pr_auc"] > labels.mean()


def test_pr_auc_hand_computed():
    # ranking 1, 0, 1: precision at the hits 1 and 2/3, recall steps 1/2 each -> (1 + 2/3) / 2
    assert pr_auc([0.9, 0.8, 0.7], [1, 0, 1]) == pytest.approx((1 + 2 / 3) / 2)


def test_topic_sliced_negatives_and_cross_topic_consistency():
    labels = [0, 0, 0, 0, 1, 1, 1]
    same_topic = [True, True, False, False, True, False, False]
    predicted = [1, 0, 0, 0, 1, 1, 0]
    out = topic_sliced_negatives(predicted, labels, same_topic)
    assert out["accuracy_same_topic_negatives"] == pytest.approx(0.5)
    assert out["accuracy_different_topic_negatives"] == pytest.approx(1.0)
    assert out["gap"] == pytest.approx(0.5) and out["n_same_topic_negatives"] == 2
    scores = [0.1, 0.2, 0.3, 0.4, 0.8, 0.6, 0.4]
    c = cross_topic_consistency(scores, labels, same_topic)
    assert c["mean_same_topic"] == pytest.approx(0.8) and c["mean_cross_topic"] == pytest.approx(0.5)
    assert c["ratio"] == pytest.approx(0.625) and c["n_cross_topic"] == 2
