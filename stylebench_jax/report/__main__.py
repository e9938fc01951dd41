"""``python -m stylebench_jax.report RUN_DIR``: re-render ``leaderboard.md`` and ``report.html`` of a
finished ``stylebench eval`` run from its ``results.jsonl`` and ``skipped.jsonl`` (title and
description from ``run_info.json`` when present), without embedding or evaluating anything.

STEB's aggregate scores are recomputed from ``results.jsonl`` by this version's code and written to
``scores.json`` beside the report, so the report and that file agree; when the run's ``scores.json``
held other numbers (written by an older version), a line on stderr says so.

Useful after a change of the report's layout, or to render into another directory (``--output``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from stylebench_jax.errors import UserInputError, located

RESULT_KEYS = ("model", "dataset", "subset", "task", "metric", "primary", "value", "ci_low", "ci_high", "n")
SKIPPED_KEYS = ("model", "dataset", "subset", "task", "reason")


def _rows(path: Path, keys: tuple[str, ...], *, required: bool) -> list[dict[str, Any]]:
    from stylebench_jax.data.readers import read_jsonl, read_text

    if not path.is_file():
        if required:
            raise located(path, "not found; expected the output of `stylebench eval`")
        return []
    if not read_text(path).strip():
        return []
    return [row.data for row in read_jsonl(path, keys=keys)]


def _json(path: Path) -> dict[str, Any]:
    from stylebench_jax.data.readers import read_text

    try:
        data = json.loads(read_text(path))
    except json.JSONDecodeError as error:
        raise located(path, f"invalid JSON ({error.msg})", line=error.lineno, column=error.colno) from None
    if not isinstance(data, dict):
        raise located(path, f"expected a JSON object, found {type(data).__name__}")
    return data


def render_run(run_dir: Path, output_dir: Path | None = None) -> tuple[Path, Path]:
    """Write ``leaderboard.md`` and ``report.html`` for the run in ``run_dir`` into ``output_dir``
    (default: ``run_dir``); returns both paths."""
    from stylebench_jax.data.readers import read_text
    from stylebench_jax.evaluation.aggregate import aggregate_scores, score_tables, scores_json
    from stylebench_jax.fileio import write_text_atomic
    from stylebench_jax.report import run_description, write_report

    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UserInputError(f"{run_dir}: not a directory; expected the --output directory of "
                             "`stylebench eval`")
    rows = _rows(run_dir / "results.jsonl", RESULT_KEYS, required=True)
    skipped = _rows(run_dir / "skipped.jsonl", SKIPPED_KEYS, required=False)
    scores = aggregate_scores(rows)
    scores_text = scores_json(scores)
    stored = run_dir / "scores.json"
    changed = stored.is_file() and read_text(stored) != scores_text
    info_path = run_dir / "run_info.json"
    title, description = f"stylebench eval — {run_dir.name}", []
    if info_path.is_file():
        info = _json(info_path)
        try:
            title, description = run_description(
                info["suite"], [(d["name"], d["size"]) for d in info["datasets"]],
                [m["label"] for m in info["models"]], seed=info["seed"], n_boot=info["n_boot"],
                version=info["environment"]["stylebench_jax"], code=info["environment"].get("code"),
                built=", ".join(info.get("built", [])) or None,
                **{key: value for key, value in info.get("encoding", {}).items()
                   if key in ("long_text", "max_length")})
        except (KeyError, TypeError) as error:
            raise located(info_path, f"missing or malformed field {error}") from None
    output_dir = run_dir if output_dir is None else Path(output_dir)
    if output_dir.exists() and not output_dir.is_dir():
        raise UserInputError(f"--output {output_dir}: exists and is not a directory")
    if not output_dir.parent.is_dir():
        raise UserInputError(f"--output {output_dir}: parent directory {output_dir.parent} does not exist")
    output_dir.mkdir(exist_ok=True)
    if changed:
        print(f"stylebench_jax.report: note: {stored} held other aggregate scores (an older version's); "
              f"the report shows this version's, now in {output_dir / 'scores.json'}", file=sys.stderr)
    write_text_atomic(output_dir / "scores.json", scores_text)
    return write_report(output_dir, rows, skipped, score_tables(scores), title=title, description=description)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m stylebench_jax.report", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="output directory of `stylebench eval`")
    parser.add_argument("--output", type=Path, default=None, metavar="DIR",
                        help="write leaderboard.md, report.html and scores.json here instead of RUN_DIR")
    args = parser.parse_args(argv)
    try:
        paths = render_run(args.run_dir, args.output)
    except UserInputError as error:
        print(f"stylebench_jax.report: error: {error}", file=sys.stderr)
        return 2
    for path in paths:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
