"""Write an encoder's parameters as a local model directory: the inverse of ``encoders.weights``.

The directory is what ``encoders.loading.read_encoder_dir`` (so ``stylebench embed/eval --models
DIR``) reads, and the BERT part is a plain Hugging Face checkpoint (PyTorch tensor names and
layouts, ``transformers.BertModel.from_pretrained`` loads it):

    config.json                      model_type, sizes, activation, pad id (``EncoderConfig``)
    model.safetensors                the transformer (PyTorch layout: ``nn.Linear`` weights (out, in))
    tokenizer.json                   the fast tokenizer, ``tokenizer_config.json`` (pad token); or the
                                     SentencePiece model and the config keys deciding its ids
    modules.json                     sentence-transformers pipeline: Transformer, Pooling[, Normalize]
    sentence_bert_config.json        max_seq_length
    1_Pooling/config.json            mean / cls (sentence-transformers keys) or ``pooling_mode_attention``
    1_Pooling/model.safetensors      learned attention pooling only (``proj.*``, ``score.*``)
    2_Projection/                    projection head only: config.json (in/out features, GELU +
                                     LayerNorm) and model.safetensors (``dense.*``, ``norm.*``)

The directory is written under a temporary name next to ``out_dir`` and renamed into place (an
existing export is replaced as a whole), so a reader never sees a half-written model.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from safetensors.numpy import save

from stylebench_jax.encoders.config import EncoderConfig
from stylebench_jax.encoders.weights import PROJECTION_DIR
from stylebench_jax.fileio import atomic_directory, atomic_open, write_text_atomic


def _np(value) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(value, dtype=np.float32))


def flax_to_torch(params: dict, config: EncoderConfig) -> dict[str, np.ndarray]:
    """``{'encoder': ...}`` Flax parameters -> Hugging Face BERT/RoBERTa tensor names (no model
    prefix, as ``BertModel.save_pretrained`` writes them). Inverse of ``weights.bert_tensor_maps``."""
    enc = params["encoder"]
    hidden = config.hidden_size
    emb = enc["embeddings"]
    out = {
        "embeddings.word_embeddings.weight": emb["word_embeddings"]["embedding"],
        "embeddings.position_embeddings.weight": emb["position_embeddings"]["embedding"],
        "embeddings.token_type_embeddings.weight": emb["token_type_embeddings"]["embedding"],
        "embeddings.LayerNorm.weight": emb["LayerNorm"]["scale"],
        "embeddings.LayerNorm.bias": emb["LayerNorm"]["bias"],
    }
    def square(kernel):  # (embed, heads, kv) or (heads, kv, embed) -> (hidden, hidden)
        return _np(kernel).reshape(hidden, hidden)

    for i in range(config.num_layers):
        layer, p = enc[f"layer_{i}"], f"encoder.layer.{i}"
        attention = layer["attention"]
        for proj in ("query", "key", "value"):
            out[f"{p}.attention.self.{proj}.weight"] = square(attention[proj]["kernel"]).T
            out[f"{p}.attention.self.{proj}.bias"] = _np(attention[proj]["bias"]).reshape(hidden)
        out[f"{p}.attention.output.dense.weight"] = square(attention["output"]["kernel"]).T
        out[f"{p}.attention.output.dense.bias"] = attention["output"]["bias"]
        out[f"{p}.attention.output.LayerNorm.weight"] = layer["attention_norm"]["scale"]
        out[f"{p}.attention.output.LayerNorm.bias"] = layer["attention_norm"]["bias"]
        out[f"{p}.intermediate.dense.weight"] = _np(layer["intermediate"]["kernel"]).T
        out[f"{p}.intermediate.dense.bias"] = layer["intermediate"]["bias"]
        out[f"{p}.output.dense.weight"] = _np(layer["output"]["kernel"]).T
        out[f"{p}.output.dense.bias"] = layer["output"]["bias"]
        out[f"{p}.output.LayerNorm.weight"] = layer["output_norm"]["scale"]
        out[f"{p}.output.LayerNorm.bias"] = layer["output_norm"]["bias"]
    return {name: _np(value) for name, value in out.items()}


def attention_pooling_to_torch(pool: dict) -> dict[str, np.ndarray]:
    """The ``attention_pool`` Flax subtree -> ``1_Pooling/model.safetensors`` tensors."""
    return {f"{name}.{part}": _np(_np(pool[name]["kernel"]).T if part == "weight" else pool[name]["bias"])
            for name in ("proj", "score") for part in ("weight", "bias")}


def projection_to_torch(projection: dict) -> dict[str, np.ndarray]:
    """The ``projection`` Flax subtree -> ``2_Projection/model.safetensors`` tensors."""
    dense, norm = projection["dense"], projection["norm"]
    return {"dense.weight": _np(_np(dense["kernel"]).T), "dense.bias": _np(dense["bias"]),
            "norm.weight": _np(norm["scale"]), "norm.bias": _np(norm["bias"])}


def hf_config(config: EncoderConfig) -> dict:
    """``config.json`` content that ``EncoderConfig.from_json`` (and transformers) read back."""
    architecture = {"bert": "BertModel", "roberta": "RobertaModel", "xlm-roberta": "XLMRobertaModel",
                    "camembert": "CamembertModel"}.get(config.model_type, "BertModel")
    return {"architectures": [architecture], "model_type": config.model_type,
            "vocab_size": config.vocab_size, "hidden_size": config.hidden_size,
            "num_hidden_layers": config.num_layers, "num_attention_heads": config.num_heads,
            "intermediate_size": config.intermediate_size,
            "max_position_embeddings": config.max_position_embeddings,
            "type_vocab_size": config.type_vocab_size, "layer_norm_eps": config.layer_norm_eps,
            "hidden_act": config.hidden_act, "pad_token_id": config.pad_token_id,
            "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1, "initializer_range": 0.02}


def _write_json(path: Path, data) -> None:
    write_text_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def _write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    # safetensors.numpy.save writes an array's raw buffer: a transposed (non C-contiguous) view
    # would be stored silently transposed, hence the explicit copy.
    tensors = {name: np.ascontiguousarray(value) for name, value in sorted(tensors.items())}
    with atomic_open(path, "wb") as handle:
        handle.write(save(tensors, metadata={"format": "pt"}))


def export_encoder(out_dir: str | Path, *, params: dict, config: EncoderConfig, tokenizer,
                   pooling: str, normalize: bool, max_length: int) -> Path:
    """Write ``params`` (host or device arrays) as a model directory ``out_dir`` (module docstring);
    returns its path. ``pooling``: mean | cls | attention (attention needs ``params["attention_pool"]``)."""
    if pooling not in ("mean", "cls", "attention"):
        raise ValueError(f"pooling: expected mean, cls or attention, found {pooling!r}")
    with atomic_directory(out_dir) as out:
        _write_model(out, params, config, tokenizer, pooling, normalize, max_length)
    return Path(out_dir)


def _write_model(out: Path, params: dict, config: EncoderConfig, tokenizer, pooling: str,
                 normalize: bool, max_length: int) -> None:
    (out / "1_Pooling").mkdir()
    _write_safetensors(out / "model.safetensors", flax_to_torch(params, config))
    if pooling == "attention":
        _write_safetensors(out / "1_Pooling" / "model.safetensors",
                           attention_pooling_to_torch(params["attention_pool"]))
    tokenizer.save(out)
    hidden = config.hidden_size
    _write_json(out / "1_Pooling" / "config.json", {
        "word_embedding_dimension": hidden, "pooling_mode_cls_token": pooling == "cls",
        "pooling_mode_mean_tokens": pooling == "mean", "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False, **({"pooling_mode_attention": True}
                                                       if pooling == "attention" else {})})
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    if "projection" in params:
        (out / PROJECTION_DIR).mkdir()
        tensors = projection_to_torch(params["projection"])
        _write_safetensors(out / PROJECTION_DIR / "model.safetensors", tensors)
        _write_json(out / PROJECTION_DIR / "config.json", {
            "in_features": int(tensors["dense.weight"].shape[1]),
            "out_features": int(tensors["dense.weight"].shape[0]), "activation": "gelu", "layer_norm": True})
        modules.append({"idx": 2, "name": "2", "path": PROJECTION_DIR, "type": "stylebench_jax.Projection"})
    if normalize:
        index = len(modules)
        modules.append({"idx": index, "name": str(index), "path": f"{index}_Normalize",
                        "type": "sentence_transformers.models.Normalize"})
    _write_json(out / "modules.json", modules)
    _write_json(out / "sentence_bert_config.json",
                {"max_seq_length": int(max_length), "do_lower_case": False})
    _write_json(out / "config.json", hf_config(config))
