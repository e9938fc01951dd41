"""``style_calibration.json`` and ``calibration.json``: what a calibration run writes and how a
scoring run reads it back.

``style_calibration.json`` keeps the seed's schema (003 §5.2) and adds what a safe reuse needs::

    {"style_calibration": {"method", "coef", "intercept" | "x_thresholds", "y_values",
                           "cv_brier", "cv_ece"},
     "meta": {"num_chunks", "chunk_size", "overlap", "aggregate", "topk", "max_tokens",
              "max_chunks", "n_samples"},
     "embedder": {"name", "identity"},
     "selection": {...}, "pairs": {...}, "warnings": [...]}

A calibration only holds for the cosines it was fitted on (seed: "consistency critical: mismatched
chunking degrades calibration"), so :func:`check_compatible` refuses to apply it under other
inference settings (every ``meta`` key but ``n_samples``) or another embedder (``identity``: weights
digest, tokenizer, pooling, max length, long-text policy...), naming what differs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stylebench_jax.calibration.similarity import SimilarityMap
from stylebench_jax.errors import UserInputError
from stylebench_jax.fileio import write_text_atomic

SETTING_KEYS = ("num_chunks", "chunk_size", "overlap", "aggregate", "topk", "max_tokens", "max_chunks")


def style_calibration_payload(mapping: SimilarityMap, cv: dict[str, float], meta: dict[str, Any],
                              embedder: dict[str, str], **extra) -> dict:
    """The JSON object of ``style_calibration.json`` (module docstring); ``cv``: the chosen method's
    ``{"brier", "ece"}``."""
    block = {**mapping.to_dict(), "cv_brier": cv["brier"], "cv_ece": cv["ece"]}
    missing = [k for k in (*SETTING_KEYS, "n_samples") if k not in meta]
    if missing:
        raise ValueError(f"meta: missing {', '.join(missing)}")
    return {"style_calibration": block, "meta": dict(meta), "embedder": dict(embedder), **extra}


def write_json(path: str | Path, payload: dict) -> Path:
    write_text_atomic(path, json.dumps(payload, indent=1, ensure_ascii=False) + "\n")
    return Path(path)


def _read(path: Path) -> dict:
    if path.is_dir():
        raise UserInputError(f"{path}: a directory; expected the style_calibration.json of `stylebench "
                             "calibrate` (e.g. DIR/style_calibration.json)")
    if not path.is_file():
        raise UserInputError(f"{path}: calibration file not found")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UserInputError(f"{path}: not a JSON file ({error})") from None
    if not isinstance(data, dict):
        raise UserInputError(f"{path}: expected a JSON object, found {type(data).__name__}")
    return data


class StyleCalibration:
    """A loaded ``style_calibration.json``: ``mapping`` (callable on cosines), ``meta``, ``embedder``."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        data = _read(self.path)
        for key in ("style_calibration", "meta", "embedder"):
            if not isinstance(data.get(key), dict):
                raise UserInputError(f"{self.path}: field {key!r}: expected an object (a "
                                     "style_calibration.json written by `stylebench calibrate`)")
        try:
            self.mapping = SimilarityMap.from_dict(data["style_calibration"])
        except ValueError as error:
            raise UserInputError(f"{self.path}: {error}") from None
        self.meta = data["meta"]
        self.embedder = data["embedder"]
        self.data = data
        missing = [k for k in SETTING_KEYS if k not in self.meta] + \
                  [f"embedder.{k}" for k in ("name", "identity") if k not in self.embedder]
        if missing:
            raise UserInputError(f"{self.path}: missing {', '.join(missing)}")

    def check_compatible(self, settings: dict[str, Any], embedder_name: str, embedder_identity: str) -> None:
        """``UserInputError`` naming every inference setting and the embedder that differ from the
        ones this calibration was fitted under."""
        differs = [f"{k}={self.meta[k]!r} (this run: {settings[k]!r})"
                   for k in SETTING_KEYS if self.meta[k] != settings[k]]
        if differs:
            raise UserInputError(f"{self.path}: fitted under other inference settings: {'; '.join(differs)}; "
                                 "score with the same settings or calibrate again")
        if self.embedder["identity"] != embedder_identity:
            raise UserInputError(
                f"{self.path}: fitted for embedder {self.embedder['name']!r} "
                f"({self.embedder['identity']}), not for {embedder_name!r} ({embedder_identity}); "
                "calibrate this embedder with `stylebench calibrate`")
