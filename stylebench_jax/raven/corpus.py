"""RAVEN corpora: documents with an author and a topic, from the shared datasets.

- ``bible_8_versions`` (loader ``stylebench_jax.data.bible``): author = version (8), topic = book
  (66). A document is a *passage*: ``verses_per_passage`` consecutive verses (in chapter/verse order,
  counting only verses present in all eight versions) joined by spaces. Each book's complete verses
  are cut into consecutive non-overlapping windows from its first verse; a window whose eight texts
  are not pairwise different (ignoring case and spacing) is dropped; ``passages_per_book`` windows are
  drawn per book (corpus seed) and every drawn passage is taken in all eight versions, so content is
  held constant across authors within a topic. Books with fewer windows (2 John, 3 John at 5 verses
  x 4 passages) are left out, like RAVEN's ``filter_df_by_count``.
- ``reuters_c50`` (loader ``stylebench_jax.data.reuters``): author = journalist (50); articles of both
  C50 splits pooled, ``articles_per_author`` drawn per author, cut to the first ``lead_words`` words.
  No topic labels: topics are derived by clustering (``topics.derive_topics``).
- any file (``file_documents``): JSON Lines, TSV or CSV (optionally gzipped), one document per record,
  text / author / optional topic from named fields; without a topic field, topics are derived.
- a ``stylebench data build`` output folder (``built_documents``): the records of its split files,
  author = the hashed author id, topic = the record's ``topic`` (or derived).

Exact duplicate texts are removed (kept once when all copies share an author, dropped otherwise:
identical texts would make trivial same-author pairs or impossible different-author ones).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from stylebench_jax.data.records import BIBLE_VERSIONS
from stylebench_jax.data.sampling import lead, unit_rng
from stylebench_jax.errors import located

NO_TOPIC = ""


@dataclasses.dataclass(frozen=True)
class Document:
    """One text with its author and topic (``NO_TOPIC`` until derived); ``source`` locates it."""

    text: str
    author: str
    topic: str
    source: str


@dataclasses.dataclass(frozen=True)
class Corpus:
    name: str
    documents: tuple[Document, ...]
    notes: tuple[str, ...] = ()

    @property
    def texts(self) -> list[str]:
        return [doc.text for doc in self.documents]

    def stats(self) -> dict:
        topics = {doc.topic for doc in self.documents}
        return {"name": self.name, "documents": len(self.documents),
                "authors": len({doc.author for doc in self.documents}), "topics": len(topics),
                "mean_characters": round(float(np.mean([len(d.text) for d in self.documents])), 1)
                if self.documents else 0.0, "notes": list(self.notes)}


def _normalise(text: str) -> str:
    return " ".join(text.lower().split())


def bible_documents(data_root: str | Path, *, verses_per_passage: int, passages_per_book: int,
                    seed: int) -> Corpus:
    """Passages of the Bible corpus (module docstring)."""
    from stylebench_jax.data.bible import load_bible

    by_book: dict[str, list] = {}
    for verse in load_bible(data_root):
        if len(verse.texts) == len(BIBLE_VERSIONS):
            by_book.setdefault(verse.book, []).append(verse)
    documents, left_out = [], []
    for book in sorted(by_book):
        verses = sorted(by_book[book], key=lambda v: (v.chapter, v.verse))
        windows = [verses[i:i + verses_per_passage]
                   for i in range(0, len(verses) - verses_per_passage + 1, verses_per_passage)]
        windows = [w for w in windows if len({_normalise(_join(w, v)) for v in BIBLE_VERSIONS})
                   == len(BIBLE_VERSIONS)]
        if len(windows) < passages_per_book:
            left_out.append(f"{book} ({len(windows)})")
            continue
        rng = unit_rng(seed, "raven", "bible_8_versions", book)
        for index in np.sort(rng.choice(len(windows), size=passages_per_book, replace=False)):
            window = windows[int(index)]
            span = f"{book} {window[0].chapter}:{window[0].verse}-{window[-1].chapter}:{window[-1].verse}"
            documents += [Document(_join(window, version), version, book, f"{span} ({version})")
                          for version in BIBLE_VERSIONS]
    notes = [f"passages of {verses_per_passage} verses, {passages_per_book} per book, in all 8 versions"]
    if left_out:
        notes.append(f"books with fewer than {passages_per_book} passages left out: {', '.join(left_out)}")
    return Corpus("bible_8_versions", *_deduplicate(documents, notes))


def _join(window, version: str) -> str:
    return " ".join(verse.texts[version].strip() for verse in window)


def reuters_documents(data_root: str | Path, *, articles_per_author: int | None, lead_words: int | None,
                      seed: int) -> Corpus:
    """Articles of Reuters C50, topics not yet known (module docstring)."""
    from stylebench_jax.data.reuters import load_reuters

    by_author: dict[str, list] = {}
    for article in load_reuters(data_root):
        by_author.setdefault(article.author, []).append(article)
    documents = []
    for author in sorted(by_author):
        articles = sorted(by_author[author], key=lambda a: (a.split, a.file))
        if articles_per_author is not None and articles_per_author < len(articles):
            rng = unit_rng(seed, "raven", "reuters_c50", author)
            articles = [articles[int(i)] for i in np.sort(rng.choice(len(articles), articles_per_author,
                                                                     replace=False))]
        for article in articles:
            text = lead(article.text, lead_words) if lead_words is not None else article.text
            documents.append(Document(text, author, NO_TOPIC, f"C50{article.split}/{author}/{article.file}"))
    notes = [f"{articles_per_author or 'all'} articles per author (train and test pooled), "
             + (f"first {lead_words} words" if lead_words else "whole articles")]
    return Corpus("reuters_c50", *_deduplicate(documents, notes))


def _field(row, name: str) -> str:
    """A record's field as a non-empty string (JSON integers as decimals); errors name file and line."""
    value = row[name]
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return row.text(name)


def file_documents(path: str | Path, *, file_format: str, text: str, author: str,
                   topic: str | None) -> Corpus:
    """Every record of a JSONL / TSV / CSV file (``.gz`` read transparently) as a document: fields
    ``text``, ``author`` and ``topic`` (``NO_TOPIC`` for every document when None). A missing or
    empty field, invalid JSON or a malformed table line is a ``UserInputError`` naming file and line."""
    from stylebench_jax.data.readers import read_jsonl, read_table

    path = Path(path)
    columns = [text, author] + ([topic] if topic is not None else [])
    if file_format == "jsonl":
        rows = read_jsonl(path, keys=columns, blank_lines="skip")
    else:
        rows = read_table(path, delimiter="\t" if file_format == "tsv" else ",", columns=columns,
                           multiline=True)
    documents = [Document(row.text(text), _field(row, author),
                          _field(row, topic) if topic is not None else NO_TOPIC, f"{path.name}:{row.line}")
                 for row in rows]
    if not documents:
        raise located(path, f"no records; expected a header line and one record per line ({file_format})",
                      line=1)
    notes = [f"{len(documents)} records of {path.name}"
             + ("" if topic is not None else "; no topic field (topics derived)")]
    return Corpus(path.name, *_deduplicate(documents, notes))


def built_documents(directory: str | Path, splits: Sequence[str]) -> Corpus:
    """The records of ``<directory>/splits/<split>.jsonl`` (``stylebench data build``), splits in the
    order given: author = ``author_id`` (the salted hash), topic = ``topic`` (``NO_TOPIC`` when null).
    The corpus is named by the build's manifest."""
    from stylebench_jax.data.authbench import read_manifest
    from stylebench_jax.data.readers import read_jsonl

    directory = Path(directory)
    documents = []
    for split in splits:
        path = directory / "splits" / f"{split}.jsonl"
        for row in read_jsonl(path, keys=("text", "author_id"), blank_lines="skip"):
            topic = row.data.get("topic")
            if topic is not None and not isinstance(topic, str):
                raise row.error("topic", f"expected a string or null, found {type(topic).__name__}")
            documents.append(Document(row.text("text"), row.text("author_id"), topic or NO_TOPIC,
                                      f"{split}.jsonl:{row.line}"))
    name = read_manifest(directory).get("name") or directory.name
    with_topic = sum(doc.topic != NO_TOPIC for doc in documents)
    notes = [f"build {name!r}, splits {', '.join(splits)}: {len(documents)} documents, "
             f"{with_topic} with a topic"]
    return Corpus(str(name), *_deduplicate(documents, notes))


def _deduplicate(documents: Sequence[Document], notes: list[str]) -> tuple[tuple[Document, ...], tuple]:
    authors: dict[str, set[str]] = {}
    for doc in documents:
        authors.setdefault(doc.text, set()).add(doc.author)
    kept, seen = [], set()
    for doc in documents:
        if len(authors[doc.text]) == 1 and doc.text not in seen:
            seen.add(doc.text)
            kept.append(doc)
    if len(kept) < len(documents):
        notes = notes + [f"{len(documents) - len(kept)} duplicate texts removed"]
    return tuple(kept), tuple(notes)


def with_topics(corpus: Corpus, topics: Sequence[str], note: str) -> Corpus:
    """``corpus`` with document ``i`` moved to ``topics[i]``."""
    if len(topics) != len(corpus.documents):
        raise ValueError(f"got {len(topics)} topics for {len(corpus.documents)} documents")
    documents = tuple(dataclasses.replace(doc, topic=t) for doc, t in zip(corpus.documents, topics))
    return Corpus(corpus.name, documents, corpus.notes + (note,))


def filter_topics(corpus: Corpus, *, min_docs: int, docs_per_topic: int | None, seed: int) -> Corpus:
    """Keep topics with at least ``min_docs`` documents; of each, ``docs_per_topic`` drawn at random
    (seeded, document order kept; all when None) - RAVEN's ``filter_df_by_count`` and
    ``equalize_samples``.

    Order differs from RAVEN's: its ``run_sampling_kfold.py`` selects topics (HITS) on the whole
    filtered corpus and equalises the documents per fold afterwards; here the cap comes first, so the
    topic vectors HITS and Tables 6-7 use are means over the capped documents (and only those are
    embedded). With ``docs_per_topic`` null (``configs/raven/bible.yaml``) the two agree."""
    by_topic: dict[str, list[int]] = {}
    for index, doc in enumerate(corpus.documents):
        by_topic.setdefault(doc.topic, []).append(index)
    keep, dropped = [], []
    for topic in sorted(by_topic):
        members = by_topic[topic]
        if len(members) < min_docs:
            dropped.append(topic)
            continue
        if docs_per_topic is not None and docs_per_topic < len(members):
            rng = unit_rng(seed, "raven", "topic-docs", topic)
            members = [members[int(i)] for i in np.sort(rng.choice(len(members), docs_per_topic,
                                                                   replace=False))]
        keep += members
    notes = list(corpus.notes)
    if dropped:
        notes.append(f"{len(dropped)} topics with fewer than {min_docs} documents left out")
    if docs_per_topic is not None:
        notes.append(f"at most {docs_per_topic} documents per topic, drawn before the topics are selected "
                     "(RAVEN's script draws them per fold, after HITS)")
    return Corpus(corpus.name, tuple(corpus.documents[i] for i in sorted(keep)), tuple(notes))
