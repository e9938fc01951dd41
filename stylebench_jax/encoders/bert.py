"""Flax (linen) BERT-family encoder with logically-named parameters.

Every kernel and embedding table carries logical axis names (``vocab``, ``embed``, ``heads``,
``kv``, ``mlp``); ``stylebench_jax.parallel.mesh.DEFAULT_RULES`` maps them to the ``data``/``model``
mesh axes, so the same module runs replicated, data-parallel or tensor-parallel (heads and MLP split
over ``model``, Megatron-style) without code changes.

Shapes: ``input_ids``/``attention_mask``/``token_type_ids`` are ``[B, L]`` int32; the encoder returns
hidden states ``[B, L, H]`` in the compute ``dtype`` (float32, or bfloat16 with LayerNorm statistics and
the attention softmax in float32). Post-LayerNorm blocks as in BERT/RoBERTa.

Training (``deterministic=False``, a ``dropout`` rng) applies hidden dropout where BERT does: after
the embedding LayerNorm's input sum, after the attention output projection and after the MLP
output; with ``attention_dropout_rate`` > 0 also on the attention probabilities (BERT's
``attention_probs_dropout_prob``; the trainer's ``model.attention_dropout``). The hidden masks come
from ``encoders.dropout`` (16-bit draws from XLA's bit generator: flax's threefry masks cost ~10% of a
CPU train step); the attention masks are counter-based draws (``encoders.dropout.attention_keep``)
that the C++ kernels regenerate in their forward and backward, so both attention paths drop the same
probabilities.
``remat=True`` rematerialises each layer in the backward pass (activation memory of one layer
instead of all).

Attention (``softmax_attention``) runs head-major (``[B, heads, L, head_dim]``, projected straight into
that layout) so both products are plain batched matrix products. ``attention_groups`` (see
``grouped_attention``): ``0`` computes the whole batch's scores ``[B, heads, L, L]`` at once
(accelerators); ``g >= 1`` computes them for ``g`` sequences at a time in a ``lax.map`` over ``B / g``
steps, which keeps the scores in the CPU's cache (64 x 12 x 256 x 256 float32 scores are 200 MB; one
sequence's are 3 MB): what XLA:CPU runs fastest. Same arithmetic, same outputs. ``fused_attention``
(a mesh, or ``cpu_attention.LOCAL`` inside the train step's ``shard_map``; the embedder and the
trainer set it on CPU, float32): attention runs instead in the C++ kernels of
``kernels.cpu_attention`` (one sequence and head at a time, the scores kept in cache; MiniLM on real
texts -3% to +15% sentences/s in three runs, 64 x 256 tokens ~13% faster), per shard of that mesh;
differentiable (a fused backward kernel).
"""

from __future__ import annotations

import functools
import math

import flax.linen as nn
import jax
import jax.numpy as jnp
from jax.sharding import Mesh

from stylebench_jax.encoders.config import EncoderConfig
from stylebench_jax.encoders.dropout import AttentionDropout, Dropout, attention_keep

_ACTIVATIONS = {
    "gelu": functools.partial(jax.nn.gelu, approximate=False),
    "gelu_new": functools.partial(jax.nn.gelu, approximate=True),
    "gelu_pytorch_tanh": functools.partial(jax.nn.gelu, approximate=True),
    "relu": jax.nn.relu,
}


def _init(axes, std=0.02):
    return nn.with_logical_partitioning(nn.initializers.normal(std), axes)


def _zeros(axes):
    return nn.with_logical_partitioning(nn.initializers.zeros_init(), axes)


def _ones(axes):
    return nn.with_logical_partitioning(nn.initializers.ones_init(), axes)


def _layer_norm(config: EncoderConfig, name: str) -> nn.LayerNorm:
    return nn.LayerNorm(epsilon=config.layer_norm_eps, name=name,
                        scale_init=_ones(("embed",)), bias_init=_zeros(("embed",)))


class Embeddings(nn.Module):
    config: EncoderConfig
    dtype: jnp.dtype = jnp.float32
    dropout_rate: float = 0.0

    @nn.compact
    def __call__(self, input_ids, token_type_ids, attention_mask, deterministic: bool = True):
        cfg = self.config
        word = nn.Embed(cfg.vocab_size, cfg.hidden_size, embedding_init=_init(("vocab", "embed")),
                        name="word_embeddings")
        position = nn.Embed(cfg.max_position_embeddings, cfg.hidden_size,
                            embedding_init=_init(("vocab", "embed")), name="position_embeddings")
        token_type = nn.Embed(cfg.type_vocab_size, cfg.hidden_size,
                              embedding_init=_init(("vocab", "embed")), name="token_type_embeddings")
        if cfg.position_offset:
            # RoBERTa: positions count only real tokens and start after the padding index.
            positions = jnp.cumsum(attention_mask, axis=1) * attention_mask + cfg.pad_token_id
        else:
            positions = jnp.broadcast_to(jnp.arange(input_ids.shape[1]), input_ids.shape)
        hidden = word(input_ids) + position(positions) + token_type(token_type_ids)
        hidden = _layer_norm(cfg, "LayerNorm")(hidden).astype(self.dtype)
        return Dropout(self.dropout_rate)(hidden, deterministic=deterministic)


def softmax_attention(query, key, value, bias, dropout: AttentionDropout | None = None, units=None):
    """``softmax(q k^T / sqrt(d) + bias) v`` per head: ``[B, heads, L, d]`` -> ``[B, heads, L, d]``.

    ``bias`` ``[B, 1, 1, L]`` additive (0 or -1e9). Scores and softmax in float32; the normalisation
    is applied after the ``p v`` product (dividing ``[L, d]`` instead of ``[L, L]``), as fused kernels do.
    The head-major layout lets both products run as batched matrix products without transposes.
    ``dropout``: attention-probability dropout (``encoders.dropout.attention_keep``: the C++ kernels'
    draws) of the attention units ``units`` (uint32 ``[B, heads]``, default ``b * heads + h``);
    kept probabilities are scaled by ``dropout.scale``, the softmax's sum is over all keys.
    """
    scale = query.shape[-1] ** -0.5
    scores = jnp.einsum("bnqd,bnkd->bnqk", query * jnp.asarray(scale, query.dtype), key,
                        preferred_element_type=jnp.float32) + bias
    weights = jnp.exp(scores - scores.max(axis=-1, keepdims=True))
    total = weights.sum(axis=-1, keepdims=True)
    if dropout is not None:
        if units is None:
            units = jnp.arange(query.shape[0] * query.shape[1], dtype=jnp.uint32).reshape(query.shape[:2])
        weights = jnp.where(attention_keep(dropout, units, query.shape[2]), weights, 0.0)
        total = total / dropout.scale
    context = jnp.einsum("bnqk,bnkd->bnqd", weights.astype(value.dtype), value,
                         preferred_element_type=jnp.float32)
    return (context / total).astype(value.dtype)


def map_row_groups(fn, args: tuple, width: int):
    """``fn`` over the ``[B, ...]`` arrays ``args``, ``width`` rows at a time, in a ``lax.map`` of
    ``B / width`` steps (``width`` divides ``B``); returns ``fn``'s ``[B, ...]`` output in row order.

    The batch is viewed as ``[width, B / width]`` (row ``b`` -> ``(b // (B / width), b % (B / width))``),
    so each step takes one row from each of ``width`` contiguous row blocks. Sharding-safe when
    ``width`` is a multiple of the mesh's ``data`` size: a ``data``-sharded batch axis holds contiguous
    row blocks, so the ``width`` axis carries the data sharding and the mapped axis is local to every
    device (no gathering). Used for attention (``grouped_attention``) and, by the embedder on CPU, for
    the whole forward pass (``encoders.neural.micro_batch_rows``)."""
    batch = args[0].shape[0]
    steps = batch // width

    def split(x):  # [B, ...] -> [B/width, width, ...]
        return x.reshape(width, steps, *x.shape[1:]).swapaxes(0, 1)

    out = jax.lax.map(lambda group: fn(*group), tuple(split(x) for x in args))
    return out.swapaxes(0, 1).reshape(batch, *out.shape[2:])


def grouped_attention(query, key, value, bias, groups: int, dropout: AttentionDropout | None = None):
    """``softmax_attention`` of ``[B, heads, L, d]`` inputs, ``groups`` sequences at a time.

    ``groups == 0``: the whole batch at once. ``groups = g >= 1`` (``gcd(g, B)`` is used, so any batch
    works; the embedders' batches are multiples of ``g``): ``map_row_groups`` runs ``B / g`` steps, each
    attending ``g`` sequences; sharding-safe when ``g`` is a multiple of the mesh's ``data`` size (heads
    keep their ``model`` sharding). Same arithmetic either way (``dropout``'s units keep their batch
    row's index).
    """
    if groups == 0:
        return softmax_attention(query, key, value, bias, dropout)
    if dropout is None:
        return map_row_groups(softmax_attention, (query, key, value, bias), math.gcd(query.shape[0], groups))
    units = jnp.arange(query.shape[0] * query.shape[1], dtype=jnp.uint32).reshape(query.shape[:2])
    return map_row_groups(lambda q, k, v, b, u: softmax_attention(q, k, v, b, dropout, u),
                          (query, key, value, bias, units), math.gcd(query.shape[0], groups))


class HeadProjection(nn.Module):
    """``[B, L, H]`` -> ``[B, heads, L, head_dim]``; parameters as ``nn.DenseGeneral``'s with
    ``features=(heads, head_dim)`` (kernel ``[H, heads, head_dim]``, bias ``[heads, head_dim]``), so
    checkpoints map the same, but the output is head-major for ``softmax_attention``."""

    num_heads: int
    head_dim: int
    dtype: jnp.dtype = jnp.float32

    @nn.compact
    def __call__(self, hidden):
        kernel = self.param("kernel", _init(("embed", "heads", "kv")),
                            (hidden.shape[-1], self.num_heads, self.head_dim))
        bias = self.param("bias", _zeros(("heads", "kv")), (self.num_heads, self.head_dim))
        hidden, kernel, bias = nn.dtypes.promote_dtype(hidden, kernel, bias, dtype=self.dtype)
        return jnp.einsum("bld,dnh->bnlh", hidden, kernel) + bias[None, :, None, :]


class HeadMerge(nn.Module):
    """``[B, heads, L, head_dim]`` -> ``[B, L, H]``; parameters as ``nn.DenseGeneral``'s with
    ``axis=(-2, -1)`` on ``[B, L, heads, head_dim]`` (kernel ``[heads, head_dim, H]``, bias ``[H]``)."""

    features: int
    dtype: jnp.dtype = jnp.float32

    @nn.compact
    def __call__(self, context):
        kernel = self.param("kernel", _init(("heads", "kv", "embed")),
                            (context.shape[1], context.shape[3], self.features))
        bias = self.param("bias", _zeros(("embed",)), (self.features,))
        context, kernel, bias = nn.dtypes.promote_dtype(context, kernel, bias, dtype=self.dtype)
        return jnp.einsum("bnlh,nhd->bld", context, kernel) + bias


class SelfAttention(nn.Module):
    config: EncoderConfig
    dtype: jnp.dtype = jnp.float32
    attention_groups: int = 0
    fused_attention: Mesh | str | None = None  # kernels.cpu_attention over this mesh (module docstring)
    dropout_rate: float = 0.0  # attention-probability dropout (training; module docstring)

    @nn.compact
    def __call__(self, hidden, mask_bias, deterministic: bool = True):
        cfg = self.config
        query, key, value = (HeadProjection(cfg.num_heads, cfg.head_dim, self.dtype, name=name)(hidden)
                             for name in ("query", "key", "value"))
        dropout = None
        if not deterministic and self.dropout_rate > 0.0:
            dropout = AttentionDropout.draw(self.make_rng("dropout"), self.dropout_rate)
        if self.fused_attention is not None:
            from stylebench_jax.kernels.cpu_attention import fused_attention

            context = fused_attention(query, key, value, mask_bias, self.fused_attention, dropout)
        else:
            context = grouped_attention(query, key, value, mask_bias, self.attention_groups, dropout)
        return HeadMerge(cfg.hidden_size, self.dtype, name="output")(context)


class Layer(nn.Module):
    config: EncoderConfig
    dtype: jnp.dtype = jnp.float32
    dropout_rate: float = 0.0
    attention_groups: int = 0
    fused_attention: Mesh | str | None = None
    attention_dropout_rate: float = 0.0

    @nn.compact
    def __call__(self, hidden, mask_bias, deterministic: bool = True):
        cfg = self.config
        attended = SelfAttention(cfg, self.dtype, self.attention_groups, self.fused_attention,
                                 self.attention_dropout_rate, name="attention")(
            hidden, mask_bias, deterministic)
        attended = Dropout(self.dropout_rate)(attended, deterministic=deterministic)
        hidden = _layer_norm(cfg, "attention_norm")(hidden + attended).astype(self.dtype)
        inner = nn.Dense(cfg.intermediate_size, dtype=self.dtype, kernel_init=_init(("embed", "mlp")),
                         bias_init=_zeros(("mlp",)), name="intermediate")(hidden)
        inner = _ACTIVATIONS[cfg.hidden_act](inner)
        out = nn.Dense(cfg.hidden_size, dtype=self.dtype, kernel_init=_init(("mlp", "embed")),
                       bias_init=_zeros(("embed",)), name="output")(inner)
        out = Dropout(self.dropout_rate)(out, deterministic=deterministic)
        return _layer_norm(cfg, "output_norm")(hidden + out).astype(self.dtype)


class BertEncoder(nn.Module):
    """Token embeddings + ``num_layers`` transformer blocks; returns ``[B, L, H]`` hidden states."""

    config: EncoderConfig
    dtype: jnp.dtype = jnp.float32
    dropout_rate: float = 0.0
    remat: bool = False
    attention_groups: int = 0  # see ``grouped_attention``; 0: whole batch at once
    fused_attention: Mesh | str | None = None  # kernels.cpu_attention over this mesh (module docstring)
    attention_dropout_rate: float = 0.0  # attention-probability dropout (module docstring)

    @nn.compact
    def __call__(self, input_ids, attention_mask, token_type_ids=None, deterministic: bool = True):
        if token_type_ids is None:
            token_type_ids = jnp.zeros_like(input_ids)
        hidden = Embeddings(self.config, self.dtype, self.dropout_rate, name="embeddings")(
            input_ids, token_type_ids, attention_mask, deterministic)
        # Additive mask [B, 1, 1, L]: padded keys get a large negative score (finite, so an
        # all-padding row cannot produce NaN).
        mask_bias = jnp.where(attention_mask[:, None, None, :] > 0, 0.0, -1e9).astype(jnp.float32)
        layer = nn.remat(Layer, static_argnums=(3,)) if self.remat else Layer
        for index in range(self.config.num_layers):
            hidden = layer(self.config, self.dtype, self.dropout_rate, self.attention_groups,
                           self.fused_attention, self.attention_dropout_rate, name=f"layer_{index}")(
                hidden, mask_bias, deterministic)
        return hidden
