"""text/features.py: hand-counted surface features, POS-count invariants, empty input."""

import numpy as np
import pytest

from stylebench_jax.text.features import FEATURE_NAMES, UPOS_TAGS, linguistic_features, syllable_count


@pytest.fixture(scope="module")
def nlp():
    from stylebench_jax.text.features import load_pipeline

    return load_pipeline()


@pytest.mark.parametrize("word, expected", [
    ("the", 1), ("happy", 2), ("beautiful", 3), ("a", 1), ("rhythm", 1), ("cake", 1),
    ("education", 4), ("1997", 1), ("Yesterday", 3)])
def test_syllable_count_by_hand(word, expected):
    assert syllable_count(word) == expected


def test_surface_counts_by_hand(nlp):
    matrix, names = linguistic_features(["The cats sat on the mat. They weren't happy!"], nlp)
    row = dict(zip(names, matrix[0]))
    # words: The cats sat on the mat They were n't happy; punctuation: . !
    assert row["t_word"] == 10
    assert row["t_punct"] == 2
    assert row["t_sent"] == 2
    assert row["t_char"] == len("Thecatssatonthemat") + len("Theywere") + len("n't") + len("happy")
    # the cats sat on the mat they were n't: 1 each ("the", "were": final e dropped, floor 1); happy: 2
    assert row["t_syll"] == 11
    assert row["t_syll2"] == 0 and row["t_syll3"] == 0
    assert row["n_det"] == 2 and row["n_udet"] == 1  # "The", "the" share the lemma "the"
    assert row["n_punct"] == 2


def test_pos_invariants_and_empty_text(nlp):
    texts = ["", "Hello there, General Kenobi!!  You are a bold one.", "1, 2, 3 & 4 % x"]
    matrix, names = linguistic_features(texts, nlp)
    assert names == list(FEATURE_NAMES) and matrix.shape == (3, len(FEATURE_NAMES)) == (3, 43)
    assert matrix.dtype == np.float64
    np.testing.assert_array_equal(matrix[0], 0.0)
    tags = matrix[:, 9:9 + len(UPOS_TAGS)]
    unique = matrix[:, 9 + len(UPOS_TAGS):]
    assert np.all(unique <= tags)
    docs = nlp.pipe(texts)
    for row, doc in zip(matrix, docs):
        non_space = sum(not token.is_space for token in doc)
        assert row[0] + row[2] == non_space  # t_word + t_punct
        assert row[9:9 + len(UPOS_TAGS)].sum() == non_space  # every non-space token has one of 17 tags
