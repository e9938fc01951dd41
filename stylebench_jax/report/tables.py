"""Shape result rows into the tables the reports print: per task, models x dataset columns.

Input rows are ``results.jsonl`` dicts (see ``evaluation.results``). A *column* is a dataset, or
``dataset/subset`` when the dataset has several subsets for that task.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from typing import Any

from stylebench_jax.tasks import registry

# Titles, order and secondary metrics come from the task table (tasks/registry.py).
TASK_TITLES = {spec.name: spec.title for spec in registry.TASKS.values()}
TASK_ORDER = tuple(TASK_TITLES)
# Shown as their own tables after the primary metric (STEB's operational score uses distractor
# accuracy for order alignment: STEL-or-Content and the list distractor variant).
SECONDARY_METRICS = {spec.name: spec.secondary_metrics for spec in registry.TASKS.values()
                     if spec.secondary_metrics}


def task_title(task: str) -> str:
    return TASK_TITLES.get(task, task)


def protocol_note(rows: Sequence[dict[str, Any]]) -> str:
    """One sentence naming the papers whose protocols the rows' tasks follow (``""`` when none)."""
    used = {registry.TASKS[r["task"]].protocol for r in rows if r["task"] in registry.TASKS}
    cited = [citation for name, citation in registry.PROTOCOLS.items() if name in used]
    return "Protocols: " + "; ".join(cited) + "." if cited else ""


CELLS_NOTE = ("Cells: primary metric, 95% bootstrap confidence interval in brackets (instances resampled; "
              "none for a single instance). Bold = the row's clear winner: the best value (the lowest for "
              "EER) whose interval is disjoint from every other model's; no bold where intervals overlap. "
              "n = instances; — = not run; n/a = undefined.")
SCORES_NOTE = ("Aggregate scores are means of point estimates (no interval) of the metrics named under "
               "each table. Where a task's protocol differs from STEB's, they read STEB's variant ("
               + ", ".join(sorted({v.steb for spec in registry.TASKS.values() for v in spec.variants}))
               + "): its values are under 'Our protocols vs STEB's' below, with intervals in "
               "results.jsonl.")
BREAKDOWNS_INTRO = ("The same metrics per stratum (language, genre with blog and social_media "
                    "macro-averaged over subgenres, length bucket, topic-selected pool); n = queries.")


def glossary_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """``"name: definition"`` for each metric family of ``rows`` (``registry.metric_glossary``)."""
    return [f"{name}: {text}" for name, text in registry.metric_glossary({r["metric"] for r in rows})]


def ordered_tasks(tasks: Iterable[str]) -> list[str]:
    """Known tasks in protocol order, unknown ones after them alphabetically."""
    tasks = set(tasks)
    return [t for t in TASK_ORDER if t in tasks] + sorted(tasks - set(TASK_ORDER))


@dataclasses.dataclass(frozen=True)
class Cell:
    value: float
    ci_low: float
    ci_high: float
    n: int


@dataclasses.dataclass(frozen=True)
class TaskTable:
    """One metric of one task: ``cells[(model, column)]``; ``best(column)`` = the clear winner."""

    task: str
    metric: str
    models: tuple[str, ...]
    columns: tuple[str, ...]
    cells: dict[tuple[str, str], Cell]

    def best(self, column: str) -> frozenset[str]:
        """The model that wins ``column`` clearly, as a set (empty when none does): the highest value,
        or the lowest for the task table's lower-is-better metrics (EER), when its 95% interval is
        disjoint from every other model's. No winner on a tie, on overlapping intervals (the
        difference may be resampling noise), or where a value has no interval (one instance, or
        none computed); intervals come from separate bootstraps, so disjoint ones are a conservative
        test of a difference."""
        scored = {m: c for m in self.models
                  if (c := self.cells.get((m, column))) is not None and _finite(c.value)}
        if len(scored) < 2 or not all(has_interval(c) for c in scored.values()):
            return frozenset()
        lower = self.metric in registry.LOWER_IS_BETTER
        ranked = sorted(scored, key=lambda m: (scored[m].value if lower else -scored[m].value, m))
        top, rest = scored[ranked[0]], [scored[m] for m in ranked[1:]]
        if lower:
            clear = all(top.ci_high < c.ci_low for c in rest)
        else:
            clear = all(top.ci_low > c.ci_high for c in rest)
        return frozenset(ranked[:1]) if clear else frozenset()


def has_interval(cell: Cell) -> bool:
    """Whether ``cell`` has an interval worth printing (at least two instances, finite bounds)."""
    return cell.n >= 2 and _finite(cell.ci_low) and _finite(cell.ci_high)


def _finite(value: Any) -> bool:
    return value is not None and math.isfinite(float(value))


def _number(value: Any) -> float:
    return math.nan if value is None else float(value)


def column_name(dataset: str, subset: str, multi_subset: bool) -> str:
    return f"{dataset}/{subset}" if multi_subset and subset else dataset


def report_tables(rows: Sequence[dict[str, Any]]) -> list[TaskTable]:
    """Per task its primary-metric table, followed by its ``SECONDARY_METRICS`` tables."""
    tables = []
    for table in task_tables(rows):
        tables.append(table)
        task_rows = [r for r in rows if r["task"] == table.task]
        for metric in SECONDARY_METRICS.get(table.task, ()):
            tables += task_tables(task_rows, metric)
    return tables


def task_tables(rows: Sequence[dict[str, Any]], metric: str | None = None) -> list[TaskTable]:
    """One table per task of its primary metric (or of ``metric`` where a task reports it)."""
    tables = []
    for task in ordered_tasks(r["task"] for r in rows):
        task_rows = [r for r in rows if r["task"] == task and
                     (r["metric"] == metric if metric else r.get("primary", False))]
        if not task_rows:
            continue
        subsets: dict[str, set[str]] = {}
        for r in task_rows:
            subsets.setdefault(r["dataset"], set()).add(r["subset"])
        cells, columns = {}, []
        for r in sorted(task_rows, key=lambda r: (r["dataset"], r["subset"])):
            column = column_name(r["dataset"], r["subset"], len(subsets[r["dataset"]]) > 1)
            if column not in columns:
                columns.append(column)
            cells[(r["model"], column)] = Cell(_number(r["value"]), _number(r["ci_low"]),
                                               _number(r["ci_high"]), int(r["n"]))
        metrics = sorted({r["metric"] for r in task_rows})
        tables.append(TaskTable(task, " / ".join(metrics), tuple(sorted({r["model"] for r in task_rows})),
                                tuple(columns), cells))
    return tables


@dataclasses.dataclass(frozen=True)
class VariantTable:
    """Our metric and STEB's side by side (a task row's ``variants``): ``cells[(model, column)] =
    (ours, steb)``, either ``None`` when absent (e.g. STEB's episodes need vectors)."""

    task: str
    ours: str
    steb: str
    why: str
    models: tuple[str, ...]
    columns: tuple[str, ...]
    cells: dict[tuple[str, str], tuple[Cell | None, Cell | None]]


def variant_tables(rows: Sequence[dict[str, Any]]) -> list[VariantTable]:
    """One table per task variant (``registry.TaskSpec.variants``) with rows of STEB's metric."""
    tables = []
    for task in ordered_tasks(r["task"] for r in rows):
        spec = registry.TASKS.get(task)
        for variant in spec.variants if spec else ():
            ours = task_tables([r for r in rows if r["task"] == task], variant.ours)
            steb = task_tables([r for r in rows if r["task"] == task], variant.steb)
            if not steb:
                continue
            ours_table = ours[0] if ours else None
            columns = list(steb[0].columns) + [c for c in (ours_table.columns if ours_table else ())
                                               if c not in steb[0].columns]
            models = sorted(set(steb[0].models) | set(ours_table.models if ours_table else ()))
            cells = {(m, c): (ours_table.cells.get((m, c)) if ours_table else None, steb[0].cells.get((m, c)))
                     for m in models for c in columns}
            tables.append(VariantTable(task, variant.ours, variant.steb, variant.why, tuple(models),
                                       tuple(columns), cells))
    return tables


def format_pair(pair: tuple[Cell | None, Cell | None], digits: int = 3) -> str:
    """``ours / STEB`` values, ``—`` for an absent one."""
    return " / ".join("—" if cell is None else format_value(cell.value, digits) for cell in pair)


_LENGTH_ORDER = {"short": 0, "medium": 1, "long": 2, "extra_long": 3}
_AXIS_ORDER = {"language": 0, "genre": 1, "length": 2, "pool": 3}


def _stratum_key(stratum: str) -> tuple:
    axis, _, value = stratum.partition("=")
    return _AXIS_ORDER.get(axis, len(_AXIS_ORDER)), axis, _LENGTH_ORDER.get(value, -1), value


def breakdown_tables(rows: Sequence[dict[str, Any]]) -> list[TaskTable]:
    """Stratified breakdowns (rows whose metric is ``<metric>|<axis>=<value>``, e.g. AuthBench's
    language / genre / length strata): per task and each of its primary and secondary metrics, a
    models x strata table; ``n`` per column = the stratum's query count."""
    tables = []
    for task in ordered_tasks(r["task"] for r in rows):
        spec = registry.TASKS.get(task)
        if spec is None:
            continue
        for metric in (spec.primary_metric, *spec.secondary_metrics):
            prefix = metric + "|"
            task_rows = [r for r in rows if r["task"] == task and r["metric"].startswith(prefix)]
            if not task_rows:
                continue
            units = {(r["dataset"], r["subset"]) for r in task_rows}
            cells = {}
            for r in task_rows:
                stratum = r["metric"][len(prefix):]
                column = stratum if len(units) == 1 else f"{r['dataset']}/{r['subset']} {stratum}"
                cells[(r["model"], column)] = Cell(_number(r["value"]), _number(r["ci_low"]),
                                                   _number(r["ci_high"]), int(r["n"]))
            columns = sorted({c for _, c in cells}, key=lambda c: (c.rpartition(" ")[0],
                                                                   _stratum_key(c.rpartition(" ")[2])))
            tables.append(TaskTable(task, metric, tuple(sorted({r["model"] for r in task_rows})),
                                    tuple(columns), cells))
    return tables


def column_n(table: TaskTable, column: str) -> str:
    """Instances behind ``column``'s values: ``"400"``, or ``"20/40"`` when models saw different counts."""
    return "/".join(str(n) for n in sorted({c.n for (m, col), c in table.cells.items() if col == column}))


def format_value(value: float, digits: int = 3) -> str:
    return "n/a" if not _finite(value) else f"{value:.{digits}f}"


def format_cell(cell: Cell | None, digits: int = 3) -> str:
    """``0.842 [0.801, 0.880]``; ``—`` when absent, ``n/a`` when undefined; no interval for a value
    of one instance (its bootstrap has no spread to show)."""
    if cell is None:
        return "—"
    text = format_value(cell.value, digits)
    if has_interval(cell):
        text += f" [{cell.ci_low:.{digits}f}, {cell.ci_high:.{digits}f}]"
    return text


def group_skipped(skipped: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
    """Skipped rows merged per (model, task, reason): ``{"model", "task", "reason", "units"}`` where
    ``units`` lists the ``dataset[/subset]`` names, in sorted order."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for row in skipped:
        unit = row["dataset"] if row["subset"] in ("", "all") else f"{row['dataset']}/{row['subset']}"
        groups.setdefault((row["model"], row["task"], row["reason"]), []).append(unit)
    return [{"model": model, "task": task, "reason": reason, "units": ", ".join(sorted(units))}
            for (model, task, reason), units in sorted(groups.items())]
