"""Novel corpora for cross-book authorship: four datasets, one book (or volume) per TSV row.

=========================  ==============================================================  ==========
dataset                    source (staged file)                                            licence
=========================  ==============================================================  ==========
english_novels_100         github.com/computationalstylistics/100_english_novels (143e601)  none stated;
                           ``english_novels_100.tsv.gz``: author title year file n_words   PG-derived
                           text (100 novels, 33 authors x 3 + Anon_Clara = Blackmore)      texts
british_fiction_corpus     github.com/ariddell/tatom (28f5d57), data/british-fiction-      none stated;
                           corpus; ``british_fiction_novels.tsv.gz``: author short_title   PG public
                           file n_words text (26 novels, 11 authors)                       domain
eighteenth_century_novels  github.com/danwaterfield/DigHums (5230ee2);                     code MIT;
                           ``eighteenth_century_novels.tsv.gz``: author file pg_title      texts public
                           pg_ebook_no pg_markers_found n_words source_encoding text       domain
                           (27 files, 13 authors; multi-volume works split by volume)
gutenberg_classics_pyrse   github.com/merely-useful/py-rse (46cf807 / 1e26b6b);            CC BY 4.0 +
                           ``gutenberg_classics_16.tsv.gz``: author title file_stem ...    public
                           n_words text (16 books, 14 authors)                             domain
=========================  ==============================================================  ==========

Cleaning (the same for every book, so it cannot favour an author): ``text.gutenberg.clean_book``:
lines naming the digitisation (Project Gutenberg, "A Celebration of Women Writers", "Produced by",
"Transcribed from", "HTML version", Distributed Proofreading, HTML comments) in the first and last
1% of a book (inside it they are prose) are dropped, then the first and last 2% of the characters
are cut at line boundaries. Title pages and editors'
notes often name the author; the cut keeps them out of the texts a model sees.

Units (STEB-style cross-book authorship retrieval, App. C.9, and verification pairs):

- ``retrieval`` (subset ``cross-book``): for every author with at least two *works*, one work is
  drawn (seeded) as the query book; all other books are targets (single-book authors are
  targets only, as distractors); volumes of the query's own work are never targets.
  ``full``: whole books as documents (the encoder chunks and pools). ``quick``: each query book
  gives ``QUICK_QUERY_EXCERPTS`` separate excerpts of ``QUICK_EXCERPT_WORDS`` words (one from each
  equal part of the book) and each target book one document made of ``QUICK_TARGET_EXCERPTS``
  such excerpt(s) (joined by a blank line when more than one).
- ``pair_predefined`` (subset ``cross-book``): every same-author pair of books from different
  works (positives) and as many random different-author pairs (negatives), seeded; books as in
  the targets (whole, or the quick sample document).

The anonymous first edition in english_novels_100 (``Anon_Clara_1864``, by R. D. Blackmore) is
left out of both units: its label is the attribution question itself.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from stylebench_jax.data.readers import Row, dataset_dir, read_table, require_file
from stylebench_jax.data.records import Novel
from stylebench_jax.data.sampling import balanced_pairs, excerpt, unit_rng
from stylebench_jax.data.units import DatasetSpec, EvalUnit, RetrievalSet, TextPairs, check_size
from stylebench_jax.errors import located
from stylebench_jax.text.gutenberg import clean_book

QUICK_EXCERPT_WORDS = 200
QUICK_QUERY_EXCERPTS = 2
QUICK_TARGET_EXCERPTS = 1
N_PAIRS = {"quick": 200, "full": 2000}  # cap on positives (negatives match them)
MIN_WORDS = 1000


@dataclasses.dataclass(frozen=True)
class Corpus:
    """How one staged novel corpus is laid out and where it comes from."""

    name: str
    file: str
    title_column: str
    file_column: str
    columns: tuple[str, ...]
    source: str
    licence: str
    description: str
    excluded_authors: tuple[str, ...] = ()

    def work_of(self, row: Row) -> str:
        """The work a row belongs to: volumes ``...Vol2`` of one work share it."""
        return re.sub(r"Vol\d+$", "", row[self.file_column])


CORPORA = {
    corpus.name: corpus for corpus in (
        Corpus("english_novels_100", "english_novels_100.tsv.gz", "title", "file",
               ("author", "title", "year", "file", "n_words", "text"),
               "github.com/computationalstylistics/100_english_novels (commit 143e601, corpus/)",
               "none stated (Project Gutenberg-derived; a few late works may be in copyright)",
               "100 English novels 1839-1937, 33 authors x 3 (Eder & Rybicki's benchmark)",
               excluded_authors=("Anon",)),
        Corpus("british_fiction_corpus", "british_fiction_novels.tsv.gz", "short_title", "file",
               ("author", "short_title", "file", "n_words", "text"),
               "github.com/ariddell/tatom (commit 28f5d57, data/british-fiction-corpus/)",
               "none stated (Project Gutenberg public-domain texts)",
               "26 British novels by 11 novelists (Austen, Brontes, Dickens, Eliot, Fielding, ...)"),
        Corpus("eighteenth_century_novels", "eighteenth_century_novels.tsv.gz", "pg_title", "file",
               ("author", "file", "pg_title", "n_words", "text"),
               "github.com/danwaterfield/DigHums (commit 5230ee2)",
               "code MIT; texts public domain (Project Gutenberg / Celebration of Women Writers)",
               "27 files of 18th-century novels (1719-1814), 13 authors; volumes grouped by work"),
        Corpus("gutenberg_classics_pyrse", "gutenberg_classics_16.tsv.gz", "title", "file_stem",
               ("author", "title", "file_stem", "n_words", "text"),
               "github.com/merely-useful/py-rse (commits 46cf807 / 1e26b6b, zipf/data/)",
               "CC BY 4.0 (repository) + public-domain books",
               "16 Project Gutenberg classics by 14 authors (Austen x3)"),
    )
}


def load_novels(data_root: str | Path, name: str) -> list[Novel]:
    """All books of corpus ``name`` (a key of ``CORPORA``), validated and cleaned."""
    corpus = CORPORA[name]
    folder = dataset_dir(data_root, corpus.name, expected=corpus.file, source=corpus.source)
    path = require_file(folder, corpus.file, source=corpus.source)
    books, seen = [], {}
    for row in read_table(path, columns=corpus.columns, multiline=True):
        row.integer("n_words", minimum=1)
        file = row.text(corpus.file_column)
        if file in seen:
            raise located(path, f"duplicate file {file!r} (first on line {seen[file]})", line=row.line,
                          column=row.header.index(corpus.file_column) + 1)
        seen[file] = row.line
        text = clean_book(row.text("text"))
        if len(text.split(maxsplit=MIN_WORDS)) <= MIN_WORDS:
            raise row.error("text", f"expected a book (> {MIN_WORDS} words after cleaning), found "
                                    f"{len(text.split())} words")
        books.append(Novel(corpus=name, author=row.text("author"), work=corpus.work_of(row),
                           title=row.optional_text(corpus.title_column) or file, file=file, text=text))
    return books


def _split_books(books: list[Novel], rng) -> tuple[list[Novel], list[Novel]]:
    """(query books: one work per multi-work author, drawn; targets: the rest minus query works)."""
    queries = []
    for author in sorted({b.author for b in books}):
        works = sorted({b.work for b in books if b.author == author})
        if len(works) >= 2:
            work = works[int(rng.integers(len(works)))]
            volumes = [b for b in books if b.author == author and b.work == work]
            queries.append(volumes[int(rng.integers(len(volumes)))])
    query_works = {(q.author, q.work) for q in queries}
    targets = [b for b in books if (b.author, b.work) not in query_works]
    return queries, targets


def _sample_document(book: Novel, rng) -> str:
    parts = [excerpt(book.text, QUICK_EXCERPT_WORDS, rng, lo=k / QUICK_TARGET_EXCERPTS,
                     hi=(k + 1) / QUICK_TARGET_EXCERPTS) for k in range(QUICK_TARGET_EXCERPTS)]
    return "\n\n".join(parts)


def build_units(data_root: str | Path, name: str, *, size: str = "quick", seed: int = 0) -> list[EvalUnit]:
    """Cross-book retrieval and verification pairs for corpus ``name``."""
    check_size(size)
    corpus = CORPORA[name]
    books = [b for b in load_novels(data_root, name) if b.author not in corpus.excluded_authors]
    rng = unit_rng(seed, name, "cross-book")
    queries, targets = _split_books(books, rng)
    if size == "full":
        document = {b.file: b.text for b in books}
        query_texts = [q.text for q in queries]
        query_labels = [q.author for q in queries]
    else:
        document = {b.file: _sample_document(b, rng) for b in books}
        query_texts = [excerpt(q.text, QUICK_EXCERPT_WORDS, rng, lo=k / QUICK_QUERY_EXCERPTS,
                               hi=(k + 1) / QUICK_QUERY_EXCERPTS)
                       for q in queries for k in range(QUICK_QUERY_EXCERPTS)]
        query_labels = [q.author for q in queries for _ in range(QUICK_QUERY_EXCERPTS)]
    retrieval = RetrievalSet(query_texts=query_texts, query_labels=query_labels,
                             target_texts=[document[t.file] for t in targets],
                             target_labels=[t.author for t in targets])
    first, second, same = balanced_pairs([b.author for b in books], N_PAIRS[size], rng,
                                         groups=[(b.author, b.work) for b in books])
    pairs = TextPairs(a=[document[books[i].file] for i in first],
                      b=[document[books[j].file] for j in second], labels=same)
    return [EvalUnit(name, "cross-book", "retrieval", retrieval),
            EvalUnit(name, "cross-book", "pair_predefined", pairs)]


def _spec(corpus: Corpus) -> DatasetSpec:
    def load(data_root, *, size="quick", seed=0):
        return build_units(data_root, corpus.name, size=size, seed=seed)
    load.__doc__ = f"Units of {corpus.name}: see ``stylebench_jax.data.novels.build_units``."
    return DatasetSpec(name=corpus.name, tasks=("retrieval", "pair_predefined"),
                       description=corpus.description, source=corpus.source, licence=corpus.licence,
                       load=load)


SPECS = {name: _spec(corpus) for name, corpus in CORPORA.items()}
