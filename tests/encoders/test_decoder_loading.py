"""Loading decoder directories: sharded checkpoints, slice-by-slice reads, and every bad directory."""

import json
import subprocess
import sys

import jax
import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from stylebench_jax.encoders.batching import token_sequences
from stylebench_jax.encoders.checkpoint import TensorMap, tensor_files
from stylebench_jax.encoders.decoder_config import DecoderConfig
from stylebench_jax.encoders.decoder_weights import decoder_tensor_maps
from stylebench_jax.encoders.loading import sentence_transformers_defaults
from stylebench_jax.encoders.neural import FlaxDecoderEmbedder
from stylebench_jax.encoders.pooling import DECODER_POOLING_MODES
from stylebench_jax.encoders.registry import resolve_embedder
from stylebench_jax.errors import InvalidOption, UserInputError
from stylebench_jax.parallel import make_mesh
from tests.helpers.fixtures import copy_model, model_dir, reference, split_checkpoint

ONE = dict(mesh=make_mesh("data=1,model=1", devices=jax.devices()[:1]), progress=False)


def test_sharded_checkpoint_with_index_loads_at_parity(tmp_path):
    folder = copy_model("qwen2", tmp_path)
    split_checkpoint(folder, 3)
    ref = reference("qwen2")
    embedder = FlaxDecoderEmbedder(folder, mesh=make_mesh("data=2,model=4"), progress=False, batch_size=16)
    np.testing.assert_allclose(embedder.embed(ref["texts"]), ref["last"], atol=2e-5)


def test_transformers_5_rope_parameters_read_as_transformers_4_top_level_fields(tmp_path):
    folder = copy_model("llama", tmp_path)  # rope_theta 500000 with llama3 scaling
    config = json.loads((folder / "config.json").read_text())
    expected = DecoderConfig.from_dict(config)
    config["rope_parameters"] = {"rope_theta": config.pop("rope_theta"), **config.pop("rope_scaling")}
    (folder / "config.json").write_text(json.dumps(config))
    assert DecoderConfig.from_json(folder / "config.json") == expected
    ref = reference("llama")
    embedder = FlaxDecoderEmbedder(folder, batch_size=16, **ONE)
    np.testing.assert_allclose(embedder.embed(ref["texts"]), ref["last"], atol=2e-5)


@pytest.mark.parametrize("change, message", [
    ({"rope_theta": 10000.0, "rope_parameters": {"rope_type": "default", "rope_theta": 1e6}},
     r"field 'rope_parameters': rope_theta 10000\.0 disagrees with rope_parameters' 1000000\.0"),
    ({"rope_parameters": {"rope_type": "yarn", "rope_theta": 1e6, "factor": 4.0}},
     r"rope_scaling type 'yarn' is not supported"),
    ({"rope_parameters": {"full_attention": {"rope_theta": 1e6}, "sliding_attention": {"rope_theta": 1e4}}},
     r"field 'rope_parameters': RoPE parameters per layer type \(full_attention, sliding_attention\)"),
    ({"rope_parameters": {"rope_type": "default", "rope_theta": 1e6, "partial_rotary_factor": 0.5}},
     r"field 'rope_parameters': partial rotary embeddings are not supported"),
    ({"layer_types": ["full_attention", "sliding_attention"], "use_sliding_window": False},
     r"field 'layer_types': layer_types has sliding_attention layers but no window is in force"),
])
def test_rope_and_window_settings_are_never_dropped_silently(change, message):
    config = json.loads((model_dir("qwen2") / "config.json").read_text())
    config.update(change)
    with pytest.raises(UserInputError, match=message):
        DecoderConfig.from_dict(config)


def test_qwen3_head_dim_defaults_to_transformers_128():
    config = json.loads((model_dir("qwen3") / "config.json").read_text())
    del config["head_dim"]
    assert DecoderConfig.from_dict(config).head_dim == 128


class RecordingSlice:
    """Stands in for safetensors' get_slice handle; records what was read."""

    def __init__(self, array):
        self.array, self.reads = array, []

    def __getitem__(self, index):
        self.reads.append(index)
        return self.array[index]


def test_tensor_map_reads_only_the_shard_it_needs():
    heads, head_dim, hidden = 4, 3, 5
    weight = np.arange(heads * head_dim * hidden, dtype=np.float32).reshape(heads * head_dim, hidden)
    tmap = TensorMap("q", weight.shape, ((heads, head_dim), (hidden,)), (2, 0, 1))
    full = weight.T.reshape(hidden, heads, head_dim)
    recorder = RecordingSlice(weight)
    block = tmap.read(recorder, (slice(None), slice(2, 4), slice(None)))  # heads 2..3 of a model=2 mesh
    np.testing.assert_array_equal(block, full[:, 2:4])
    assert recorder.reads == [(slice(6, 12), slice(0, 5))]  # 2 heads x 3 rows, not all 12 rows
    # GPT-2 fused c_attn: the key third, heads 1..2
    fused = np.arange(5 * 15, dtype=np.float32).reshape(5, 15)  # (hidden=5, 3 x (heads=5 x 1))
    key = TensorMap("c_attn", (5, 15), ((5,), (5, 1)), (0, 1, 2), (None, (5, 10)))
    recorder = RecordingSlice(fused)
    np.testing.assert_array_equal(key.read(recorder, (slice(None), slice(1, 3), slice(None))),
                                  fused[:, 6:8].reshape(5, 2, 1))
    assert recorder.reads == [(slice(0, 5), slice(6, 8))]


def test_parameters_land_in_their_shardings_without_a_full_copy(tmp_path):
    embedder = FlaxDecoderEmbedder(copy_model("qwen2", tmp_path), mesh=make_mesh("data=2,model=4"),
                                   progress=False)
    kernel = embedder.params["decoder"]["layers_1"]["mlp"]["down_proj"]["kernel"]
    assert kernel.sharding.spec == jax.sharding.PartitionSpec("model", None)
    assert {tuple(s.data.shape) for s in kernel.addressable_shards} == {(24, 64)}


@pytest.mark.parametrize("breakage, message", [
    ("index_missing_file", r"model\.safetensors\.index\.json: names shard model-00002-of-00002"),
    ("numbered_shard_missing", r"model-00002-of-00003\.safetensors: shard missing"),
    ("index_wrong_file", r"model\.safetensors\.index\.json: tensor .* is mapped to"),
    ("shape_mismatch", r"model\.safetensors: tensor 'model\.layers\.0\.mlp\.(gate|up)_proj\.weight' has "
                       r"shape \(96, 64\), config\.json implies \(80, 64\)"),
    ("tensor_missing", r"weights lack tensor 'model\.layers\.1\.self_attn\.q_proj\.bias'"),
    ("unknown_architecture", r"config\.json: field 'model_type': model_type 'falcon' is not supported"),
    ("rope_unsupported", r"config\.json: rope_scaling type 'yarn' is not supported"),
    ("eps_null", r"config\.json: field 'rms_norm_eps': expected a number > 0, found None"),
    ("kv_heads_text", r"config\.json: field 'num_key_value_heads': expected an integer >= 1, found 'two'"),
    ("tokenizer_missing", r"no tokenizer \(expected one of tokenizer\.json, sentencepiece\.bpe\.model"),
    ("pickle_only", r"found only pickled weights \(pytorch_model\.bin\)"),
    ("corrupt_file", r"model\.safetensors: not a readable safetensors file"),
])
def test_bad_directories_give_one_line_errors_naming_the_file(tmp_path, breakage, message):
    folder = copy_model("qwen2", tmp_path)
    config = json.loads((folder / "config.json").read_text())
    if breakage == "index_missing_file":
        split_checkpoint(folder, 2)
        (folder / "model-00002-of-00002.safetensors").unlink()
    elif breakage == "numbered_shard_missing":
        split_checkpoint(folder, 3, index=False)
        (folder / "model-00002-of-00003.safetensors").unlink()
    elif breakage == "index_wrong_file":
        weight_map = split_checkpoint(folder, 2)
        name = next(iter(weight_map))
        weight_map[name] = "model-00002-of-00002.safetensors" if weight_map[name].startswith(
            "model-00001") else "model-00001-of-00002.safetensors"
        (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    elif breakage == "shape_mismatch":
        config["intermediate_size"] = 80
    elif breakage == "tensor_missing":
        tensors = load_file(str(folder / "model.safetensors"))
        del tensors["model.layers.1.self_attn.q_proj.bias"]
        save_file(tensors, str(folder / "model.safetensors"))
    elif breakage == "unknown_architecture":
        config["model_type"] = "falcon"
    elif breakage == "rope_unsupported":
        config["rope_scaling"] = {"rope_type": "yarn", "factor": 4.0}
    elif breakage == "eps_null":
        config["rms_norm_eps"] = None
    elif breakage == "kv_heads_text":
        config["num_key_value_heads"] = "two"
    elif breakage == "tokenizer_missing":
        (folder / "tokenizer.json").unlink()
    elif breakage == "pickle_only":
        (folder / "model.safetensors").rename(folder / "pytorch_model.bin")
    elif breakage == "corrupt_file":
        (folder / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json")
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(UserInputError, match=message) as caught:
        resolve_embedder(str(folder), **ONE)
    assert "\n" not in str(caught.value) and str(folder) in str(caught.value)


def test_cli_exits_2_with_one_line(tmp_path):
    folder = copy_model("gpt2", tmp_path)
    (folder / "model.safetensors").unlink()
    texts = tmp_path / "texts.txt"
    texts.write_text("hello\n")
    result = subprocess.run([sys.executable, "-m", "stylebench_jax.cli", "embed", "--model", str(folder),
                             "--input", str(texts), "--output", str(tmp_path / "out.npy"), "--no-cache",
                             "--quiet"], capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "no model.safetensors" in result.stderr


def test_prefix_resolution_and_untied_head_ignored(tmp_path):
    folder = copy_model("llama", tmp_path)
    config = DecoderConfig.from_json(folder / "config.json")
    where, _ = tensor_files(folder)
    assert "lm_head.weight" in where  # untied head stored, never mapped
    maps = decoder_tensor_maps(config, where, folder)
    assert all(m.name.startswith("model.") for m in maps.values())
    assert "lm_head.weight" not in {m.name for m in maps.values()}


def test_sentence_transformers_files_choose_pooling_and_prompt(tmp_path):
    folder = copy_model("gpt2", tmp_path)
    ref = reference("gpt2")
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "pool", "type": "sentence_transformers.models.Pooling"}]))
    (folder / "pool").mkdir()
    (folder / "pool" / "config.json").write_text(json.dumps({"pooling_mode_mean_tokens": True}))
    assert sentence_transformers_defaults(folder, DECODER_POOLING_MODES) == {"normalize": False,
                                                                             "pooling": "mean"}
    mean = FlaxDecoderEmbedder(folder, **ONE)
    assert mean.settings.pooling == "mean" and not mean.settings.normalize
    got = mean.embed(ref["texts"][:3])
    np.testing.assert_allclose(got / np.linalg.norm(got, axis=1, keepdims=True), ref["mean"][:3], atol=2e-5)
    (folder / "pool" / "config.json").write_text(json.dumps({"pooling_mode_lasttoken": True}))
    (folder / "config_sentence_transformers.json").write_text(json.dumps(
        {"prompts": {"query": "query: ", "document": ""}, "default_prompt_name": "query"}))
    prompted = FlaxDecoderEmbedder(folder, **ONE)
    assert prompted.settings.pooling == "last" and prompted.settings.prompt == "query: "
    plain = FlaxDecoderEmbedder(folder, prompt="", **ONE)
    assert "prompt=" not in plain.identity and "prompt=" in prompted.identity
    np.testing.assert_allclose(prompted.embed(["a dog ran"]), plain.embed(["query: a dog ran"]), atol=1e-6)
    (folder / "pool" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))
    with pytest.raises(UserInputError, match=r"pool/config\.json: pooling \['pooling_mode_cls_token'\]"):
        FlaxDecoderEmbedder(folder, **ONE)


def test_long_texts_are_chunked_with_the_prompt_in_front(tmp_path):
    embedder = FlaxDecoderEmbedder(copy_model("qwen2", tmp_path), prompt="query: ", max_length=12, **ONE)
    prompt_ids = embedder.tokenizer.content_ids(["query: "])[0]
    text = "我喜欢猫。他喜欢狗。我们今天去公园散步。天气很好，猫在睡觉。"
    sequences, owners = token_sequences([text], embedder.tokenizer, max_length=12, prompt="query: ")
    assert len(sequences) >= 2 and set(owners.tolist()) == {0}
    assert all(seq[:len(prompt_ids)] == prompt_ids and len(seq) <= 12 for seq in sequences)
    assert embedder.embed([text]).shape == (1, 64)


def test_options_a_family_cannot_use_are_refused_by_name():
    with pytest.raises(InvalidOption, match="pooling: expected one of last, mean for a causal decoder"):
        FlaxDecoderEmbedder(model_dir("gpt2"), pooling="cls", **ONE)
    with pytest.raises(InvalidOption) as caught:
        resolve_embedder(str(model_dir("xlmr")), pooling="last", **ONE)
    assert caught.value.option == "pooling" and "BERT-family encoder" in caught.value.message
    with pytest.raises(InvalidOption) as caught:
        FlaxDecoderEmbedder(model_dir("gpt2"), max_length=3, prompt="query: ", **ONE)
    assert caught.value.option == "max_length" and "special tokens and prompt take" in caught.value.message
