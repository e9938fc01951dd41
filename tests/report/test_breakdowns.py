"""Breakdown tables: `<metric>|<axis>=<value>` rows become models x strata tables, strata in axis order."""

from stylebench_jax.report.markdown import render_leaderboard
from stylebench_jax.report.tables import breakdown_tables


def row(model, metric, value, n, primary=False):
    return {"model": model, "dataset": "authbench_en", "subset": "test", "task": "attribution",
            "metric": metric, "primary": primary, "value": value, "ci_low": value - 0.1,
            "ci_high": value + 0.1, "n": n}


def test_breakdown_tables_and_markdown():
    rows = [row("m1", "success@5", 0.5, 30, True), row("m1", "success@5|length=long", 0.4, 10),
            row("m1", "success@5|length=short", 0.2, 20), row("m1", "success@5|language=en", 0.5, 30),
            row("m2", "success@5|length=short", 0.3, 20), row("m1", "recall@5|genre=news", 0.1, 30)]
    tables = {t.metric: t for t in breakdown_tables(rows)}
    assert set(tables) == {"success@5", "recall@5"}
    table = tables["success@5"]
    assert table.columns == ("language=en", "length=short", "length=long")
    assert table.cells[("m2", "length=short")].n == 20
    assert table.best("length=short") == set()  # the intervals overlap
    text = render_leaderboard(rows, [], [], title="t")
    assert "### Authorship attribution (AuthBench) — success@5 by stratum" in text
    line = next(li for li in text.splitlines() if li.startswith("| length=short |"))
    assert line.endswith("| 20 |")  # the stratum's query count


def test_html_report_has_the_breakdowns_too():
    from stylebench_jax.report.html import render_html

    rows = [row("m1", "success@5", 0.5, 30, True), row("m1", "success@5|length=short", 0.2, 20),
            row("m2", "success@5|length=short", 0.3, 20)]
    page = render_html(rows, [], [], title="t")
    assert '<a href="#breakdowns">Breakdowns</a>' in page
    section = page[page.index('<h2 id="breakdowns">'):]
    assert "Authorship attribution (AuthBench) — success@5 by stratum" in section
    assert "<td>length=short</td>" in section and "0.300" in section
