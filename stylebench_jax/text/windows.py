"""Overlapping sentence windows (Writing7 §3.2 for training chunks, §6.1 for long-text scoring).

A document is split into sentences (``text.sentences``: spaCy's rule-based sentencizer, regex
fallback), then cut into windows of ``size`` consecutive sentences that start every
``size - overlap`` sentences; a window's text is its sentences joined by one space. Defaults are
Writing7's (appendix): 14 sentences, overlap 4, windows shorter than 200 characters dropped.

Window starts are ``0, step, 2 step, ...`` as in the authors' ``create_text_chunks``, except that we
stop at the first window that adds no sentence beyond the previous one (the authors' loop runs to
the last sentence, so its final windows can be strict tails of the one before). A document of at
most ``size`` sentences is one window. Windows of one document overlap iff their sentence ranges
``[start, end)`` intersect: pair samplers use ``Window.start``/``Window.end`` for that.

``max_windows`` caps the windows per document: evenly spaced ones without an ``rng`` (the
deterministic choice for scoring long texts), a uniform draw without replacement with one (the
authors' ``random.sample`` for training chunks); the result keeps document order either way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from stylebench_jax.text.normalize import standardize_text
from stylebench_jax.text.sentences import split_paragraph_sentences

WRITING7_SIZE = 14
WRITING7_OVERLAP = 4
WRITING7_MIN_CHARS = 200


@dataclasses.dataclass(frozen=True)
class Window:
    """Sentences ``[start, end)`` of a document (indices into its sentence list) and their text."""

    start: int
    end: int
    text: str

    def overlaps(self, other: Window) -> bool:
        """True if the two windows (of the same document) share a sentence."""
        return self.start < other.end and other.start < self.end


def _check(size: int, overlap: int) -> None:
    if size < 1:
        raise ValueError(f"size: expected >= 1 sentence, found {size}")
    if not 0 <= overlap < size:
        raise ValueError(f"overlap: expected 0 <= overlap < size ({size}), found {overlap}")


def window_starts(n_sentences: int, size: int = WRITING7_SIZE, overlap: int = WRITING7_OVERLAP) -> list[int]:
    """First sentence of every window over ``n_sentences`` sentences (module docstring)."""
    _check(size, overlap)
    step = size - overlap
    return [start for start in range(0, n_sentences, step) if start == 0 or start + overlap < n_sentences]


def sentence_windows(sentences: Sequence[str], size: int = WRITING7_SIZE, overlap: int = WRITING7_OVERLAP,
                     min_chars: int = WRITING7_MIN_CHARS) -> list[Window]:
    """Windows over ``sentences`` whose joined text has at least ``min_chars`` characters."""
    windows = []
    for start in window_starts(len(sentences), size, overlap):
        end = min(start + size, len(sentences))
        text = " ".join(sentences[start:end])
        if len(text) >= min_chars:
            windows.append(Window(start, end, text))
    return windows


def cap_windows(windows: Sequence[Window], max_windows: int | None,
                rng: np.random.Generator | None = None) -> list[Window]:
    """At most ``max_windows`` of ``windows`` in their order: evenly spaced (``rng`` None: windows
    ``floor(i W / k)`` of ``W``, ``i < k``, the first ``k`` when ``W = k + 1``; the last window is
    never kept) or a uniform draw without replacement (``rng`` given). ``None`` keeps all."""
    if max_windows is None or len(windows) <= max_windows:
        return list(windows)
    if max_windows < 1:
        raise ValueError(f"max_windows: expected >= 1 or None, found {max_windows}")
    n = len(windows)
    if rng is None:
        chosen = (np.arange(max_windows) * n) // max_windows
    else:
        chosen = np.sort(rng.choice(n, size=max_windows, replace=False))
    return [windows[int(i)] for i in chosen]


def document_sentences(text: str, min_sentence_chars: int = 0) -> list[str]:
    """Sentences of ``text`` after ``text.normalize.standardize_text``, split paragraph by paragraph;
    sentences shorter than ``min_sentence_chars`` characters are dropped."""
    sentences = split_paragraph_sentences(standardize_text(text))
    return [s for s in sentences if len(s) >= min_sentence_chars] if min_sentence_chars else sentences


def text_windows(text: str, size: int = WRITING7_SIZE, overlap: int = WRITING7_OVERLAP,
                 min_chars: int = WRITING7_MIN_CHARS, max_windows: int | None = None,
                 rng: np.random.Generator | None = None, min_sentence_chars: int = 0) -> list[Window]:
    """Windows of a raw text: :func:`document_sentences`, then :func:`sentence_windows`, then
    :func:`cap_windows` (``max_windows``, ``rng``)."""
    sentences = document_sentences(text, min_sentence_chars)
    return cap_windows(sentence_windows(sentences, size, overlap, min_chars), max_windows, rng)
