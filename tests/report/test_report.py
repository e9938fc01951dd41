"""Leaderboard Markdown and HTML report: produced, self-contained, and carrying the numbers."""

from __future__ import annotations

import base64
import re

from stylebench_jax.report import ScoreTable, write_report
from stylebench_jax.report.tables import format_cell, task_tables


def row(model, dataset, subset, task, metric, value, low, high, n, primary=True):
    return {"model": model, "dataset": dataset, "subset": subset, "task": task, "metric": metric,
            "primary": primary, "value": value, "ci_low": low, "ci_high": high, "n": n}


ROWS = [
    row("baseline:char3gram", "stel", "formality", "order_quad", "accuracy", 0.7325, 0.69, 0.775, 400),
    row("baseline:char3gram", "stel", "formality", "order_quad", "acc_no_ties", 0.7, 0.6, 0.8, 380, False),
    row("baseline:char3gram", "stel", "contraction", "order_quad", "accuracy", 0.5, 0.45, 0.55, 100),
    row("minilm", "stel", "formality", "order_quad", "accuracy", 0.8125, 0.775, 0.85, 400),
    row("minilm", "stel", "contraction", "order_quad", "accuracy", 0.61, 0.52, 0.7, 100),
    row("minilm", "stel", "formality", "order_quad", "distractor_accuracy", 0.3456, 0.25, 0.44, 400, False),
    row("minilm", "cds", "cds", "clustering", "v_measure", 0.1234, 0.1, 0.15, 1100),
]
SKIPPED = [{"model": "baseline:char3gram", "dataset": "cds", "subset": "cds", "task": "clustering",
            "reason": "char3gram gives only pairwise similarities, not vectors"}]
SCORES = [
    ScoreTable("STEB operational score", ("order_quad", "overall"),
               {"minilm": {"order_quad": 0.711, "overall": 0.711}, "baseline:char3gram": {"order_quad": 0.616,
                                                                                           "overall": 0.616}},
               ("1 cluster per task",)),
    ScoreTable("STEB definitional score", (), {}, ("needs at least 3 models, got 2",), available=False),
]


def test_task_tables_pick_primary_metric_and_columns():
    tables = task_tables(ROWS)
    assert [t.task for t in tables] == ["clustering", "order_quad"]
    order = tables[1]
    assert order.metric == "accuracy"
    assert order.columns == ("stel/contraction", "stel/formality")
    assert order.best("stel/formality") == {"minilm"}
    assert format_cell(order.cells[("minilm", "stel/formality")]) == "0.812 [0.775, 0.850]"
    assert tables[0].columns == ("cds",)


def test_leaderboard_and_html_contain_numbers(tmp_path):
    markdown_path, html_path = write_report(tmp_path, ROWS, SKIPPED, SCORES, title="Run X",
                                            description=["suite: stel"])
    markdown = markdown_path.read_text()
    assert "## Order alignment (STEL quadruples) — accuracy" in markdown
    assert "| minilm | **0.610 [0.520, 0.700]** | **0.812 [0.775, 0.850]** |" in markdown
    assert "| baseline:char3gram | 0.500 [0.450, 0.550] | 0.733 [0.690, 0.775] |" in markdown
    assert "0.711" in markdown and "needs at least 3 models, got 2" in markdown
    assert "char3gram gives only pairwise similarities" in markdown
    assert "0.123 [0.100, 0.150]" in markdown
    assert "## Order alignment (STEL quadruples) — distractor_accuracy" in markdown
    assert "| minilm | 0.346 [0.250, 0.440] |" in markdown
    page = html_path.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    assert "0.812 [0.775, 0.850]" in page and "0.7325" in page  # table and full-precision table
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == 4  # overview heatmap + bar charts: clustering, order accuracy, distractor accuracy
    for image in images:
        assert base64.b64decode(image).startswith(b"\x89PNG")
    assert "http" not in page.replace("http-equiv", "")  # nothing fetched from elsewhere


def test_report_is_reproducible(tmp_path):
    first = write_report(tmp_path / "a", ROWS, SKIPPED, SCORES, title="t")
    second = write_report(tmp_path / "b", ROWS, SKIPPED, SCORES, title="t")
    for one, two in zip(first, second):
        assert one.read_bytes() == two.read_bytes()


def test_skipped_rows_are_grouped_per_model_task_reason(tmp_path):
    reason = "x gives only pairwise similarities, not vectors"
    skipped = [{"model": "x", "dataset": d, "subset": s, "task": "clustering", "reason": reason}
               for d, s in (("pastel", "age"), ("cds", "all"), ("pastel", "gender"))]
    markdown = write_report(tmp_path, ROWS, skipped, [], title="t")[0].read_text()
    assert f"| x | clustering | cds, pastel/age, pastel/gender | {reason} |" in markdown
    assert "3 model x unit combinations cannot run" in markdown


def test_exact_ties_are_all_best(tmp_path):
    rows = [row(m, "stel", "formality", "order_quad", "accuracy", v, v, v, 100) for m, v in
            (("a", 0.07), ("b", 0.07), ("c", 0.05))]
    assert task_tables(rows)[0].best("stel") == {"a", "b"}
    markdown = write_report(tmp_path, rows, [], [], title="t")[0].read_text()
    assert "| a | **0.070 [0.070, 0.070]** |" in markdown and "| b | **0.070" in markdown
    assert "| c | 0.050" in markdown


def test_undefined_values_are_shown_as_na(tmp_path):
    rows = [row("m", "d", "s", "pair_all", "auroc", None, None, None, 3)]
    markdown_path, html_path = write_report(tmp_path, rows, [], [], title="t")
    assert "| m | n/a |" in markdown_path.read_text()
    assert "n/a" in html_path.read_text()


def test_aggregate_tables_do_not_depend_on_dict_order(tmp_path):
    values = {"zz": {"a": 0.1}, "bb": {"a": 0.2}, "mm": {"a": 0.3, "overall": 0.3}}
    one = ScoreTable("x", ("a", "overall"), values)
    two = ScoreTable("x", ("a", "overall"), dict(sorted(values.items())))
    first = write_report(tmp_path / "1", ROWS, [], [one], title="t")
    second = write_report(tmp_path / "2", ROWS, [], [two], title="t")
    for a, b in zip(first, second):
        assert a.read_bytes() == b.read_bytes()
    markdown = first[0].read_text()
    assert markdown.index("| mm |") < markdown.index("| bb |") < markdown.index("| zz |")  # scored first
