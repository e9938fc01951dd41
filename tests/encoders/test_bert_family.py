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


# ------------------------------------------------- sentence-transformers' files, 5.x layout included
ONE_DEVICE = dict(mesh=make_mesh("data=1,model=1", devices=jax.devices()[:1]), progress=False)


def write_json(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def st_modules(*kinds):
    paths = {"Transformer": "", "Pooling": "1_Pooling", "Normalize": "2_Normalize", "Dense": "2_Dense"}
    module = "sentence_transformers.sentence_transformer.modules"
    return [{"idx": i, "name": str(i), "path": paths[kind], "type": f"{module}.{kind.lower()}.{kind}"}
            for i, kind in enumerate(kinds)]


def test_sentence_transformers_5_pooling_and_length_are_read(tmp_path):
    """5.x writes ``"pooling_mode": "cls"`` and keeps the length as the tokenizer's
    model_max_length; both used to be skipped (mean pooling, the position table's length)."""
    folder = copy_model("roberta", tmp_path)
    ref = load_reference("roberta")
    write_json(folder / "modules.json", st_modules("Transformer", "Pooling", "Normalize"))
    write_json(folder / "1_Pooling" / "config.json", {"embedding_dimension": 32, "pooling_mode": "cls"})
    tok_config = json.loads((folder / "tokenizer_config.json").read_text())
    write_json(folder / "tokenizer_config.json", {**tok_config, "model_max_length": 6})
    ours = FlaxEncoderEmbedder(folder, **ONE_DEVICE)
    assert (ours.settings.pooling, ours.settings.max_length) == ("cls", 6)
    short = [text for text, mask in zip(ref["texts"], ref["attention_mask"]) if mask.sum() <= 6]
    rows = [i for i, mask in enumerate(ref["attention_mask"]) if mask.sum() <= 6]
    assert len(rows) >= 2
    np.testing.assert_allclose(ours.embed(short), ref["cls"][rows], atol=ATOL)
    for mode in ("max", ["mean", "max"]):
        write_json(folder / "1_Pooling" / "config.json", {"embedding_dimension": 32, "pooling_mode": mode})
        with pytest.raises(UserInputError, match=r"1_Pooling/config\.json: pooling .* is not supported"):
            FlaxEncoderEmbedder(folder, **ONE_DEVICE)


def test_modules_we_do_not_run_are_refused(tmp_path):
    folder = copy_model("bert", tmp_path)
    write_json(folder / "modules.json", st_modules("Transformer", "Pooling", "Dense", "Normalize"))
    with pytest.raises(UserInputError, match=r"modules\.json: module '.*\.Dense' \(2_Dense\) is not "):
        FlaxEncoderEmbedder(folder, **ONE_DEVICE)


def test_do_lower_case_lowercases_before_tokenising_and_is_keyed(tmp_path):
    folder = copy_model("roberta", tmp_path)  # a cased BPE tokenizer
    plain = FlaxEncoderEmbedder(folder, **ONE_DEVICE)
    write_json(folder / "sentence_bert_config.json", {"max_seq_length": 32, "do_lower_case": True})
    lowered = FlaxEncoderEmbedder(folder, **ONE_DEVICE)
    assert lowered.identity != plain.identity
    assert plain.tokenizer.content_ids(["Hello World"]) != plain.tokenizer.content_ids(["hello world"])
    np.testing.assert_allclose(lowered.embed(["Hello World"]), plain.embed(["hello world"]), atol=1e-6)


@pytest.mark.parametrize("change, message", [
    ({"position_embedding_type": "relative_key"},
     r"config\.json: field 'position_embedding_type': position_embedding_type 'relative_key' is not"),
    ({"model_type": "mpnet-free-bert"}, r"config\.json: field 'model_type'"),
    # a traceback (TypeError, ZeroDivisionError) or, for 0 layers, vectors of the embedding layer alone
    ({"layer_norm_eps": None}, r"config\.json: field 'layer_norm_eps': expected a number > 0, found None"),
    ({"type_vocab_size": "2"}, r"config\.json: field 'type_vocab_size': expected an integer >= 1"),
    ({"num_attention_heads": 0}, r"config\.json: field 'num_attention_heads': expected an integer >= 1"),
    ({"num_hidden_layers": 0}, r"config\.json: field 'num_hidden_layers': expected an integer >= 1, found 0"),
    ({"num_hidden_layers": True}, r"config\.json: field 'num_hidden_layers': expected an integer >= 1"),
])
def test_architectures_we_do_not_compute_are_refused(tmp_path, change, message):
    folder = copy_model("bert", tmp_path)
    config = json.loads((folder / "config.json").read_text())
    write_json(folder / "config.json", {**config, **change})
    with pytest.raises(UserInputError, match=message):
        FlaxEncoderEmbedder(folder, **ONE_DEVICE)


def test_a_max_seq_length_past_the_position_table_names_the_file(tmp_path):
    folder = copy_model("bert", tmp_path)
    limit = json.loads((folder / "config.json").read_text())["max_position_embeddings"]
    write_json(folder / "sentence_bert_config.json", {"max_seq_length": limit + 2})
    with pytest.raises(UserInputError, match=rf"sentence_bert_config\.json: max_seq_length {limit + 2}: "
                                             r"expected a value in \(2, " + str(limit)):
        FlaxEncoderEmbedder(folder, **ONE_DEVICE)


# ------------------------------------------------- BERT tokenizer settings from tokenizer_config.json
TOKENIZER_TEXTS = ["Hello World", "naïve Café Zürich", "中文字", "before [SEP] after [MASK]"]
# transformers 4.57.6's AutoTokenizer ids for these texts with MiniLM's files (the same for the fast
# tokenizer.json and the slow vocab.txt tokenizer; [SEP]/[MASK] literals are special tokens)
EXPECTED_IDS = {
    "default": [[101, 7592, 2088, 102], [101, 15743, 7668, 10204, 102],
                [101, 1746, 1861, 100, 102], [101, 2077, 102, 2044, 103, 102]],
    "cased": [[101, 100, 100, 102], [101, 100, 100, 100, 102],
              [101, 1746, 1861, 100, 102], [101, 2077, 102, 2044, 103, 102]],
}


@pytest.mark.parametrize("source", ["tokenizer.json", "vocab.txt"])
@pytest.mark.parametrize("case", ["default", "cased"])
def test_bert_tokenizer_follows_tokenizer_config(tmp_path, source, case):
    """tokenizer_config.json's do_lower_case overrides a tokenizer.json's normaliser (transformers 4's
    BertTokenizerFast); a vocab.txt tokenizer matches special-token literals whole."""
    import shutil

    from stylebench_jax.encoders.registry import minilm_dir
    from stylebench_jax.encoders.tokenizer import load_tokenizer

    folder = tmp_path / "tok"
    folder.mkdir()
    shutil.copy(minilm_dir() / source, folder / source)
    config = json.loads((minilm_dir() / "tokenizer_config.json").read_text())
    if case == "cased":
        config["do_lower_case"] = False
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    tokenizer = load_tokenizer(folder)
    assert [tokenizer.wrap(ids) for ids in tokenizer.content_ids(TOKENIZER_TEXTS)] == EXPECTED_IDS[case]
