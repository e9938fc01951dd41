"""Style similarity (seed 003 §6): chunk decisions, single/mean/topk_mean against a direct NumPy
computation, one embedding per distinct chunk, calibration applied, a real (tiny) neural model."""

import hashlib

import numpy as np
import pytest

from stylebench_jax.calibration import SimilarityMap
from stylebench_jax.errors import InvalidOption, UserInputError
from stylebench_jax.similarity import (
    StyleSettings,
    chunk_count,
    resolve_style_embedder,
    score_pairs,
    text_chunks,
)
from tests.helpers.tiny_models import write_tiny_model


class HashEmbedder:
    """Bag of hashed words (16 dims): deterministic, cheap, not normalised."""

    name, identity, dim = "hash", "hash-v1", 16

    def __init__(self):
        self.calls = []

    def embed(self, texts):
        self.calls.append(list(texts))
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, hashlib.sha256(word.encode()).digest()[0] % self.dim] += 1.0
        return out


def _sentences(n, seed):
    rng = np.random.default_rng(seed)
    words = ["storm", "harbour", "gentle", "cold", "letter", "candle", "river", "silent", "horse", "iron"]
    return " ".join(f"The {words[rng.integers(10)]} {words[rng.integers(10)]} went on number {i}."
                    for i in range(n))


def _unit(v):
    v = np.asarray(v, np.float64)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def test_chunk_count_follows_the_authors_estimate():
    s = StyleSettings()
    assert chunk_count(500, 14, s) == 1
    assert chunk_count(513, 3, s) == 2          # over the token budget
    assert chunk_count(100, 15, s) == 2         # over 14 sentences
    assert chunk_count(900, 40, s) == 3         # ceil(max(900/512, 40/14)) = 3
    assert chunk_count(10_000, 500, s) == 8     # the cap
    assert chunk_count(10, 1, StyleSettings(num_chunks=4)) == 4


def test_short_pair_is_one_cosine():
    emb = HashEmbedder()
    a, b = "The cold river ran. A silent horse.", "An iron letter came by the river."
    [out] = score_pairs(emb, [a], [b], StyleSettings())
    va, vb = emb.embed([a, b])
    assert out["aggregate"] == "single" and out["pairs"] == 1
    assert out["cosine"] == pytest.approx(float(_unit(va) @ _unit(vb)), abs=1e-6)
    assert out["score_0_1"] == pytest.approx((out["cosine"] + 1) / 2) and out["score_calibrated"] is None


def test_a_text_and_itself_score_at_most_one():
    """float32 rounding gave cosine 1.0000001 (score_0_1 above 1), and calibration refused the pair
    set as holding a probability outside [0, 1]."""
    from stylebench_jax.similarity import chunk_pair_cosines

    rng = np.random.default_rng(0)
    vectors = _unit(rng.normal(size=(500, 384))).astype(np.float32)
    rows = np.arange(500)
    cosines = chunk_pair_cosines(vectors, rows, rows)
    assert cosines.max() <= 1.0 and cosines.min() > 0.9999
    text = "The cold river ran. A silent horse."
    assert all(o["cosine"] <= 1.0 and o["score_0_1"] <= 1.0
               for o in score_pairs(HashEmbedder(), [text] * 20, [text] * 20, StyleSettings()))


@pytest.mark.parametrize("aggregate", ["mean", "topk_mean"])
def test_long_pair_aggregates_all_chunk_pairs(aggregate):
    emb = HashEmbedder()
    settings = StyleSettings(aggregate=aggregate, topk=5)
    a, b = _sentences(40, 0), _sentences(25, 1)
    [out] = score_pairs(emb, [a], [b], settings)
    ca, cb = text_chunks(a, 0, settings), text_chunks(b, 0, settings)
    assert len(ca) == 3 and len(cb) == 2  # ceil(40/14), ceil(25/14)
    m = _unit(emb.embed(ca)) @ _unit(emb.embed(cb)).T
    expected = np.sort(m.ravel())[-5:].mean() if aggregate == "topk_mean" else m.mean()
    assert out["aggregate"] == aggregate and out["pairs"] == 6
    assert out["cosine"] == pytest.approx(expected, abs=1e-6)


def test_windows_are_14_sentences_overlapping_by_4_and_evenly_spaced():
    text = _sentences(40, 2)
    chunks = text_chunks(text, 0, StyleSettings(num_chunks=2))
    assert [c.count("number") for c in chunks] == [14, 14]
    assert chunks[0].startswith("The") and "number 0." in chunks[0] and "number 20." in chunks[1]
    three = text_chunks(text, 0, StyleSettings(num_chunks=3))
    assert "number 10." in three[0] and "number 10." in three[1]  # windows 0-13 and 10-23 share 4 sentences


def test_each_distinct_chunk_is_embedded_once_and_calibration_applies():
    emb = HashEmbedder()
    texts = [_sentences(30, 3), "Short one.", _sentences(30, 3)]
    calib = type("C", (), {"mapping": SimilarityMap("logistic", coef=5.0, intercept=-2.0)})()
    out = score_pairs(emb, texts, ["Short one.", texts[0], "Other short text here."], StyleSettings(),
                      calibration=calib)
    assert len(emb.calls) == 1
    assert len(emb.calls[0]) == len(set(emb.calls[0])) == 3 + 2  # 3 windows + 2 short texts
    assert out[0]["cosine"] == pytest.approx(out[1]["cosine"])  # symmetric
    assert out[0]["aggregate"] == "mean" and out[0]["pairs"] == 3
    for row in out:
        assert row["score_calibrated"] == pytest.approx(1 / (1 + np.exp(-(5 * row["cosine"] - 2))))


def test_bad_settings_name_the_option():
    with pytest.raises(InvalidOption, match="aggregate"):
        StyleSettings(aggregate="max")
    with pytest.raises(InvalidOption, match="overlap"):
        StyleSettings(overlap=14)
    with pytest.raises(InvalidOption, match="num_chunks"):
        StyleSettings(num_chunks=0)


def test_pair_only_baselines_are_refused():
    with pytest.raises(UserInputError, match="pairwise similarity without vectors"):
        resolve_style_embedder("baseline:char3gram")


def test_tiny_neural_model_counts_tokens_with_its_tokenizer(tmp_path):
    model = write_tiny_model(tmp_path / "tiny", max_position_embeddings=40)
    emb = resolve_style_embedder(str(model), progress=False)
    sentence = "the cat sat on the mat ."
    short, long = sentence, " ".join([sentence] * 6)  # 6 x 7 = 42 content tokens
    [out_short, out_long] = score_pairs(emb, [short, long], [short, long], StyleSettings(max_tokens=20))
    assert out_short["aggregate"] == "single" and out_short["cosine"] == pytest.approx(1.0, abs=1e-5)
    assert out_long["pairs"] == 1  # over the token budget, but 6 sentences make one 14-sentence window
    settings = StyleSettings(max_tokens=20, chunk_size=2, overlap=0)
    [out_long] = score_pairs(emb, [long], [short], settings)
    assert out_long["pairs"] == 3  # ceil(max(44 / 20, 6 / 2)) = 3 windows of 2 sentences
