"""Every loader on the real shared data: counts match the READMEs, labels are sane, units are
deterministic for a seed and valid for their task."""

import collections
import gzip
import re

import pytest

from stylebench_jax.data import (
    asset,
    bible,
    cds,
    federalist,
    m4,
    novels,
    onestopenglish,
    pastel,
    politeness,
    reuters,
    shakespeare,
    styleptb,
)
from stylebench_jax.data.records import BIBLE_VERSIONS
from stylebench_jax.data.registry import BUILT_DATASETS, DATASETS, load_units
from stylebench_jax.errors import UserInputError
from stylebench_jax.tasks.registry import check_unit


@pytest.fixture(scope="module")
def quick_units(data_root):
    return {name: load_units(name, data_root, size="quick", seed=0) for name in DATASETS
            if name not in BUILT_DATASETS}  # built benchmarks: tests/data/test_authbench.py


# ----------------------------------------------------------------------------------- README counts


def test_bible_counts(data_root):
    verses = bible.load_bible(data_root)
    assert len(verses) == 31099
    assert len({v.book for v in verses}) == 66
    assert sum(len(v.texts) == 8 for v in verses) == 30259
    missing = collections.Counter(name for v in verses for name in BIBLE_VERSIONS if name not in v.texts)
    assert missing == {"DRA": 814, "LEB": 27, "ASV": 19, "WEB": 10, "DARBY": 6, "KJV": 3, "YLT": 3, "BBE": 2}


def test_cds_counts(data_root):
    sentences = cds.load_cds(data_root)
    counts = collections.Counter(s.style for s in sentences)
    assert len(counts) == 11 and set(counts.values()) == {1000}


def test_onestopenglish_counts(data_root):
    articles = onestopenglish.load_articles(data_root)
    assert len(articles) == 567 and len({a.article for a in articles}) == 189
    pairs = onestopenglish.load_sentence_pairs(data_root)
    counts = collections.Counter(p.pair_file for p in pairs)
    assert counts == {"ADV-ELE": 2166, "ADV-INT": 2154, "ELE-INT": 1674}
    for triple in onestopenglish.sentence_triples(pairs):
        assert len(set(triple)) == 3


def test_asset_counts(data_root):
    items = asset.load_asset(data_root)
    assert collections.Counter(i.split for i in items) == {"valid": 2000, "test": 359}
    assert all(len(i.simplifications) == 10 for i in items)


def test_shakespeare_counts(data_root):
    pairs = shakespeare.load_shakespeare(data_root)
    assert collections.Counter(p.source for p in pairs) == {"sparknotes": 21079, "enotes": 10365}
    assert len({(p.source, p.play) for p in pairs}) == 25


def test_styleptb_counts(data_root):
    pairs = styleptb.load_styleptb(data_root)
    counts = collections.Counter((p.dataset, p.split) for p in pairs)
    assert counts == {("Tense + Voice", "valid"): 1348, ("Tense + Voice", "test"): 1348,
                      ("Tense + PP Removal", "valid"): 1908, ("Tense + PP Removal", "test"): 1929,
                      ("Voice + PP Removal", "valid"): 728, ("Voice + PP Removal", "test"): 729}
    groups = styleptb.pairs_by_transfer(pairs)
    assert "" not in groups and "to_future" in groups and "active_to_passive+pp_removal" in groups


def test_pastel_counts(data_root):
    rows = pastel.load_pastel(data_root)
    assert collections.Counter(r.split for r in rows) == {"train": 33240, "valid": 4155, "test": 4155}
    assert collections.Counter(r.persona["gender"] for r in rows) == {"Female": 25455, "Male": 15820,
                                                                       "Non-binary": 275}
    assert collections.Counter(r.persona["politics"] for r in rows) == {"LeftWing": 17760, "Centrist": 17350,
                                                                         "RightWing": 6440}


def test_politeness_counts_and_quartiles(data_root):
    wiki = politeness.load_politeness(data_root, "wikipedia")
    stack = politeness.load_politeness(data_root, "stack-exchange")
    assert (len(wiki), len(stack)) == (4353, 6603)
    scores = [r.normalized_score for r in wiki + stack]
    assert -4.1 < min(scores) and max(scores) < 2.8
    labels = collections.Counter(politeness.quartile_labels([r.normalized_score for r in wiki]))
    assert abs(labels["polite"] - 4353 / 4) < 5 and abs(labels["impolite"] - 4353 / 4) < 5


def test_m4_counts(data_root):
    pairs = m4.load_m4(data_root)
    assert len(pairs) == 400
    assert collections.Counter(p.domain for p in pairs) == {"arxiv": 100, "reddit": 100, "wikihow": 100,
                                                            "wikipedia": 100}
    assert all(p.human_text == p.human_text.strip() and p.machine_text for p in pairs)


def test_reuters_counts(data_root):
    articles = reuters.load_reuters(data_root)
    counts = collections.Counter((a.split, a.author) for a in articles)
    assert len(articles) == 5000 and len(counts) == 100 and set(counts.values()) == {50}


@pytest.mark.parametrize("name, n_books, n_authors", [
    ("english_novels_100", 100, 34), ("british_fiction_corpus", 26, 11),
    ("eighteenth_century_novels", 27, 13), ("gutenberg_classics_pyrse", 16, 14)])
def test_novel_counts_and_cleaning(data_root, name, n_books, n_authors):
    books = novels.load_novels(data_root, name)
    assert len(books) == n_books and len({b.author for b in books}) == n_authors
    for book in books:
        assert "gutenberg" not in book.text.lower()
        assert "celebration of women writers" not in book.text.lower()


def test_eighteenth_century_volumes_group_into_works(data_root):
    books = novels.load_novels(data_root, "eighteenth_century_novels")
    burney = collections.Counter(b.work for b in books if b.author == "FrancesBurney")
    assert burney == {"Camilla": 1, "Cecilia": 2, "Evelina": 1, "TheWanderer": 5}


def test_federalist_counts_and_untagging(data_root):
    papers = federalist.load_federalist(data_root)
    counts = collections.Counter(p.author for p in papers)
    assert counts == {"HAMILTON": 51, "MADISON": 14, "JAY": 5, "HAMILTON AND MADISON": 3,
                      "HAMILTON OR MADISON": 12}
    assert sorted(p.number for p in papers if p.author == "JAY") == [2, 3, 4, 5, 64]
    assert sorted(p.number for p in papers if p.author == federalist.DISPUTED) == [
        49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 62, 63]
    assert all("<" not in p.text and ">" not in p.text for p in papers)
    assert papers[0].text.startswith("To the People of the State of New York: AFTER an unequivocal")


def test_untag_mapping():
    assert federalist.untag(" a <c> b <p> c <S> d <Q> e <d> <d> f <l> g<d>h ") == "a, b. c; d? e -- f: g-h"
    # <Q> after another tag opens or closes a quotation; footnote markers go, their text stays
    assert federalist.untag("poet <l> <Q> FAREWELL <p> <Q> PUBLIUS <p> FNA1 <d> @2 Encyclopedia <c> x"
                            ) == 'poet: "FAREWELL. "PUBLIUS. Encyclopedia, x'
    assert federalist.untag("ENEMIES <p> <Q>  <Q> We") == 'ENEMIES. " "We'  # a closing, then an opening


def test_federalist_texts_have_no_impossible_question_marks_or_footnote_markers(data_root):
    text = " ".join(p.text for p in federalist.load_federalist(data_root))
    assert (text.count("?"), text.count('"')) == (559, 271)  # the release's 830 <Q> tags
    assert not re.search(r"[.,;:\"]\?|FNA\d|@\d", text)


def test_reuters_author_without_train_articles_is_named(tmp_path):
    rows = ["split\tauthor\tfile\ttext", "train\tA\t1.txt\tone", "test\tA\t2.txt\ttwo",
            "test\tB\t3.txt\tthree", "train\tC\t4.txt\tfour", "test\tC\t5.txt\tfive"]
    (tmp_path / "reuters_c50").mkdir()
    (tmp_path / "reuters_c50" / "reuters_c50.tsv.gz").write_bytes(gzip.compress("\n".join(rows).encode()))
    with pytest.raises(UserInputError, match="reuters_c50: author 'B' has no train article left to pair "
                                             "with test article '3.txt'"):
        reuters.build_units(tmp_path, size="full")


# ----------------------------------------------------------------------------------- units


def test_registry_covers_all_sources_with_provenance():
    assert set(DATASETS) == {
        "stel", "bible_8_versions", "cds_samples", "onestopenglish", "asset", "shakespeare_modern_parallel",
        "styleptb_compositional", "pastel", "stanford_politeness", "m4_llama2_sample", "reuters_c50",
        "english_novels_100", "british_fiction_corpus", "eighteenth_century_novels",
        "gutenberg_classics_pyrse", "federalist_papers", "authbench_en"}
    for spec in DATASETS.values():
        assert spec.source and spec.licence and spec.description and spec.tasks


def test_quick_units_follow_their_specs(quick_units):
    for name, units in quick_units.items():
        assert units, name
        keys = [(u.subset, u.task) for u in units]
        assert len(keys) == len(set(keys)), name
        for unit in units:
            assert unit.dataset == name and unit.task in DATASETS[name].tasks
            check_unit(unit)
        assert {u.task for u in units} == set(DATASETS[name].tasks), name


def test_quick_suite_size_stays_small(quick_units):
    """The quick budget: a few thousand short texts, long texts few (see data.registry)."""
    unique = {text for units in quick_units.values() for u in units for text in u.texts()}
    long_texts = [t for t in unique if len(t) > 1500]
    assert len(unique) < 7000 and len(long_texts) < 400
    assert sum(map(len, unique)) < 1_800_000


def test_units_are_deterministic_per_seed(data_root, quick_units):
    for name in ("bible_8_versions", "pastel", "asset", "reuters_c50", "british_fiction_corpus"):
        first = quick_units[name]
        again = load_units(name, data_root, size="quick", seed=0)
        other = load_units(name, data_root, size="quick", seed=1)
        assert [u.payload for u in first] == [u.payload for u in again], name
        assert [u.payload for u in first] != [u.payload for u in other], name


def test_stel_units(quick_units):
    units = {u.subset: u for u in quick_units["stel"] if u.task == "order_quad"}
    assert list(units) == ["formality", "simplicity", "contraction", "nbr_substitution", "emotives",
                           "em-subj-pronoun", "definite-abstract"]
    assert {s: len(u.payload.instances) for s, u in units.items()}["emotives"] == 200
    # then STEB's construction: ordered pairs of five style types (tests/data/test_stel.py)
    steb = [u for u in quick_units["stel"] if u.task != "order_quad"]
    names = ("formality", "simplicity", "contraction", "nbr_substitution", "emotives")
    assert [(u.subset, u.task) for u in steb] == [(name, "order_list") for name in names]


def test_bible_units_are_content_controlled(quick_units):
    clustering = next(u for u in quick_units["bible_8_versions"] if u.task == "clustering")
    texts, labels = clustering.payload.texts, clustering.payload.labels
    assert len(texts) == 8 * bible.N_VERSES["quick"] and len(set(texts)) == len(texts)
    assert collections.Counter(labels) == {v: bible.N_VERSES["quick"] for v in BIBLE_VERSIONS}
    assert labels[:8] == list(BIBLE_VERSIONS)  # one verse in all versions, then the next


def test_balanced_label_units(quick_units):
    for name in ("cds_samples", "pastel", "stanford_politeness"):
        for unit in quick_units[name]:
            if unit.task in ("clustering", "pair_all"):
                counts = collections.Counter(unit.payload.labels)
                assert len(set(counts.values())) == 1, unit.key
                assert len(set(unit.payload.texts)) == len(unit.payload.texts), unit.key
    politeness_labels = {u.subset: set(u.payload.labels) for u in quick_units["stanford_politeness"]}
    assert politeness_labels == {"wikipedia": {"impolite", "neutral", "polite"},
                                 "stack-exchange": {"impolite", "neutral", "polite"}}


def test_order_lists_are_ordered_and_disjoint(data_root, quick_units):
    originals = {i.original for i in asset.load_asset(data_root)}
    (asset_unit,) = quick_units["asset"]
    assert all(pair[0] in originals and pair[1] not in originals for pair in asset_unit.payload.lists)
    aligned = {(p.original, p.modern) for p in shakespeare.load_shakespeare(data_root)}
    (play_unit,) = quick_units["shakespeare_modern_parallel"]
    assert all(tuple(pair) in aligned for pair in play_unit.payload.lists)
    articles = {(a.text, a.level) for a in onestopenglish.load_articles(data_root)}
    unit = next(u for u in quick_units["onestopenglish"] if u.subset == "articles")
    assert all((text, level) in articles for item in unit.payload.lists
               for text, level in zip(item, ("adv", "int", "ele")))
    for name, units in quick_units.items():
        for unit in units:
            if unit.task == "order_list" and name != "stel":  # STEB's STEL pairs may share a text (as STEB)
                texts = [t for item in unit.payload.lists for t in item]
                assert len(texts) == len(set(texts)), unit.key
                assert unit.payload.distractors is None


def test_styleptb_units_one_per_transfer(quick_units):
    units = quick_units["styleptb_compositional"]
    assert len(units) == 17
    assert all(len(u.payload.lists) == styleptb.N_PER_TYPE["quick"] for u in units)


def test_m4_pairs_are_content_controlled(data_root, quick_units):
    human = {p.human_text: p.source for p in m4.load_m4(data_root)}
    unit = next(u for u in quick_units["m4_llama2_sample"] if u.task == "pair_predefined")
    a, b, labels = unit.payload.a, unit.payload.b, unit.payload.labels
    assert labels.count(0) == labels.count(1) == 4 * m4.N_PER_DOMAIN["quick"]
    for x, y, label in zip(a, b, labels):
        assert (x in human) == (y in human) if label else (x in human and y not in human)


def test_reuters_units(quick_units, data_root):
    retrieval, pairs, clustering = quick_units["reuters_c50"]
    queries, targets = retrieval.payload.query_texts, retrieval.payload.target_texts
    assert len(queries) == 100 and 148 <= len(targets) <= 150 and not set(queries) & set(targets)
    assert len(set(retrieval.payload.query_labels)) == 50
    assert max(len(t.split()) for t in queries + targets) == reuters.QUICK_LEAD_WORDS
    assert pairs.payload.labels.count(1) == pairs.payload.labels.count(0) == 100
    full = load_units("reuters_c50", data_root, size="full")[0]
    assert (len(full.payload.query_texts), len(full.payload.target_texts)) == (2500, 2500)


def test_novel_retrieval_is_cross_book(data_root, quick_units):
    books = novels.load_novels(data_root, "english_novels_100")
    queries, targets = novels._split_books([b for b in books if b.author != "Anon"],
                                           __import__("numpy").random.default_rng(0))
    assert len(queries) == 33 and len(targets) == 66
    assert not {q.file for q in queries} & {t.file for t in targets}
    retrieval, pairs = quick_units["english_novels_100"]
    assert len(retrieval.payload.query_texts) == 33 * novels.QUICK_QUERY_EXCERPTS
    assert "Anon" not in retrieval.payload.target_labels
    assert pairs.payload.labels.count(1) == 99  # every same-author book pair (33 x 3)
    words = [len(t.split()) for t in retrieval.payload.query_texts]
    assert set(words) == {novels.QUICK_EXCERPT_WORDS}


def test_eighteenth_century_never_pairs_volumes_of_one_work(data_root):
    books = novels.load_novels(data_root, "eighteenth_century_novels")
    work_of = {b.text: (b.author, b.work) for b in books}
    _, pairs = load_units("eighteenth_century_novels", data_root, size="full")
    for a, b, label in zip(pairs.payload.a, pairs.payload.b, pairs.payload.labels):
        assert work_of[a] != work_of[b]
        assert (work_of[a][0] == work_of[b][0]) == bool(label)


def test_federalist_units(quick_units):
    undisputed, pairs, disputed = quick_units["federalist_papers"]
    assert collections.Counter(undisputed.payload.query_labels) == {"HAMILTON": 25, "MADISON": 7, "JAY": 2}
    assert len(disputed.payload.query_texts) == 12 and set(disputed.payload.query_labels) == {"MADISON"}
    assert pairs.payload.labels.count(1) == federalist.N_PAIRS["quick"]


def test_unknown_dataset_and_size(data_root):
    with pytest.raises(UserInputError, match="unknown dataset 'nope'; known datasets: stel, "):
        load_units("nope", data_root)
    with pytest.raises(UserInputError, match="unknown size 'huge'; expected one of quick, full"):
        load_units("cds_samples", data_root, size="huge")


def test_seeds_past_two_to_the_32_are_their_own_streams():
    import zlib

    import numpy as np

    from stylebench_jax.data.sampling import unit_rng

    draw = lambda rng: rng.integers(1 << 30, size=8).tolist()  # noqa: E731
    assert draw(unit_rng(7, "split")) == draw(np.random.default_rng([7, zlib.crc32(b"split")]))
    assert draw(unit_rng(0, "split")) != draw(unit_rng(2**32, "split"))
    with pytest.raises(ValueError, match="seed: expected a non-negative integer, found -1"):
        unit_rng(-1, "split")
