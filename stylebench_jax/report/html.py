"""``report.html``: one self-contained page (inline CSS, plots as base64 PNG) for a researcher.

Sections: aggregate scores, a models x datasets heatmap of primary metrics, per task a bar chart
with CI whiskers and its table, the full table of every metric, and the skipped combinations.
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from stylebench_jax.report import plots
from stylebench_jax.report.markdown import ScoreTable
from stylebench_jax.report.tables import (
    TaskTable,
    format_cell,
    format_value,
    group_skipped,
    report_tables,
    task_tables,
    task_title,
)

_CSS = """
body { font-family: system-ui, -apple-system, Segoe UI, sans-serif; margin: 2em auto; max-width: 1200px;
       color: #222; line-height: 1.4; padding: 0 1em; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
th { background: #f2f2f2; }
td.best { font-weight: bold; background: #eef7ee; }
.note { color: #555; font-size: 0.9em; }
img { max-width: 100%; display: block; margin: 0.5em 0; }
h2 { border-bottom: 1px solid #ddd; padding-bottom: 0.2em; margin-top: 1.6em; }
details { margin: 0.8em 0; }
"""


def _e(text: Any) -> str:
    return html.escape(str(text))


def _img(png: bytes, alt: str) -> str:
    return f'<img alt="{_e(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}">'


def _task_table_html(table: TaskTable) -> str:
    out = ["<table><tr><th>model</th>" + "".join(f"<th>{_e(c)}</th>" for c in table.columns) + "</tr>"]
    best = {column: table.best(column) for column in table.columns}
    for model in table.models:
        out.append(f"<tr><td>{_e(model)}</td>")
        for column in table.columns:
            css = ' class="best"' if model in best[column] and len(table.models) > 1 else ""
            out.append(f"<td{css}>{_e(format_cell(table.cells.get((model, column))))}</td>")
        out.append("</tr>")
    ns = []
    for column in table.columns:
        counts = sorted({c.n for (m, col), c in table.cells.items() if col == column})
        ns.append("/".join(str(n) for n in counts))
    out.append("<tr><td><i>n</i></td>" + "".join(f"<td><i>{_e(n)}</i></td>" for n in ns) + "</tr></table>")
    return "".join(out)


def _score_html(score: ScoreTable) -> str:
    out = [f"<h3>{_e(score.title)}</h3>"]
    if not score.available:
        out += [f'<p class="note">Not computed: {_e(note)}</p>' for note in score.notes]
        return "".join(out)
    out.append("<table><tr><th>model</th>" + "".join(f"<th>{_e(c)}</th>" for c in score.columns) + "</tr>")
    last = score.columns[-1]
    order = sorted(score.values, key=lambda m: (-(score.values[m].get(last) or -math.inf), m))
    for model in order:
        cells = "".join(f"<td>{_e(format_value(v) if v is not None else '—')}</td>"
                        for v in (score.values[model].get(c) for c in score.columns))
        out.append(f"<tr><td>{_e(model)}</td>{cells}</tr>")
    out.append("</table>")
    out += [f'<p class="note">{_e(note)}</p>' for note in score.notes]
    return "".join(out)


def _overview_heatmap(tables: Sequence[TaskTable]) -> bytes | None:
    """Rows = task units (``task: dataset[/subset]``), columns = models: tall rather than wide,
    since suites have many more units than models are compared."""
    models = sorted({m for t in tables for m in t.models})
    units = [(t, c) for t in tables for c in t.columns]
    if not models or not units:
        return None
    values = np.full((len(units), len(models)), np.nan)
    for i, (table, column) in enumerate(units):
        for j, model in enumerate(models):
            cell = table.cells.get((model, column))
            if cell is not None:
                values[i, j] = cell.value
    labels = [f"{t.task} ({t.metric}): {column}" for t, column in units]
    return plots.heatmap(labels, models, values, "primary metric (blank = not run)")


def _full_table(rows: Sequence[dict[str, Any]]) -> str:
    fields = ("model", "dataset", "subset", "task", "metric", "value", "ci_low", "ci_high", "n")
    out = ["<table><tr>" + "".join(f"<th>{f}</th>" for f in fields) + "</tr>"]
    for row in rows:
        cells = []
        for field in fields:
            value = row[field]
            if field in ("value", "ci_low", "ci_high"):
                value = format_value(math.nan if value is None else value, 4)
            cells.append(f"<td>{_e(value)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "".join(out)


def render_html(rows: Sequence[dict[str, Any]], skipped: Sequence[dict[str, Any]],
                scores: Sequence[ScoreTable], *, title: str, description: Sequence[str] = ()) -> str:
    """The whole page as one string (plots drawn now, embedded as base64 PNG)."""
    tables = report_tables(rows)
    body = [f"<h1>{_e(title)}</h1>"] + [f'<p class="note">{_e(line)}</p>' for line in description if line]
    body.append('<p class="note">Cells show the primary metric with its 95% bootstrap confidence interval '
                "(instances resampled); bold/green = best model in the column; — = not run.</p>")
    if scores:
        body.append("<h2>Aggregate scores</h2>")
        body += [_score_html(score) for score in scores]
    overview = _overview_heatmap(task_tables(rows))
    if overview is not None:
        body += ["<h2>Overview</h2>", _img(overview, "heatmap of primary metrics, models x datasets")]
    for table in tables:
        body.append(f"<h2>{_e(task_title(table.task))} — {_e(table.metric)}</h2>")
        body.append(_img(plots.bar_chart(table), f"{table.task} bar chart"))
        body.append(_task_table_html(table))
    if skipped:
        fields = ("model", "task", "units", "reason")
        body.append(f'<h2>Not applicable</h2><p class="note">{len(skipped)} model x unit combinations '
                    "cannot run (no numbers are reported for them; skipped.jsonl lists each).</p><table><tr>"
                    + "".join(f"<th>{f}</th>" for f in fields) + "</tr>")
        body += ["<tr>" + "".join(f'<td style="text-align:left;white-space:normal">{_e(r[f])}</td>'
                                  for f in fields) + "</tr>" for r in group_skipped(skipped)]
        body.append("</table>")
    body.append(f"<details><summary>All metrics ({len(rows)} rows, as in results.jsonl)</summary>"
                f"{_full_table(rows)}</details>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")
