"""Labelled text pairs for calibration: a ``prepare-pairs`` split, or any JSONL file.

Writing7 (seed 003 §5.2) calibrates on a CSV of ``text1, text2, label`` and "auto-generates it from
the validation split if not provided"; its pairs are cross-book (positives: two chunks of one book
that share no sentence; negatives: chunks of two books, mostly nearest-neighbour books) and carry
coarse topics. Here a ``stylebench prepare-pairs`` directory is that generator: its ``validation``
split (books never trained on) is the default fitting set and its ``test`` split the held-out
evaluation set. A ``.jsonl`` file works too: one object per line with ``text1``, ``text2``,
``label`` (0/1) and optionally ``book1``/``book2``, ``author1``/``author2`` (groups for the folds)
and ``topic1``/``topic2`` or ``same_topic`` (topic slices).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from stylebench_jax.errors import UserInputError


@dataclasses.dataclass
class CalibrationPairs:
    """``labels [N]`` int64 0/1; ``same_topic [N]`` bool or None (unknown)."""

    text1: list[str]
    text2: list[str]
    labels: np.ndarray
    book1: list[str]
    book2: list[str]
    author1: list[str]
    author2: list[str]
    same_topic: np.ndarray | None
    source: str

    def __len__(self) -> int:
        return int(self.labels.size)

    def groups(self, by: str) -> list[str] | None:
        """The GroupKFold group of every pair: the first text's book or author (the authors' choice,
        ``group = book1``); None when the source names none."""
        values = self.book1 if by == "book" else self.author1
        return None if not any(values) else list(values)

    def counts(self) -> dict:
        return {"source": self.source, "n": len(self), "n_positive": int(self.labels.sum()),
                "n_negative": int(len(self) - self.labels.sum()),
                "n_books": len((set(self.book1) | set(self.book2)) - {""}),
                "n_authors": len((set(self.author1) | set(self.author2)) - {""})}

    def subsample(self, limit: int | None, seed: int) -> CalibrationPairs:
        """At most ``limit`` pairs, a seeded uniform draw kept in order (None: all)."""
        if limit is None or len(self) <= limit:
            return self
        keep = np.sort(np.random.default_rng(seed).choice(len(self), size=limit, replace=False))
        pick = lambda values: [values[i] for i in keep]  # noqa: E731
        return CalibrationPairs(pick(self.text1), pick(self.text2), self.labels[keep], pick(self.book1),
                                pick(self.book2), pick(self.author1), pick(self.author2),
                                None if self.same_topic is None else self.same_topic[keep],
                                f"{self.source} ({limit} of {len(self)} pairs, seed {seed})")


def _check_labels(labels: np.ndarray, source: str) -> None:
    if labels.size == 0:
        raise UserInputError(f"{source}: no pairs")
    if labels.min() == labels.max():
        raise UserInputError(f"{source}: all {labels.size} pairs have label {int(labels[0])}; calibration "
                             "needs same-style (1) and different-style (0) pairs")


def from_prepared(directory: str | Path, split: str) -> CalibrationPairs:
    """The ``split`` pairs of a ``stylebench prepare-pairs`` output directory."""
    from stylebench_jax.data.pairs.output import load_pairs

    columns = load_pairs(directory, split)
    source = f"{directory} (split {split})"
    if not columns.get("label"):
        raise UserInputError(f"{directory}: no {split!r} pairs (prepare-pairs writes train, validation, "
                             "test)")
    labels = np.asarray(columns["label"], np.int64)
    _check_labels(labels, source)
    same_topic = np.asarray(columns["same_topic"], bool) if "same_topic" in columns else None
    return CalibrationPairs(list(columns["text1"]), list(columns["text2"]), labels, list(columns["book1"]),
                            list(columns["book2"]), list(columns.get("author1", columns["book1"])),
                            list(columns.get("author2", columns["book2"])), same_topic, source)


def from_jsonl(path: str | Path) -> CalibrationPairs:
    """Pairs of a JSONL file (module docstring); errors name the file, line and field."""
    from stylebench_jax.data.readers import read_jsonl

    rows = read_jsonl(path, keys=("text1", "text2", "label"), blank_lines="skip")
    text1, text2, labels, books, authors, topics = [], [], [], ([], []), ([], []), []
    for row in rows:
        text1.append(row.text("text1"))
        text2.append(row.text("text2"))
        label = row["label"]
        if isinstance(label, bool) or label not in (0, 1):
            raise row.error("label", f"expected 0 or 1, found {label!r}")
        labels.append(int(label))
        for k, key in enumerate(("1", "2")):
            books[k].append(str(row.data.get(f"book{key}", "")))
            authors[k].append(str(row.data.get(f"author{key}", "")) or books[k][-1])
        if "same_topic" in row.data:
            topics.append(bool(row["same_topic"]))
        elif "topic1" in row.data and "topic2" in row.data:
            topics.append(row["topic1"] == row["topic2"])
        else:
            topics.append(None)
    labels = np.asarray(labels, np.int64)
    _check_labels(labels, str(path))
    same_topic = np.asarray(topics, bool) if all(t is not None for t in topics) else None
    return CalibrationPairs(text1, text2, labels, books[0], books[1], authors[0], authors[1], same_topic,
                            str(path))


def load_calibration_pairs(source: str | Path, split: str) -> CalibrationPairs:
    """A ``prepare-pairs`` directory (its ``split``) or a ``.jsonl`` file."""
    path = Path(source)
    if path.is_dir():
        return from_prepared(path, split)
    if path.is_file():
        if path.suffix != ".jsonl":
            raise UserInputError(f"{path}: expected a .jsonl file of labelled pairs or a prepare-pairs "
                                 "directory")
        return from_jsonl(path)
    raise UserInputError(f"{path}: not found (expected a prepare-pairs directory or a .jsonl file of pairs)")
