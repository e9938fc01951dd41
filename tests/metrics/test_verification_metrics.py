"""EER in AuthBench's threshold definition vs a plain loop; the ROC method is the existing EER."""

from fractions import Fraction

import numpy as np
import pytest
from sklearn.metrics import roc_curve

from stylebench_jax.metrics import auroc, eer, eer_threshold_batch, equal_error_rate


def loop_eer(scores, labels):
    """Plain reading of AuthBench A.9: try every threshold, keep the smallest |FAR - FRR| (exact
    fractions: the first of equal gaps wins, whatever the rounding of the rates)."""
    pos = [s for s, y in zip(scores, labels) if y]
    neg = [s for s, y in zip(scores, labels) if not y]
    best = None
    for tau in sorted(set(scores)) + [np.inf]:
        far = Fraction(sum(s >= tau for s in neg), len(neg))
        frr = Fraction(sum(s < tau for s in pos), len(pos))
        if best is None or abs(far - frr) < best[0]:
            best = (abs(far - frr), (far + frr) / 2)
    return float(best[1])


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("rounded", [False, True])
def test_threshold_eer_matches_loop(seed, rounded):
    rng = np.random.default_rng(seed)
    labels = rng.random(57) < 0.3
    scores = rng.normal(size=57) + labels
    if rounded:
        scores = np.round(scores, 1)  # ties
    assert eer(scores, labels) == pytest.approx(loop_eer(scores.tolist(), labels.tolist()))


def test_hand_computed_threshold_eer():
    # negatives 0.1 0.2 0.6, positives 0.4 0.8: tau = 0.4 gives FAR 1/3, FRR 0 (gap 1/3);
    # tau = 0.6 gives FAR 1/3, FRR 1/2 (gap 1/6); tau = 0.8: FAR 0, FRR 1/2 (gap 1/2)
    scores = [0.1, 0.2, 0.6, 0.4, 0.8]
    labels = [0, 0, 0, 1, 1]
    assert eer(scores, labels) == pytest.approx((1 / 3 + 1 / 2) / 2)
    # the ROC method interpolates the crossing instead
    assert eer(scores, labels, method="roc") == equal_error_rate(scores, labels)
    assert eer(scores, labels, method="roc") != pytest.approx(eer(scores, labels))


def test_equal_gaps_pick_the_smallest_threshold_not_the_rounding():
    # positives .1 .1 .1 .2 .5 .5 .5, negatives 0 .9: tau = 0.2 gives FAR 1/2, FRR 3/7 and tau = 0.5
    # FAR 1/2, FRR 4/7, the same gap 1/14; in floats |1/2 - 3/7| is one ulp larger than |1/2 - 4/7|
    scores = [0.1, 0.1, 0.1, 0.2, 0.5, 0.5, 0.5, 0.0, 0.9]
    labels = [1, 1, 1, 1, 1, 1, 1, 0, 0]
    assert eer(scores, labels) == pytest.approx((1 / 2 + 3 / 7) / 2)
    rng = np.random.default_rng(11)
    for _ in range(300):
        n = int(rng.integers(4, 12))
        labels = rng.random(n) < 0.6
        labels[:2] = [True, False]
        scores = rng.integers(0, 5, size=n) / 10
        assert eer(scores, labels) == pytest.approx(loop_eer(scores.tolist(), labels.tolist()))


def test_methods_agree_within_one_step_and_on_separable_scores():
    rng = np.random.default_rng(7)
    labels = rng.random(400) < 0.5
    scores = rng.normal(size=400) + 1.5 * labels
    step = max(1 / labels.sum(), 1 / (~labels).sum())
    assert abs(eer(scores, labels) - eer(scores, labels, method="roc")) <= step
    assert eer([0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1]) == 0.0
    # the ROC method is scikit-learn's curve crossing
    fpr, tpr, _ = roc_curve(labels, scores)
    i = np.argmin(np.abs(fpr - (1 - tpr)))
    assert abs(eer(scores, labels, method="roc") - fpr[i]) <= step
    assert auroc(scores, labels) > 0.8


def test_weighted_batch_equals_repeated_pairs():
    rng = np.random.default_rng(3)
    labels = rng.random(30) < 0.4
    scores = np.round(rng.normal(size=30), 1)
    weights = rng.integers(0, 3, size=(4, 30)).astype(float)
    weights[:, 0] = 1
    weights[:, np.flatnonzero(labels)[0]] = 1
    got = eer_threshold_batch(scores, labels, weights)
    for row, w in zip(got, weights):
        repeated = np.repeat(np.arange(30), w.astype(int))
        assert row == pytest.approx(loop_eer(scores[repeated].tolist(), labels[repeated].tolist()))
    assert np.isnan(eer_threshold_batch(scores, labels, np.where(labels, 0.0, 1.0)[None]))[0]


def test_bad_method_and_one_class():
    with pytest.raises(ValueError, match="threshold, roc"):
        eer([0.1, 0.2], [0, 1], method="det")
    with pytest.raises(ValueError, match="positive and one negative"):
        eer([0.1, 0.2], [1, 1])
