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
            # STEL enters STEB's scores as STEB's ordered pairs (order_list, *_steb metrics)
            task = "clustering" if dataset == "cds_samples" else "order_list"
            metrics = ["v_measure"] if task == "clustering" else ["accuracy_steb", "distractor_accuracy_steb"]
            for k, metric in enumerate(metrics):
                rows.append({"model": model, "dataset": dataset, "subset": subset, "task": task,
                             "metric": metric, "primary": k == 0, "value": v - 0.1 * k, "ci_low": v - 0.2,
                             "ci_high": v, "n": 100})
            if task == "order_list":  # STEL's own quadruples and our list rule: not read by STEB's scores
                for other_task, metric in (("order_quad", "distractor_accuracy"), ("order_list", "accuracy")):
                    rows.append({"model": model, "dataset": dataset, "subset": subset, "task": other_task,
                                 "metric": metric, "primary": False, "value": 1.0 - v, "ci_low": 0.0,
                                 "ci_high": 1.0, "n": 100})
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
    assert definitional["table"]["a"]["register"] == pytest.approx(0.9)  # STEL_register = stel/formality
    assert definitional["table"]["a"]["linguistic_features"] == pytest.approx(0.8)
    tables = score_tables(scores)
    assert [t.available for t in tables] == [True, True]
    summary, lines = tables[0].details[0]
    assert summary.startswith("Ward clusters")
    assert lines == ("clustering: {cds_samples/all/clustering}",
                     "order_alignment: {stel/feature/order_list, stel/register/order_list}")


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


def test_blank_cells_are_explained_once_per_column_and_tables_survive_a_json_round_trip():
    rows = [r for r in rows_for("abc") if not (r["model"] in "bc" and r["task"] == "clustering")]
    scores = aggregate_scores(rows)
    tables = score_tables(scores)
    operational = tables[0]
    assert operational.values["b"].get("clustering") is None
    summary, lines = operational.details[-1]
    assert summary == "Models lacking a dataset (2 model x column cells)"
    assert lines == ("b, c: no clustering score (missing cds_samples/all/clustering)",)
    # every clustering cell (a alone cannot be ranked) and every overall cell
    assert any(note.startswith("— = not computable (6 model x column cells)") for note in operational.notes)
    # scores.json is written with sorted keys; the report re-rendered from it must not change
    assert score_tables(json.loads(json.dumps(scores, sort_keys=True))) == tables


def test_blank_cells_of_a_column_too_few_models_have_are_counted():
    # only a has the clustering unit: a's cell is blank too, though a lacks nothing
    rows = [r for r in rows_for("abc") if not (r["model"] in "bc" and r["task"] == "clustering")]
    rows += [{**r, "model": m} for r in rows_for("a") if r["task"] != "clustering" for m in "de"]
    operational = score_tables(aggregate_scores(rows))[0]
    assert operational.values["a"].get("clustering") is None
    notes = " ".join(operational.notes)
    assert "clustering: only 1 model(s) have every unit; need 3" in notes
    assert "— = not computable (10 model x column cells)" in notes


def test_definitional_notes_say_what_each_overall_averages():
    definitional = score_tables(aggregate_scores(rows_for("abc")))[1]
    notes = " ".join(definitional.notes)
    assert "object_of_study = mean of genre, register;" in notes
    assert "Not in this run: time, demographics, dialect, idiolect" in notes
    assert "overall = mean of object_of_study, linguistic_features, content_independence." in notes
    assert "overall averages" not in notes
    no_order = [r for r in rows_for("abc") if r["metric"] != "distractor_accuracy_steb"]
    notes = " ".join(score_tables(aggregate_scores(no_order))[1].notes)
    assert "overall averages 2 of STEB's 3 groups: this run has no unit of content_independence" in notes


def test_stel_quadruples_alone_give_no_steb_score_and_say_why():
    rows = [{"model": model, "dataset": "stel", "subset": "formality", "task": "order_quad", "metric": metric,
             "primary": metric == "accuracy", "value": 0.7, "ci_low": 0.6, "ci_high": 0.8, "n": 100}
            for model in ("a", "b", "c") for metric in ("accuracy", "distractor_accuracy")]
    scores = aggregate_scores(rows)
    for name in ("operational", "definitional"):
        assert scores[name]["available"] is False
        assert scores[name]["reason"].startswith(f"no unit of this run is part of STEB's {name} score")
        assert "order_list units of the stel dataset" in scores[name]["reason"]
    # a run without STEL (a built benchmark alone) is not told about STEL
    rows = [{**row, "dataset": "authbench_en", "task": "attribution"} for row in rows]
    for name in ("operational", "definitional"):
        assert "stel" not in aggregate_scores(rows)[name]["reason"].lower()
