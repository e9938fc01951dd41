"""scores.json content: STEB operational score present with >= 3 models, absent (with reason) below."""

from __future__ import annotations

import json

import pytest

from stylebench_jax.evaluation.aggregate import _shorten, aggregate_scores, score_tables


def rows_for(models):
    rows = []
    values = {"a": (0.9, 0.8, 0.7), "b": (0.6, 0.65, 0.2), "c": (0.55, 0.5, 0.1)}
    for model in models:
        for (dataset, subset), v in zip((("stel", "formality"), ("stel", "contraction"),
                                         ("cds_samples", "all")), values[model]):
            task = "clustering" if dataset == "cds_samples" else "order_quad"
            metrics = ["v_measure"] if task == "clustering" else ["accuracy", "distractor_accuracy"]
            for k, metric in enumerate(metrics):
                rows.append({"model": model, "dataset": dataset, "subset": subset, "task": task,
                             "metric": metric, "primary": k == 0, "value": v - 0.1 * k, "ci_low": v - 0.2,
                             "ci_high": v, "n": 100})
    return rows


def test_operational_and_definitional_with_three_models():
    scores = aggregate_scores(rows_for("abc"))
    json.dumps(scores, allow_nan=False)
    operational = scores["operational"]
    assert operational["available"] and operational["columns"] == ["clustering", "order_alignment", "overall"]
    # order alignment column: both STEL units rank a > b > c -> one cluster, mean of distractor accuracies
    assert operational["table"]["a"]["order_alignment"] == pytest.approx((0.8 + 0.7) / 2)
    assert operational["table"]["c"]["overall"] == pytest.approx(((0.45 + 0.4) / 2 + 0.1) / 2)
    definitional = scores["definitional"]
    assert definitional["available"]
    assert definitional["table"]["a"]["register"] == pytest.approx(0.9)  # stel/formality accuracy
    assert definitional["table"]["a"]["linguistic_features"] == pytest.approx(0.8)
    tables = score_tables(scores)
    assert [t.available for t in tables] == [True, True]
    assert any("order_alignment clusters" in note for note in tables[0].notes)


def test_operational_absent_with_two_models_says_why():
    scores = aggregate_scores(rows_for("ab"))
    assert scores["operational"] == {"available": False, "reason": scores["operational"]["reason"]}
    assert "at least 3 models, got 2" in scores["operational"]["reason"]
    table = score_tables(scores)[0]
    assert not table.available and "at least 3 models" in table.notes[0]


def test_long_missing_lists_are_shortened_for_the_report():
    note = "m: no clustering score (missing a/x, b/y, c, d, e)"
    assert _shorten(note) == "m: no clustering score (missing 5 units: a/x, b/y, c, ...)"
    assert _shorten("m: no probing score (missing a, b)") == "m: no probing score (missing a, b)"
