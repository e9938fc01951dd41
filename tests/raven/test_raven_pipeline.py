"""Pipeline pieces on a tiny corpus: HITS vs random datasets (cutting and grouping), Table 7 and the
sweep, fingerprints that change with exactly what determines a fold result."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from raven_tiny import write_tiny_bible

from stylebench_jax.config import config_from_dict
from stylebench_jax.raven.config import RavenConfig
from stylebench_jax.raven.corpus import bible_documents
from stylebench_jax.raven.pipeline import fold_fingerprint, sample_datasets, similarity_tables
from stylebench_jax.raven.topics import nmf_vectors


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = write_tiny_bible(tmp_path_factory.mktemp("data"))
    return bible_documents(root, verses_per_passage=2, passages_per_book=2, seed=0)


def config(**sampling) -> RavenConfig:
    base = {"n_topics": 6, "k_folds": 3, "random_seeds": [0, 1, 2], "representation": "nmf",
            "n_components": 4}
    return config_from_dict(RavenConfig, {"corpus": {"name": "bible_8_versions"},
                                          "sampling": {**base, **sampling}})


def test_hits_topics_are_less_similar_across_splits_than_random(corpus):
    """Books come in four themes of three (near-duplicate topics). HITS picks 3 books of 3 different
    themes, random picks often two of one theme: HITS' train/test similarity is lower (mean and max).
    At m = 6 > 4 themes HITS must take duplicates too (max ~1: the limit RAVEN §9 warns about)."""
    cfg = config(n_topics=3, sweep=[6, 9], random_seeds=[0, 1, 2, 3, 4])
    representation = nmf_vectors(corpus.texts, n_components=4)
    datasets = sample_datasets(cfg, corpus, representation)
    assert [d.name for d in datasets] == ["hits"] + [f"random_{s}" for s in range(5)]
    table = similarity_tables(cfg, corpus, representation, datasets)
    assert table["hits"]["mean"] < table["random"]["mean"]
    assert table["hits"]["max"] < table["random"]["max"] - 0.1
    sweep = {entry["n_topics"]: entry for entry in table["sweep"]}
    assert sorted(sweep) == [3, 6, 9]
    assert sweep[3]["hits"] == table["hits"] and sweep[3]["random"]["mean"] == table["random"]["mean"]
    assert sweep[6]["hits"]["max"] > 0.99
    assert len(table["most_similar_pairs"]["hits"]) == 3  # 3 topics: 3 unordered pairs


def test_cutting_drops_and_grouping_keeps_unselected_topics_for_hits_and_random(corpus):
    representation = nmf_vectors(corpus.texts, n_components=4)
    cut_all = sample_datasets(config(), corpus, representation)
    grouped_all = sample_datasets(config(strategy="grouping"), corpus, representation)
    cut, grouped = cut_all[0], grouped_all[0]
    # the random controls follow the same strategy: same topics as cut, every document when grouped
    for cut_random, grouped_random in zip(cut_all[1:], grouped_all[1:]):
        assert cut_random.topics == grouped_random.topics and len(cut_random.topics) == 6
        assert cut_random.documents.size == 6 * 2 * 8
        assert grouped_random.documents.size == len(corpus.documents)
        assert set(grouped_random.doc_topic) == set(grouped_random.topics)
    assert cut.topics == grouped.topics and len(cut.topics) == 6
    assert cut.documents.size == 6 * 2 * 8
    assert grouped.documents.size == len(corpus.documents)  # every book merged into a selected one
    assert set(grouped.doc_topic) == set(grouped.topics)
    for fold in grouped.folds:
        train = {grouped.doc_topic[i] for i in fold.train_docs}
        assert not train & {grouped.doc_topic[i] for i in fold.test_docs}


def _pairs_by_hand(representation, dataset):
    """{unordered pair: cosine of the two topics' (groups') mean unit vectors in this dataset}."""
    unit = representation / np.linalg.norm(representation, axis=1, keepdims=True)
    labels = np.asarray(dataset.doc_topic)
    mean = {t: unit[labels == t].mean(axis=0) for t in set(dataset.doc_topic) - {""}}
    out = {}
    for fold in dataset.folds:
        for a in fold.train_topics:
            for b in fold.test_topics:
                va, vb = mean[a], mean[b]
                out[frozenset((a, b))] = float(va @ vb / np.linalg.norm(va) / np.linalg.norm(vb))
    return out


@pytest.mark.parametrize("strategy", ["cutting", "grouping"])
def test_table6_rates_random_pairs_on_their_own_datasets_topic_vectors(corpus, strategy):
    # with grouping, a group named after a selected topic holds different books in different random
    # samples: each random pair's similarity is its own sample's (as HITS pairs' are), not the corpus'
    cfg = config(n_topics=3, random_seeds=[0, 1, 2, 3], strategy=strategy)
    representation = nmf_vectors(corpus.texts, n_components=4)
    datasets = sample_datasets(cfg, corpus, representation)
    table = similarity_tables(cfg, corpus, representation, datasets)
    expected = {}
    for dataset in datasets[1:]:
        for pair, value in _pairs_by_hand(representation, dataset).items():
            expected[pair] = max(value, expected.get(pair, -np.inf))
    top = sorted(expected.values(), reverse=True)[:5]
    got = table["most_similar_pairs"]["random"]
    assert [p["similarity"] for p in got] == pytest.approx(top)
    for p in got:
        assert p["similarity"] == pytest.approx(expected[frozenset((p["train_topic"], p["test_topic"]))])
    hits = _pairs_by_hand(representation, datasets[0])
    for p in table["most_similar_pairs"]["hits"]:
        assert p["similarity"] == pytest.approx(hits[frozenset((p["train_topic"], p["test_topic"]))])


def test_fingerprint_changes_with_identity_pairs_and_texts(corpus):
    representation = nmf_vectors(corpus.texts, n_components=4)
    fold = sample_datasets(config(), corpus, representation)[0].folds[0]
    hashes = [f"h{i}" for i in range(len(corpus.documents))]
    base = fold_fingerprint("m v1", hashes, fold)
    assert fold_fingerprint("m v1", hashes, fold) == base
    assert fold_fingerprint("m v2", hashes, fold) != base
    changed = list(hashes)
    changed[int(fold.test_pairs.second[0])] = "other"
    assert fold_fingerprint("m v1", changed, fold) != base
    flipped = dataclasses.replace(fold.test_pairs, labels=1 - fold.test_pairs.labels)
    assert fold_fingerprint("m v1", hashes, dataclasses.replace(fold, test_pairs=flipped)) != base
    unused = np.setdiff1d(np.arange(len(hashes)), np.concatenate([fold.train_docs, fold.test_docs]))
    changed = list(hashes)
    changed[int(unused[0])] = "other"
    assert fold_fingerprint("m v1", changed, fold) == base  # a document outside the fold does not matter


CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs" / "raven").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_shipped_configs_validate_and_document_themselves(path):
    from stylebench_jax.config import load_config

    config = load_config(path, RavenConfig)
    assert config.sampling.n_topics % config.sampling.k_folds == 0
    header = [line for line in path.read_text().splitlines() if line.startswith("#")]
    for key in ("# Command:", "# Hardware:", "# Runtime:", "# Figures:"):
        assert any(line.startswith(key) for line in header), key


@pytest.mark.parametrize("representation", ["nmf", "lda"])
def test_a_corpus_without_a_topic_vocabulary_names_the_representation(representation):
    """Every word in every document: RAVEN's min_df 0.1 / max_df 0.5 leave no term and scikit-learn's
    "After pruning, no terms remain" ended the run in a traceback."""
    from stylebench_jax.config import InvalidField
    from stylebench_jax.raven.pipeline import _representation

    texts = ["the cat sat on a mat"] * 12
    with pytest.raises(InvalidField, match=r"no word is in 10-50% of the 12 documents") as raised:
        _representation(config(representation=representation), texts, embeddings=None)
    assert raised.value.field == "sampling.representation"
