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

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from stylebench_jax.report import ScoreTable
from stylebench_jax.report.tables import ordered_tasks
from stylebench_jax.tasks.base import NotApplicable
from stylebench_jax.tasks.scores import (
    CONTENT,
    LINGUISTIC,
    OBJECTS_OF_STUDY,
    OPERATIONAL_METRICS,
    TASK_FAMILIES,
    WARD_THRESHOLD,
    definitional_score,
    operational_score,
)


def aggregate_scores(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Operational and definitional scores of ``results.jsonl`` rows, JSON-ready (module docstring)."""
    return {"operational": _operational(rows), "definitional": _definitional(rows)}


def scores_json(scores: Mapping[str, Any]) -> str:
    """``scores.json``'s text (keys sorted, so the same scores give the same bytes)."""
    return json.dumps(scores, indent=1, sort_keys=True, allow_nan=False) + "\n"


_STEL_NOTE = (" (STEL's quadruples, order_quad, are STEL's protocol; STEB reads STEL through its ordered "
              "pairs, the order_list units of the stel dataset)")


def _stel_note(rows) -> str:
    """Why STEL's own units do not count, said only when the run has them."""
    return _STEL_NOTE if any(r.get("dataset") == "stel" for r in rows) else ""


def _operational(rows) -> dict[str, Any]:
    try:
        score = operational_score(rows)
    except NotApplicable as reason:
        return {"available": False, "reason": str(reason)}
    if not score.columns:
        return {"available": False,
                "reason": f"no unit of this run is part of STEB's operational score{_stel_note(rows)}"}
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
        return {"available": False,
                "reason": f"no unit of this run is part of STEB's definitional score{_stel_note(rows)}",
                "unassigned": score.unassigned}
    return {"available": True, "columns": columns,
            "table": _table(score.table, score.models, columns),
            "members": score.members, "unassigned": score.unassigned, "notes": list(score.notes)}


def score_tables(scores: Mapping[str, Any]) -> list[ScoreTable]:
    """The two aggregate scores as report tables (absent ones carry the reason). Short notes stay
    under each table; cluster and group memberships and why cells are blank go into ``details``.
    Everything is listed in a fixed order, so tables built from a re-read ``scores.json`` (keys
    sorted) equal those built from the fresh dict."""
    tables = []
    operational = scores["operational"]
    title = "STEB operational score (redundancy-aware: Ward clusters of datasets per task column)"
    if not operational["available"]:
        tables.append(ScoreTable(title, (), {}, (operational.get("reason") or "no column could be scored",),
                                 available=False))
    else:
        metrics = ", ".join(f"{task}: {operational['metrics'][task]}"
                            for task in ordered_tasks(operational["metrics"])
                            if TASK_FAMILIES.get(task, task) in operational["columns"])  # tasks of this run
        notes = [f"Column metrics: {metrics}. Spearman correlations of model rankings between datasets, "
                 f"Ward linkage on 1 - rho cut at {operational['threshold']}; mean within clusters, then "
                 "across clusters; overall = mean of columns. The clusters come from this run's models "
                 "(STEB's from its 40), so a model's score changes when other models join or leave the "
                 "run: compare scores within one run, not across runs or with STEB's tables."]
        clusters = operational["clusters"]
        lines = tuple(f"{column}: " + " | ".join("{" + ", ".join(group) + "}" for group in clusters[column])
                      for column in operational["columns"] if column in clusters)
        count = sum(len(groups) for groups in clusters.values())
        details = [(f"Ward clusters of each column ({count} clusters)", lines)]
        notes, details = _with_blanks(notes, details, operational)
        tables.append(ScoreTable(title, tuple(operational["columns"]), operational["table"], tuple(notes),
                                 details=tuple(details)))
    definitional = scores["definitional"]
    title = "STEB definitional grouping (object of study, linguistic features, content independence)"
    if not definitional["available"]:
        tables.append(ScoreTable(title, (), {}, (definitional["reason"],), available=False))
    else:
        members = definitional["members"]
        lines = [f"{group}: {', '.join(members[group])}"
                 for group in definitional["columns"] if group in members]
        if definitional["unassigned"]:
            lines.append(f"not in any group: {', '.join(definitional['unassigned'])}")
        details = [(f"Datasets of each group ({len(members)} groups)", tuple(lines))]
        notes, details = _with_blanks(_definitional_notes(definitional["columns"]), details, definitional,
                                      ranked=False)
        tables.append(ScoreTable(title, tuple(definitional["columns"]), definitional["table"], tuple(notes),
                                 details=tuple(details)))
    return tables


def _definitional_notes(columns: Sequence[str]) -> list[str]:
    """How the definitional columns are made, and which of STEB's groups this run lacks."""
    objects = [g for g in OBJECTS_OF_STUDY if g in columns]
    top = [g for g in ("object_of_study", LINGUISTIC, CONTENT) if g in columns or
           (g == "object_of_study" and objects)]
    notes = ["A group's value is the mean over its datasets of the mean of each dataset's cells, which "
             "mix metrics as STEB's do (V-measure, AUROC, STEB's MRR, probe accuracy and order-alignment "
             f"accuracy; content independence: STEB's distractor accuracy). object_of_study = mean of "
             f"{', '.join(objects) or 'no sub-group'}; overall = mean of {', '.join(top)}."]
    absent = [g for g in OBJECTS_OF_STUDY if g not in objects]
    if absent:
        notes.append(f"Not in this run: {', '.join(absent)} (STEB's object of study has all six sub-groups"
                     + ("; none of our datasets covers dialect" if "dialect" in absent else "") + ").")
    missing = [g for g in ("object_of_study", LINGUISTIC, CONTENT) if g not in top]
    if missing:
        notes.append(f"overall averages {len(top)} of STEB's 3 groups: this run has no unit of "
                     f"{', '.join(missing)}.")
    return notes


_MISSING = re.compile(r"^(?P<model>.+?): no (?P<column>\S+) score \(missing (?P<units>.*)\)$")


def _with_blanks(notes: list[str], details: list, score: Mapping[str, Any], *, ranked: bool = True):
    """Fold ``"m: no x score (missing ...)"`` notes of ``score`` (the JSON of either score) into one
    detail line per column and missing-unit list (the models sharing it named together); other
    notes stay visible; one note counts the blank cells of the table."""
    score_notes = score["notes"]
    blanks = sum(column not in values for values in score["table"].values() for column in score["columns"])
    groups: dict[tuple[str, str], list[str]] = {}
    for note in score_notes:
        match = _MISSING.match(note)
        if match is None:
            notes.append(_shorten(note))
        else:
            groups.setdefault((match["column"], match["units"]), []).append(match["model"])
    if blanks:
        why = (", or fewer than 3 models have them all (the notes above and the list below say which)"
               if ranked else " (the list below says which)")
        notes.append(f"— = not computable ({blanks} model x column cells): the model lacks a dataset of the "
                     f"column{why}; overall is blank where any column is.")
    if groups:
        lines = tuple(f"{', '.join(sorted(models))}: no {column} score (missing {units})"
                      for (column, units), models in groups.items())
        count = sum(len(models) for models in groups.values())
        details.append((f"Models lacking a dataset ({count} model x column cells)", lines))
    return notes, details


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
