"""Config-driven BERT family: tiny random BERT and RoBERTa checkpoints written by PyTorch
`transformers` load into our Flax encoder and give the same pooled vectors."""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")  # installed by scripts/setup_env.sh (extra `torch`)
transformers = pytest.importorskip("transformers")

from stylebench_jax.encoders.neural import FlaxEncoderEmbedder  # noqa: E402
from stylebench_jax.errors import UserInputError  # noqa: E402
from stylebench_jax.parallel import make_mesh  # noqa: E402

WORDS = ["the", "a", "cat", "sat", "on", "mat", "dog", "ran", "fast", "slow", "##s", "##ed", "."]


def write_tiny_model(folder, family: str):
    pad = 0 if family == "bert" else 1
    specials = ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    specials.insert(pad, "[PAD]")
    vocab = specials + WORDS
    common = dict(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                  intermediate_size=64, pad_token_id=pad, hidden_act="gelu")
    if family == "bert":
        config = transformers.BertConfig(max_position_embeddings=40, **common)
        model_cls = transformers.BertModel
    else:
        config = transformers.RobertaConfig(max_position_embeddings=42, type_vocab_size=1, **common)
        model_cls = transformers.RobertaModel
    torch.manual_seed(0)
    model = model_cls(config, add_pooling_layer=False).eval()
    model.save_pretrained(folder, safe_serialization=True)
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True, "pad_token": "[PAD]"}))
    return model


@pytest.mark.parametrize("family", ["bert", "roberta"])
@pytest.mark.parametrize("mesh", ["data=1,model=1", "data=2,model=2"])
def test_tiny_checkpoint_matches_transformers(tmp_path, family, mesh):
    torch_model = write_tiny_model(tmp_path, family)
    ours = FlaxEncoderEmbedder(tmp_path, mesh=make_mesh(mesh), progress=False, batch_size=4)
    assert ours.config.position_offset == (0 if family == "bert" else 2)
    texts = ["the cat sat on the mat .", "a dog ran", "the dogs ran fast fast fast and slow .", "cat"]
    sequences = [ours.tokenizer.wrap(ids) for ids in ours.tokenizer.content_ids(texts)]
    got = ours.encode_sequences(sequences)  # padded into one bucket of mixed lengths
    for sequence, vector in zip(sequences, got):
        ids = torch.tensor([sequence])
        with torch.inference_mode():
            hidden = torch_model(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state
        expected = torch.nn.functional.normalize(hidden.mean(1), dim=-1)[0].numpy()
        np.testing.assert_allclose(vector, expected, atol=2e-5)


def test_shape_mismatch_names_the_parameter(tmp_path):
    write_tiny_model(tmp_path, "bert")
    config = json.loads((tmp_path / "config.json").read_text())
    config["intermediate_size"] = 48
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(UserInputError, match="intermediate"):
        FlaxEncoderEmbedder(tmp_path, progress=False)


def test_mesh_must_divide_heads(tmp_path):
    write_tiny_model(tmp_path, "bert")
    with pytest.raises(UserInputError, match="must divide the 4 heads"):
        FlaxEncoderEmbedder(tmp_path, mesh=make_mesh("data=1,model=8"), progress=False)
