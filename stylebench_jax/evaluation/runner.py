"""Run every model over every evaluation unit, one resumable cell at a time.

A *unit* (``data.registry.EvalUnit``) is one dataset subset prepared for one task; a *cell* is a
model x unit. For each cell the runner builds a ``TextScorer`` whose vectors come through the
embedding cache, calls the task protocol (``tasks.registry.run_task``), and writes the cell
atomically under ``DIR/cells/``. A stored cell whose fingerprint still matches is reused (resume);
``force=True`` recomputes everything. With several processes (``parallel.distributed``) every
process runs every cell (device work is split over the global mesh), the primary alone reads the
stored cells (and broadcasts them) and writes. ``NotApplicable`` (e.g. a similarity-only baseline asked to
cluster) is stored as a skipped cell with its reason, never as a number.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from stylebench_jax import __version__
from stylebench_jax.encoders.base import Embedder, PairSimilarity, embed_direct
from stylebench_jax.errors import UserInputError
from stylebench_jax.evaluation.cells import (
    STATUS_NOT_APPLICABLE,
    STATUS_OK,
    CellKey,
    CellResult,
    cell_fingerprint,
    code_digest,
    numeric_versions,
    payload_digest,
    read_cell,
    write_cell,
)
from stylebench_jax.hashing import texts_digest
from stylebench_jax.parallel.distributed import broadcast_from_primary
from stylebench_jax.progress import progress_bar
from stylebench_jax.tasks.base import (
    EmbedFn,
    ModelOutputError,
    NotApplicable,
    Score,
    TaskContext,
    TextScorer,
    TooFewInstances,
)
from stylebench_jax.tasks.registry import run_task

TaskRunner = Callable[..., list[Score]]


@dataclasses.dataclass(frozen=True)
class ModelEntry:
    """A model as the run names it: ``label`` goes into results, ``identity`` into fingerprints."""

    label: str
    model: Embedder | PairSimilarity

    @property
    def identity(self) -> str:
        return str(getattr(self.model, "identity", None) or f"{type(self.model).__qualname__}:{self.label}")


@dataclasses.dataclass(frozen=True)
class EvalSettings:
    """Knobs that change numbers (seed, n_boot) or only the work done (force, progress)."""

    seed: int = 0
    n_boot: int = 1000
    force: bool = False
    progress: bool = True


@dataclasses.dataclass(frozen=True)
class CellTiming:
    key: CellKey
    status: str  # "computed" | "reused" | "not_applicable"
    seconds: float  # wall time of the cell, embedding included
    embed_seconds: float = 0.0  # of which spent obtaining vectors (cache lookups + encoder)


@dataclasses.dataclass
class CellsOutcome:
    """All cells of a run in canonical (sorted) order, plus what this run actually did."""

    cells: list[CellResult]
    timings: list[CellTiming]

    @property
    def computed(self) -> list[CellKey]:
        return [t.key for t in self.timings if t.status != "reused"]

    @property
    def reused(self) -> list[CellKey]:
        return [t.key for t in self.timings if t.status == "reused"]


class _RecentEmbeddings:
    """Keeps the last few ``[N, D]`` results per model so two tasks on the same texts embed once.

    Sits in front of ``embed_fn`` (normally the on-disk cache), which matters with ``--no-cache``.
    """

    def __init__(self, embed_fn: EmbedFn, capacity: int = 4):
        self._embed_fn = embed_fn
        self._capacity = capacity
        self._recent: collections.OrderedDict[tuple[int, str], np.ndarray] = collections.OrderedDict()
        self.seconds = 0.0  # total time spent in ``embed_fn``

    def __call__(self, embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
        key = (id(embedder), texts_digest(texts))
        if key in self._recent:
            self._recent.move_to_end(key)
            return self._recent[key]
        start = time.perf_counter()
        vectors = np.asarray(self._embed_fn(embedder, texts))
        self.seconds += time.perf_counter() - start
        self._recent[key] = vectors
        while len(self._recent) > self._capacity:
            self._recent.popitem(last=False)
        return vectors


def run_cells(models: Sequence[ModelEntry], units: Sequence[Any], cells_dir: Path, *,
              settings: EvalSettings, context: TaskContext | None = None,
              task_runner: TaskRunner | None = None, embed_fn: EmbedFn | None = None) -> CellsOutcome:
    """Evaluate every model on every unit; returns all cells sorted by (model, dataset, subset, task).

    ``units`` have ``dataset``, ``subset``, ``task`` and ``payload``; ``task_runner(task, scorer,
    payload, *, seed, n_boot) -> list[Score]`` runs one protocol (first Score = primary metric); by
    default the task table's runner (``tasks.registry.run_task``) with the shared ``context``.
    """
    if task_runner is None:
        task_runner = functools.partial(run_task, context=context or TaskContext())
    _check_unique([m.label for m in models], "model")
    _check_unique([(u.dataset, u.subset, u.task) for u in units], "dataset/subset/task unit")
    cells_dir = Path(cells_dir)
    memo = _RecentEmbeddings(embed_fn or embed_direct)
    scorers = {m.label: TextScorer(m.model, embed_fn=memo) for m in models}
    digests = {(u.dataset, u.subset, u.task): payload_digest(u.payload) for u in units}
    versions = tuple(f"{name}={value}" for name, value in numeric_versions().items())
    # Which cells are already done is read by the primary process and broadcast: with several
    # processes every one must make the same choice, whatever its view of the output directory.
    stored_cells = {} if settings.force else broadcast_from_primary(lambda: {
        key: read_cell(cells_dir, key) for key in (
            CellKey(m.label, u.dataset, u.subset, u.task) for u in units for m in models)})
    results: list[CellResult] = []
    timings: list[CellTiming] = []
    bar = progress_bar(total=len(models) * len(units), desc="eval", unit="cell", enabled=settings.progress)
    with bar:
        for unit in units:
            for entry in models:
                key = CellKey(entry.label, unit.dataset, unit.subset, unit.task)
                bar.set_postfix_str(key.describe(), refresh=False)
                fingerprint = cell_fingerprint(
                    model_identity=entry.identity, data_digest=digests[key.dataset, key.subset, key.task],
                    seed=settings.seed, n_boot=settings.n_boot, code_version=f"{__version__}+{code_digest()}",
                    extra=(unit.task, *versions))
                stored = stored_cells.get(key)
                if stored is not None and stored.fingerprint == fingerprint:
                    results.append(stored)
                    timings.append(CellTiming(key, "reused", 0.0))
                else:
                    scorer, embed_before = scorers[entry.label], memo.seconds
                    result = _compute_cell(key, fingerprint, scorer, unit, settings, task_runner)
                    write_cell(cells_dir, result)
                    results.append(result)
                    status = "computed" if result.status == STATUS_OK else "not_applicable"
                    timings.append(CellTiming(key, status, result.seconds, memo.seconds - embed_before))
                bar.update(1)
    order = sorted(range(len(results)), key=lambda i: results[i].key)
    return CellsOutcome([results[i] for i in order], [timings[i] for i in order])


def _compute_cell(key: CellKey, fingerprint: str, scorer: TextScorer, unit, settings: EvalSettings,
                  task_runner: TaskRunner) -> CellResult:
    start = time.perf_counter()
    try:
        scores = task_runner(unit.task, scorer, unit.payload, seed=settings.seed, n_boot=settings.n_boot)
    except NotApplicable as reason:
        return CellResult(key, fingerprint, STATUS_NOT_APPLICABLE, (), str(reason) or type(reason).__name__,
                          time.perf_counter() - start)
    except TooFewInstances as error:  # the data, not the code: one line naming the cell
        raise UserInputError(f"cell {key.describe()}: {error} (is the dataset under the data root "
                             "complete?)") from None
    except ModelOutputError as error:  # the model, not the code
        raise UserInputError(f"cell {key.describe()}: {error}") from None
    except Exception as error:
        error.add_note(f"while evaluating cell {key.describe()}")
        raise
    scores = tuple(scores)
    if not scores:
        raise RuntimeError(f"task {unit.task!r} returned no scores for cell {key.describe()}")
    return CellResult(key, fingerprint, STATUS_OK, scores, None, time.perf_counter() - start)


def _check_unique(items: list, what: str) -> None:
    seen = set()
    for item in items:
        if item in seen:
            raise ValueError(f"duplicate {what} {item!r}: every cell must have its own key")
        seen.add(item)
