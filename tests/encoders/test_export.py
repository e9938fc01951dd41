"""Export (params -> model directory) is the exact inverse of loading, for MiniLM and tiny random
BERT/RoBERTa encoders with mean, CLS and learned attention pooling; parameters are created sharded."""

import json

import jax
import numpy as np
import pytest
from safetensors.numpy import load_file

from stylebench_jax.encoders.export import export_encoder
from stylebench_jax.encoders.loading import init_params, param_shardings, read_encoder_dir
from stylebench_jax.encoders.neural import FlaxEncoderEmbedder
from stylebench_jax.encoders.pooling import SentenceEncoder
from stylebench_jax.encoders.registry import minilm_dir
from stylebench_jax.parallel import make_mesh
from tests.helpers.tiny_models import tiny_config, write_tiny_model

TEXTS = ["the cat sat on the mat .", "a dog ran fast and it was good !", "rain", "the sun , the night ?"]


def tree_equal(a, b) -> bool:
    la, lb = jax.tree_util.tree_leaves_with_path(a), jax.tree_util.tree_leaves_with_path(b)
    return [p for p, _ in la] == [p for p, _ in lb] and all(
        np.array_equal(np.asarray(x), np.asarray(y)) for (_, x), (_, y) in zip(la, lb))


def test_minilm_export_round_trip_is_exact(tmp_path):
    one = make_mesh("data=1", jax.devices()[:1])
    original = FlaxEncoderEmbedder(minilm_dir(), mesh=one, progress=False, long_text="truncate")
    out = export_encoder(tmp_path / "export", params=jax.device_get(original.params), config=original.config,
                         tokenizer=original.tokenizer, pooling="mean", normalize=True,
                         max_length=original.settings.max_length)
    reloaded = FlaxEncoderEmbedder(out, mesh=one, progress=False, long_text="truncate")
    assert reloaded.settings == original.settings
    assert tree_equal(reloaded.params, original.params)
    texts = ["A man is eating food.", "Call me Ishmael. " * 20, "Это предложение."]
    assert [reloaded.tokenizer.content_ids([t]) for t in texts] == \
        [original.tokenizer.content_ids([t]) for t in texts]
    np.testing.assert_array_equal(reloaded.embed(texts), original.embed(texts))
    # The transformer file is a plain HF checkpoint: PyTorch names and (out, in) layouts.
    tensors = load_file(str(out / "model.safetensors"))
    source = load_file(str(minilm_dir() / "model.safetensors"))
    source = {name.removeprefix("0.auto_model."): value for name, value in source.items()}
    for name, value in tensors.items():
        np.testing.assert_array_equal(value, source[name], err_msg=name)
    assert json.loads((out / "config.json").read_text())["hidden_size"] == 384


@pytest.mark.parametrize("family", ["bert", "roberta"])
@pytest.mark.parametrize("pooling", ["mean", "cls", "attention"])
def test_tiny_random_encoders_round_trip(tmp_path, family, pooling):
    folder = write_tiny_model(tmp_path / "m", family, pooling=pooling, seed=3)
    files = read_encoder_dir(folder)
    assert files.config == tiny_config(family)
    assert files.defaults["pooling"] == pooling and files.defaults["normalize"] is True
    assert any(path[0] == "attention_pool" for path in files.tensors) == (pooling == "attention")
    embedder = FlaxEncoderEmbedder(folder, progress=False, mesh=make_mesh("data=2,model=2"))
    vectors = embedder.embed(TEXTS)
    assert vectors.shape == (4, 32) and np.isfinite(vectors).all()
    # Export what was loaded: byte-identical weights, same vectors.
    again = export_encoder(tmp_path / "again", params=jax.device_get(embedder.params), config=files.config,
                           tokenizer=files.tokenizer, pooling=pooling, normalize=True,
                           max_length=embedder.settings.max_length)
    names = ["model.safetensors", "1_Pooling/config.json", "modules.json", "tokenizer.json"]
    for name in names + (["1_Pooling/model.safetensors"] if pooling == "attention" else []):
        assert (again / name).read_bytes() == (folder / name).read_bytes(), name
    second = FlaxEncoderEmbedder(again, progress=False, mesh=make_mesh("data=1", jax.devices()[:1]))
    np.testing.assert_allclose(second.embed(TEXTS), vectors, atol=2e-6)


def test_init_params_creates_parameters_sharded_by_the_rules():
    mesh = make_mesh("data=2,model=4")
    module = SentenceEncoder(tiny_config("bert"), pooling="attention")
    params = init_params(module, jax.random.key(0), mesh)
    query = params["encoder"]["layer_0"]["attention"]["query"]["kernel"]  # (embed, heads, kv)
    assert query.sharding.spec == jax.sharding.PartitionSpec(None, "model", None)
    assert query.addressable_shards[0].data.shape == (32, 1, 8)  # 4 heads over model=4
    mlp = params["encoder"]["layer_0"]["intermediate"]["kernel"]
    assert mlp.addressable_shards[0].data.shape == (32, 16)
    shardings = param_shardings(module, mesh)
    assert jax.tree_util.tree_structure(shardings) == jax.tree_util.tree_structure(params)
    # a subtree the caller loads from a checkpoint is left out; the others keep their values
    heads = init_params(module, jax.random.key(0), mesh, skip=(("encoder", "layer_0"),))
    assert "layer_0" not in heads["encoder"] and "layer_1" in heads["encoder"]
    full = dict(params["encoder"])
    del full["layer_0"]
    for a, b in zip(jax.tree.leaves({**params, "encoder": full}), jax.tree.leaves(heads), strict=True):
        assert a.sharding == b.sharding
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    with pytest.raises(KeyError, match="layer_9"):
        init_params(module, jax.random.key(0), mesh, skip=(("encoder", "layer_9"),))


def test_projection_head_round_trip(tmp_path):
    folder = write_tiny_model(tmp_path / "m", "roberta", pooling="attention", projection_dim=12, seed=5)
    files = read_encoder_dir(folder)
    assert files.defaults["projection_dim"] == 12 and "projection" in files.host_params
    embedder = FlaxEncoderEmbedder(folder, progress=False, mesh=make_mesh("data=1", jax.devices()[:1]))
    vectors = embedder.embed(TEXTS)
    assert embedder.dim == 12 and vectors.shape == (4, 12)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    again = export_encoder(tmp_path / "again", params=jax.device_get(embedder.params), config=files.config,
                           tokenizer=files.tokenizer, pooling="attention", normalize=True,
                           max_length=embedder.settings.max_length)
    assert (again / "2_Projection" / "model.safetensors").read_bytes() == \
        (folder / "2_Projection" / "model.safetensors").read_bytes()
    modules = json.loads((folder / "modules.json").read_text())
    assert [m["path"] for m in modules] == ["", "1_Pooling", "2_Projection", "3_Normalize"]


def test_export_replaces_an_existing_directory_whole(tmp_path):
    folder = write_tiny_model(tmp_path / "m", "bert", pooling="attention")
    assert (folder / "1_Pooling" / "model.safetensors").exists()
    write_tiny_model(folder, "bert", pooling="mean")
    assert not (folder / "1_Pooling" / "model.safetensors").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
