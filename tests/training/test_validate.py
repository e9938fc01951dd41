"""Held-out comparison statistics: the paired bootstrap of a ROC-AUC difference."""

import numpy as np
import pytest

from stylebench_jax.metrics import auroc
from stylebench_jax.training.validate import auroc_difference_with_ci, auroc_with_ci


def _pairs(n=600, seed=0):
    """Labels, a shared per-pair difficulty both models see, and each model's own noise."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % 3 == 0
    hard = rng.standard_normal(n) * 2.0
    return labels, hard, rng


def test_difference_is_the_two_aurocs_apart_and_its_interval_brackets_it():
    labels, hard, rng = _pairs()
    a = labels * 1.0 + hard + 0.3 * rng.standard_normal(labels.size)
    b = labels * 0.6 + hard + 0.3 * rng.standard_normal(labels.size)
    got = auroc_difference_with_ci(a, b, labels, seed=1, n_boot=300)
    assert got["difference"] == pytest.approx(auroc(a, labels) - auroc(b, labels), abs=1e-12)
    assert got["ci_low"] < got["difference"] < got["ci_high"] and got["n"] == labels.size


def test_paired_interval_separates_models_whose_own_intervals_overlap():
    """Both models share most of their errors (the pair's difficulty): each one's interval is wide
    and they overlap, but the paired difference is consistently positive."""
    labels, hard, rng = _pairs(seed=2)
    b = labels * 1.0 + hard + 0.2 * rng.standard_normal(labels.size)
    a = b + labels * 0.25  # the same scores, a little more separation
    ci_a, ci_b = auroc_with_ci(a, labels, seed=3, n_boot=300), auroc_with_ci(b, labels, seed=3, n_boot=300)
    assert ci_a["ci_low"] < ci_b["ci_high"]  # separate intervals overlap
    gain = auroc_difference_with_ci(a, b, labels, seed=3, n_boot=300)
    assert gain["ci_low"] > 0.0


def test_identical_scores_give_a_zero_difference_interval_and_swapping_negates_it():
    labels, hard, rng = _pairs(seed=4)
    a = labels + hard
    b = labels * 0.8 + hard + 0.5 * rng.standard_normal(labels.size)
    same = auroc_difference_with_ci(a, a, labels, seed=5, n_boot=200)
    assert same["difference"] == same["ci_low"] == same["ci_high"] == 0.0
    forward = auroc_difference_with_ci(a, b, labels, seed=5, n_boot=200)
    backward = auroc_difference_with_ci(b, a, labels, seed=5, n_boot=200)
    assert backward["difference"] == pytest.approx(-forward["difference"])
    assert backward["ci_low"] == pytest.approx(-forward["ci_high"])
    assert backward["ci_high"] == pytest.approx(-forward["ci_low"])
