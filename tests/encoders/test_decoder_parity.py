"""Flax decoders (Llama, Mistral, Qwen2, GPT-2) reproduce transformers' pooled vectors.

References come from tests/fixtures/<family>/reference (scripts/make_torch_fixtures.py, run with
the torch extra): per-text, padding-free forwards of tiny random checkpoints. Ours run the same token
ids as one batch padded on the right and on the left, on 1 device and on a data=2,model=4 mesh.
"""

import functools

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from stylebench_jax.encoders.loading import load_params, read_decoder_dir, replicated_dims
from stylebench_jax.encoders.neural import FlaxDecoderEmbedder
from stylebench_jax.encoders.pooling import DecoderSentenceEncoder, l2_normalize, last_token_pool, mean_pool
from stylebench_jax.parallel import DECODER_RULES, make_mesh
from tests.helpers.fixtures import DECODERS, left_padded, model_dir, reference

MESHES = {"one_device": lambda: make_mesh("data=1,model=1", devices=jax.devices()[:1]),
          "data2_model4": lambda: make_mesh("data=2,model=4")}
# bfloat16 weights and activations (norms, softmax and pooling sums in float32) against the float32
# reference. Measured on these fixtures: worst cosine 0.9978 (qwen2, last token), worst element error
# 0.021 on unit vectors; bfloat16 keeps 8 significant bits (relative step 2^-8 = 0.4%) and the fixtures'
# N(0, 0.3^2) weights make activations large. Stated tolerance: cosine >= 0.995, |error| <= 0.05.
BF16_MIN_COSINE = 0.995
BF16_MAX_ERROR = 0.05


@functools.cache
def loaded(family: str, mesh_name: str, dtype=None):
    files = read_decoder_dir(model_dir(family))
    mesh = MESHES[mesh_name]()
    kwargs = {} if dtype is None else {"dtype": dtype, "param_dtype": dtype}
    module = DecoderSentenceEncoder(files.config, **kwargs)
    params = load_params(files.tensors, module, mesh, DECODER_RULES)
    return files.config, mesh, params, replicated_dims(module, mesh, DECODER_RULES)


def both_poolings(module, params, ids, mask):
    """Both poolings of one forward (one compiled program per test instead of two): the pooling
    functions ``DecoderSentenceEncoder`` calls, on its decoder's hidden states."""
    def run(bound, ids, mask):
        hidden = bound.decoder(ids, mask)
        return {"last": l2_normalize(last_token_pool(hidden, mask).astype(jnp.float32)),
                "mean": l2_normalize(mean_pool(hidden.astype(jnp.float32), mask))}

    return nn.apply(run, module)({"params": params}, ids, mask)


@pytest.mark.parametrize("mesh_name", sorted(MESHES))
@pytest.mark.parametrize("family", DECODERS)
def test_pooled_vectors_match_transformers_left_and_right_padding(family, mesh_name):
    config, mesh, params, _ = loaded(family, mesh_name)
    ref = reference(family)
    right = (ref["input_ids"], ref["attention_mask"])
    left = left_padded(*right)
    forward = jax.jit(functools.partial(both_poolings, DecoderSentenceEncoder(config)))
    for ids, mask in (right, left):
        got = forward(params, ids, mask)
        for pooling in ("last", "mean"):
            np.testing.assert_allclose(np.asarray(got[pooling]), ref[pooling], atol=2e-5,
                                       err_msg=f"{family} {pooling}")


@pytest.mark.parametrize("family", DECODERS)
def test_bfloat16_within_stated_tolerance(family):
    config, _, params, _ = loaded(family, "data2_model4", "bfloat16")
    assert jax.tree.leaves(params)[0].dtype == np.dtype("bfloat16")
    ref = reference(family)
    module = DecoderSentenceEncoder(config, dtype="bfloat16", param_dtype="bfloat16")
    both = jax.jit(functools.partial(both_poolings, module))(params, ref["input_ids"], ref["attention_mask"])
    for pooling in ("last", "mean"):
        got = np.asarray(both[pooling])
        cosine = (got * ref[pooling]).sum(1)  # both L2-normalised
        assert got.dtype == np.float32 and cosine.min() >= BF16_MIN_COSINE, (pooling, cosine.min())
        assert np.abs(got - ref[pooling]).max() <= BF16_MAX_ERROR


def test_parameters_sharded_by_the_rules_table():
    _, _, params, notes = loaded("qwen2", "data2_model4")
    layer = params["decoder"]["layers_0"]
    spec = lambda array: tuple(array.sharding.spec)  # noqa: E731
    assert spec(layer["self_attn"]["q_proj"]["kernel"]) == (None, "model", None)  # 8 heads / 4
    assert spec(layer["self_attn"]["k_proj"]["kernel"]) == (None, "model", None)  # 4 KV heads / 4
    assert spec(layer["self_attn"]["o_proj"]["kernel"]) == ("model", None, None)
    assert spec(layer["mlp"]["up_proj"]["kernel"]) == (None, "model")
    assert spec(layer["mlp"]["down_proj"]["kernel"]) == ("model", None)
    assert spec(params["decoder"]["embed_tokens"]["embedding"]) == ("model", None)  # vocab over model
    assert notes == []
    shard = layer["mlp"]["up_proj"]["kernel"].addressable_shards[0]
    assert shard.data.shape == (64, 96 // 4)
    # Llama fixture: 2 KV heads cannot split over model=4 -> replicated, and said so.
    _, _, llama, llama_notes = loaded("llama", "data2_model4")
    assert spec(llama["decoder"]["layers_0"]["self_attn"]["k_proj"]["kernel"]) == (None, None, None)
    assert any("k_proj" in note and "not divisible by model=4" in note for note in llama_notes)


def test_last_token_pool_left_and_right():
    hidden = np.arange(2 * 4 * 1, dtype=np.float32).reshape(2, 4, 1)
    right = np.array([[1, 1, 0, 0], [1, 1, 1, 1]])
    left = np.array([[0, 0, 1, 1], [0, 1, 1, 1]])
    assert np.asarray(last_token_pool(hidden, right))[:, 0].tolist() == [1.0, 7.0]
    assert np.asarray(last_token_pool(hidden, left))[:, 0].tolist() == [3.0, 7.0]


@pytest.mark.parametrize("family", DECODERS)
def test_embedder_tokenises_and_embeds_like_transformers(family):
    ref = reference(family)
    embedder = FlaxDecoderEmbedder(model_dir(family), mesh=make_mesh("data=2,model=4"), progress=False,
                                   batch_size=16)
    ids = [embedder.tokenizer.wrap(c) for c in embedder.tokenizer.content_ids(ref["texts"])]
    expected_ids = [list(row[mask > 0]) for row, mask in zip(ref["input_ids"], ref["attention_mask"])]
    assert ids == expected_ids
    assert embedder.settings.pooling == "last"  # no sentence-transformers files: STEB's default
    np.testing.assert_allclose(embedder.embed(ref["texts"]), ref["last"], atol=2e-5)
