"""Reference excerpts (seed 003 §7.2 step 1): ``sentences`` (15) consecutive sentences from a seeded
random position of a reference book, ``per_book`` (5) excerpts per book.

Books come from the shared novel collections through ``data.pairs.sources.load_sources`` (the same
book ids, cleaning and author aliases as ``prepare-pairs``). A book's text is standardised and split
into paragraphs and sentences (``text.windows.document_sentences``' splitter, kept per paragraph);
an excerpt keeps its paragraph breaks, because the prompt asks the model to match "paragraph
structure". Start positions are uniform over ``[0, n - sentences]`` from
``np.random.default_rng([seed, crc32(book id)])`` (adding a book changes no other book's excerpts);
a draw that would overlap an earlier excerpt of the book is redrawn (the authors draw
independently and may repeat text; distinct excerpts make 5 distinct references).
"""

from __future__ import annotations

import dataclasses
import json
import re
import zlib
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path

import numpy as np

from stylebench_jax.config import InvalidField
from stylebench_jax.errors import UserInputError
from stylebench_jax.text.normalize import paragraphs, standardize_text
from stylebench_jax.text.sentences import split_sentences
from stylebench_jax.transfer.config import BookConfig

BOOKS_RESOURCE = "writing7_transfer_books.json"
MAX_DRAWS = 1000


@dataclasses.dataclass(frozen=True)
class Excerpt:
    book: str
    author: str
    index: int  # 0 .. per_book - 1
    start: int  # first sentence (index into the book's sentences)
    sentences: tuple[str, ...]
    paragraph_breaks: tuple[int, ...]  # sentence positions (within the excerpt) that open a new paragraph
    book_sentences: int

    @property
    def text(self) -> str:
        parts = []
        for i, sentence in enumerate(self.sentences):
            if i and i in self.paragraph_breaks:
                parts.append("\n\n")
            elif i:
                parts.append(" ")
            parts.append(sentence)
        return "".join(parts)

    @property
    def id(self) -> str:
        return f"{self.book}#e{self.index}"

    def to_dict(self) -> dict:
        return {"id": self.id, "book": self.book, "author": self.author, "index": self.index,
                "start": self.start, "n_sentences": len(self.sentences),
                "book_sentences": self.book_sentences, "text": self.text}


def default_books() -> tuple[BookConfig, ...]:
    """The bundled Writing7 book list (``resources/writing7_transfer_books.json``)."""
    data = json.loads(resources.files("stylebench_jax.resources").joinpath(BOOKS_RESOURCE).read_text("utf-8"))
    return tuple(BookConfig(**entry) for entry in data["books"])


_OPENING_QUOTE = re.compile(r"\s+([\"\u201c\u2018]+)$")


def book_sentences(text: str) -> tuple[list[str], set[int]]:
    """Sentences of a book and the indices of those that open a paragraph. The sentence splitter
    (spaCy's sentencizer, as Writing7's pipeline) leaves the opening quote of a line of dialogue at
    the end of the sentence before (``everything." "`` / ``Till you're done``): here it is moved to
    the sentence it opens, so an excerpt neither starts without it nor ends on a stray quote."""
    sentences, opens = [], set()
    for paragraph in paragraphs(standardize_text(text)):
        opens.add(len(sentences))
        carry = ""
        for sentence in split_sentences(paragraph):
            sentence = carry + sentence
            match = _OPENING_QUOTE.search(sentence)
            carry = match.group(1) if match else ""
            sentences.append(sentence[:match.start()] if match else sentence)
        if carry:  # a quote that opens nothing in this paragraph stays where it was
            sentences[-1] += " " + carry
    return sentences, opens


def draw_starts(n_sentences: int, length: int, count: int, rng: np.random.Generator) -> list[int]:
    """``count`` non-overlapping excerpt starts (module docstring), in draw order."""
    if n_sentences < length * count:
        raise ValueError(f"{n_sentences} sentences cannot hold {count} excerpts of {length}")
    starts: list[int] = []
    for _ in range(MAX_DRAWS):
        if len(starts) == count:
            break
        start = int(rng.integers(0, n_sentences - length + 1))
        if all(abs(start - s) >= length for s in starts):
            starts.append(start)
    if len(starts) < count:
        raise ValueError(f"could not place {count} distinct excerpts of {length} sentences in {n_sentences}")
    return starts


def book_excerpts(book: str, author: str, text: str, *, per_book: int, length: int,
                  seed: int) -> list[Excerpt]:
    """``per_book`` excerpts of ``length`` sentences of one book; ``InvalidField`` naming the config
    field to lower when the book is too short: ``excerpts.sentences`` when it cannot hold even one
    excerpt, else ``excerpts.per_book``."""
    sentences, opens = book_sentences(text)
    rng = np.random.default_rng([seed, zlib.crc32(book.encode("utf-8"))])
    try:
        starts = draw_starts(len(sentences), length, per_book, rng)
    except ValueError as error:
        field = "excerpts.sentences" if len(sentences) < length else "excerpts.per_book"
        raise InvalidField(field, f"book {book!r}: {error}") from None
    out = []
    for index, start in enumerate(starts):
        breaks = tuple(i - start for i in range(start, start + length) if i in opens)
        out.append(Excerpt(book, author, index, start, tuple(sentences[start:start + length]), breaks,
                           len(sentences)))
    return out


def select_books(available: Mapping[str, object], wanted: Sequence[BookConfig]) -> list:
    """The ``SourceBook`` of every wanted id; ``UserInputError`` listing ids not in the collections."""
    missing = [b.book for b in wanted if b.book not in available]
    if missing:
        near = sorted(available)[:5]
        raise UserInputError(f"books: {', '.join(missing)} not found in the configured sources (book ids "
                             f"look like {', '.join(near)}, ...)")
    return [available[b.book] for b in wanted]


def load_reference_books(config, data_root: Path | None):
    """``(reference SourceBooks in config order, every loaded SourceBook by id)``."""
    from stylebench_jax.data.pairs.sources import check_source, load_sources

    for source in config.sources:
        check_source(source, data_root)
    books, _ = load_sources(config.sources, data_root, config.author_aliases)
    by_id = {b.book: b for b in books}
    wanted = config.books if config.books is not None else default_books()
    return select_books(by_id, wanted), by_id, wanted
