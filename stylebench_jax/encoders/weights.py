"""Name and layout maps from Hugging Face BERT/RoBERTa checkpoints to ``SentenceEncoder`` parameters.

PyTorch ``nn.Linear`` stores ``weight`` as ``(out, in)``; Flax ``Dense`` kernels are ``(in, out)``
and our attention projections are ``DenseGeneral`` kernels ``(embed, heads, kv)`` / ``(heads, kv,
embed)``, so each tensor is transposed and reshaped on the way in: one ``checkpoint.TensorMap`` per
parameter, read block by block into its sharding by ``encoders.loading.load_params``.
``encoders.export.flax_to_torch`` is the inverse.
"""

from __future__ import annotations

import re
from pathlib import Path

from stylebench_jax.encoders.checkpoint import TensorMap, linear_map, resolve_maps, vector_map
from stylebench_jax.encoders.config import EncoderConfig
from stylebench_jax.errors import UserInputError

# Name prefixes of the stored tensors: bare BertModel, sentence-transformers, *ForMaskedLM and others.
PREFIXES = ("", "0.auto_model.", "auto_model.", "bert.", "roberta.", "model.")
POOLING_WEIGHTS = Path("1_Pooling") / "model.safetensors"  # learned attention pooling (encoders.export)
PROJECTION_DIR = "2_Projection"  # Writing7's projection head (encoders.export)

Maps = dict[tuple[str, ...], TensorMap]


def _bert_maps(config: EncoderConfig, legacy_norms: bool) -> Maps:
    """Unresolved maps (no prefix) of the ``encoder`` subtree, in the order of the module's layers."""
    heads, head_dim, hidden = config.num_heads, config.head_dim, config.hidden_size
    inner = config.intermediate_size
    scale, shift = ("gamma", "beta") if legacy_norms else ("weight", "bias")

    def norm(dst, src):
        return {(*dst, "scale"): vector_map(f"{src}.{scale}", (hidden,)),
                (*dst, "bias"): vector_map(f"{src}.{shift}", (hidden,))}

    emb = ("encoder", "embeddings")
    maps = {(*emb, "word_embeddings", "embedding"): linear_map(
                "embeddings.word_embeddings.weight", (config.vocab_size,), (hidden,), (0, 1)),
            (*emb, "position_embeddings", "embedding"): linear_map(
                "embeddings.position_embeddings.weight", (config.max_position_embeddings,), (hidden,),
                (0, 1)),
            (*emb, "token_type_embeddings", "embedding"): linear_map(
                "embeddings.token_type_embeddings.weight", (config.type_vocab_size,), (hidden,), (0, 1)),
            **norm((*emb, "LayerNorm"), "embeddings.LayerNorm")}
    for i in range(config.num_layers):
        src, dst = f"encoder.layer.{i}", ("encoder", f"layer_{i}")
        for proj in ("query", "key", "value"):
            # weight (heads*D, H) -> R = (heads, D, H) -> kernel (H, heads, D)
            maps[(*dst, "attention", proj, "kernel")] = linear_map(
                f"{src}.attention.self.{proj}.weight", (heads, head_dim), (hidden,), (2, 0, 1))
            maps[(*dst, "attention", proj, "bias")] = vector_map(f"{src}.attention.self.{proj}.bias",
                                                                 (heads, head_dim))
        # weight (H, heads*D) -> R = (H, heads, D) -> kernel (heads, D, H)
        maps[(*dst, "attention", "output", "kernel")] = linear_map(
            f"{src}.attention.output.dense.weight", (hidden,), (heads, head_dim), (1, 2, 0))
        maps[(*dst, "attention", "output", "bias")] = vector_map(f"{src}.attention.output.dense.bias",
                                                                 (hidden,))
        maps.update(norm((*dst, "attention_norm"), f"{src}.attention.output.LayerNorm"))
        maps[(*dst, "intermediate", "kernel")] = linear_map(f"{src}.intermediate.dense.weight", (inner,),
                                                            (hidden,), (1, 0))
        maps[(*dst, "intermediate", "bias")] = vector_map(f"{src}.intermediate.dense.bias", (inner,))
        maps[(*dst, "output", "kernel")] = linear_map(f"{src}.output.dense.weight", (hidden,), (inner,),
                                                      (1, 0))
        maps[(*dst, "output", "bias")] = vector_map(f"{src}.output.dense.bias", (hidden,))
        maps.update(norm((*dst, "output_norm"), f"{src}.output.LayerNorm"))
    return maps


def bert_tensor_maps(config: EncoderConfig, available: dict[str, Path], model_dir: Path) -> Maps:
    """``{flax parameter path: TensorMap}`` of the ``encoder`` subtree, names resolved against
    ``available`` (``{stored tensor name: file}``); ``UserInputError`` naming the first missing tensor."""
    legacy = any(name.endswith("LayerNorm.gamma") for name in available)  # very old BERT checkpoints
    return resolve_maps(_bert_maps(config, legacy), available, PREFIXES, model_dir,
                        f"a {config.num_layers}-layer {config.model_type} encoder")


def attention_pooling_maps(config: EncoderConfig, available: dict[str, Path], pooling_file: Path) -> Maps:
    """``1_Pooling/model.safetensors`` (PyTorch layout: ``proj.weight [H, H]``, ``proj.bias``,
    ``score.weight [1, H]``, ``score.bias [1]``) -> maps of the ``attention_pool`` subtree."""
    hidden = config.hidden_size
    maps = {}
    for name, out in (("proj", hidden), ("score", 1)):
        maps[("attention_pool", name, "kernel")] = linear_map(f"{name}.weight", (out,), (hidden,), (1, 0))
        maps[("attention_pool", name, "bias")] = vector_map(f"{name}.bias", (out,))
    return resolve_maps(maps, available, ("",), pooling_file, "learned attention pooling")


def projection_maps(config: EncoderConfig, projection_dim: int, available: dict[str, Path],
                    projection_file: Path) -> Maps:
    """``2_Projection/model.safetensors`` (``dense.weight [P, H]``, ``dense.bias``, ``norm.weight``,
    ``norm.bias``) -> maps of the ``projection`` subtree (Dense kernel ``[H, P]``, LayerNorm)."""
    hidden, out = config.hidden_size, projection_dim
    maps = {("projection", "dense", "kernel"): linear_map("dense.weight", (out,), (hidden,), (1, 0)),
            ("projection", "dense", "bias"): vector_map("dense.bias", (out,)),
            ("projection", "norm", "scale"): vector_map("norm.weight", (out,)),
            ("projection", "norm", "bias"): vector_map("norm.bias", (out,))}
    return resolve_maps(maps, available, ("",), projection_file, "the projection head")


def check_shapes(params: dict, expected: dict, path: str = "") -> None:
    """Raise ``UserInputError`` if a loaded tensor's shape differs from the module's expectation."""
    for key, value in expected.items():
        where = f"{path}/{key}" if path else key
        if key not in params:
            raise UserInputError(f"weights lack parameter {where}")
        if isinstance(value, dict):
            check_shapes(params[key], value, where)
        elif tuple(params[key].shape) != tuple(value.shape):
            raise UserInputError(
                f"parameter {where}: weights have shape {tuple(params[key].shape)}, "
                f"config.json implies {tuple(value.shape)}")


_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


def safe_name(text: str) -> str:
    return _SAFE_NAME.sub("-", text).strip("-") or "model"
