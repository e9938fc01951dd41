"""SentencePiece tokenizers (XLM-R's sentencepiece.bpe.model, Llama's tokenizer.model) tokenise like
transformers on multilingual texts, and a tiny XLM-R checkpoint without tokenizer.json embeds at parity."""

import numpy as np
import pytest

from stylebench_jax.encoders.neural import FlaxEncoderEmbedder
from stylebench_jax.encoders.sentencepiece_tokenizer import SentencePieceTokenizer
from stylebench_jax.encoders.tokenizer import TextTokenizer, load_tokenizer
from stylebench_jax.errors import UserInputError
from stylebench_jax.parallel import make_mesh
from tests.helpers.fixtures import copy_model, model_dir, reference


@pytest.mark.parametrize("family, kind", [("xlmr", SentencePieceTokenizer), ("llama", SentencePieceTokenizer),
                                          ("mistral", SentencePieceTokenizer), ("qwen2", TextTokenizer),
                                          ("qwen3", TextTokenizer),
                                          ("gpt2", TextTokenizer)])
def test_ids_equal_transformers_on_multilingual_texts(family, kind):
    ref = reference(family)
    tokenizer = load_tokenizer(model_dir(family))
    assert isinstance(tokenizer, kind)
    ours = [tokenizer.wrap(ids) for ids in tokenizer.content_ids(ref["texts"])]
    theirs = [list(row[mask > 0]) for row, mask in zip(ref["input_ids"], ref["attention_mask"])]
    assert ours == theirs
    assert any(ord(c) > 0x3000 for c in "".join(ref["texts"]))  # CJK really is in there


def test_xlmr_conventions():
    tokenizer = load_tokenizer(model_dir("xlmr"))
    assert (tokenizer.prefix, tokenizer.suffix, tokenizer.pad_id) == ((0,), (2,), 1)
    # SentencePiece's <unk> (id 0) becomes the fairseq <unk> (3); other pieces shift by one.
    assert 3 in tokenizer.content_ids(["\U0001F600 😀"])[0]


@pytest.mark.parametrize("mesh", ["data=1,model=1", "data=2,model=4"])
def test_xlmr_embeds_at_parity(mesh):
    ref = reference("xlmr")
    for pooling in ("mean", "cls"):
        embedder = FlaxEncoderEmbedder(model_dir("xlmr"), pooling=pooling, mesh=make_mesh(mesh),
                                       progress=False, batch_size=16)
        np.testing.assert_allclose(embedder.embed(ref["texts"]), ref[pooling], atol=2e-5)


def test_declared_tokenizer_class_must_match(tmp_path):
    folder = copy_model("llama", tmp_path)
    config = folder / "tokenizer_config.json"
    config.write_text(config.read_text().replace('"LlamaTokenizer"', '"T5Tokenizer"'))
    with pytest.raises(UserInputError, match=r"tokenizer\.model: tokenizer_class 'T5Tokenizer'"):
        load_tokenizer(folder)
    (folder / "tokenizer.model").write_bytes(b"not a model")
    config.write_text("{}")
    with pytest.raises(UserInputError, match=r"tokenizer\.model: not a SentencePiece model"):
        load_tokenizer(folder)


def test_xlmr_export_round_trip_keeps_the_sentencepiece_tokenizer(tmp_path):
    """An encoder with a SentencePiece tokenizer exports (encoders.export) and loads back with the same
    ids, tokenizer digest and vectors."""
    import jax

    from stylebench_jax.encoders.export import export_encoder

    one = make_mesh("data=1,model=1", devices=jax.devices()[:1])
    original = FlaxEncoderEmbedder(model_dir("xlmr"), mesh=one, progress=False)
    out = export_encoder(tmp_path / "xlmr", params=jax.device_get(original.params), config=original.config,
                         tokenizer=original.tokenizer, pooling="mean", normalize=True,
                         max_length=original.settings.max_length)
    assert (out / "sentencepiece.bpe.model").read_bytes() == (model_dir("xlmr") / "sentencepiece.bpe.model"
                                                               ).read_bytes()
    reloaded = FlaxEncoderEmbedder(out, mesh=one, progress=False)
    assert isinstance(reloaded.tokenizer, SentencePieceTokenizer)
    assert reloaded.identity.split("/")[2:] == original.identity.split("/")[2:]  # weights, tokenizer, ...
    texts = reference("xlmr")["texts"]
    np.testing.assert_array_equal(reloaded.embed(texts), original.embed(texts))


def test_llama_digest_follows_the_special_ids_not_only_their_flags(tmp_path):
    """tokenizer_config.json naming another piece as bos gives other ids (other vectors) from the same
    model file; the digest (and with it the embedding cache's key) hashed only add_bos/add_eos, so the
    cache served the old vectors."""
    import json

    folder = copy_model("llama", tmp_path)
    before = load_tokenizer(folder)
    config_file = folder / "tokenizer_config.json"
    config = json.loads(config_file.read_text())
    config["bos_token"] = "</s>"
    config_file.write_text(json.dumps(config))
    after = load_tokenizer(folder)
    assert after.prefix != before.prefix and after.digest != before.digest
