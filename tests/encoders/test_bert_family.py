"""Config-driven BERT family: tiny random BERT and RoBERTa checkpoints saved by PyTorch `transformers`
load into our Flax encoder and give transformers' token ids, hidden states and pooled vectors.

The checkpoints and transformers' outputs are committed under tests/fixtures/<family>/ by
scripts/make_torch_fixtures.py (run with the `torch` extra), so these tests need neither torch nor
transformers. Tolerance 2e-5 (float32, different kernels and summation orders).
"""

import json

import jax
import numpy as np
import pytest

from stylebench_jax.encoders.neural import FlaxEncoderEmbedder
from stylebench_jax.encoders.tokenizer import TextTokenizer
from stylebench_jax.errors import UserInputError
from stylebench_jax.parallel import make_mesh
from tests.helpers.fixtures import copy_model, model_dir, split_checkpoint
from tests.helpers.fixtures import reference as load_reference

FAMILIES = ("bert", "roberta")
ATOL = 2e-5


@pytest.fixture(scope="module", params=FAMILIES)
def reference(request) -> dict:
    return load_reference(request.param)


def test_reference_is_discriminative(reference):
    """A degenerate fixture (near-identical vectors, no padding) could not catch a bug."""
    mask = reference["attention_mask"]
    assert (mask == 0).any() and (mask.sum(1) == 2).any()  # padded rows, and a specials-only text
    for pooling in ("mean", "cls"):
        vectors = reference[pooling]
        cosine = vectors @ vectors.T
        assert cosine[~np.eye(len(vectors), dtype=bool)].min() < 0.9
    assert np.abs(reference["mean"] - reference["cls"]).max() > 0.1


def test_tokenizer_matches_transformers(reference):
    ours = TextTokenizer.from_dir(reference["model_dir"])
    sequences = [ours.wrap(ids) for ids in ours.content_ids(reference["meta"]["texts"])]
    for sequence, row, mask in zip(sequences, reference["input_ids"], reference["attention_mask"]):
        assert sequence == row[mask == 1].tolist()
        assert (row[mask == 0] == ours.pad_id).all()


def test_hidden_states_on_transformers_padded_batch(reference):
    """Every real token of transformers' own right-padded batch, through our module (padding rows and
    RoBERTa's pad-aware positions included)."""
    ours = FlaxEncoderEmbedder(reference["model_dir"], mesh=make_mesh("data=1,model=1",
                                                                      devices=jax.devices()[:1]),
                               progress=False)
    assert ours.config.position_offset == (0 if reference["meta"]["family"] == "bert" else 2)
    hidden = ours.module.apply({"params": ours.params}, reference["input_ids"], reference["attention_mask"],
                               method=lambda module, ids, mask: module.encoder(ids, mask))
    mask = reference["attention_mask"] == 1
    np.testing.assert_allclose(np.asarray(hidden)[mask], reference["last_hidden_state"][mask], atol=ATOL)


@pytest.mark.parametrize("pooling", ["mean", "cls"])
@pytest.mark.parametrize("mesh", ["data=1,model=1", "data=2,model=2"])
def test_embed_matches_transformers(reference, pooling, mesh):
    """The full path: our tokenizer, our length buckets (padding differs from transformers': 16-token
    buckets, padding rows), sharded forward, pooling and normalisation."""
    ours = FlaxEncoderEmbedder(reference["model_dir"], mesh=make_mesh(mesh), pooling=pooling,
                               progress=False, batch_size=4)
    got = ours.embed(reference["meta"]["texts"])
    assert got.dtype == np.float32 and got.shape == reference[pooling].shape
    np.testing.assert_allclose(got, reference[pooling], atol=ATOL)


def test_shape_mismatch_names_the_parameter(tmp_path):
    folder = copy_model("bert", tmp_path)
    config = json.loads((folder / "config.json").read_text())
    config["intermediate_size"] = 48
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(UserInputError, match="intermediate"):
        FlaxEncoderEmbedder(folder, progress=False)


def test_mesh_must_divide_heads():
    with pytest.raises(UserInputError, match="must divide the 4 heads"):
        FlaxEncoderEmbedder(model_dir("bert"), mesh=make_mesh("data=1,model=8"), progress=False)


def test_sharded_checkpoint_loads_block_by_block(tmp_path):
    """BERT weights in three shards + index: each device receives only its block of every parameter,
    and the vectors equal transformers'."""
    folder = copy_model("roberta", tmp_path)
    split_checkpoint(folder, 3)
    ref = load_reference("roberta")
    ours = FlaxEncoderEmbedder(folder, mesh=make_mesh("data=2,model=4"), pooling="cls", progress=False)
    kernel = ours.params["encoder"]["layer_1"]["intermediate"]["kernel"]  # (embed 32, mlp 64)
    assert {tuple(shard.data.shape) for shard in kernel.addressable_shards} == {(32, 16)}
    np.testing.assert_allclose(ours.embed(ref["texts"]), ref["cls"], atol=ATOL)


def test_prompt_is_tokenised_with_the_text_and_keyed():
    mesh = make_mesh("data=1,model=1", devices=jax.devices()[:1])
    plain = FlaxEncoderEmbedder(model_dir("bert"), mesh=mesh, progress=False)
    prompted = FlaxEncoderEmbedder(model_dir("bert"), mesh=mesh, progress=False, prompt="the ")
    assert "prompt=" not in plain.identity and "prompt=" in prompted.identity
    texts = ["a dog ran", "cat"]
    tokenizer = prompted.tokenizer
    expected = prompted.encode_sequences([tokenizer.wrap(ids) for ids in
                                          tokenizer.content_ids(["the " + text for text in texts])])
    np.testing.assert_allclose(prompted.embed(texts), expected, atol=1e-6)


@pytest.mark.parametrize("family,field,value", [
    ("bert", "layer_norm_eps", 0.5), ("bert", "hidden_act", "relu"), ("llama", "rope_theta", 77.0),
    ("llama", "rms_norm_eps", 0.25)])
def test_identity_covers_the_architecture_fields_that_change_the_vectors(tmp_path, family, field, value):
    """Same weights, config.json edited: other vectors, so another cache key (it was the same)."""
    from stylebench_jax.encoders.registry import resolve_embedder

    folder = copy_model(family, tmp_path)
    mesh = make_mesh("data=1,model=1", devices=jax.devices()[:1])
    before = resolve_embedder(str(folder), mesh=mesh, progress=False)
    config = json.loads((folder / "config.json").read_text())
    assert config.get(field) != value
    (folder / "config.json").write_text(json.dumps({**config, field: value, "transformers_version": "x"}))
    after = resolve_embedder(str(folder), mesh=mesh, progress=False)
    assert after.identity != before.identity
    assert np.abs(after.embed(["a dog ran"]) - before.embed(["a dog ran"])).max() > 1e-3
    (folder / "config.json").write_text(json.dumps({**config, "transformers_version": "y"}))
    again = resolve_embedder(str(folder), mesh=mesh, progress=False)
    assert again.identity == before.identity  # a field that changes nothing splits nothing
