"""Cosine -> probability maps: parity with scikit-learn, GroupKFold selection, the n > 1000 rule for
isotonic, and style_calibration.json round trip and mismatch refusals."""

import json

import numpy as np
import pytest
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression

from stylebench_jax.calibration import (
    SimilarityMap,
    StyleCalibration,
    fit_isotonic,
    fit_logistic,
    fit_similarity_calibration,
    style_calibration_payload,
)
from stylebench_jax.calibration.files import write_json
from stylebench_jax.errors import UserInputError
from stylebench_jax.metrics import brier


def _pairs(n, seed=0, shape="sigmoid"):
    rng = np.random.default_rng(seed)
    cos = rng.uniform(0.0, 1.0, n)
    p = 1 / (1 + np.exp(-(12 * cos - 6))) if shape == "sigmoid" else (cos > 0.5) * 0.9 + 0.05
    labels = (rng.random(n) < p).astype(int)
    groups = [f"book{i % 40}" for i in range(n)]
    return cos, labels, groups


def test_logistic_is_unpenalised_maximum_likelihood():
    cos, labels, _ = _pairs(800)
    m = fit_logistic(cos, labels)
    ref = LogisticRegression(C=np.inf, max_iter=1000, tol=1e-12).fit(cos[:, None], labels)  # to convergence
    assert m.coef == pytest.approx(ref.coef_[0, 0], rel=1e-4)
    assert m.intercept == pytest.approx(ref.intercept_[0], rel=1e-4)
    assert m.coef == pytest.approx(12, rel=0.25)  # the generating slope
    np.testing.assert_allclose(m(cos), ref.predict_proba(cos[:, None])[:, 1], rtol=1e-6)


def test_logistic_reaches_the_maximum_on_a_narrow_band_of_cosines():
    """Cosines at 0.99 +- 0.002 (mean-pooled decoders): the fit on raw cosines stopped at a ~ 0.04
    (a flat map) with no warning; the maximum-likelihood slope is ~190."""
    from scipy.optimize import minimize
    from scipy.special import expit

    rng = np.random.default_rng(1)
    for _ in range(4):
        labels = rng.integers(0, 2, 1320)
        cos = 0.99 + 0.001 * labels + 0.002 * rng.standard_normal(1320)
    u = (cos - cos.mean()) / cos.std()

    def nll(w):
        p = np.clip(expit(w[0] * u + w[1]), 1e-15, 1 - 1e-15)
        return -np.mean(labels * np.log(p) + (1 - labels) * np.log(1 - p))

    w = minimize(nll, [0.0, 0.0], method="BFGS", options={"gtol": 1e-12}).x
    m = fit_logistic(cos, labels)
    assert m.coef == pytest.approx(w[0] / cos.std(), rel=1e-3) and m.coef > 150
    np.testing.assert_allclose(m(cos), expit(w[0] * u + w[1]), atol=1e-4)
    flat = fit_logistic(np.full(10, 0.5), [0, 1] * 5)  # constant cosines: the base rate
    assert flat.coef == 0 and flat(0.7) == pytest.approx(0.5)


def test_isotonic_map_equals_sklearn_predict_and_clips():
    cos, labels, _ = _pairs(1200, seed=1)
    m = fit_isotonic(cos, labels)
    ref = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(cos, labels)
    probe = np.linspace(-0.5, 1.5, 301)
    np.testing.assert_allclose(m(probe), ref.predict(probe), atol=1e-12)
    assert np.all(np.diff(m(probe)) >= 0)
    restored = SimilarityMap.from_dict(json.loads(json.dumps(m.to_dict())))
    np.testing.assert_array_equal(restored(probe), m(probe))


def test_auto_compares_both_on_group_folds_and_picks_the_lower_brier():
    cos, labels, groups = _pairs(2000, seed=2, shape="step")  # a step: isotonic fits it, a sigmoid cannot
    fitted = fit_similarity_calibration(cos, labels, groups)
    assert fitted.candidates == ("logistic", "isotonic") and fitted.cv_kind == "GroupKFold"
    assert fitted.cv["isotonic"]["brier"] < fitted.cv["logistic"]["brier"]
    assert fitted.mapping.method == "isotonic"
    by_ece = fit_similarity_calibration(cos, labels, groups, cv_metric="ece")
    assert by_ece.mapping.method == min(by_ece.cv, key=lambda k: by_ece.cv[k]["ece"])
    assert brier(fitted.mapping(cos), labels) < brier((cos + 1) / 2, labels)


def test_isotonic_only_offered_above_1000_pairs():
    cos, labels, groups = _pairs(600, seed=3)
    fitted = fit_similarity_calibration(cos, labels, groups)
    assert fitted.candidates == ("logistic",) and fitted.mapping.method == "logistic"
    assert any("only offered for more than 1000" in w for w in fitted.warnings)
    with pytest.raises(ValueError, match="more than 1000 pairs"):
        fit_similarity_calibration(cos, labels, groups, method="isotonic")


def test_few_groups_fall_back_to_stratified_folds_with_a_warning():
    cos, labels, _ = _pairs(300, seed=4)
    fitted = fit_similarity_calibration(cos, labels, ["a", "b", "c"] * 100, method="logistic")
    assert fitted.cv_kind == "StratifiedKFold" and "3 groups" in fitted.warnings[0]


def _file(tmp_path, **meta_changes):
    meta = {"num_chunks": "auto", "chunk_size": 14, "overlap": 4, "aggregate": "mean", "topk": 5,
            "max_tokens": 512, "max_chunks": 8, "n_samples": 10, **meta_changes}
    payload = style_calibration_payload(SimilarityMap("logistic", coef=4.12, intercept=-0.87),
                                        {"brier": 0.183, "ece": 0.05}, meta,
                                        {"name": "m", "identity": "id-1"})
    return write_json(tmp_path / "style_calibration.json", payload)


def test_file_keeps_the_seed_schema_and_refuses_mismatches(tmp_path):
    path = _file(tmp_path)
    data = json.loads(path.read_text())
    assert data["style_calibration"] == {"method": "logistic", "coef": 4.12, "intercept": -0.87,
                                         "cv_brier": 0.183, "cv_ece": 0.05}
    assert data["meta"]["chunk_size"] == 14 and data["meta"]["n_samples"] == 10
    loaded = StyleCalibration(path)
    assert float(loaded.mapping(0.5)) == pytest.approx(1 / (1 + np.exp(-(4.12 * 0.5 - 0.87))))
    settings = {k: data["meta"][k] for k in data["meta"] if k != "n_samples"}
    loaded.check_compatible(settings, "m", "id-1")
    with pytest.raises(UserInputError, match=r"aggregate='mean' \(this run: 'topk_mean'\)"):
        loaded.check_compatible({**settings, "aggregate": "topk_mean"}, "m", "id-1")
    with pytest.raises(UserInputError, match="fitted for embedder 'm'.*not for 'other'"):
        loaded.check_compatible(settings, "other", "id-2")


def test_bad_files_name_the_problem(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    with pytest.raises(UserInputError, match="not a JSON file"):
        StyleCalibration(path)
    path.write_text(json.dumps({"style_calibration": {"method": "logistic", "coef": "x", "intercept": 0},
                                "meta": {}, "embedder": {}}))
    with pytest.raises(UserInputError, match="coef: expected a finite number"):
        StyleCalibration(path)
    for key, values, fragment in (("x_thresholds", [0.1, None], "x_thresholds\\[1\\]"),
                                  ("y_values", ["a", 0.3], "y_values\\[0\\]")):
        isotonic = {"method": "isotonic", "x_thresholds": [0.1, 0.2], "y_values": [0.2, 0.3], key: values}
        path.write_text(json.dumps({"style_calibration": isotonic, "meta": {}, "embedder": {}}))
        with pytest.raises(UserInputError, match=fragment + ": expected a finite number"):
            StyleCalibration(path)  # a TypeError traceback before
    path.write_text(json.dumps({"style_calibration": {"method": "logistic", "coef": True, "intercept": 0},
                                "meta": {}, "embedder": {}}))
    with pytest.raises(UserInputError, match="coef: expected a finite number, found True"):
        StyleCalibration(path)


def test_fold_problem_and_cv_folds_refuse_too_few_pairs_per_label():
    from stylebench_jax.calibration.similarity import cv_folds, fold_problem

    labels = np.array([1, 0])
    assert "found 2 pairs (1 same-style, 1 different-style)" in fold_problem(labels, None, 5)
    with pytest.raises(ValueError, match="^n_splits: 5 folds need at least 5 pairs of each label"):
        cv_folds(labels, None, 5)  # not scikit-learn's "Cannot have number of splits n_splits=5 ..."
    # stratified fallback (2 groups < 5 folds): per-label counts matter
    assert "2 groups, fewer than the folds" in fold_problem(np.array([1] * 8 + [0] * 4), ["a", "b"] * 6, 5)
    assert fold_problem(np.array([1, 0] * 5), None, 5) is None
    # GroupKFold: enough groups is all it needs, even with one pair of a label
    labels = np.array([1] * 11 + [0])
    groups = [f"b{i}" for i in range(6)] * 2
    assert fold_problem(labels, groups, 5) is None
    assert cv_folds(labels, groups, 5)[1] == "GroupKFold"
