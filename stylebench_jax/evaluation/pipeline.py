"""``stylebench eval`` end to end: resolve models, load the suite's units, run cells, write files.

Order of work (every user error is raised before any long computation):
1. check the request, load the suite, check ``--datasets`` and the data root;
2. resolve every model (unknown names fail here) and load every dataset's units (a malformed
   data file fails here, with file/line/column);
3. run the cells (``evaluation.runner``), through the embedding cache;
4. write ``results.jsonl`` / ``skipped.jsonl``, ``scores.json``, ``leaderboard.md``,
   ``report.html`` and ``run_info.json`` (all atomically).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import platform
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jax.sharding import Mesh

from stylebench_jax import __version__
from stylebench_jax.cache import EmbeddingCache
from stylebench_jax.errors import InvalidOption, UserInputError
from stylebench_jax.evaluation.aggregate import aggregate_scores, score_tables, scores_json
from stylebench_jax.evaluation.cells import code_digest, numeric_versions, payload_digest
from stylebench_jax.evaluation.results import result_rows, skipped_rows, write_result_files
from stylebench_jax.evaluation.runner import CellsOutcome, EvalSettings, ModelEntry, run_cells
from stylebench_jax.fileio import write_text_atomic
from stylebench_jax.parallel import resolve_mesh
from stylebench_jax.parallel.distributed import check_processes_agree, is_primary, process_count
from stylebench_jax.progress import progress_bar
from stylebench_jax.report import run_description, write_report
from stylebench_jax.tasks.base import TaskContext
from stylebench_jax.tasks.registry import check_unit

# What a run writes beside cells/ (every one derived from the cells and the request).
OUTPUT_FILES = ("results.jsonl", "skipped.jsonl", "scores.json", "leaderboard.md", "report.html",
                "run_info.json")


@dataclasses.dataclass(frozen=True)
class EvalRequest:
    """Everything ``stylebench eval`` was asked to do (CLI flags, already parsed)."""

    models: Sequence[str]
    suite: str | None  # a suite name or file; None: only the ``built`` folders
    output_dir: Path
    data_root: Path
    seed: int = 0
    n_boot: int = 1000
    force: bool = False
    datasets: Sequence[str] | None = None
    mesh: Mesh | None = None  # the run's one mesh (None: every device on data)
    batch_size: int | None = None
    long_text: str = "chunk"  # neural models: chunk | truncate | steb | steb-truncate
    max_length: int | None = None  # neural models: token budget (None: the model's / STEB's)
    cache_dir: Path | None = None
    use_cache: bool = True
    progress: bool = True
    options: dict[str, Any] = dataclasses.field(default_factory=dict)
    built: Sequence[Path] = ()  # `stylebench data build` output folders evaluated besides the suite


@dataclasses.dataclass
class EvalOutcome:
    output_dir: Path
    suite: str
    outcome: CellsOutcome
    scores: dict[str, Any]
    files: dict[str, Path]
    wall_seconds: float

    def summary(self) -> str:
        computed, reused = len(self.outcome.computed), len(self.outcome.reused)
        skipped = sum(1 for c in self.outcome.cells if c.status != "ok")
        lines = [f"suite {self.suite}: {len(self.outcome.cells)} cells ({computed} computed, "
                 f"{reused} reused; {skipped} of all not applicable) in {self.wall_seconds:.1f} s"]
        lines += [f"  {name:<15} {path}" for name, path in self.files.items()]
        return "\n".join(lines)


def _check_request(request: EvalRequest) -> None:
    if not request.models:
        raise InvalidOption("models", "expected at least one model")
    if request.suite is None and not request.built:
        raise InvalidOption("suite", "expected a suite, or built benchmark folders (built)")
    if not Path(request.data_root).is_dir():
        raise InvalidOption("data_root", f"{request.data_root}: not a directory")
    if request.output_dir.exists() and not request.output_dir.is_dir():
        raise InvalidOption("output", f"{request.output_dir}: exists and is not a directory")
    if request.seed < 0:
        raise InvalidOption("seed", f"expected a non-negative integer, got {request.seed}")
    try:
        import matplotlib  # noqa: F401  (report.html needs it; fail before hours of work, not after)
    except ImportError:
        raise UserInputError("the HTML report needs matplotlib: pip install 'stylebench_jax[plot]'") from None


def _select_datasets(suite, requested: Sequence[str] | None) -> list[tuple[str, str]]:
    """``[(dataset, size)]`` of the suite, restricted to ``requested`` (in suite order)."""
    entries = [(entry.name, entry.size) for entry in suite.datasets]
    if requested is None:
        return entries
    from stylebench_jax.data.registry import DATASETS

    in_suite = [name for name, _ in entries]
    for name in requested:
        if name not in DATASETS and name not in in_suite:
            raise InvalidOption("datasets", f"unknown dataset {name!r}; known: {', '.join(DATASETS)}")
        if name not in in_suite:
            raise InvalidOption("datasets", f"{name!r} is not in suite {suite.name!r} "
                                            f"(its datasets: {', '.join(in_suite)})")
    return [(name, size) for name, size in entries if name in requested]


def _resolve_models(request: EvalRequest, mesh: Mesh) -> list[ModelEntry]:
    from stylebench_jax.encoders.registry import resolve_embedder

    options = {"mesh": mesh, "batch_size": request.batch_size, "progress": request.progress,
               "data_root": request.data_root, "long_text": request.long_text,
               "max_length": request.max_length}
    return [ModelEntry(name, resolve_embedder(name, **{k: v for k, v in options.items() if v is not None}))
            for name in request.models]


def _load_units(suite, datasets: list[tuple[str, str]], data_root: Path, seed: int, progress: bool):
    """Every unit the suite selects from ``datasets`` (its tasks/subsets filters applied)."""
    units, seconds = [], {}
    for name, _ in progress_bar(datasets, desc="load data", unit="dataset", enabled=progress):
        start = time.perf_counter()
        loaded = suite.load(data_root, seed=seed, only=[name])
        for unit in loaded:
            check_unit(unit)  # a loader that hands a task the wrong payload is a bug: fail before any work
        units += loaded
        seconds[name] = round(time.perf_counter() - start, 3)
    if process_count() > 1:  # each process loads from its own disk and embeds a share of the same texts
        digest = hashlib.sha256()
        for unit in units:
            digest.update(f"{unit.key}\0{payload_digest(unit.payload)}\0".encode())
        check_processes_agree("the evaluation data (--data-root, $STYLEBENCH_DATA, --built)",
                              digest.hexdigest())
    return units, seconds


def _check_models_agree(models: list[ModelEntry]) -> None:
    """With several processes: every process loaded the same models (their identities cover the
    weights' SHA-256, tokenizer and settings): each embeds a share of the texts, so a process with
    another checkpoint on its disk would mix two models' vectors in one matrix."""
    if process_count() > 1:
        check_processes_agree("the models (--models: weights, tokenizer and settings)",
                              "\n".join(f"{m.label}\t{m.identity}" for m in models))


def _environment() -> dict[str, Any]:
    import jax

    return {"stylebench_jax": __version__, "code": code_digest(), "python": platform.python_version(),
            "platform": platform.platform(), "jax": jax.__version__, **numeric_versions(),
            "devices": [str(d) for d in jax.devices()]}


def run_evaluation(request: EvalRequest) -> EvalOutcome:
    """Run ``request`` and write every output file; see the module docstring for the steps."""
    from stylebench_jax.data.suites import load_suite, with_built

    started = time.perf_counter()
    _check_request(request)
    suite = load_suite(request.suite) if request.suite is not None else None
    if request.built:
        suite = with_built(suite, request.built)
    datasets = _select_datasets(suite, request.datasets)
    mesh = resolve_mesh(request.mesh)
    models = _resolve_models(request, mesh)
    _check_models_agree(models)
    units, load_seconds = _load_units(suite, datasets, request.data_root, request.seed, request.progress)
    cache = EmbeddingCache(request.cache_dir, enabled=request.use_cache)
    settings = EvalSettings(seed=request.seed, n_boot=request.n_boot, force=request.force,
                            progress=request.progress)
    cell_start = time.perf_counter()
    outcome = run_cells(models, units, Path(request.output_dir) / "cells", settings=settings,
                        context=TaskContext(mesh=mesh), embed_fn=cache.embed)
    timing = {"cells_seconds": round(time.perf_counter() - cell_start, 3), "load_seconds": load_seconds}

    # An earlier run's outputs go first and run_info.json comes last, so a run stopped while writing
    # never leaves its files beside another run's (the cells stay: the same command resumes).
    if is_primary():
        for name in OUTPUT_FILES:
            (Path(request.output_dir) / name).unlink(missing_ok=True)
    files, scores = _write_outputs(request, suite.name, datasets, models, outcome)
    timing["wall_seconds"] = round(time.perf_counter() - started, 3)
    run_info = _run_info(request, suite, datasets, models, outcome, cache, timing)
    files["run_info"] = Path(request.output_dir) / "run_info.json"
    write_text_atomic(files["run_info"], json.dumps(run_info, indent=1) + "\n")
    return EvalOutcome(Path(request.output_dir), suite.name, outcome, scores, files, timing["wall_seconds"])


def _write_outputs(request: EvalRequest, suite_name: str, datasets, models: list[ModelEntry],
                   outcome: CellsOutcome) -> tuple[dict[str, Path], dict[str, Any]]:
    """results.jsonl, skipped.jsonl, scores.json, leaderboard.md, report.html; returns their paths."""
    output_dir = Path(request.output_dir)
    rows, skipped = result_rows(outcome.cells), skipped_rows(outcome.cells)
    results_path, skipped_path = write_result_files(output_dir, outcome.cells)
    scores = aggregate_scores(rows)
    scores_path = output_dir / "scores.json"
    write_text_atomic(scores_path, scores_json(scores))
    title, description = run_description(suite_name, datasets, [m.label for m in models], seed=request.seed,
                                         n_boot=request.n_boot, version=__version__,
                                         long_text=request.long_text, max_length=request.max_length,
                                         code=code_digest(),
                                         built=", ".join(str(p) for p in request.built) or None)
    markdown_path, html_path = write_report(output_dir, rows, skipped, score_tables(scores),
                                            title=title, description=description)
    files = {"results": results_path, "skipped": skipped_path, "scores": scores_path,
             "leaderboard": markdown_path, "report": html_path}
    return files, scores


def _run_info(request: EvalRequest, suite, datasets, models: list[ModelEntry], outcome: CellsOutcome,
              cache: EmbeddingCache, timing: dict[str, Any]) -> dict[str, Any]:
    """What run_info.json records: the request, per-cell timings, cache use and the environment."""
    return {
        "suite": suite.name, "suite_file": str(suite.path), "data_root": str(request.data_root),
        "built": [str(p) for p in request.built],
        "datasets": [{"name": n, "size": s} for n, s in datasets],
        "models": [{"label": m.label, "identity": m.identity} for m in models],
        "seed": request.seed, "n_boot": request.n_boot, "force": request.force,
        "encoding": {"long_text": request.long_text, "max_length": request.max_length},
        "options": {k: str(v) if isinstance(v, Path) else v for k, v in request.options.items()},
        **timing,
        "cells": [{**dataclasses.asdict(t.key), "status": t.status, "seconds": round(t.seconds, 3),
                   "embed_seconds": round(t.embed_seconds, 3)} for t in outcome.timings],
        "cache": {"enabled": request.use_cache, "root": str(cache.root) if request.use_cache else None,
                  "hits": cache.hits, "misses": cache.misses if request.use_cache else 0},
        "environment": _environment(),
    }


