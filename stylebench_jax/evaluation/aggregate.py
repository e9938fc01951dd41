"""STEB's aggregate scores for a run (``tasks.scores``) as ``scores.json`` data and report tables.

``scores.json``::

    {"operational": {"available": true, "columns": [...], "table": {model: {column: value}},
                     "clusters": {column: [[unit, ...], ...]}, "metrics": {task: metric},
                     "threshold": 0.5, "notes": [...]}
                    | {"available": false, "reason": "..."},
     "definitional": {"available": ..., "columns": [...], "table": ..., "members": {group: [...]},
                      "unassigned": [...], "notes": [...]}}
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from stylebench_jax.report import ScoreTable
from stylebench_jax.tasks.base import NotApplicable
from stylebench_jax.tasks.scores import (
    CONTENT,
    LINGUISTIC,
    OBJECTS_OF_STUDY,
    OPERATIONAL_METRICS,
    WARD_THRESHOLD,
    definitional_score,
    operational_score,
)


def aggregate_scores(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Operational and definitional scores of ``results.jsonl`` rows, JSON-ready (module docstring)."""
    return {"operational": _operational(rows), "definitional": _definitional(rows)}


def _operational(rows) -> dict[str, Any]:
    try:
        score = operational_score(rows)
    except NotApplicable as reason:
        return {"available": False, "reason": str(reason)}
    columns = [*score.columns, "overall"]
    return {"available": any(score.table[m] for m in score.models), "columns": columns,
            "table": _table(score.table, score.models, columns),
            "clusters": score.clusters, "metrics": dict(OPERATIONAL_METRICS), "threshold": WARD_THRESHOLD,
            "notes": list(score.notes)}


def _table(table, models, columns) -> dict[str, dict[str, float]]:
    return {m: {c: table[m][c] for c in columns if c in table[m]} for m in models}


def _definitional(rows) -> dict[str, Any]:
    score = definitional_score(rows)
    present = {c for values in score.table.values() for c in values}
    order = [*OBJECTS_OF_STUDY, "object_of_study", LINGUISTIC, CONTENT, "overall"]
    columns = [c for c in order if c in present or c in score.members]
    if not columns:
        return {"available": False, "reason": "no dataset of this run has a definitional group",
                "unassigned": score.unassigned}
    return {"available": True, "columns": columns,
            "table": _table(score.table, score.models, columns),
            "members": score.members, "unassigned": score.unassigned, "notes": list(score.notes)}


def score_tables(scores: Mapping[str, Any]) -> list[ScoreTable]:
    """The two aggregate scores as report tables (absent ones carry the reason)."""
    tables = []
    operational = scores["operational"]
    title = "STEB operational score (redundancy-aware: Ward clusters of datasets per task column)"
    if not operational["available"]:
        tables.append(ScoreTable(title, (), {}, (operational.get("reason") or "no column could be scored",),
                                 available=False))
    else:
        metrics = ", ".join(f"{task}: {metric}" for task, metric in operational["metrics"].items())
        notes = [f"Column metrics: {metrics}. Spearman correlations of model rankings between datasets, "
                 f"Ward linkage on 1 - rho cut at {operational['threshold']}; mean within clusters, then "
                 "across clusters; overall = mean of columns."]
        notes += [f"{column} clusters: " + " | ".join("{" + ", ".join(group) + "}" for group in groups)
                  for column, groups in operational["clusters"].items()]
        notes += [_shorten(note) for note in operational["notes"]]
        tables.append(ScoreTable(title, tuple(operational["columns"]), operational["table"], tuple(notes)))
    definitional = scores["definitional"]
    title = "STEB definitional grouping (object of study, linguistic features, content independence)"
    if not definitional["available"]:
        tables.append(ScoreTable(title, (), {}, (definitional["reason"],), available=False))
    else:
        notes = [f"{group}: {', '.join(members)}" for group, members in definitional["members"].items()]
        if definitional["unassigned"]:
            notes.append(f"not in any group: {', '.join(definitional['unassigned'])}")
        notes += [_shorten(note) for note in definitional["notes"]]
        tables.append(ScoreTable(title, tuple(definitional["columns"]), definitional["table"], tuple(notes)))
    return tables


def _shorten(note: str, keep: int = 3) -> str:
    """``"m: no x score (missing a, b, c, d, e)"`` -> ``"... (missing 5 units: a, b, c, ...)"`` for the
    report (scores.json keeps the full note)."""
    match = re.search(r"\(missing (.*)\)$", note)
    if not match:
        return note
    units = match.group(1).split(", ")
    if len(units) <= keep + 1:
        return note
    return f"{note[:match.start()]}(missing {len(units)} units: {', '.join(units[:keep])}, ...)"
