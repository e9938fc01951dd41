"""Positive and negative chunk pairs per book (Writing7 §3.5; 20 positives and 40 negatives per book).

**Positives**: two chunks of the same book that share no sentence (different documents, or
disjoint sentence ranges), as the authors' ``sample_non_overlapping_pair`` intends. Pairs are
drawn uniformly (first chunk, then second) and kept when admissible and not drawn before; after
``50 * n`` draws a book with too few admissible pairs gives fewer (counted as a shortfall).

**Negatives** of a book ``b`` are drawn among the other books of ``b``'s split:

- ``n_random = floor(n * random_fraction + 0.5)`` *random* negatives: the other book uniform over
  all other books of the split (the authors' ``random_neg_frac``, 0.10 by default: 4 of 40);
- ``n - n_random`` *neighbour* (hard) negatives: the other book uniform over ``b``'s K nearest
  books by MiniLM centroid cosine (``kernels.mining``) that are in the same split; when none is,
  all ``n`` negatives are random.

The authors draw the kind of each negative at random with these weights (``rng.choices``); we fix
the counts so every book gets exactly the same mix. Their optional third tier (same-author books as
extra-hard negatives), model-mined negatives and the seed's optional topic-biased negatives (§3.3;
§3.5's balance across topic categories) are not built; with ``same_author_negatives:
false`` books of ``b``'s author are removed from both candidate lists (author-level training). In
each negative the first chunk is uniform over ``b``'s chunks and the second over the other book's;
repeated (chunk, book, chunk) draws are redrawn (at most ``20 * n`` draws).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np


@dataclasses.dataclass(frozen=True)
class Chunk:
    """A window of one document of a book: sentences ``[start, end)`` of document ``document``."""

    book: str
    document: int
    start: int
    end: int
    text: str

    def overlaps(self, other: Chunk) -> bool:
        """True if both are windows of the same document that share a sentence."""
        return (self.book == other.book and self.document == other.document
                and self.start < other.end and other.start < self.end)


def negative_counts(n: int, random_fraction: float, has_neighbours: bool) -> tuple[int, int]:
    """``(neighbour, random)`` negatives for one book (module docstring)."""
    if not 0 <= random_fraction <= 1:
        raise ValueError(f"random_fraction: expected a value in [0, 1], found {random_fraction}")
    if not has_neighbours:
        return 0, n
    n_random = int(np.floor(n * random_fraction + 0.5))
    return n - n_random, n_random


def positive_draws(chunks: Sequence[Chunk], n: int, rng: np.random.Generator) -> list[tuple[int, int]]:
    """Up to ``n`` distinct unordered pairs ``(i, j)`` of non-overlapping chunks of one book."""
    m = len(chunks)
    if m < 2 or n <= 0:
        return []
    seen: set[tuple[int, int]] = set()
    out: list[tuple[int, int]] = []
    for _ in range(50 * n):
        if len(out) == n:
            break
        i, j = (int(x) for x in rng.choice(m, size=2, replace=False))
        key = (min(i, j), max(i, j))
        if key in seen or chunks[i].overlaps(chunks[j]):
            continue
        seen.add(key)
        out.append((i, j))
    return out


def negative_draws(n_chunks: Mapping[str, int], book: str, neighbours: Sequence[str],
                   others: Sequence[str], n: int, random_fraction: float,
                   rng: np.random.Generator) -> list[tuple[int, str, int, str]]:
    """``(i, other_book, j, kind)`` negatives of ``book``; ``kind`` is ``"neighbour"`` or ``"random"``.

    ``neighbours``: candidate neighbour books (already restricted to the split, best first);
    ``others``: every candidate book of the split; ``n_chunks``: chunks per book.
    """
    n_neighbour, n_random = negative_counts(n, random_fraction, bool(neighbours))
    out: list[tuple[int, str, int, str]] = []
    seen: set[tuple[int, str, int]] = set()
    for kind, pool, count in (("neighbour", neighbours, n_neighbour), ("random", others, n_random)):
        if not pool:
            continue
        made = 0
        for _ in range(20 * count):
            if made == count:
                break
            other = pool[int(rng.integers(len(pool)))]
            i, j = int(rng.integers(n_chunks[book])), int(rng.integers(n_chunks[other]))
            if (i, other, j) in seen:
                continue
            seen.add((i, other, j))
            out.append((i, other, j, kind))
            made += 1
    return out
