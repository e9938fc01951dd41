"""RAVEN corpora from tiny files written here: Bible passages, Reuters articles, topic filters,
topic vectors and topics derived by clustering."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from raven_tiny import VERSIONS, write_tiny_bible

from stylebench_jax.raven.corpus import (
    Corpus,
    Document,
    bible_documents,
    filter_topics,
    reuters_documents,
    with_topics,
)
from stylebench_jax.raven.topics import derive_topics, nmf_vectors, topic_vectors


def test_bible_passages_in_all_versions(tmp_path):
    root = write_tiny_bible(tmp_path)
    corpus = bible_documents(root, verses_per_passage=2, passages_per_book=2, seed=0)
    assert len(corpus.documents) == 12 * 2 * 8  # 6 verses -> 3 windows of 2, 2 drawn, 8 versions
    assert {d.author for d in corpus.documents} == set(VERSIONS)
    assert "Tiny" not in {d.topic for d in corpus.documents}
    assert any("Tiny (1)" in note for note in corpus.notes)
    spans = {}
    for doc in corpus.documents:
        spans.setdefault(doc.source.rsplit(" (", 1)[0], set()).add(doc.author)
    assert all(authors == set(VERSIONS) for authors in spans.values())  # same passage, every version
    assert len(spans) == 24
    again = bible_documents(root, verses_per_passage=2, passages_per_book=2, seed=0)
    assert again == corpus
    other = bible_documents(root, verses_per_passage=2, passages_per_book=2, seed=1)
    assert {d.source for d in other.documents} != {d.source for d in corpus.documents}


def test_bible_window_with_identical_versions_is_dropped(tmp_path):
    header = "book\tchapter\tverse\t" + "\t".join(VERSIONS)
    rows = [header]
    for v in range(1, 5):
        texts = [f"verse {v} in style {i}" for i in range(8)]
        if v <= 2:
            texts[1] = texts[0]  # ASV = KJV in the first window
        rows.append(f"Ruth\t1\t{v}\t" + "\t".join(texts))
    (tmp_path / "bible_8_versions").mkdir()
    with gzip.open(tmp_path / "bible_8_versions" / "bible_verses_8versions.tsv.gz", "wt") as handle:
        handle.write("\n".join(rows) + "\n")
    corpus = bible_documents(tmp_path, verses_per_passage=2, passages_per_book=1, seed=0)
    assert {d.source.split(" (")[0] for d in corpus.documents} == {"Ruth 1:3-1:4"}


def write_tiny_reuters(root, rows):
    (root / "reuters_c50").mkdir(parents=True)
    with gzip.open(root / "reuters_c50" / "reuters_c50.tsv.gz", "wt") as handle:
        handle.write("split\tauthor\tfile\ttext\n" + "".join("\t".join(r) + "\n" for r in rows))


def test_reuters_articles_per_author_lead_and_duplicates(tmp_path):
    rows = [("train", f"A{a}", f"{i}.txt", f"article {a} {i} " + "word " * 20)
            for a in range(3) for i in range(4)]
    rows.append(("test", "A0", "dup.txt", rows[1][3]))  # same author, same text: kept once
    rows.append(("test", "A2", "x.txt", rows[5][3]))  # A1's text under A2: both dropped
    write_tiny_reuters(tmp_path, rows)
    corpus = reuters_documents(tmp_path, articles_per_author=None, lead_words=3, seed=0)
    texts = [d.text for d in corpus.documents]
    assert all(len(t.split()) == 3 for t in texts)
    assert texts.count("article 0 1") == 1 and "article 1 1" not in texts
    assert len(corpus.documents) == 12 - 1
    assert any("duplicate" in note for note in corpus.notes)
    sampled = reuters_documents(tmp_path, articles_per_author=2, lead_words=None, seed=0)
    assert [sum(d.author == f"A{a}" for d in sampled.documents) for a in range(3)] == [2, 2, 2]
    assert {d.topic for d in sampled.documents} == {""}


def test_filter_topics_min_and_cap():
    docs = tuple(Document(f"t{i}", f"a{i % 2}", "big" if i < 6 else ("mid" if i < 9 else "one"), str(i))
                 for i in range(10))
    kept = filter_topics(Corpus("c", docs), min_docs=2, docs_per_topic=2, seed=0)
    topics = [d.topic for d in kept.documents]
    assert topics.count("big") == 2 and topics.count("mid") == 2 and "one" not in topics
    assert filter_topics(Corpus("c", docs), min_docs=2, docs_per_topic=2, seed=0) == kept
    # the report says that the cap precedes topic selection (RAVEN's script caps per fold, after HITS)
    assert "at most 2 documents per topic, drawn before the topics are selected" in " ".join(kept.notes)
    assert len(filter_topics(Corpus("c", docs), min_docs=1, docs_per_topic=None, seed=0).documents) == 10


def test_topic_vectors_are_means_of_unit_vectors():
    vectors = np.array([[3.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    names, topic = topic_vectors(vectors, ["b", "b", "a"])
    assert names == ["a", "b"]
    np.testing.assert_allclose(topic, [[2 ** -0.5, 2 ** -0.5], [0.5, 0.5]])


def test_derived_topics_recover_clusters_and_are_named():
    rng = np.random.default_rng(0)
    centres = np.eye(3) * 5
    vectors = np.concatenate([centres[c] + rng.normal(size=(10, 3)) * 0.3 for c in range(3)])
    words = ["oil crude barrel", "bank loan rate", "car engine factory"]
    texts = [f"{words[c]} report {i}" for c in range(3) for i in range(10)]
    labels = derive_topics(texts, vectors, n_topics=3, seed=0)
    assert len(set(labels)) == 3
    assert all(len({labels[c * 10 + i] for i in range(10)}) == 1 for c in range(3))
    assert any("oil" in label or "crude" in label for label in labels)
    assert derive_topics(texts, vectors, n_topics=3, seed=0) == labels
    plain = Corpus("c", tuple(Document(t, "a", "", str(i)) for i, t in enumerate(texts)))
    corpus = with_topics(plain, labels, "derived")
    assert corpus.notes == ("derived",) and corpus.documents[0].topic == labels[0]
    with pytest.raises(ValueError, match="cannot derive"):
        derive_topics(texts[:2], vectors[:2], n_topics=3, seed=0)


def test_derived_topics_from_few_distinct_vectors_and_stop_words_only():
    """Six documents, three distinct vectors: 4 clusters are refused, 3 are named without words when every
    word is an English stop word (TF-IDF has no vocabulary)."""
    vectors = np.repeat(np.eye(3), 2, axis=0)
    texts = ["the of and", "and the of", "it is", "is it", "we were", "were we"]
    with pytest.raises(ValueError, match="cannot derive 4 topics from 6 documents with 3 distinct"):
        derive_topics(texts, vectors, n_topics=4, seed=0)
    labels = derive_topics(texts, vectors, n_topics=3, seed=0)
    assert sorted(set(labels)) == ["T00", "T01", "T02"]
    assert labels[0] == labels[1] and labels[2] == labels[3] and labels[4] == labels[5]


def test_nmf_vectors_shape():
    texts = [f"{w} {w} common{i % 3} filler{i % 5}" for i, w in enumerate(["oil", "gas", "bank", "loan"] * 5)]
    vectors = nmf_vectors(texts, n_components=3)
    assert vectors.shape == (20, 3) and np.all(vectors >= 0)
