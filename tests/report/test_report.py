"""Leaderboard Markdown and HTML report: produced, self-contained, and carrying the numbers."""

from __future__ import annotations

import base64
import json
import re

import pytest

from stylebench_jax.evaluation.aggregate import aggregate_scores, score_tables, scores_json
from stylebench_jax.report import ScoreTable, write_report
from stylebench_jax.report.__main__ import main as rerender
from stylebench_jax.report.plots import MAX_WIDTH_IN, chart_groups, png_size
from stylebench_jax.report.tables import format_cell, task_tables


def row(model, dataset, subset, task, metric, value, low, high, n, primary=True):
    return {"model": model, "dataset": dataset, "subset": subset, "task": task, "metric": metric,
            "primary": primary, "value": value, "ci_low": low, "ci_high": high, "n": n}


ROWS = [
    row("baseline:char3gram", "stel", "formality", "order_quad", "accuracy", 0.7325, 0.69, 0.77, 400),
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
    # rows = dataset columns, columns = models, then n
    assert "| dataset | baseline:char3gram | minilm | n |" in markdown
    # bold only where the intervals are disjoint (formality), not where they overlap (contraction)
    assert "| stel/contraction | 0.500 [0.450, 0.550] | 0.610 [0.520, 0.700] | 100 |" in markdown
    assert "| stel/formality | 0.733 [0.690, 0.770] | **0.812 [0.775, 0.850]** | 400 |" in markdown
    assert "0.711" in markdown and "needs at least 3 models, got 2" in markdown
    assert "char3gram gives only pairwise similarities" in markdown
    assert "| cds | 0.123 [0.100, 0.150] | 1100 |" in markdown
    assert "## Order alignment (STEL quadruples) — distractor_accuracy" in markdown
    assert "| stel | 0.346 [0.250, 0.440] | 400 |" in markdown
    page = html_path.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    assert '0.812<span class="ci">[0.775, 0.850]</span>' in page and "0.7325" in page  # table, full table
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


def test_bold_needs_a_clear_winner(tmp_path):
    def table(*cells, metric="accuracy"):
        rows = [row(m, "stel", "formality", "order_quad", metric, v, lo, hi, n) for m, v, lo, hi, n in cells]
        return task_tables(rows)[0]

    # a tie has no winner, even with intervals disjoint from the third model's
    tied = [("a", 0.07, 0.07, 0.07, 100), ("b", 0.07, 0.07, 0.07, 100), ("c", 0.05, 0.05, 0.05, 100)]
    assert table(*tied).best("stel") == set()
    # disjoint from every other model's interval: bold; overlapping any of them (or touching): not
    assert table(("a", 0.9, 0.85, 0.95, 50), ("b", 0.7, 0.6, 0.8, 50)).best("stel") == {"a"}
    assert table(("a", 0.9, 0.85, 0.95, 50), ("b", 0.7, 0.6, 0.8, 50),
                 ("c", 0.8, 0.7, 0.86, 50)).best("stel") == set()
    assert table(("a", 0.9, 0.8, 0.95, 50), ("b", 0.7, 0.6, 0.8, 50)).best("stel") == set()
    # lower is better for EER
    assert table(("a", 0.1, 0.05, 0.15, 50), ("b", 0.3, 0.2, 0.4, 50), metric="eer").best("stel") == {"a"}
    # one instance: a bootstrap interval has no spread, so it is neither printed nor used
    single = table(("a", 1.0, 1.0, 1.0, 1), ("b", 0.0, 0.0, 0.0, 1))
    assert single.best("stel") == set() and format_cell(single.cells[("a", "stel")]) == "1.000"
    rows = [row(m, "stel", "formality", "order_quad", "accuracy", v, v, v, 1)
            for m, v in (("a", 1.0), ("b", 0.0))]
    markdown_path, html_path = write_report(tmp_path, rows, [], [], title="t")
    assert "| stel | 1.000 | 0.000 | 1 |" in markdown_path.read_text()
    assert 'class="best"' not in html_path.read_text()


def test_undefined_values_are_shown_as_na(tmp_path):
    rows = [row("m", "d", "s", "pair_all", "auroc", None, None, None, 3)]
    markdown_path, html_path = write_report(tmp_path, rows, [], [], title="t")
    assert "| d | n/a | 3 |" in markdown_path.read_text()
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


def images(page: str) -> list[tuple[str, bytes]]:
    return [(alt, base64.b64decode(data)) for alt, data in
            re.findall(r'<img alt="([^"]*)"[^>]* src="data:image/png;base64,([^"]+)"', page)]


def test_page_leads_with_scores_and_heatmap_and_folds_long_lists(tmp_path):
    members = tuple(f"stel/subset{i}: stel/subset{i}/order_quad/accuracy" for i in range(40))
    score = ScoreTable("STEB definitional", ("register", "overall"),
                       {"minilm": {"register": 0.7, "overall": 0.7}}, ("short note",),
                       details=(("Datasets of each group (1 group)", members),))
    page = write_report(tmp_path, ROWS, SKIPPED, [score], title="t")[1].read_text()
    order = [page.index(marker) for marker in ('<h2 id="scores">', "short note", '<img alt="heatmap',
                                               '<h2 id="clustering-v-measure">', '<h2 id="skipped">')]
    assert order == sorted(order)
    # the long list is folded: every member sits inside the one <details> block after the note
    block = re.search(r"<details><summary>Datasets of each group \(1 group\)</summary>(.*?)</details>", page,
                      re.S)
    assert block is not None and all(m in block.group(1) for m in members)
    assert page.count(members[-1]) == 1
    # skipped combinations and the full table are folded too
    assert re.search(r"<details><summary>1 model x unit combinations.*?char3gram gives only", page, re.S)
    assert re.search(r"<details><summary>7 rows, as in results.jsonl", page)
    # every task table scrolls inside its own box (the CSS pins its first column)
    assert page.count('<div class="scroll"><table><tr><th>dataset</th>') == 3  # clustering, 2 x order_quad
    assert ".scroll tr > :first-child { position: sticky; left: 0;" in page


def wide_rows(n_columns: int, models: list[str]) -> list[dict]:
    rows = []
    for m, model in enumerate(models):
        for c in range(n_columns):
            value = ((m * 7 + c * 3) % 10) / 10
            rows.append(row(model, "styleptb_compositional", f"to_future+passive_to_active_{c:02d}",
                            "order_list", "accuracy", value, max(value - 0.05, 0), min(value + 0.05, 1), 100))
    return rows


def test_wide_task_is_split_into_charts_no_wider_than_the_page(tmp_path):
    models = [f"baseline:function_words_{i:02d}" for i in range(12)]  # at most 100 // 12 = 8 columns a chart
    page = write_report(tmp_path, wide_rows(16, models), [], [], title="t")[1].read_text()
    charts = [(alt, png) for alt, png in images(page) if "bar chart" in alt]
    assert [alt for alt, _ in charts] == [f"order_list accuracy bar chart ({i}/2)" for i in (1, 2)]
    for alt, png in images(page):
        width, height = png_size(png)
        assert width <= MAX_WIDTH_IN * 100, (alt, width)
        assert f'alt="{alt}" width="{width}" height="{height}"' in page  # shown at 100%, never shrunk


def test_chart_groups_keep_order_datasets_together_and_use_fewest_charts():
    columns = ["bible", "cds", *(f"m4/{x}" for x in "abcd"), *(f"pastel/{x}" for x in "abcdef"), "reuters",
               "sp/a", "sp/b"]
    # 4 models: at most 12 columns a chart; 2 charts needed; the split that keeps m4 and pastel whole
    # with the smallest largest chart
    assert chart_groups(columns, 4) == [columns[:6], columns[6:]]
    # 9 models: at most 11 columns; a 21-subset dataset is split 11 + 10
    many = ["asset", "ose/a", "ose/b", "shake", *(f"sp/{i:02d}" for i in range(21))]
    groups = chart_groups(many, 9)
    assert [len(g) for g in groups] == [4, 11, 10] and sum(groups, []) == many
    assert chart_groups(["a"], 200) == [["a"]]
    assert all(len(g) <= 3 for g in chart_groups(many, 30))


def test_leaderboard_puts_aggregate_scores_first_and_folds_lists(tmp_path):
    score = ScoreTable("Op", ("a", "overall"), {"m": {"a": 0.5, "overall": 0.5}}, ("note",),
                       details=(("Ward clusters (2 clusters)", ("a: {x} | {y}",)),))
    markdown = write_report(tmp_path, ROWS, SKIPPED, [score], title="t")[0].read_text()
    order = [markdown.index(title) for title in ("## Aggregate scores", "## Clustering", "## Not applicable")]
    assert order == sorted(order)
    assert "<details><summary>Ward clusters (2 clusters)</summary>\n\n- a: {x} | {y}\n\n</details>" \
        in markdown
    assert re.search(r"<details><summary>1 model x unit combinations.*?"
                     r"\| baseline:char3gram \| clustering \| cds/cds \|.*?</details>", markdown, re.S)


def test_rerender_from_a_run_directory_gives_the_same_files(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (run / "skipped.jsonl").write_text("".join(json.dumps(r) + "\n" for r in SKIPPED))
    scores = aggregate_scores(ROWS)
    (run / "scores.json").write_text(scores_json(scores))
    info = {"suite": "stel", "datasets": [{"name": "stel", "size": "full"}], "seed": 0, "n_boot": 1000,
            "models": [{"label": "minilm"}, {"label": "baseline:char3gram"}],
            "environment": {"stylebench_jax": "9.9", "code": "0123abcd"}, "built": ["b1", "b2"]}
    (run / "run_info.json").write_text(json.dumps(info))
    assert rerender([str(run), "--output", str(tmp_path / "out")]) == 0
    assert capsys.readouterr().err == ""  # the stored scores are this version's
    expected = write_report(tmp_path / "direct", ROWS, SKIPPED, score_tables(scores),
                            title="stylebench eval — stel",
                            description=["Suite 'stel' (built benchmarks: b1, b2): stel (full).",
                                         "Models: minilm, baseline:char3gram. Seed 0, 1000 bootstrap "
                                         "replicates. stylebench_jax 9.9, code 0123abcd; model identities "
                                         "(weight digests) and settings are in run_info.json."])
    for path in expected:
        assert (tmp_path / "out" / path.name).read_bytes() == path.read_bytes()
    assert (tmp_path / "out" / "scores.json").read_text() == scores_json(scores)


def test_rerender_recomputes_scores_an_older_version_wrote(tmp_path, capsys):
    rows = [row(m, d, "all", "clustering", "v_measure", v, v - 0.1, v + 0.1, 50)
            for d, values in (("cds_samples", (0.1, 0.2, 0.3)), ("pastel", (0.3, 0.1, 0.2)))
            for m, v in zip("abc", values)]
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    stale = aggregate_scores(rows)
    stale["operational"]["table"]["a"]["overall"] = 0.99
    (run / "scores.json").write_text(scores_json(stale))
    assert rerender([str(run)]) == 0
    assert "held other aggregate scores" in capsys.readouterr().err
    assert json.loads((run / "scores.json").read_text()) == aggregate_scores(rows)
    assert "0.990" not in (run / "leaderboard.md").read_text()


@pytest.mark.parametrize("case, message", [
    ("missing", "results.jsonl: not found; expected the output of `stylebench eval`"),
    ("bad_line", "results.jsonl:2:2: invalid JSON"),
])
def test_rerender_bad_run_directory_is_one_line_error(tmp_path, capsys, case, message):
    run = tmp_path / "run"
    run.mkdir()
    if case == "bad_line":
        (run / "results.jsonl").write_text(json.dumps(ROWS[0]) + "\n{oops\n")
    assert rerender([str(run)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (run / "report.html").exists()


def test_ours_and_stebs_variants_side_by_side(tmp_path):
    from stylebench_jax.report.tables import variant_tables

    rows = [row("minilm", "asset", "all", "order_list", "accuracy", 0.568, 0.5, 0.6, 9900),
            row("minilm", "asset", "all", "order_list", "accuracy_steb", 0.691, 0.6, 0.7, 4950, False),
            row("minilm", "asset", "all", "order_list", "distractor_accuracy", 0.1, 0.0, 0.2, 9900, False),
            row("baseline:char3gram", "asset", "all", "order_list", "accuracy", 0.55, 0.5, 0.6, 9900),
            row("baseline:char3gram", "asset", "all", "order_list", "accuracy_steb", 0.7, 0.6, 0.8, 4950,
                False),
            row("minilm", "reuters_c50", "test-vs-train", "retrieval", "mrr", 0.4, 0.3, 0.5, 150),
            row("minilm", "reuters_c50", "test-vs-train", "retrieval", "mrr_steb", 0.9, 0.8, 1.0, 50, False),
            row("baseline:char3gram", "reuters_c50", "test-vs-train", "retrieval", "mrr", 0.2, 0.1, 0.3, 150)]
    tables = variant_tables(rows)
    # distractor_accuracy_steb absent -> no table for that pair
    assert [(t.task, t.ours, t.steb) for t in tables] == [("order_list", "accuracy", "accuracy_steb"),
                                                          ("retrieval", "mrr", "mrr_steb")]
    assert tables[1].cells[("baseline:char3gram", "reuters_c50")][1] is None  # no vectors: no episodes
    markdown_path, html_path = write_report(tmp_path, rows, [], [], title="Run")
    markdown = markdown_path.read_text()
    assert "## Our protocols vs STEB's" in markdown
    assert "### Order alignment (ordered lists) — accuracy (ours) / accuracy_steb (STEB)" in markdown
    assert "| asset | 0.550 / 0.700 | 0.568 / 0.691 |" in markdown
    assert "| reuters_c50 | 0.200 / — | 0.400 / 0.900 |" in markdown
    assert "clips cosines at 0" in markdown  # the task row's reason
    page = html_path.read_text()
    assert 'id="variants"' in page and "0.568 / 0.691" in page and "0.200 / —" in page


def test_markdown_escapes_names_and_cites_the_protocols(tmp_path):
    rows = [row("<tfidf>", "a|b", "s", "clustering", "v_measure", 0.5, 0.4, 0.6, 10)]
    paths = write_report(tmp_path, rows, [], [], title="run <1>", description=["one", "two"])
    markdown = paths[0].read_text()
    assert "# run \\<1\\>" in markdown and "| dataset | \\<tfidf\\> | n |" in markdown
    assert "| a\\|b |" in markdown
    assert "one\n\ntwo\n\n" in markdown  # separate paragraphs, not one
    assert "Protocols: STEB: Style Text Embedding Benchmark" in markdown and "STEL?" not in markdown
    cited = write_report(tmp_path, ROWS, [], [], title="t")
    for text in (cited[0].read_text(), cited[1].read_text()):
        assert "STEB: Style Text Embedding Benchmark" in text and "Does It Capture STEL?" in text


def test_the_metrics_of_the_run_are_explained(tmp_path):
    from stylebench_jax.tasks.registry import METRICS, metric_glossary

    markdown_path, html_path = write_report(tmp_path, ROWS, [], [], title="t")
    markdown = markdown_path.read_text()
    assert "<details><summary>What the metrics measure (3)</summary>" in markdown
    assert f"- accuracy: {METRICS['accuracy']}" in markdown and "- v_measure: " in markdown
    assert "- mrr:" not in markdown  # only the metrics the run has
    assert "What the metrics measure (3)" in html_path.read_text()
    # families: @K, /feature, |stratum stripped; STEB's variants named once
    names = [name for name, _ in metric_glossary({"success@5|length=short", "probe_accuracy_steb/n_adj",
                                                  "mrr@100", "eer_roc"})]
    assert names == ["eer_roc", "mrr", "success", "probe_accuracy", "*_steb"]
