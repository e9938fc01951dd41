"""encoders/baselines: STEL's surface similarities reproduce the authors' results; edge cases; embedders."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial import distance
from sklearn.feature_extraction.text import CountVectorizer

from stylebench_jax.data.stel import load_stel
from stylebench_jax.encoders.base import PairSimilarity
from stylebench_jax.encoders.baselines import BASELINES
from stylebench_jax.encoders.baselines.stel_surface import levenshtein_distance, stel_cosine
from stylebench_jax.tasks.base import TextScorer
from stylebench_jax.tasks.order_alignment import alignment_credits, stel_quadruple

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
@given(st.text(alphabet="abcé ", max_size=15), st.text(alphabet="abcé ", max_size=15))
def test_levenshtein_matches_textbook_dynamic_programme(a, b):
    assert levenshtein_distance(a, b) == brute_levenshtein(a, b) == levenshtein_distance(b, a)
