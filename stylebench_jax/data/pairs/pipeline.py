"""Writing7 data preparation (seed paper 003, §3) end to end: books in, chunk and pair tables out.

Stages, in order (each counted in ``stats["stages"]``):

1. **load**: the configured collections (``sources.py``); novels of an unknown author left out;
2. **standardise and split sentences** per document: Gutenberg markers and digitisation lines
   (``text.gutenberg.strip_gutenberg``), NFC and whitespace (``text.normalize``), sentences
   paragraph by paragraph (``text.sentences``: spaCy sentencizer, regex without spaCy);
3. **duplicate books** across collections dropped, the first listed kept (``filters.duplicate_books``);
4. **windows** of 14 sentences, overlap 4 (``text.windows``); windows under 200 characters dropped;
   the light **English filter** (``filters.is_english``);
5. **cross-book boilerplate**: chunks whose fingerprint occurs in >= 3 books dropped. We do this
   before the per-book cap (the authors cap first), so a repeated chunk is found even when the cap
   kept it in only some of its books. Not in Writing7: a chunk in exactly two books (a story in two
   anthologies, a passage two editions share below the duplicate-book overlap) is dropped from
   both too (``filters.drop_shared_chunks``): kept, it would sit in two splits and could be paired
   with itself as a different-book negative;
6. **cap**: at most 800 chunks per book, a uniform draw (``unit_rng(seed, "cap", book)``) kept in
   document order; books left with fewer than 2 chunks are dropped (no positive pair possible);
7. **topics** per chunk (``topics.py``); **neighbour books** by MiniLM centroids (``mining.py``);
8. **splits** 70/15/15 by book or by author (``splits.py``);
9. **pairs** per book inside its split: 20 positives, 40 negatives (``pairing.py``), each book
   drawing from ``unit_rng(seed, "pairs", book)``.

The result is deterministic for a config and seed: every draw has its own seeded generator, books
are visited in sorted order, and tables are sorted (chunks by book, document, start; pairs by
split, then book, positives first). Neighbour lists depend on the embeddings, which are
deterministic for one embedder on one machine.
"""

from __future__ import annotations

import collections
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from stylebench_jax.data.pairs.config import PreparePairsConfig
from stylebench_jax.data.pairs.filters import (
    boilerplate_fingerprints,
    duplicate_books,
    fingerprint,
    is_english,
)
from stylebench_jax.data.pairs.mining import BookNeighbours, neighbour_books
from stylebench_jax.data.pairs.pairing import Chunk, negative_draws, positive_draws
from stylebench_jax.data.pairs.sources import SourceBook, load_sources
from stylebench_jax.data.pairs.splits import SPLITS, split_books
from stylebench_jax.data.pairs.topics import TopicLexicon, load_lexicon
from stylebench_jax.data.sampling import unit_rng
from stylebench_jax.parallel.distributed import map_shards
from stylebench_jax.progress import progress_bar
from stylebench_jax.text.gutenberg import strip_gutenberg
from stylebench_jax.text.sentences import splitter_name
from stylebench_jax.text.windows import document_sentences, window_starts


@dataclasses.dataclass
class PreparedPairs:
    """Column-oriented ``chunks`` and ``pairs`` tables (``output.CHUNK_COLUMNS``/``PAIR_COLUMNS``),
    deterministic ``stats`` and run-dependent ``timings`` (seconds per stage)."""

    chunks: dict[str, list]
    pairs: dict[str, list]
    stats: dict
    timings: dict[str, float]


class _Clock:
    def __init__(self):
        self.timings: dict[str, float] = {}
        self._start = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.timings[name] = round(now - self._start, 3)
        self._start = now


def book_sentences(book: SourceBook, *, gutenberg: bool, min_sentence_chars: int) -> list[list[str]]:
    """Sentences of each document of ``book`` (stage 2)."""
    return [document_sentences(strip_gutenberg(text) if gutenberg else text, min_sentence_chars)
            for text in book.documents]


def book_windows(book: str, documents: Sequence[Sequence[str]], *, size: int, overlap: int, min_chars: int,
                 min_ascii_fraction: float, min_stop_words: int, whole_texts: bool = False,
                 counts: collections.Counter | None = None) -> list[Chunk]:
    """Windows of every document that pass the length and English filters (stage 4)."""
    counts = collections.Counter() if counts is None else counts
    chunks = []
    for index, sentences in enumerate(documents):
        if not sentences:
            continue
        n = len(sentences)
        spans = [(0, n)] if whole_texts else [
            (start, min(start + size, n)) for start in window_starts(n, size, overlap)]
        for start, end in spans:
            counts["windows"] += 1
            text = " ".join(sentences[start:end])
            if not whole_texts and len(text) < min_chars:
                counts["windows_too_short"] += 1
            elif not is_english(text, min_ascii_fraction, min_stop_words):
                counts["windows_not_english"] += 1
            else:
                chunks.append(Chunk(book, index, start, end, text))
    return chunks


def drop_boilerplate(chunks_by_book: Mapping[str, list[Chunk]], min_books: int, *,
                     drop_shared: bool = True) -> tuple[dict[str, list[Chunk]], int, int]:
    """Stage 5: chunks whose fingerprint occurs in ``>= min_books`` books removed, and with
    ``drop_shared`` those in exactly two books (module docstring); returns the kept chunks and the
    two numbers removed (boilerplate, in two books)."""
    prints = {book: [fingerprint(c.text) for c in chunks] for book, chunks in chunks_by_book.items()}
    repeated = boilerplate_fingerprints(prints, min_books)
    shared = boilerplate_fingerprints(prints, 2) - repeated if drop_shared else set()
    kept = {book: [c for c, p in zip(chunks, prints[book]) if p not in repeated and p not in shared]
            for book, chunks in chunks_by_book.items()}
    in_two = sum(p in shared for book_prints in prints.values() for p in book_prints)
    removed = sum(len(v) for v in chunks_by_book.values()) - sum(len(v) for v in kept.values())
    return kept, removed - in_two, in_two


def cap_chunks(chunks: list[Chunk], max_chunks: int, seed: int, book: str) -> list[Chunk]:
    """Stage 6: at most ``max_chunks``, a seeded uniform draw kept in document order."""
    if len(chunks) <= max_chunks:
        return chunks
    picks = np.sort(unit_rng(seed, "cap", book).choice(len(chunks), size=max_chunks, replace=False))
    return [chunks[int(i)] for i in picks]


def prepare_pairs(config: PreparePairsConfig, *, embed: Callable[[list[str]], np.ndarray],
                  data_root: Path | None = None, mesh=None, lexicon: TopicLexicon | None = None,
                  progress: bool = False, embedder_name: str = "") -> PreparedPairs:
    """Run stages 1-9 (module docstring). ``embed(texts) -> [N, D]`` embeds the mining sample
    (pass the cache-backed embedder); ``data_root`` for ``novels`` sources."""
    clock = _Clock()
    counts: collections.Counter = collections.Counter()
    lexicon = lexicon or load_lexicon(config.topics.lexicon)
    books, unknown = load_sources(config.sources, data_root, config.author_aliases,
                                  exclude_unknown_authors=config.filters.exclude_unknown_authors)
    counts["books_loaded"] = len(books) + len(unknown)
    counts["books_unknown_author"] = len(unknown)
    counts["documents"] = sum(len(b.documents) for b in books)
    clock.lap("load")

    def split_part(part: Sequence[SourceBook]) -> list[list[list[str]]]:
        return [book_sentences(book, gutenberg=config.standardize.gutenberg,
                               min_sentence_chars=config.windows.min_sentence_chars)
                for book in progress_bar(part, desc="split sentences", unit="book", enabled=progress)]

    # Several processes (parallel.distributed): each splits its share of the books, all get every book's.
    sentences = {book.book: split for book, split in zip(books, map_shards(split_part, books))}
    counts["sentences"] = sum(len(doc) for docs in sentences.values() for doc in docs)
    clock.lap("sentences")

    duplicates = duplicate_books({b: [s for doc in docs for s in doc] for b, docs in sentences.items()},
                                 config.filters.duplicate_book_overlap)
    dropped = {d for d, _, _ in duplicates}
    counts["books_duplicate"] = len(dropped)
    books = [b for b in books if b.book not in dropped]
    author = {b.book: b.author for b in books}
    source = {b.book: b.source for b in books}
    clock.lap("duplicates")

    w, f = config.windows, config.filters
    chunks_by_book = {
        b.book: book_windows(b.book, sentences[b.book], size=w.sentences, overlap=w.overlap,
                             min_chars=w.min_chars, min_ascii_fraction=f.min_ascii_letter_fraction,
                             min_stop_words=f.min_stop_words, whole_texts=b.whole_texts, counts=counts)
        for b in books}
    chunks_by_book, counts["chunks_boilerplate"], counts["chunks_in_two_books"] = drop_boilerplate(
        chunks_by_book, f.boilerplate_min_books, drop_shared=f.drop_shared_chunks)
    before_cap = sum(len(v) for v in chunks_by_book.values())
    chunks_by_book = {b: cap_chunks(c, w.max_per_book, config.seed, b) for b, c in chunks_by_book.items()}
    counts["chunks_over_cap"] = before_cap - sum(len(v) for v in chunks_by_book.values())
    too_few = sorted(b for b, c in chunks_by_book.items() if len(c) < 2)
    counts["books_too_few_chunks"] = len(too_few)
    counts["chunks_of_dropped_books"] = sum(len(chunks_by_book.pop(b)) for b in too_few)
    book_ids = sorted(chunks_by_book)
    counts["books"] = len(book_ids)
    counts["chunks"] = sum(len(chunks_by_book[b]) for b in book_ids)
    clock.lap("chunks")
    if len(book_ids) < 2:
        raise ValueError(f"only {len(book_ids)} book(s) kept after filtering ({dict(counts)}); "
                         "pairs need at least 2 books")

    topic = {b: lexicon.labels([c.text for c in chunks_by_book[b]]) for b in book_ids}
    clock.lap("topics")
    # splits do not depend on the embeddings: a split left without books fails before the mining
    split_of = split_books({b: author[b] for b in book_ids}, config.split.ratios,
                           unit_rng(config.seed, "split", config.split.by), by=config.split.by)
    neighbours = neighbour_books({b: [c.text for c in chunks_by_book[b]] for b in book_ids}, embed,
                                 per_book=config.mining.chunks_per_book, k=config.mining.neighbour_books,
                                 seed=config.seed, mesh=mesh, precision=config.mining.precision)
    clock.lap("mining")

    chunk_table, chunk_id = _chunk_table(book_ids, chunks_by_book, split_of, author, source, topic)
    pair_table, shortfall = _pair_table(config, book_ids, chunks_by_book, split_of, author, topic, chunk_id,
                                        neighbours)
    clock.lap("pairs")

    stats = _stats(config, counts, duplicates, unknown, neighbours, chunk_table, pair_table, lexicon,
                   shortfall, embedder_name)
    return PreparedPairs(chunk_table, pair_table, stats, clock.timings)


def _chunk_table(book_ids, chunks_by_book, split_of, author, source, topic):
    table: dict[str, list] = {name: [] for name in ("chunk_id", "split", "book", "author", "source",
                                                    "document", "start", "end", "topic", "text")}
    chunk_id: dict[tuple[str, int], int] = {}
    for book in book_ids:
        for position, chunk in enumerate(chunks_by_book[book]):
            chunk_id[book, position] = len(table["chunk_id"])
            for name, value in (("chunk_id", len(table["chunk_id"])), ("split", split_of[book]),
                                ("book", book), ("author", author[book]), ("source", source[book]),
                                ("document", chunk.document), ("start", chunk.start), ("end", chunk.end),
                                ("topic", topic[book][position]), ("text", chunk.text)):
                table[name].append(value)
    return table, chunk_id


def _pair_table(config, book_ids, chunks_by_book, split_of, author, topic, chunk_id,
                neighbours: BookNeighbours):
    names = ("split", "label", "pair_type", "negative_type", "book1", "book2", "author1", "author2", "topic1",
             "topic2", "same_topic", "chunk1", "chunk2", "text1", "text2")
    table: dict[str, list] = {name: [] for name in names}
    n_chunks = {b: len(chunks_by_book[b]) for b in book_ids}
    shortfall = collections.Counter()
    p = config.pairs

    def add(split, book1, i, book2, j, kind):
        t1, t2 = topic[book1][i], topic[book2][j]
        label = int(kind == "positive")
        for name, value in (("split", split), ("label", label),
                            ("pair_type", "positive" if label else "negative"),
                            ("negative_type", "" if label else kind), ("book1", book1), ("book2", book2),
                            ("author1", author[book1]), ("author2", author[book2]), ("topic1", t1),
                            ("topic2", t2), ("same_topic", t1 == t2), ("chunk1", chunk_id[book1, i]),
                            ("chunk2", chunk_id[book2, j]), ("text1", chunks_by_book[book1][i].text),
                            ("text2", chunks_by_book[book2][j].text)):
            table[name].append(value)

    for split in SPLITS:
        members = [b for b in book_ids if split_of[b] == split]
        for book in members:
            rng = unit_rng(config.seed, "pairs", book)

            def admissible(other, book=book):
                return other != book and (p.same_author_negatives or author[other] != author[book])

            positives = positive_draws(chunks_by_book[book], p.positives_per_book, rng)
            for i, j in positives:
                add(split, book, i, book, j, "positive")
            near = [b for b in neighbours.neighbours.get(book, []) if split_of[b] == split and admissible(b)]
            others = [b for b in members if admissible(b)]
            negatives = negative_draws(n_chunks, book, near, others, p.negatives_per_book, p.random_fraction,
                                       rng)
            for i, other, j, kind in negatives:
                add(split, book, i, other, j, kind)
            shortfall["positive"] += p.positives_per_book - len(positives)
            shortfall["negative"] += p.negatives_per_book - len(negatives)
            shortfall["books_without_neighbour_in_split"] += int(not near)
    return table, shortfall


def _stats(config, counts, duplicates, unknown, neighbours: BookNeighbours, chunks, pairs, lexicon, shortfall,
           embedder_name) -> dict:
    stage_order = ("books_loaded", "books_unknown_author", "books_duplicate", "documents", "sentences",
                   "windows", "windows_too_short", "windows_not_english", "chunks_boilerplate",
                   "chunks_in_two_books", "chunks_over_cap", "books_too_few_chunks",
                   "chunks_of_dropped_books", "books", "chunks")
    splits = {}
    for split in SPLITS:
        rows = [i for i, s in enumerate(pairs["split"]) if s == split]
        chunk_rows = [i for i, s in enumerate(chunks["split"]) if s == split]
        split_books_ = {chunks["book"][i] for i in chunk_rows}
        kinds = collections.Counter(pairs["negative_type"][i] or "positive" for i in rows)
        splits[split] = {
            "books": len(split_books_),
            "authors": len({chunks["author"][i] for i in chunk_rows}),
            "chunks": len(chunk_rows),
            "pairs": len(rows),
            "positive": kinds["positive"],
            "negative": len(rows) - kinds["positive"],
            "negative_neighbour": kinds["neighbour"],
            "negative_random": kinds["random"],
            "negative_same_author": sum(1 for i in rows if not pairs["label"][i]
                                        and pairs["author1"][i] == pairs["author2"][i]),
            "same_topic_positive": sum(1 for i in rows if pairs["label"][i] and pairs["same_topic"][i]),
            "same_topic_negative": sum(1 for i in rows if not pairs["label"][i] and pairs["same_topic"][i]),
        }
    authors_by_split = collections.defaultdict(set)
    for a, s in zip(chunks["author"], chunks["split"]):
        authors_by_split[a].add(s)
    by_type = collections.defaultdict(lambda: {"pairs": 0, "same_topic": 0})
    for label, kind, same in zip(pairs["label"], pairs["negative_type"], pairs["same_topic"]):
        key = "positive" if label else f"negative/{kind}"
        by_type[key]["pairs"] += 1
        by_type[key]["same_topic"] += int(same)
    topic_counts = collections.Counter(chunks["topic"])
    pair_topics = collections.Counter(f"{lexicon.topics[a]}|{lexicon.topics[b]}"
                                      for a, b in zip(pairs["topic1"], pairs["topic2"]))
    first = [c[0] for c in neighbours.cosines.values() if c]
    last = [c[-1] for c in neighbours.cosines.values() if c]
    return {
        "seed": config.seed,
        "sentence_splitter": splitter_name(),
        "stages": {name: int(counts[name]) for name in stage_order},
        "excluded_books_unknown_author": sorted(unknown),
        "duplicate_books": [{"book": d, "duplicate_of": k, "sentence_overlap": o} for d, k, o in duplicates],
        "mining": {
            "model": embedder_name,
            "chunks_embedded": neighbours.n_embedded,
            "dim": neighbours.dim,
            "books": len(neighbours.neighbours),
            "neighbours_per_book": max((len(v) for v in neighbours.neighbours.values()), default=0),
            "mean_cosine_nearest": round(float(np.mean(first)), 6) if first else None,
            "mean_cosine_kth": round(float(np.mean(last)), 6) if last else None,
        },
        "splits": splits,
        "authors_in_several_splits": sorted(a for a, s in authors_by_split.items() if len(s) > 1),
        "pair_types": dict(sorted(by_type.items())),
        "topics": {
            "names": list(lexicon.topics),
            "chunks": {lexicon.topics[t]: topic_counts[t] for t in range(len(lexicon.topics))},
            "pairs_topic1_topic2": dict(sorted(pair_topics.items())),
        },
        "shortfalls": {key: int(shortfall[key]) for key in ("positive", "negative",
                                                            "books_without_neighbour_in_split")},
    }
