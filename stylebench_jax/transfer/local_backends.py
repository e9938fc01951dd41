"""Offline generator backends: anchors for the benchmark's scale and a way to run it without an API.

- ``copy`` (ceiling): the excerpt itself. The highest score a story can get from this scorer; not a
  perfect 1 when the excerpt is scored as several windows (15 sentences > 14), since different
  windows of one text are not identical.
- ``shuffle`` (control): the excerpt's own sentences in a seeded random order (never the original
  order), joined as one paragraph. Same words, names and sentences, no narrative order: it tells how
  much of a score survives when only discourse structure is destroyed.
- ``markov``: a word-level Markov chain of ``order`` 2 (``transfer.markov``) trained on the excerpt
  author's *other* books in the collections: the author's vocabulary and local word statistics, no
  sentence-level planning, no knowledge of the excerpt. A book counts as "other" unless it is the
  excerpt's book or shares at least ``EDITION_OVERLAP`` (20%) of the excerpt's word 8-grams (another
  edition of the same novel, e.g. Emma in two collections). Authors with no other book are skipped
  (``NotApplicable``), and say so in the trace. Length: a seeded target in ``[min_words, max_words]``.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Mapping, Sequence

import numpy as np

from stylebench_jax.transfer.generation import Generation, GenerationRequest, NotApplicable
from stylebench_jax.transfer.markov import MarkovChain
from stylebench_jax.transfer.originality import words

EDITION_OVERLAP = 0.2
EDITION_NGRAM = 8


class CopyBackend:
    kind, model, concurrency, secrets = "copy", "excerpt", 1, ()

    def __init__(self, name: str):
        self.name = name

    def generate(self, request: GenerationRequest) -> Generation:
        return Generation(request.excerpt.text, model=self.model)


class ShuffleBackend:
    kind, model, concurrency, secrets = "shuffle", "excerpt-sentences", 1, ()

    def __init__(self, name: str):
        self.name = name

    def generate(self, request: GenerationRequest) -> Generation:
        sentences = list(request.excerpt.sentences)
        order = np.random.default_rng(request.seed).permutation(len(sentences))
        if len(sentences) > 1 and np.array_equal(order, np.arange(len(sentences))):
            order = np.roll(order, 1)
        return Generation(" ".join(sentences[i] for i in order), model=self.model)


def _ngram_set(tokens: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


def is_edition_of(excerpt_text: str, book_text: str, threshold: float = EDITION_OVERLAP) -> bool:
    """True when ``book_text`` holds at least ``threshold`` of the excerpt's word 8-grams."""
    grams = _ngram_set(words(excerpt_text), EDITION_NGRAM)
    if not grams:
        return False
    book_grams = _ngram_set(words(book_text), EDITION_NGRAM)
    return len(grams & book_grams) / len(grams) >= threshold


class MarkovBackend:
    kind, concurrency, secrets = "markov", 1, ()

    def __init__(self, name: str, books_by_author: Mapping[str, Sequence[tuple[str, str]]], *, order: int = 2,
                 max_words: int = 400_000, seed: int = 0):
        """``books_by_author[author]``: ``(book id, text)`` of every book of the collections."""
        self.name, self.order, self.max_words, self.seed = name, order, max_words, seed
        self.model = f"markov-order{order}"
        self._books = books_by_author
        self._chains: dict[tuple[str, ...], MarkovChain] = {}
        self._lock = threading.Lock()

    def training_books(self, request: GenerationRequest) -> list[tuple[str, str]]:
        excerpt = request.excerpt
        return [(book, text) for book, text in self._books.get(excerpt.author, ())
                if book != excerpt.book and not is_edition_of(excerpt.text, text)]

    def _chain(self, author: str, books: list[tuple[str, str]]) -> MarkovChain:
        key = (author, *sorted(b for b, _ in books))
        with self._lock:
            if key not in self._chains:
                rng = np.random.default_rng([self.seed, zlib.crc32(author.encode("utf-8"))])
                texts = [text for _, text in books]
                self._chains[key] = MarkovChain.train(texts, self.order, self.max_words, rng)
            return self._chains[key]

    def generate(self, request: GenerationRequest) -> Generation:
        books = self.training_books(request)
        if not books:
            raise NotApplicable(f"no other book by {request.excerpt.author!r} in the collections to train on")
        chain = self._chain(request.excerpt.author, books)
        text = chain.generate(request.target_words, np.random.default_rng(request.seed))
        return Generation(text, model=self.model,
                          usage={"training_books": [b for b, _ in books], "training_words": chain.n_words})
