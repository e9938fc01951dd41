"""Load PyTorch-layout safetensors weights into the Flax parameter tree of ``SentenceEncoder``.

PyTorch ``nn.Linear`` stores ``weight`` as ``(out, in)``; Flax ``Dense`` kernels are ``(in, out)``
and our attention projections are ``DenseGeneral`` kernels ``(embed, heads, kv)`` / ``(heads, kv,
embed)``, so each tensor is transposed and reshaped on the way in. Only safetensors are read:
pickled checkpoints (``*.bin``, ``*.pt``) can run arbitrary code when loaded and are refused.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

from stylebench_jax.encoders.config import EncoderConfig
from stylebench_jax.errors import UserInputError

PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")
_PREFIXES = ("0.auto_model.", "auto_model.", "bert.", "roberta.", "model.")


def safetensors_files(model_dir: Path) -> list[Path]:
    """The model's ``*.safetensors`` files, or a ``UserInputError`` saying what was found instead."""
    files = sorted(model_dir.glob("*.safetensors"))
    if files:
        return files
    pickled = sorted(p.name for p in model_dir.iterdir() if p.suffix in PICKLE_SUFFIXES)
    if pickled:
        raise UserInputError(
            f"{model_dir}: found only pickled weights ({', '.join(pickled)}); loading pickles can run "
            "arbitrary code, so stylebench reads safetensors only. Convert them once with "
            "safetensors.torch.save_file in a trusted environment.")
    raise UserInputError(f"{model_dir}: no model.safetensors file (expected config.json, "
                         "model.safetensors and tokenizer.json or vocab.txt)")


def weights_digest(files: list[Path]) -> str:
    """SHA-256 of the weight files' bytes (first 16 hex digits), part of the embedder identity."""
    digest = hashlib.sha256()
    for path in files:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 22), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


def _strip(name: str) -> str:
    for prefix in _PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def _layer_norm(tensors: dict, prefix: str) -> dict:
    scale = tensors.get(f"{prefix}.weight", tensors.get(f"{prefix}.gamma"))
    bias = tensors.get(f"{prefix}.bias", tensors.get(f"{prefix}.beta"))
    return {"scale": scale, "bias": bias}


def torch_to_flax(tensors: dict[str, np.ndarray], config: EncoderConfig) -> dict:
    """Map Hugging Face BERT/RoBERTa tensor names to ``{'encoder': {...}}`` Flax parameters.

    Raises ``KeyError`` naming the first missing tensor.
    """
    t = {_strip(name): value for name, value in tensors.items()}
    heads, head_dim, hidden = config.num_heads, config.head_dim, config.hidden_size

    def need(name):
        if name not in t:
            raise KeyError(name)
        return np.asarray(t[name], dtype=np.float32)

    embeddings = {
        "word_embeddings": {"embedding": need("embeddings.word_embeddings.weight")},
        "position_embeddings": {"embedding": need("embeddings.position_embeddings.weight")},
        "token_type_embeddings": {"embedding": need("embeddings.token_type_embeddings.weight")},
        "LayerNorm": _layer_norm(t, "embeddings.LayerNorm"),
    }
    encoder = {"embeddings": embeddings}
    for i in range(config.num_layers):
        p = f"encoder.layer.{i}"
        attention = {
            proj: {
                "kernel": need(f"{p}.attention.self.{proj}.weight").T.reshape(hidden, heads, head_dim),
                "bias": need(f"{p}.attention.self.{proj}.bias").reshape(heads, head_dim),
            }
            for proj in ("query", "key", "value")
        }
        attention["output"] = {
            "kernel": need(f"{p}.attention.output.dense.weight").T.reshape(heads, head_dim, hidden),
            "bias": need(f"{p}.attention.output.dense.bias"),
        }
        encoder[f"layer_{i}"] = {
            "attention": attention,
            "attention_norm": _layer_norm(t, f"{p}.attention.output.LayerNorm"),
            "intermediate": {"kernel": need(f"{p}.intermediate.dense.weight").T.copy(),
                             "bias": need(f"{p}.intermediate.dense.bias")},
            "output": {"kernel": need(f"{p}.output.dense.weight").T.copy(),
                       "bias": need(f"{p}.output.dense.bias")},
            "output_norm": _layer_norm(t, f"{p}.output.LayerNorm"),
        }
    for name, tree in (("embeddings", embeddings),) + tuple(
            (f"layer_{i}", encoder[f"layer_{i}"]) for i in range(config.num_layers)):
        for norm_name, norm in tree.items():
            if isinstance(norm, dict) and any(v is None for v in norm.values()):
                raise KeyError(f"{name}.{norm_name} LayerNorm weight/bias")
    return {"encoder": encoder}


def load_safetensors_params(model_dir: Path, config: EncoderConfig) -> tuple[dict, str]:
    """Read every safetensors file of ``model_dir``; return ``(params, weights_digest)``."""
    files = safetensors_files(model_dir)
    tensors: dict[str, np.ndarray] = {}
    for path in files:
        try:
            tensors.update(load_file(str(path)))
        except Exception as error:  # safetensors raises its own error types for corrupt headers
            raise UserInputError(f"{path}: not a readable safetensors file ({error})") from None
    try:
        params = torch_to_flax(tensors, config)
    except KeyError as error:
        found = ", ".join(sorted(tensors)[:3])
        raise UserInputError(
            f"{model_dir}: weights lack tensor {error.args[0]!r} for a {config.num_layers}-layer "
            f"{config.model_type} encoder (found e.g. {found})") from None
    return params, weights_digest(files)


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
