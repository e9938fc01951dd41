"""Deterministic, seeded subsampling helpers shared by the dataset loaders.

Every unit draws from its own generator ``unit_rng(seed, dataset, subset, purpose)``, so the
sample of one dataset never depends on which other datasets were loaded or in which order, and
the same ``seed`` always gives the same units (keys are hashed with CRC-32, not Python's salted
``hash``).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Hashable, Sequence
from typing import TypeVar

import numpy as np

T = TypeVar("T")


def unit_rng(seed: int, *keys: str) -> np.random.Generator:
    """A generator seeded by ``seed`` (a non-negative integer of any size: seeds past 2**32 are
    their own streams, not aliases of smaller ones) and the CRC-32 of each key (stable across
    processes)."""
    if int(seed) < 0:
        raise ValueError(f"seed: expected a non-negative integer, found {seed}")
    return np.random.default_rng([int(seed)] + [zlib.crc32(key.encode("utf-8")) for key in keys])


def sample(items: Sequence[T], n: int | None, rng: np.random.Generator) -> list[T]:
    """``n`` items drawn without replacement, kept in their original order (all if n is None/large)."""
    if n is None or n >= len(items):
        return list(items)
    chosen = np.sort(rng.choice(len(items), size=n, replace=False))
    return [items[i] for i in chosen]


def balanced_indices(labels: Sequence[Hashable], n_per_class: int, rng: np.random.Generator, *,
                     min_classes: int = 2) -> list[int]:
    """Indices of ``n_per_class`` items of every label that has at least that many, sorted.

    Labels with fewer items are dropped (so classes stay balanced); raises ``ValueError`` when
    fewer than ``min_classes`` labels remain.
    """
    by_label: dict[Hashable, list[int]] = {}
    for index, label in enumerate(labels):
        by_label.setdefault(label, []).append(index)
    kept = sorted((label for label, members in by_label.items() if len(members) >= n_per_class), key=str)
    if len(kept) < min_classes:
        raise ValueError(f"only {len(kept)} label(s) have >= {n_per_class} items; need {min_classes}")
    chosen: list[int] = []
    for label in kept:
        members = by_label[label]
        picks = rng.choice(len(members), size=n_per_class, replace=False)
        chosen.extend(members[i] for i in picks)
    return sorted(chosen)


def unique_labelled(texts: Sequence[str], labels: Sequence[str]) -> tuple[list[str], list[str]]:
    """Drop repeated texts: keep the first copy if all copies agree on the label, else drop all.

    Identical texts under one label would make trivially perfect pairs; identical texts under
    different labels cannot be told apart by any embedder.
    """
    seen: dict[str, set[str]] = {}
    for text, label in zip(texts, labels):
        seen.setdefault(text, set()).add(label)
    out_texts, out_labels, emitted = [], [], set()
    for text, label in zip(texts, labels):
        if len(seen[text]) == 1 and text not in emitted:
            emitted.add(text)
            out_texts.append(text)
            out_labels.append(label)
    return out_texts, out_labels


def disjoint_lists(lists: Sequence[Sequence[str]]) -> list[list[str]]:
    """Ordered lists with no repeated text inside a list and no text shared with an earlier list.

    Order alignment compares lists with each other; a text in two lists (or twice in one) would
    make an instance trivially solvable or ill-posed. Keeps the first list in case of conflict.
    """
    used: set[str] = set()
    kept = []
    for item in lists:
        if len(set(item)) == len(item) and used.isdisjoint(item):
            used.update(item)
            kept.append(list(item))
    return kept


def balanced_pairs(labels: Sequence[Hashable], n_pairs: int, rng: np.random.Generator, *,
                   groups: Sequence[Hashable] | None = None) -> tuple[list[int], list[int], list[int]]:
    """``n_pairs`` same-label pairs and ``n_pairs`` different-label pairs of item indices.

    Returns ``(first, second, is_same)`` with ``is_same`` 1/0, positives first then negatives,
    no pair repeated and never an item with itself. With ``groups``, two items of the same group
    (e.g. two volumes of one work) are never paired. Positives are drawn from all admissible
    same-label pairs (all of them when fewer than ``n_pairs`` exist; then the negatives match
    their number so the set stays balanced).
    """
    n = len(labels)
    groups = list(range(n)) if groups is None else list(groups)
    positives = [(i, j) for i in range(n) for j in range(i + 1, n)
                 if labels[i] == labels[j] and groups[i] != groups[j]]
    if not positives:
        raise ValueError("no admissible same-label pair")
    if len(positives) > n_pairs:
        picks = np.sort(rng.choice(len(positives), size=n_pairs, replace=False))
        positives = [positives[k] for k in picks]
    negatives: set[tuple[int, int]] = set()
    n_negative_total = sum(1 for i in range(n) for j in range(i + 1, n) if labels[i] != labels[j])
    want = min(len(positives), n_negative_total)
    while len(negatives) < want:
        i, j = (int(x) for x in rng.choice(n, size=2, replace=False))
        if labels[i] != labels[j]:
            negatives.add((min(i, j), max(i, j)))
    negatives_sorted = sorted(negatives)
    first = [i for i, _ in positives] + [i for i, _ in negatives_sorted]
    second = [j for _, j in positives] + [j for _, j in negatives_sorted]
    is_same = [1] * len(positives) + [0] * len(negatives_sorted)
    return first, second, is_same


_WORD = re.compile(r"\S+")


def lead(text: str, n_words: int) -> str:
    """The first ``n_words`` whitespace tokens of ``text`` (line breaks kept); whole text if shorter."""
    spans = _take_words(text, 0, n_words)
    return text[spans[0][0]:spans[-1][1]] if spans else text


def excerpt(text: str, n_words: int, rng: np.random.Generator, *, lo: float = 0.0, hi: float = 1.0) -> str:
    """A contiguous excerpt of ``n_words`` whitespace tokens from the ``[lo, hi)`` part of ``text``.

    A start character is drawn uniformly from the part (fractions of ``len(text)``), moved to the
    next line start when one lies within 400 characters (so excerpts rarely begin mid-sentence),
    and the following ``n_words`` tokens are taken, line breaks kept. Near the end of the text the
    start moves back (to a line start when one is near) so the excerpt is still ``n_words`` long.
    Texts of at most ``n_words`` words are returned whole. Cost is O(excerpt), not O(text), so it
    is cheap on whole novels.
    """
    if not 0.0 <= lo < hi <= 1.0:
        raise ValueError(f"need 0 <= lo < hi <= 1, got lo={lo}, hi={hi}")
    first = int(lo * len(text))
    last = max(first, int(hi * len(text)) - 1)
    start = int(rng.integers(first, last + 1))
    newline = text.find("\n", start, start + 400)
    if newline >= 0:
        start = newline + 1
    spans = _take_words(text, start, n_words)
    while len(spans) < n_words and start > 0:
        start = max(0, start - 8 * (n_words - len(spans)) - 1)
        line_start = text.rfind("\n", 0, start) + 1
        start = line_start if start - line_start <= 400 else start
        spans = _take_words(text, start, n_words)
    if not spans:
        return text
    if start > 0 and not text[start - 1].isspace():
        spans = spans[1:] + _take_words(text, spans[-1][1], 1)  # drop a cut-off first word
    return text[spans[0][0]:spans[-1][1]]


def _take_words(text: str, start: int, n_words: int) -> list[tuple[int, int]]:
    spans = []
    for match in _WORD.finditer(text, start):
        spans.append(match.span())
        if len(spans) == n_words:
            break
    return spans
