"""Flax (linen) causal decoders: Llama / Mistral / Qwen2 / Qwen3 blocks and GPT-2 blocks, config-driven.

Every parameter carries logical axis names of ``stylebench_jax.parallel.mesh.DEFAULT_RULES``:
``vocab``/``embed`` for tables, ``heads``/``kv`` for query and output projections, ``kv_heads``/``kv``
for grouped key/value projections, ``mlp`` for the feed-forward, so the same module runs replicated,
data-parallel or tensor-parallel (Megatron-style: column-parallel in, row-parallel out).

Shapes: ``input_ids``/``attention_mask`` ``[B, L]`` int32 (mask 1 = real token, 0 = padding, on the
left or on the right); returns the last hidden states ``[B, L, H]`` in the compute dtype, after the
final norm (transformers' ``last_hidden_state``).

Positions are counted over real tokens only (``cumsum(mask) - 1``, as transformers' ``generate``
does for left padding), so a sequence gets the same hidden states whatever padding surrounds it.
A plain transformers forward without ``position_ids`` counts padding too; the reference vectors of
our parity fixtures are therefore computed per sequence without padding (or with explicit positions).
"""

from __future__ import annotations

import functools

import flax.linen as nn
import jax
import jax.numpy as jnp

from stylebench_jax.encoders.bert import _init, _ones, _zeros
from stylebench_jax.encoders.decoder_config import DecoderConfig

_ACTIVATIONS = {
    "silu": jax.nn.silu,
    "gelu": functools.partial(jax.nn.gelu, approximate=False),
    "gelu_new": functools.partial(jax.nn.gelu, approximate=True),
    "gelu_pytorch_tanh": functools.partial(jax.nn.gelu, approximate=True),
}


def positions_from_mask(attention_mask: jax.Array) -> jax.Array:
    """``[B, L]`` int32 position of each token among the real tokens (padding gets 0)."""
    return jnp.maximum(jnp.cumsum(attention_mask, axis=1) - 1, 0).astype(jnp.int32)


def attention_mask_4d(attention_mask: jax.Array, positions: jax.Array, window: int | None) -> jax.Array:
    """``[B, 1, L, L]`` bool: query ``i`` sees key ``j`` iff ``j <= i``, key ``j`` is real and (with a
    sliding window ``w``) ``pos[i] - pos[j] < w`` (transformers: ``kv_idx > q_idx - sliding_window``).

    Padding is contiguous (left or right), so index order and real-token order agree. A padding query
    may see no key; ``dot_product_attention`` then averages uniformly (finite), and pooling ignores it.
    """
    length = attention_mask.shape[1]
    index = jnp.arange(length)
    visible = (index[None, :] <= index[:, None])[None] & (attention_mask[:, None, :] > 0)
    if window is not None:
        visible &= (positions[:, :, None] - positions[:, None, :]) < window
    return visible[:, None]


def rotary_tables(positions: jax.Array, inverse_frequencies, dtype) -> tuple[jax.Array, jax.Array]:
    """``cos, sin`` ``[B, L, 1, D]``: angles ``pos * inv_freq`` in float32, duplicated over both
    halves of the head (transformers' non-interleaved ``rotate_half`` layout), cast to ``dtype``."""
    angles = positions[..., None].astype(jnp.float32) * jnp.asarray(inverse_frequencies)
    angles = jnp.concatenate([angles, angles], axis=-1)[:, :, None, :]
    return jnp.cos(angles).astype(dtype), jnp.sin(angles).astype(dtype)


def apply_rotary(x: jax.Array, cos: jax.Array, sin: jax.Array) -> jax.Array:
    """``x * cos + rotate_half(x) * sin`` with ``rotate_half([a, b]) = [-b, a]`` over the head dim."""
    half = x.shape[-1] // 2
    rotated = jnp.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos + rotated * sin


class RMSNorm(nn.Module):
    """``scale * (x / sqrt(mean(x^2) + eps))`` computed in float32, cast back before the scale (Llama)."""

    eps: float
    dtype: jnp.dtype = jnp.float32
    param_dtype: jnp.dtype = jnp.float32
    axis_name: str = "embed"

    @nn.compact
    def __call__(self, x):
        scale = self.param("scale", _ones((self.axis_name,)), (x.shape[-1],), self.param_dtype)
        x32 = x.astype(jnp.float32)
        normed = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + self.eps)
        return (scale.astype(self.dtype) * normed.astype(self.dtype)).astype(self.dtype)


def _dense_general(features, axes, bias_axes, use_bias, dtype, param_dtype, name, axis=-1):
    return nn.DenseGeneral(features=features, axis=axis, use_bias=use_bias, dtype=dtype,
                           param_dtype=param_dtype, kernel_init=_init(axes), bias_init=_zeros(bias_axes),
                           name=name)


class DecoderAttention(nn.Module):
    """Causal (grouped-query) self-attention; RoPE for the Llama family, none for GPT-2."""

    config: DecoderConfig
    layer: int
    dtype: jnp.dtype = jnp.float32
    param_dtype: jnp.dtype = jnp.float32

    @nn.compact
    def __call__(self, hidden, mask, rotary):
        cfg = self.config
        kv_axes = "heads" if cfg.family == "gpt2" else "kv_heads"
        q = _dense_general((cfg.num_heads, cfg.head_dim), ("embed", "heads", "kv"), ("heads", "kv"),
                           cfg.qkv_bias, self.dtype, self.param_dtype, "q_proj")(hidden)
        k = _dense_general((cfg.num_kv_heads, cfg.head_dim), ("embed", kv_axes, "kv"), (kv_axes, "kv"),
                           cfg.qkv_bias, self.dtype, self.param_dtype, "k_proj")(hidden)
        v = _dense_general((cfg.num_kv_heads, cfg.head_dim), ("embed", kv_axes, "kv"), (kv_axes, "kv"),
                           cfg.qkv_bias, self.dtype, self.param_dtype, "v_proj")(hidden)
        if cfg.qk_norm:  # Qwen3: RMSNorm over each head's dimensions, before RoPE
            q = RMSNorm(cfg.norm_eps, self.dtype, self.param_dtype, "kv", name="q_norm")(q)
            k = RMSNorm(cfg.norm_eps, self.dtype, self.param_dtype, "kv", name="k_norm")(k)
        if rotary is not None:
            cos, sin = rotary
            q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        context = jax.nn.dot_product_attention(q, k, v, mask=mask, scale=cfg.head_dim ** -0.5)
        return _dense_general(cfg.hidden_size, ("heads", "kv", "embed"), ("embed",), cfg.o_bias, self.dtype,
                              self.param_dtype, "o_proj", axis=(-2, -1))(context)


class DecoderMLP(nn.Module):
    """SwiGLU ``down(act(gate(x)) * up(x))`` (Llama family) or ``proj(act(fc(x)))`` (GPT-2)."""

    config: DecoderConfig
    dtype: jnp.dtype = jnp.float32
    param_dtype: jnp.dtype = jnp.float32

    @nn.compact
    def __call__(self, hidden):
        cfg = self.config
        dense = functools.partial(nn.Dense, use_bias=cfg.mlp_bias, dtype=self.dtype,
                                  param_dtype=self.param_dtype)
        act = _ACTIVATIONS[cfg.hidden_act]
        up_init = dict(kernel_init=_init(("embed", "mlp")), bias_init=_zeros(("mlp",)))
        if cfg.family == "gpt2":
            inner = act(dense(cfg.intermediate_size, name="fc", **up_init)(hidden))
        else:
            gate = dense(cfg.intermediate_size, name="gate_proj", **up_init)(hidden)
            inner = act(gate) * dense(cfg.intermediate_size, name="up_proj", **up_init)(hidden)
        return dense(cfg.hidden_size, kernel_init=_init(("mlp", "embed")), bias_init=_zeros(("embed",)),
                     name="down_proj")(inner)


class DecoderBlock(nn.Module):
    """Pre-norm block: ``h + attn(norm1(h))``, then ``h + mlp(norm2(h))``."""

    config: DecoderConfig
    layer: int
    dtype: jnp.dtype = jnp.float32
    param_dtype: jnp.dtype = jnp.float32

    def _norm(self, name):
        cfg = self.config
        if cfg.family == "gpt2":
            return nn.LayerNorm(epsilon=cfg.norm_eps, dtype=self.dtype, param_dtype=self.param_dtype,
                                scale_init=_ones(("embed",)), bias_init=_zeros(("embed",)), name=name)
        return RMSNorm(cfg.norm_eps, self.dtype, self.param_dtype, name=name)

    @nn.compact
    def __call__(self, hidden, mask, rotary):
        attended = DecoderAttention(self.config, self.layer, self.dtype, self.param_dtype, name="self_attn")(
            self._norm("input_layernorm")(hidden), mask, rotary)
        hidden = hidden + attended
        return hidden + DecoderMLP(self.config, self.dtype, self.param_dtype, name="mlp")(
            self._norm("post_attention_layernorm")(hidden))


class CausalDecoder(nn.Module):
    """Token embeddings + ``num_layers`` decoder blocks + final norm -> ``[B, L, H]`` hidden states."""

    config: DecoderConfig
    dtype: jnp.dtype = jnp.float32
    param_dtype: jnp.dtype = jnp.float32

    @nn.compact
    def __call__(self, input_ids, attention_mask):
        cfg = self.config
        embed = functools.partial(nn.Embed, features=cfg.hidden_size, dtype=self.dtype,
                                  param_dtype=self.param_dtype, embedding_init=_init(("vocab", "embed")))
        positions = positions_from_mask(attention_mask)
        hidden = embed(cfg.vocab_size, name="embed_tokens")(input_ids)
        rotary = None
        if cfg.family == "gpt2":
            hidden = hidden + embed(cfg.max_position_embeddings, name="embed_positions")(positions)
        else:
            rotary = rotary_tables(positions, cfg.inverse_frequencies(), self.dtype)
        masks = {}
        for index in range(cfg.num_layers):
            window = cfg.window(index)
            if window not in masks:
                masks[window] = attention_mask_4d(attention_mask, positions, window)
            hidden = DecoderBlock(cfg, index, self.dtype, self.param_dtype, name=f"layers_{index}")(
                hidden, masks[window], rotary)
        if cfg.family == "gpt2":
            final = nn.LayerNorm(epsilon=cfg.norm_eps, dtype=self.dtype, param_dtype=self.param_dtype,
                                 scale_init=_ones(("embed",)), bias_init=_zeros(("embed",)), name="norm")
        else:
            final = RMSNorm(cfg.norm_eps, self.dtype, self.param_dtype, name="norm")
        return final(hidden)
