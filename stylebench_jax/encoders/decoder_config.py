"""Configuration of a causal decoder (Llama / Mistral / Qwen2 / Qwen3 / GPT-2), read from ``config.json``.

Two block styles cover the five families:

- ``llama`` style (Llama, Mistral, Qwen2, Qwen3): pre-RMSNorm blocks, rotary position embeddings (RoPE) with
  the checkpoint's ``rope_theta`` and ``rope_scaling`` (``default``, ``linear``, ``llama3``; or
  transformers 5's ``rope_parameters`` holding both),
  grouped-query attention (``num_key_value_heads`` <= ``num_attention_heads``), SwiGLU MLP
  ``down(silu(gate(x)) * up(x))``, optional biases on q/k/v (Qwen2 always; Llama's and Qwen3's
  ``attention_bias`` also on o), Qwen3's per-head RMSNorm of queries and keys before RoPE, optional
  sliding-window attention per layer (Mistral ``sliding_window``; Qwen2/Qwen3 ``use_sliding_window`` +
  ``max_window_layers`` or ``layer_types``).
- ``gpt2`` style: learned absolute positions, pre-LayerNorm blocks, fused ``c_attn`` Conv1D projection
  (``(in, out)`` weight layout), GELU (tanh approximation) MLP, final ``ln_f``.

Only the last hidden states are used for embeddings, so the LM head (tied or untied) is never loaded.
RoPE variants whose frequencies depend on the run-time sequence length (``dynamic``) or that change
attention scaling (``yarn``, ``longrope``) are refused with a message rather than approximated.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np

from stylebench_jax.encoders.config import count_field, positive_field
from stylebench_jax.errors import located
from stylebench_jax.fileio import read_json_file

LLAMA_STYLE = ("llama", "mistral", "qwen2", "qwen3")
DECODER_MODEL_TYPES = (*LLAMA_STYLE, "gpt2")
SUPPORTED_ROPE_TYPES = ("default", "linear", "llama3")
DECODER_ACTIVATIONS = ("silu", "gelu_new", "gelu_pytorch_tanh", "gelu")


@dataclasses.dataclass(frozen=True)
class DecoderConfig:
    """Hyper-parameters of a causal decoder stack (no LM head).

    ``layer_windows[i]`` is the sliding-window size of layer ``i`` (a query at position ``p`` sees keys
    at positions ``p - window < q <= p``) or ``None`` for full causal attention.
    ``rope_scaling`` is a sorted tuple of ``(key, value)`` pairs so the config stays hashable.
    """

    model_type: str = "llama"
    vocab_size: int = 32000
    hidden_size: int = 4096
    num_layers: int = 32
    num_heads: int = 32
    num_kv_heads: int = 32
    head_dim: int = 128
    intermediate_size: int = 11008
    max_position_embeddings: int = 4096
    norm_eps: float = 1e-6
    hidden_act: str = "silu"
    rope_theta: float = 10000.0
    rope_scaling: tuple = ()
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    qk_norm: bool = False
    layer_windows: tuple = ()
    pad_token_id: int = 0

    def __post_init__(self):
        if self.model_type not in DECODER_MODEL_TYPES:
            raise ValueError(f"model_type {self.model_type!r} not in {DECODER_MODEL_TYPES}")
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"num_attention_heads {self.num_heads} is not a multiple of "
                             f"num_key_value_heads {self.num_kv_heads}")
        if self.hidden_act not in DECODER_ACTIVATIONS:
            raise ValueError(f"hidden_act {self.hidden_act!r} not in {DECODER_ACTIVATIONS}")
        if self.layer_windows and len(self.layer_windows) != self.num_layers:
            raise ValueError(f"layer_windows has {len(self.layer_windows)} entries for "
                             f"{self.num_layers} layers")
        rope_type = dict(self.rope_scaling).get("rope_type", "default")
        if rope_type not in SUPPORTED_ROPE_TYPES:
            raise ValueError(f"rope_scaling type {rope_type!r} is not supported (supported: "
                             f"{', '.join(SUPPORTED_ROPE_TYPES)}); its frequencies depend on the run-time "
                             "length or rescale attention, which this implementation does not reproduce")

    @property
    def family(self) -> str:
        return "gpt2" if self.model_type == "gpt2" else "llama"

    @property
    def max_tokens(self) -> int:
        return self.max_position_embeddings

    def window(self, layer: int) -> int | None:
        return self.layer_windows[layer] if self.layer_windows else None

    def inverse_frequencies(self) -> np.ndarray:
        """RoPE inverse frequencies ``[head_dim // 2]`` float32, as transformers' ``modeling_rope_utils``.

        default: ``theta ** (-2i / d)``; linear: divided by ``factor``; llama3: long wavelengths
        (> ``original_max_position_embeddings / low_freq_factor``) divided by ``factor``, short ones
        (< ``.../high_freq_factor``) kept, the band between interpolated smoothly (Llama 3.1).
        """
        dim = self.head_dim
        inv = 1.0 / (self.rope_theta ** (np.arange(0, dim, 2, dtype=np.int64).astype(np.float32) / dim))
        scaling = dict(self.rope_scaling)
        rope_type = scaling.get("rope_type", "default")
        if rope_type == "linear":
            inv = inv / float(scaling["factor"])
        elif rope_type == "llama3":
            factor = float(scaling["factor"])
            low, high = float(scaling["low_freq_factor"]), float(scaling["high_freq_factor"])
            old = float(scaling["original_max_position_embeddings"])
            wavelen = 2 * math.pi / inv
            scaled = np.where(wavelen > old / low, inv / factor, inv)
            smooth = (old / wavelen - low) / (high - low)
            smoothed = (1 - smooth) * scaled / factor + smooth * scaled
            medium = ~(wavelen < old / high) & ~(wavelen > old / low)
            inv = np.where(medium, smoothed, scaled)
        return inv.astype(np.float32)

    @classmethod
    def from_dict(cls, raw: dict, path: str | Path = "config.json") -> DecoderConfig:
        """Build from a parsed ``config.json``; ``UserInputError`` naming ``path`` and the field."""
        model_type = raw.get("model_type")
        if model_type not in DECODER_MODEL_TYPES:
            raise located(path, f"model_type {model_type!r} is not a supported decoder "
                                f"(supported: {', '.join(DECODER_MODEL_TYPES)})", field="model_type")
        try:
            if model_type == "gpt2":
                return cls._gpt2(raw, path)
            return cls._llama(raw, path, model_type)
        except ValueError as error:
            raise located(path, str(error)) from None

    @classmethod
    def from_json(cls, path: str | Path) -> DecoderConfig:
        path = Path(path)
        raw = read_json_file(path, {})
        if not isinstance(raw, dict):
            raise located(path, f"expected a JSON object, found {type(raw).__name__}")
        return cls.from_dict(raw, path)

    @classmethod
    def _gpt2(cls, raw: dict, path) -> DecoderConfig:
        for key in ("vocab_size", "n_embd", "n_layer", "n_head", "n_positions"):
            count_field(raw, path, key)
        if raw.get("scale_attn_by_inverse_layer_idx") or raw.get("reorder_and_upcast_attn"):
            raise located(path, "GPT-2 options scale_attn_by_inverse_layer_idx / reorder_and_upcast_attn "
                                "are not supported", field="scale_attn_by_inverse_layer_idx")
        if raw.get("scale_attn_weights", True) is not True:
            raise located(path, "only scale_attn_weights=true is supported", field="scale_attn_weights")
        hidden, heads = raw["n_embd"], raw["n_head"]
        if hidden % heads:
            raise located(path, f"n_embd {hidden} not divisible by n_head {heads}", field="n_embd")
        return cls(model_type="gpt2", vocab_size=raw["vocab_size"], hidden_size=hidden,
                   num_layers=raw["n_layer"], num_heads=heads, num_kv_heads=heads, head_dim=hidden // heads,
                   intermediate_size=count_field(raw, path, "n_inner", 4 * hidden),
                   max_position_embeddings=raw["n_positions"],
                   norm_eps=positive_field(raw, path, "layer_norm_epsilon", 1e-5),
                   hidden_act=raw.get("activation_function", "gelu_new"), qkv_bias=True, o_bias=True,
                   mlp_bias=True, pad_token_id=count_field(raw, path, "pad_token_id", 0, minimum=-1))

    @classmethod
    def _llama(cls, raw: dict, path, model_type: str) -> DecoderConfig:
        for key in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                    "intermediate_size", "max_position_embeddings"):
            count_field(raw, path, key)
        heads = raw["num_attention_heads"]
        kv_heads = count_field(raw, path, "num_key_value_heads", heads)
        # transformers' Qwen3Config defaults head_dim to 128, not hidden_size / heads
        head_dim = count_field(raw, path, "head_dim",
                               128 if model_type == "qwen3" else raw["hidden_size"] // heads)
        if raw.get("partial_rotary_factor", 1.0) != 1.0:
            raise located(path, "partial rotary embeddings are not supported", field="partial_rotary_factor")
        rope_theta, scaling = _rope_settings(raw, path)
        needed = {"linear": ("factor",),
                  "llama3": ("factor", "low_freq_factor", "high_freq_factor",
                             "original_max_position_embeddings")}
        for key in needed.get(scaling.get("rope_type", "default"), ()):
            if not isinstance(scaling.get(key), (int, float)):
                raise located(path, f"rope_scaling type {scaling['rope_type']!r} needs a number for "
                                    f"{key!r}, found {scaling.get(key)!r}", field="rope_scaling")
        layers = raw["num_hidden_layers"]
        windows = _layer_windows(raw, path, model_type, layers)
        attention_bias = bool(raw.get("attention_bias", False))
        return cls(model_type=model_type, vocab_size=raw["vocab_size"], hidden_size=raw["hidden_size"],
                   num_layers=layers, num_heads=heads, num_kv_heads=kv_heads, head_dim=head_dim,
                   intermediate_size=raw["intermediate_size"],
                   max_position_embeddings=raw["max_position_embeddings"],
                   norm_eps=positive_field(raw, path, "rms_norm_eps", 1e-6),
                   hidden_act=raw.get("hidden_act", "silu"),
                   rope_theta=rope_theta,
                   rope_scaling=tuple(sorted(scaling.items())),
                   qkv_bias=model_type == "qwen2" or attention_bias,
                   o_bias=model_type != "qwen2" and attention_bias,
                   mlp_bias=bool(raw.get("mlp_bias", False)), qk_norm=model_type == "qwen3",
                   layer_windows=windows,
                   # -1: some Llama configs' way of saying "no pad token"
                   pad_token_id=count_field(raw, path, "pad_token_id", 0, minimum=-1))


def _rope_settings(raw: dict, path) -> tuple[float, dict]:
    """``(rope_theta, scaling)`` from transformers 4's top-level ``rope_theta`` / ``rope_scaling`` or
    transformers 5's ``rope_parameters`` (theta, ``rope_type`` and the scaling keys in one object).

    Both forms in one file must agree; per-layer-type parameters and a partial rotary factor inside
    ``rope_parameters`` are refused, so no setting is ever silently dropped.
    """
    scaling = raw.get("rope_scaling") or {}
    if not isinstance(scaling, dict):
        raise located(path, f"expected an object or null, found {scaling!r}", field="rope_scaling")
    scaling = dict(scaling)
    if "type" in scaling and "rope_type" not in scaling:
        scaling["rope_type"] = scaling.pop("type")
    scaling.pop("type", None)
    theta = raw.get("rope_theta")
    parameters = raw.get("rope_parameters")
    if parameters is not None:
        if not isinstance(parameters, dict) or not parameters:
            raise located(path, f"expected an object with rope_type and rope_theta, found {parameters!r}",
                          field="rope_parameters")
        if all(isinstance(value, dict) for value in parameters.values()):
            raise located(path, f"RoPE parameters per layer type ({', '.join(parameters)}) are not supported",
                          field="rope_parameters")
        parameters = dict(parameters)
        if parameters.pop("partial_rotary_factor", 1.0) != 1.0:
            raise located(path, "partial rotary embeddings are not supported", field="rope_parameters")
        given = parameters.pop("rope_theta", None)
        if theta is not None and given is not None and float(theta) != float(given):
            raise located(path, f"rope_theta {theta!r} disagrees with rope_parameters' {given!r}",
                          field="rope_parameters")
        theta = given if given is not None else theta
        if parameters.get("rope_type", "default") == "default" and set(parameters) <= {"rope_type"}:
            parameters = {}
        if scaling and parameters and scaling != parameters:
            raise located(path, f"rope_scaling {scaling!r} disagrees with rope_parameters {parameters!r}",
                          field="rope_parameters")
        scaling = scaling or parameters
    if theta is None:
        theta = 10000.0
    if isinstance(theta, bool) or not isinstance(theta, (int, float)) or not theta > 0:
        raise located(path, f"expected a positive number, found {theta!r}", field="rope_theta")
    return float(theta), scaling


def _layer_windows(raw: dict, path, model_type: str, layers: int) -> tuple:
    """Per-layer sliding windows as transformers 4.57 sets them (``()`` when every layer is full)."""
    if model_type == "llama":
        return ()
    if model_type == "mistral":
        window = raw.get("sliding_window")
        return () if window is None else (int(window),) * layers
    window = raw.get("sliding_window") if raw.get("use_sliding_window", False) else None
    types = raw.get("layer_types")
    if types is None:
        if window is None:
            return ()
        first = int(raw.get("max_window_layers", layers))
        types = ["sliding_attention" if i >= first else "full_attention" for i in range(layers)]
    if len(types) != layers or any(t not in ("sliding_attention", "full_attention") for t in types):
        raise located(path, f"expected {layers} entries of 'sliding_attention'/'full_attention', "
                            f"found {types!r}", field="layer_types")
    if window is None:
        if "sliding_attention" in types:  # transformers 4.57 fails on this at the first forward pass
            raise located(path, "layer_types has sliding_attention layers but no window is in force "
                                "(use_sliding_window false or sliding_window null)", field="layer_types")
        return ()
    return tuple(int(window) if t == "sliding_attention" else None for t in types)
