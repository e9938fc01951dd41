"""``leaderboard.md``: the aggregate scores first, then per task a datasets x models table of the
primary metric with 95% CIs; long lists (cluster memberships, why cells are blank, the model x
task combinations that could not run) sit in collapsible ``<details>`` blocks."""

from __future__ import annotations

import dataclasses
import html
import math
from collections.abc import Sequence
from typing import Any

from stylebench_jax.report.document import markdown_cell, markdown_text
from stylebench_jax.report.tables import (
    BREAKDOWNS_INTRO,
    CELLS_NOTE,
    SCORES_NOTE,
    TaskTable,
    VariantTable,
    breakdown_tables,
    column_n,
    format_cell,
    format_pair,
    format_value,
    glossary_lines,
    group_skipped,
    protocol_note,
    report_tables,
    task_title,
    variant_tables,
)

VARIANTS_INTRO = ("Where our protocol and STEB's differ, every cell shows ours / STEB's value (no interval "
                  "here: ours, with its interval, is in the task tables above; results.jsonl has both with "
                  "their intervals). Results labelled STEB, and STEB's aggregate scores, use STEB's "
                  "protocol.")


@dataclasses.dataclass(frozen=True)
class ScoreTable:
    """An aggregate score (e.g. STEB operational) as models x columns.

    ``values[model][column]`` is a float or None (not computable); ``available=False`` means the
    whole score is absent and ``notes`` say why. ``notes`` are short lines shown under the table;
    ``details`` are ``(summary, lines)`` long lists (cluster members, why a cell is blank) that the
    reports fold away.
    """

    title: str
    columns: tuple[str, ...]
    values: dict[str, dict[str, float | None]]
    notes: tuple[str, ...] = ()
    available: bool = True
    details: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def ordered_models(self) -> list[str]:
        """Models by descending last column (the overall score; blanks last), then by name."""
        last = self.columns[-1] if self.columns else None

        def key(model: str) -> tuple[float, str]:
            value = self.values[model].get(last) if last else None
            return (-float(value) if value is not None and not math.isnan(value) else math.inf, model)

        return sorted(self.values, key=key)


def task_table_markdown(table: TaskTable) -> str:
    """Rows = dataset columns, columns = models, then the instance count ``n``."""
    lines = ["| dataset | " + " | ".join(markdown_cell(m) for m in table.models) + " | n |",
             "|---|" + "---|" * (len(table.models) + 1)]
    for column in table.columns:
        best = table.best(column) if len(table.models) > 1 else frozenset()
        cells = []
        for model in table.models:
            text = format_cell(table.cells.get((model, column)))
            cells.append(f"**{text}**" if model in best else text)
        lines.append(f"| {markdown_cell(column)} | " + " | ".join(cells) + f" | {column_n(table, column)} |")
    return "\n".join(lines)


def variant_table_markdown(table: VariantTable) -> str:
    """Rows = dataset columns, columns = models, cells ``ours / STEB``."""
    lines = ["| dataset | " + " | ".join(markdown_cell(m) for m in table.models) + " |",
             "|---|" + "---|" * len(table.models)]
    for column in table.columns:
        cells = [format_pair(table.cells[(model, column)]) for model in table.models]
        lines.append(f"| {markdown_cell(column)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _details_markdown(summary: str, lines: Sequence[str]) -> list[str]:
    # the summary sits in an HTML block, where Markdown's backslash escapes are not read
    return ["<details><summary>" + html.escape(summary) + "</summary>", ""] + \
        [f"- {markdown_text(line)}" for line in lines] + \
        ["", "</details>"]


def score_table_markdown(score: ScoreTable) -> str:
    lines = [f"### {markdown_text(score.title)}", ""]
    if not score.available:
        lines += [f"Not computed: {markdown_text(note)}" for note in score.notes] or ["Not computed."]
        return "\n".join(lines)
    lines.append("| model | " + " | ".join(markdown_cell(c) for c in score.columns) + " |")
    lines.append("|---|" + "---|" * len(score.columns))
    for model in score.ordered_models():
        cells = [format_value(v) if v is not None else "—" for v in
                 (score.values[model].get(column) for column in score.columns)]
        lines.append(f"| {markdown_cell(model)} | " + " | ".join(cells) + " |")
    if score.notes:
        lines.append("")
        lines += [f"- {markdown_text(note)}" for note in score.notes]
    for summary, items in score.details:
        lines += [""] + _details_markdown(summary, items)
    return "\n".join(lines)


def render_leaderboard(rows: Sequence[dict[str, Any]], skipped: Sequence[dict[str, Any]],
                       scores: Sequence[ScoreTable], *, title: str, description: Sequence[str] = ()) -> str:
    """The whole Markdown document (``CELLS_NOTE`` says how to read a cell)."""
    parts = [f"# {markdown_text(title)}", ""]
    for line in [*description, protocol_note(rows)]:
        parts += [markdown_text(line), ""] if line else []
    parts += [CELLS_NOTE, ""]
    glossary = glossary_lines(rows)
    if glossary:
        parts += _details_markdown(f"What the metrics measure ({len(glossary)})", glossary) + [""]
    if scores:
        parts += ["## Aggregate scores", "", SCORES_NOTE, ""]
        for score in scores:
            parts += [score_table_markdown(score), ""]
    for table in report_tables(rows):
        parts += [f"## {task_title(table.task)} — {table.metric}", "", task_table_markdown(table), ""]
    variants = variant_tables(rows)
    if variants:
        parts += ["## Our protocols vs STEB's", "", VARIANTS_INTRO, ""]
        for table in variants:
            parts += [f"### {task_title(table.task)} — {table.ours} (ours) / {table.steb} (STEB)", "",
                      table.why, "", variant_table_markdown(table), ""]
    breakdowns = breakdown_tables(rows)
    if breakdowns:
        parts += ["## Breakdowns", "", BREAKDOWNS_INTRO, ""]
        for table in breakdowns:
            parts += [f"### {task_title(table.task)} — {table.metric} by stratum", "",
                      task_table_markdown(table), ""]
    if skipped:
        fields = ("model", "task", "units", "reason")
        parts += ["## Not applicable", "", f"<details><summary>{len(skipped)} model x unit combinations "
                  "cannot run (no numbers are reported for them; skipped.jsonl lists each)</summary>", "",
                  "| " + " | ".join(fields) + " |", "|---" * len(fields) + "|"]
        for row in group_skipped(skipped):
            parts.append("| " + " | ".join(markdown_cell(row[f]) for f in fields) + " |")
        parts += ["", "</details>", ""]
    return "\n".join(parts).rstrip() + "\n"
