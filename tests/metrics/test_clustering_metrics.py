"""V-measure / AMI: hand-computed partitions and the vectorised contingency form vs scikit-learn."""

import numpy as np
import pytest
from sklearn.metrics import adjusted_mutual_info_score, v_measure_score
from sklearn.metrics.cluster import contingency_matrix

from stylebench_jax.metrics import adjusted_mutual_info, v_measure, v_measure_from_contingency


def entropy(p):
    p = np.asarray(p, dtype=float)
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def test_hand_computed_v_measure():
    # classes [0,0,1,1], clusters [0,0,0,1]: H(C) = ln 2; H(C|K) = 3/4 H(2/3, 1/3);
    # H(K) = H(3/4, 1/4); H(K|C) = 1/2 H(1/2, 1/2) = (ln 2) / 2.
    h = 1 - 0.75 * entropy([2 / 3, 1 / 3]) / np.log(2)
    c = 1 - 0.5 * np.log(2) / entropy([0.75, 0.25])
    expected = 2 * h * c / (h + c)
    assert v_measure([0, 0, 1, 1], [0, 0, 0, 1]) == pytest.approx(expected)
    table = np.array([[[2, 0], [1, 1]]])
    assert v_measure_from_contingency(table)[0] == pytest.approx(expected)


def test_degenerate_partitions():
    assert v_measure([0, 0, 1, 1], [5, 5, 7, 7]) == 1.0  # relabelled perfect partition
    assert v_measure([0, 0, 1, 1], [0, 0, 0, 0]) == 0.0  # one cluster: completeness 1, homogeneity 0
    assert v_measure([0, 0, 1, 1], [0, 1, 0, 1]) == pytest.approx(0.0)  # independent
    tables = np.array([[[2, 0], [0, 2]], [[4, 0], [0, 0]], [[1, 1], [1, 1]], [[2, 0], [2, 0]]], dtype=float)
    assert v_measure_from_contingency(tables) == pytest.approx([1.0, 1.0, 0.0, 0.0])


@pytest.mark.parametrize("seed", range(5))
def test_contingency_form_matches_sklearn(seed):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 4, size=200)
    pred = np.where(rng.random(200) < 0.6, truth, rng.integers(0, 5, size=200))
    table = contingency_matrix(truth, pred).astype(float)
    expected = v_measure_score(truth, pred)
    assert v_measure_from_contingency(table[None])[0] == pytest.approx(expected, abs=1e-12)
    # weighted tables = resampled data: counts w_i per instance
    w = rng.integers(0, 3, size=200)
    idx = np.repeat(np.arange(200), w)
    weighted = np.zeros_like(table)
    rows, cols = np.unique(truth, return_inverse=True)[1], np.unique(pred, return_inverse=True)[1]
    np.add.at(weighted, (rows, cols), w)
    assert v_measure_from_contingency(weighted[None])[0] == pytest.approx(
        v_measure_score(truth[idx], pred[idx]), abs=1e-12)


def test_ami_wraps_sklearn_arithmetic():
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 3, 100), rng.integers(0, 3, 100)
    assert adjusted_mutual_info(a, b) == adjusted_mutual_info_score(a, b, average_method="arithmetic")
    assert adjusted_mutual_info([0, 0, 1, 1], [1, 1, 0, 0]) == pytest.approx(1.0)
