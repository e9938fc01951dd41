"""Flatten cells into ``results.jsonl`` / ``skipped.jsonl`` rows in one canonical order.

``results.jsonl`` has one line per model x dataset x subset x task x metric::

    {"model", "dataset", "subset", "task", "metric", "primary", "value", "ci_low", "ci_high", "n"}

``primary`` marks the task's headline metric (the first Score a task returns). Rows follow the
sorted cell keys and, within a cell, the task's own metric order; nothing run-dependent (times,
dates, paths) goes in, so the same command gives byte-identical files.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from stylebench_jax.evaluation.cells import STATUS_NOT_APPLICABLE, STATUS_OK, CellResult, score_to_json
from stylebench_jax.fileio import write_jsonl_atomic

RESULT_FIELDS = ("model", "dataset", "subset", "task", "metric", "primary", "value", "ci_low", "ci_high", "n")


def result_rows(cells: Iterable[CellResult]) -> list[dict[str, Any]]:
    """One dict per reported metric of every computed cell, canonical order."""
    rows = []
    for cell in sorted(cells, key=lambda c: c.key):
        if cell.status != STATUS_OK:
            continue
        for position, score in enumerate(cell.scores):
            number = score_to_json(score)
            rows.append({**dataclasses.asdict(cell.key), "metric": score.metric, "primary": position == 0,
                         "value": number["value"], "ci_low": number["ci_low"],
                         "ci_high": number["ci_high"], "n": number["n"]})
    return rows


def skipped_rows(cells: Iterable[CellResult]) -> list[dict[str, Any]]:
    """One dict per model x unit the model cannot run, with the reason."""
    return [{**dataclasses.asdict(cell.key), "reason": cell.reason}
            for cell in sorted(cells, key=lambda c: c.key) if cell.status == STATUS_NOT_APPLICABLE]


def write_result_files(output_dir: Path, cells: list[CellResult]) -> tuple[Path, Path]:
    """Write ``results.jsonl`` and ``skipped.jsonl`` atomically; returns their paths."""
    output_dir = Path(output_dir)
    results_path, skipped_path = output_dir / "results.jsonl", output_dir / "skipped.jsonl"
    write_jsonl_atomic(results_path, result_rows(cells))
    write_jsonl_atomic(skipped_path, skipped_rows(cells))
    return results_path, skipped_path
