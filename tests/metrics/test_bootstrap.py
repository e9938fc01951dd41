"""Percentile bootstrap: determinism, resampling structure, coverage against the normal interval."""

import numpy as np
import pytest

from stylebench_jax.metrics import (
    bootstrap_ci,
    bootstrap_replicates,
    bootstrap_weights,
    centred_interval,
    percentile_interval,
    v_measure_from_contingency,
)


def test_weights_are_resample_counts():
    blocks = list(bootstrap_weights(7, 50, seed=3))
    weights = np.concatenate(blocks)
    assert weights.shape == (50, 7)
    assert np.all(weights.sum(axis=1) == 7)
    assert np.all(weights == np.round(weights)) and weights.min() >= 0


def test_weights_chunking_covers_exactly_n_boot():
    n = 5000  # forces several blocks of rows
    total = sum(block.shape[0] for block in bootstrap_weights(n, 1001, seed=0))
    assert total == 1001


def test_stratified_weights_keep_stratum_sizes():
    strata = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])
    weights = np.concatenate(list(bootstrap_weights(strata.size, 200, seed=1, strata=strata)))
    for s in (0, 1, 2):
        assert np.all(weights[:, strata == s].sum(axis=1) == np.sum(strata == s))


def test_same_seed_same_interval_different_seed_different():
    values = np.random.default_rng(0).normal(size=200)
    assert bootstrap_ci(values, seed=5) == bootstrap_ci(values, seed=5)
    assert bootstrap_ci(values, seed=5) != bootstrap_ci(values, seed=6)


def test_constant_values_give_a_point_interval():
    assert bootstrap_ci(np.full(30, 0.25), n_boot=100) == (0.25, 0.25)


def test_function_form_matches_values_form_for_the_mean():
    values = np.random.default_rng(1).random(57)
    by_values = bootstrap_ci(values, n_boot=300, seed=2)
    by_function = bootstrap_ci(lambda w: w @ values / values.size, n=values.size, n_boot=300, seed=2)
    assert by_values == pytest.approx(by_function, abs=1e-12)


def test_interval_of_mean_matches_normal_theory():
    rng = np.random.default_rng(7)
    values = rng.normal(loc=1.0, scale=2.0, size=2000)
    low, high = bootstrap_ci(values, n_boot=2000, seed=0)
    half_width = 1.96 * values.std(ddof=1) / np.sqrt(values.size)
    assert low == pytest.approx(values.mean() - half_width, abs=0.1 * half_width)
    assert high == pytest.approx(values.mean() + half_width, abs=0.1 * half_width)


def test_percentile_interval_by_hand():
    reps = np.arange(101, dtype=float)  # quantiles 2.5% and 97.5% of 0..100 are 2.5 and 97.5
    assert percentile_interval(reps, alpha=0.05) == pytest.approx((2.5, 97.5))


def test_multi_statistic_replicates_have_one_row_each():
    values = np.arange(10.0)
    reps = bootstrap_replicates(lambda w: np.stack([w @ values / 10, w[:, 0]]), 10, n_boot=40, seed=0)
    assert reps.shape == (2, 40)


def test_non_finite_replicates_are_an_error():
    # undefined whenever instance 0 is not drawn (about a quarter of the replicates of n = 2)
    with pytest.raises(ValueError, match="not finite"):
        bootstrap_replicates(lambda w: np.where(w[:, 0] > 0, 1.0, np.nan), 2, n_boot=50, seed=0)


def test_bad_arguments():
    with pytest.raises(ValueError, match="needs n"):
        bootstrap_ci(lambda w: w.sum(axis=1))
    with pytest.raises(ValueError, match="at least one"):
        bootstrap_ci(np.array([]))


def test_centred_interval_by_hand():
    # deviations of 0..100 from their mean 50 have quantiles -47.5 and +47.5
    assert centred_interval(np.arange(101, dtype=float), 0.3) == pytest.approx((0.3 - 47.5, 0.3 + 47.5))


def test_centred_interval_covers_v_measure_where_percentile_fails():
    """V-measure replicates are biased upwards (duplicated instances share their cluster). Over
    seeded simulated samples (20 classes, n = 600) the percentile interval misses the estimator's
    mean, the centred interval covers it at roughly the nominal rate."""
    rng = np.random.default_rng(0)
    n_classes, n, trials = 20, 600, 50
    joint = np.full((n_classes, n_classes), 1.0) + 10.0 * np.eye(n_classes)
    joint /= joint.sum()
    estimates, percentile, centred = [], [], []
    for trial in range(trials):
        cells = rng.choice(n_classes ** 2, size=n, p=joint.ravel())
        onehot = np.eye(n_classes ** 2)[cells]
        table = np.bincount(cells, minlength=n_classes ** 2).reshape(1, n_classes, n_classes)
        estimate = v_measure_from_contingency(table.astype(float))[0]
        reps = bootstrap_replicates(lambda w, o=onehot: v_measure_from_contingency(
            (w @ o).reshape(-1, n_classes, n_classes)), n, n_boot=150, seed=trial)
        estimates.append(estimate)
        percentile.append(percentile_interval(reps))
        centred.append(centred_interval(reps, estimate))
    target = np.mean(estimates)
    assert np.mean([lo <= target <= hi for lo, hi in percentile]) < 0.2
    assert np.mean([lo <= target <= hi for lo, hi in centred]) > 0.8


def test_nan_values_and_an_unseeded_bootstrap_are_refused():
    with pytest.raises(ValueError, match="per-instance value 1 is NaN or infinite"):
        bootstrap_ci([0.3, np.nan, 0.5])
    with pytest.raises(ValueError, match="seed: expected an int .or a sequence of ints., found None"):
        bootstrap_ci([0.3, 0.4, 0.5], seed=None)
    assert bootstrap_ci([0.3, 0.4, 0.5], seed=np.int64(3)) == bootstrap_ci([0.3, 0.4, 0.5], seed=3)
