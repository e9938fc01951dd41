"""Configuration of a BERT-family encoder, read from a Hugging Face ``config.json``."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from stylebench_jax.errors import located
from stylebench_jax.fileio import read_json_file

SUPPORTED_MODEL_TYPES = ("bert", "roberta", "xlm-roberta", "camembert")
SUPPORTED_ACTIVATIONS = ("gelu", "gelu_new", "gelu_pytorch_tanh", "relu")

_MISSING = object()


def count_field(raw: dict, path, key: str, default=_MISSING, *, minimum: int = 1) -> int:
    """``raw[key]`` as a whole number >= ``minimum`` (``default`` when absent or null, as transformers
    reads a null; required when no default is given); ``UserInputError`` naming ``path`` and ``key``.
    A 0 or negative count (``num_hidden_layers: 0`` left only the embedding layer, silently) and a
    string or a bool are refused."""
    value = raw.get(key)
    if value is None and default is not _MISSING:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise located(path, f"expected an integer >= {minimum}, found {value!r}", field=key)
    return value


def positive_field(raw: dict, path, key: str, default: float) -> float:
    """``raw[key]`` as a finite number > 0 (``default`` when absent); a null is refused (transformers
    would pass it on and fail in its layer norm)."""
    if key not in raw:
        return default
    value = raw[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        raise located(path, f"expected a number > 0, found {value!r}", field=key)
    return float(value)


@dataclasses.dataclass(frozen=True)
class EncoderConfig:
    """Hyper-parameters of the transformer stack.

    ``position_offset`` is 0 for BERT; RoBERTa-style models start positions at ``pad_token_id + 1``
    (so position ids are ``offset + arange(L)`` for unpadded tokens).
    """

    vocab_size: int = 30522
    hidden_size: int = 384
    num_layers: int = 6
    num_heads: int = 12
    intermediate_size: int = 1536
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    hidden_act: str = "gelu"
    position_offset: int = 0
    pad_token_id: int = 0
    model_type: str = "bert"

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    def __post_init__(self):
        if self.hidden_size % self.num_heads:
            raise ValueError(f"hidden_size {self.hidden_size} not divisible by num_heads {self.num_heads}")
        if self.hidden_act not in SUPPORTED_ACTIVATIONS:
            raise ValueError(f"hidden_act {self.hidden_act!r} not in {SUPPORTED_ACTIVATIONS}")

    @property
    def max_tokens(self) -> int:
        """Longest sequence the position table allows (RoBERTa loses ``position_offset`` slots)."""
        return self.max_position_embeddings - self.position_offset

    @classmethod
    def from_json(cls, path: str | Path) -> EncoderConfig:
        """Read a Hugging Face ``config.json`` (BERT or RoBERTa family)."""
        path = Path(path)
        raw = read_json_file(path, {})
        if not isinstance(raw, dict):
            raise located(path, f"expected a JSON object, found {type(raw).__name__}")
        model_type = raw.get("model_type", "bert")
        if model_type not in SUPPORTED_MODEL_TYPES:
            raise located(path, f"model_type {model_type!r} is not a BERT-family encoder "
                                f"(supported: {', '.join(SUPPORTED_MODEL_TYPES)})", field="model_type")
        for key in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                    "intermediate_size", "max_position_embeddings"):
            count_field(raw, path, key)
        position_type = raw.get("position_embedding_type", "absolute")
        if position_type not in (None, "absolute"):
            raise located(path, f"position_embedding_type {position_type!r} is not supported (absolute "
                                "position embeddings only)", field="position_embedding_type")
        roberta_like = model_type in ("roberta", "xlm-roberta", "camembert")
        pad = count_field(raw, path, "pad_token_id", 1 if roberta_like else 0, minimum=0)
        try:
            return cls(
                vocab_size=raw["vocab_size"],
                hidden_size=raw["hidden_size"],
                num_layers=raw["num_hidden_layers"],
                num_heads=raw["num_attention_heads"],
                intermediate_size=raw["intermediate_size"],
                max_position_embeddings=raw["max_position_embeddings"],
                type_vocab_size=count_field(raw, path, "type_vocab_size", 2),
                layer_norm_eps=positive_field(raw, path, "layer_norm_eps", 1e-12),
                hidden_act=raw.get("hidden_act", "gelu"),
                position_offset=pad + 1 if roberta_like else 0,
                pad_token_id=pad,
                model_type=model_type,
            )
        except ValueError as error:
            raise located(path, str(error)) from None
