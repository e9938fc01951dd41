"""Chunk-and-pool (STEB App. G) and truncation for texts over the token budget."""

import numpy as np
import pytest

from stylebench_jax.encoders.registry import resolve_embedder
from stylebench_jax.parallel import make_mesh
from stylebench_jax.text.chunking import pack_token_chunks
from stylebench_jax.text.sentences import regex_split, split_sentences


def test_pack_token_chunks_greedy_and_exact_budget():
    sentences = [[1, 2, 3], [4, 5], [6, 7, 8, 9], [10] * 9, [11]]
    chunks = pack_token_chunks(sentences, budget=5)
    assert chunks == [[1, 2, 3, 4, 5], [6, 7, 8, 9], [10] * 5, [10] * 4, [11]]
    assert all(len(c) <= 5 for c in chunks)
    assert sum(chunks, []) == sum(sentences, [])


def test_regex_and_spacy_split_sentences():
    text = 'He left. "Why?" she asked! Then silence.\n\nNew paragraph without stop'
    assert regex_split(text) == ["He left.", '"Why?"', "she asked!", "Then silence.",
                                 "New paragraph without stop"]
    spacy_sentences = split_sentences(text)
    assert len(spacy_sentences) >= 3
    squash = "".join  # nothing lost or reordered, whitespace aside
    assert squash("".join(spacy_sentences).split()) == squash(text.split())


@pytest.fixture(scope="module")
def short_budget():
    mesh = make_mesh("data=2,model=1")
    chunk = resolve_embedder("minilm", max_length=24, long_text="chunk", mesh=mesh, progress=False)
    truncate = resolve_embedder("minilm", max_length=24, long_text="truncate", mesh=mesh, progress=False)
    return chunk, truncate


LONG = ("The rain had not stopped since morning. We waited at the station for the last train. "
        "Nobody spoke, and the clock above the platform ticked on. At last a whistle sounded "
        "far away, and the old conductor lifted his lamp.")


def test_chunk_and_pool_is_mean_of_chunk_embeddings(short_budget):
    chunk, _ = short_budget
    budget = 24 - chunk.tokenizer.n_special
    sentences = split_sentences(LONG)
    chunks = pack_token_chunks(chunk.tokenizer.content_ids(sentences), budget)
    assert len(chunks) >= 3
    per_chunk = chunk.encode_sequences([chunk.tokenizer.wrap(c) for c in chunks])
    expected = per_chunk.astype(np.float64).mean(0)
    expected /= np.linalg.norm(expected)
    got = chunk.embed(["short one", LONG])
    np.testing.assert_allclose(got[1], expected, atol=1e-6)
    assert abs(np.linalg.norm(got[1]) - 1) < 1e-5


def test_truncate_equals_embedding_of_the_cut_prefix(short_budget):
    _, truncate = short_budget
    budget = 24 - truncate.tokenizer.n_special
    ids = truncate.tokenizer.content_ids([LONG])[0][:budget]
    expected = truncate.encode_sequences([truncate.tokenizer.wrap(ids)])[0]
    np.testing.assert_allclose(truncate.embed([LONG])[0], expected, atol=1e-6)


def test_identity_records_long_text_policy(short_budget):
    chunk, truncate = short_budget
    assert chunk.identity != truncate.identity
    assert "long_text=chunk" in chunk.identity and "max_length=24" in chunk.identity
