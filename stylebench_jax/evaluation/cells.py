"""One evaluation cell = one model x dataset x subset x task, stored as its own JSON file.

Cells are the unit of resume: ``DIR/cells/<model>/<dataset>/<subset>/<task>.json`` is written
atomically once the task finishes, and a later run reuses it when its ``fingerprint`` still matches
(same model identity, same data content, same seed, bootstrap count and code: the package version
plus a digest of its Python sources, see :func:`code_digest`). Path parts
are percent-encoded, so ``baseline:char3gram`` or a local checkpoint path are safe folder names.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np

from stylebench_jax.fileio import write_text_atomic
from stylebench_jax.sources import source_digest
from stylebench_jax.tasks.base import Score

STATUS_OK = "ok"
STATUS_NOT_APPLICABLE = "not_applicable"


@dataclasses.dataclass(frozen=True, order=True)
class CellKey:
    """Where a result belongs; sorting keys gives the canonical order of ``results.jsonl``."""

    model: str
    dataset: str
    subset: str
    task: str

    def relative_path(self) -> Path:
        parts = (self.model, self.dataset, self.subset or "_", self.task)
        return Path(*(quote(part, safe="") for part in parts[:-1])) / f"{quote(parts[-1], safe='')}.json"

    def describe(self) -> str:
        return f"{self.model} / {self.dataset}:{self.subset} / {self.task}"


@dataclasses.dataclass(frozen=True)
class CellResult:
    """What a finished cell holds: its scores (first = the task's primary metric) or why it was skipped."""

    key: CellKey
    fingerprint: str
    status: str
    scores: tuple[Score, ...] = ()
    reason: str | None = None
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            **dataclasses.asdict(self.key),
            "fingerprint": self.fingerprint,
            "status": self.status,
            "scores": [score_to_json(score) for score in self.scores],
            "reason": self.reason,
            "seconds": round(float(self.seconds), 3),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CellResult:
        key = CellKey(data["model"], data["dataset"], data["subset"], data["task"])
        scores = tuple(
            Score(s["metric"], _float(s["value"]), _float(s["ci_low"]), _float(s["ci_high"]), int(s["n"]))
            for s in data["scores"])
        return cls(key, data["fingerprint"], data["status"], scores, data.get("reason"),
                   float(data.get("seconds", 0.0)))


def _float(value) -> float:
    return math.nan if value is None else float(value)


def json_number(value: float) -> float | None:
    """JSON has no NaN/inf: undefined numbers (e.g. AUROC of a one-class set) are written as null."""
    value = float(value)
    return value if math.isfinite(value) else None


def score_to_json(score: Score) -> dict[str, Any]:
    return {"metric": score.metric, "value": json_number(score.value),
            "ci_low": json_number(score.ci_low), "ci_high": json_number(score.ci_high), "n": int(score.n)}


def cell_path(cells_dir: Path, key: CellKey) -> Path:
    return Path(cells_dir) / key.relative_path()


def write_cell(cells_dir: Path, result: CellResult) -> Path:
    path = cell_path(cells_dir, result.key)
    write_text_atomic(path, json.dumps(result.to_json(), indent=1, sort_keys=True) + "\n")
    return path


def read_cell(cells_dir: Path, key: CellKey) -> CellResult | None:
    """The stored cell, or None when absent or unreadable (an unreadable cell is simply recomputed)."""
    path = cell_path(cells_dir, key)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        result = CellResult.from_json(data)
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None
    return result if result.key == key else None


def payload_digest(payload: Any) -> str:
    """SHA-256 of a unit's payload (texts, labels, records): changes whenever the data changes."""
    digest = hashlib.sha256()
    _feed(digest, payload)
    return digest.hexdigest()


def _feed(digest, value: Any) -> None:
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            _feed(digest, value.tolist())
            return
        digest.update(f"nd{value.dtype.str}{value.shape}".encode())
        digest.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, dict):
        digest.update(b"{")
        for name in sorted(value, key=str):
            _feed(digest, str(name))
            _feed(digest, value[name])
        digest.update(b"}")
    elif isinstance(value, (list, tuple)):
        digest.update(b"[")
        for item in value:
            _feed(digest, item)
        digest.update(b"]")
    elif isinstance(value, np.generic):
        _feed(digest, value.item())
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        _feed(digest, type(value).__name__)
        _feed(digest, dataclasses.asdict(value))
    else:
        text = f"{type(value).__name__}:{value!r}"
        digest.update(len(text).to_bytes(8, "little"))
        digest.update(text.encode("utf-8", "surrogatepass"))


def code_digest() -> str:
    """Digest of every ``.py`` file of the installed package (:func:`sources.source_digest`). A
    stored cell computed by other code (a fixed task, a new metric) is recomputed rather than
    reused; a change that does not move any number costs a rerun of the tasks only, since
    embeddings come from the embedding cache."""
    return source_digest()


@functools.lru_cache(maxsize=1)
def numeric_versions() -> dict[str, str]:
    """Versions of the libraries the tasks compute with (k-means, logistic regression and metrics:
    scikit-learn; SciPy; NumPy; spaCy and its English model for probing's features and STEB's
    sentence splitting): part of every cell's fingerprint, so a stored cell is not reused after an
    upgrade that may move its numbers, and recorded in run_info.json."""
    from stylebench_jax.runtime import installed_version
    from stylebench_jax.text.features import SPACY_MODEL

    return {name: installed_version(name) or "absent"
            for name in ("numpy", "scipy", "scikit-learn", "spacy", SPACY_MODEL)}


def cell_fingerprint(*, model_identity: str, data_digest: str, seed: int, n_boot: int,
                     code_version: str, extra: Sequence[str] = ()) -> str:
    """Short hash of everything that determines a cell's numbers."""
    text = json.dumps([model_identity, data_digest, seed, n_boot, code_version, list(extra)])
    return hashlib.sha256(text.encode()).hexdigest()[:24]
