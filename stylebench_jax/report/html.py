"""``report.html``: one self-contained page (inline CSS, plots as base64 PNG) for a researcher.

Order: the aggregate scores (short tables; how they were computed and why cells are blank folded
into ``<details>``), the overview heatmap of every primary metric, then per task its bar charts
(at most ``plots.MAX_COLUMNS`` datasets each) and a datasets x models table; last, folded, the
skipped combinations and the full table of every metric. Wide tables scroll inside their own box
with the first column pinned; no figure is wider than the page.
"""

from __future__ import annotations

import base64
import html
import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from stylebench_jax.report import plots
from stylebench_jax.report.markdown import VARIANTS_INTRO, ScoreTable
from stylebench_jax.report.tables import (
    BREAKDOWNS_INTRO,
    CELLS_NOTE,
    SCORES_NOTE,
    Cell,
    TaskTable,
    VariantTable,
    breakdown_tables,
    column_n,
    format_pair,
    format_value,
    glossary_lines,
    group_skipped,
    has_interval,
    protocol_note,
    report_tables,
    task_tables,
    task_title,
    variant_tables,
)
from stylebench_jax.tasks.registry import LOWER_IS_BETTER

_CSS = """
body { font-family: system-ui, -apple-system, Segoe UI, sans-serif; margin: 2em auto; max-width: 1200px;
       color: #222; line-height: 1.4; padding: 0 1em; }
table { border-collapse: separate; border-spacing: 0; font-size: 0.85em; }
th, td { border-right: 1px solid #ccc; border-bottom: 1px solid #ccc; padding: 3px 7px; text-align: right;
         white-space: nowrap; vertical-align: top; background: #fff; }
tr > :first-child { border-left: 1px solid #ccc; text-align: left; }
tr:first-child > * { border-top: 1px solid #ccc; }
th { background: #f2f2f2; white-space: normal; vertical-align: bottom; }
td.best { font-weight: bold; background: #eef7ee; }
td.wrap { white-space: normal; text-align: left; }
.ci { display: block; font-size: 0.8em; color: #666; font-weight: normal; }
.scroll { overflow-x: auto; max-width: 100%; margin: 0.6em 0 1.2em; }
.scroll tr > :first-child { position: sticky; left: 0; z-index: 1; min-width: 9em; max-width: 22em;
                            white-space: normal; }
.note { color: #555; font-size: 0.9em; margin: 0.3em 0; }
nav { font-size: 0.9em; margin: 0.5em 0 1em; }
img { max-width: 100%; height: auto; display: block; margin: 0.5em 0; }
h2 { border-bottom: 1px solid #ddd; padding-bottom: 0.2em; margin-top: 1.6em; }
details { margin: 0.5em 0; }
summary { cursor: pointer; color: #333; font-size: 0.9em; }
details > ul, details > div { font-size: 0.85em; color: #444; }
details li { margin: 0.15em 0; overflow-wrap: anywhere; }
"""


HEATMAP_NOTE = ("Colours follow one fixed 0-1 scale, but chance differs between metrics (0.5 for AUROC "
                "and STEL's two-way choice, 0 for V-measure, about 1/k for a k-class probe): compare "
                "models within a row; equal colours in different tasks are not equally good.")


def _e(text: Any) -> str:
    return html.escape(str(text))


def _breakable(text: str) -> str:
    """Escaped ``text`` that may wrap after ``/``, ``:`` and ``+`` (long dataset and model names)."""
    return re.sub(r"([/:+])", r"\1<wbr>", _e(text))


def _img(png: bytes, alt: str) -> str:
    width, height = plots.png_size(png)
    return (f'<img alt="{_e(alt)}" width="{width}" height="{height}" '
            f'src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}">')


def _scroll(table: str) -> str:
    return f'<div class="scroll">{table}</div>'


def _details(summary: str, lines: Sequence[str]) -> str:
    items = "".join(f"<li>{_e(line)}</li>" for line in lines)
    return f"<details><summary>{_e(summary)}</summary><ul>{items}</ul></details>"


def _cell_html(cell: Cell) -> str:
    """As :func:`tables.format_cell`, the interval in a smaller span."""
    text = _e(format_value(cell.value))
    if has_interval(cell):
        text += f'<span class="ci">[{cell.ci_low:.3f}, {cell.ci_high:.3f}]</span>'
    return text


def _task_table_html(table: TaskTable) -> str:
    """Rows = dataset columns, columns = models (as in the heatmap), then the instance count."""
    out = ["<table><tr><th>dataset</th>" + "".join(f"<th>{_breakable(m)}</th>" for m in table.models)
           + "<th>n</th></tr>"]
    for column in table.columns:
        best = table.best(column) if len(table.models) > 1 else frozenset()
        out.append(f"<tr><td>{_breakable(column)}</td>")
        for model in table.models:
            cell = table.cells.get((model, column))
            css = ' class="best"' if model in best else ""
            text = "—" if cell is None else _cell_html(cell)
            out.append(f"<td{css}>{text}</td>")
        out.append(f"<td><i>{_e(column_n(table, column))}</i></td></tr>")
    out.append("</table>")
    return _scroll("".join(out))


def _variant_table_html(table: VariantTable) -> str:
    """Rows = dataset columns, columns = models, cells ``ours / STEB``."""
    out = ["<table><tr><th>dataset</th>" + "".join(f"<th>{_breakable(m)}</th>" for m in table.models)
           + "</tr>"]
    for column in table.columns:
        cells = "".join(f"<td>{_e(format_pair(table.cells[(m, column)]))}</td>" for m in table.models)
        out.append(f"<tr><td>{_breakable(column)}</td>{cells}</tr>")
    out.append("</table>")
    return _scroll("".join(out))


def _score_html(score: ScoreTable) -> str:
    out = [f"<h3>{_e(score.title)}</h3>"]
    if not score.available:
        out += [f'<p class="note">Not computed: {_e(note)}</p>' for note in score.notes]
        return "".join(out)
    out.append("<table><tr><th>model</th>" + "".join(f"<th>{_breakable(c)}</th>" for c in score.columns)
               + "</tr>")
    for model in score.ordered_models():
        cells = "".join(f"<td>{_e(format_value(v) if v is not None else '—')}</td>"
                        for v in (score.values[model].get(c) for c in score.columns))
        out.append(f"<tr><td>{_e(model)}</td>{cells}</tr>")
    out.append("</table>")
    out = [out[0], _scroll("".join(out[1:]))]
    out += [f'<p class="note">{_e(note)}</p>' for note in score.notes]
    out += [_details(summary, lines) for summary, lines in score.details]
    return "".join(out)


def _overview_heatmap(tables: Sequence[TaskTable]) -> bytes | None:
    """Rows = task units (dataset columns under one header per task), columns = models: tall rather
    than wide, since suites have many more units than models are compared."""
    models = sorted({m for t in tables for m in t.models})
    units = [(t, c) for t in tables for c in t.columns]
    if not models or not units:
        return None
    values = np.full((len(units), len(models)), np.nan)
    not_run = np.ones(values.shape, dtype=bool)
    for i, (table, column) in enumerate(units):
        for j, model in enumerate(models):
            cell = table.cells.get((model, column))
            if cell is not None:
                values[i, j], not_run[i, j] = cell.value, False
    groups = [(f"{task_title(t.task)} ({t.metric})", len(t.columns)) for t in tables]
    reversed_rows = [t.metric in LOWER_IS_BETTER for t, _ in units]
    flipped = sorted({t.metric for t, _ in units if t.metric in LOWER_IS_BETTER})
    label = "colour: the value" + (f" ({', '.join(flipped)}: 1 − value)" if flipped else "") + \
        "; brighter = better"
    return plots.heatmap([c for _, c in units], models, values,
                         "primary metric per dataset (— = not run, n/a = undefined)", groups=groups,
                         not_run=not_run, reversed_rows=reversed_rows, colour_label=label)


def _task_charts(table: TaskTable, colours: dict[str, tuple]) -> list[str]:
    charts = plots.chart_groups(table.columns, len(table.models))
    out = []
    for i, columns in enumerate(charts):
        part = f" ({i + 1}/{len(charts)})" if len(charts) > 1 else ""
        png = plots.bar_chart(table, columns, part, colours)
        out.append(_img(png, f"{table.task} {table.metric} bar chart{part}"))
    return out


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
    return _scroll("".join(out))


def _skipped_html(skipped: Sequence[dict[str, Any]]) -> str:
    fields = ("model", "task", "units", "reason")
    table = ["<table><tr>" + "".join(f"<th>{f}</th>" for f in fields) + "</tr>"]
    table += ["<tr>" + "".join(f'<td class="wrap">{_e(r[f])}</td>' for f in fields) + "</tr>"
              for r in group_skipped(skipped)]
    table.append("</table>")
    return (f"<details><summary>{len(skipped)} model x unit combinations cannot run (no numbers are "
            "reported for them; skipped.jsonl lists each): show</summary>"
            f'<div>{"".join(table)}</div></details>')


def _anchor(table: TaskTable) -> str:
    return re.sub(r"[^a-z0-9]+", "-", f"{table.task}-{table.metric}".lower()).strip("-")


def render_html(rows: Sequence[dict[str, Any]], skipped: Sequence[dict[str, Any]],
                scores: Sequence[ScoreTable], *, title: str, description: Sequence[str] = ()) -> str:
    """The whole page as one string (plots drawn now, embedded as base64 PNG)."""
    tables = report_tables(rows)
    colours = plots.model_colours(r["model"] for r in rows)
    body = [f"<h1>{_e(title)}</h1>"] + [f'<p class="note">{_e(line)}</p>'
                                         for line in [*description, protocol_note(rows)] if line]
    links = ([("scores", "Aggregate scores")] if scores else []) + [("overview", "Overview")]
    links += [(_anchor(t), f"{task_title(t.task)} — {t.metric}") for t in tables]
    variants, breakdowns = variant_tables(rows), breakdown_tables(rows)
    links += [("variants", "Ours vs STEB's")] if variants else []
    links += [("breakdowns", "Breakdowns")] if breakdowns else []
    links += ([("skipped", "Not applicable")] if skipped else []) + [("all", "All metrics")]
    body.append("<nav>" + " · ".join(f'<a href="#{a}">{_e(text)}</a>' for a, text in links) + "</nav>")
    body.append(f'<p class="note">{_e(CELLS_NOTE)} Bold cells are green.</p>')
    glossary = glossary_lines(rows)
    if glossary:
        body.append(_details(f"What the metrics measure ({len(glossary)})", glossary))
    if scores:
        body += ['<h2 id="scores">Aggregate scores</h2>', f'<p class="note">{_e(SCORES_NOTE)}</p>']
        body += [_score_html(score) for score in scores]
    overview = _overview_heatmap(task_tables(rows))
    body.append('<h2 id="overview">Overview</h2>')
    if overview is not None:
        body += [_img(overview, "heatmap of primary metrics, datasets x models"),
                 f'<p class="note">{_e(HEATMAP_NOTE)}</p>']
    for table in tables:
        body.append(f'<h2 id="{_anchor(table)}">{_e(task_title(table.task))} — {_e(table.metric)}</h2>')
        body += _task_charts(table, colours)
        body.append(_task_table_html(table))
    if variants:
        body += ['<h2 id="variants">Our protocols vs STEB\'s</h2>',
                 f'<p class="note">{_e(VARIANTS_INTRO)}</p>']
        for table in variants:
            heading = f"{task_title(table.task)} — {table.ours} (ours) / {table.steb} (STEB)"
            body += [f"<h3>{_e(heading)}</h3>", f'<p class="note">{_e(table.why)}</p>',
                     _variant_table_html(table)]
    if breakdowns:
        body += ['<h2 id="breakdowns">Breakdowns</h2>', f'<p class="note">{_e(BREAKDOWNS_INTRO)}</p>']
        for table in breakdowns:
            body += [f"<h3>{_e(task_title(table.task))} — {_e(table.metric)} by stratum</h3>",
                     _task_table_html(table)]
    if skipped:
        body += ['<h2 id="skipped">Not applicable</h2>', _skipped_html(skipped)]
    body.append(f'<h2 id="all">All metrics</h2><details><summary>{len(rows)} rows, as in results.jsonl: '
                f"show</summary>{_full_table(rows)}</details>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")
