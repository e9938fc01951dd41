"""Pooling of hidden states ``[B, L, H]`` into one vector per sequence ``[B, H]``.

- ``mean``: average over tokens whose attention mask is 1 (sentence-transformers' mean pooling).
- ``cls``: the first token's hidden state.
- ``last``: the hidden state of the last non-padding token (causal decoders, STEB §4.2: "the only
  position with full sequence context"); correct for left and right padding.
- ``attention``: learned attention pooling, softmax over unmasked tokens of ``w . tanh(W h)``
  (parameters are trained with the rest of the model; randomly initialised otherwise).
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
from jax.sharding import Mesh

from stylebench_jax.encoders.bert import BertEncoder
from stylebench_jax.encoders.config import EncoderConfig
from stylebench_jax.encoders.decoder import CausalDecoder
from stylebench_jax.encoders.decoder_config import DecoderConfig

POOLING_MODES = ("mean", "cls", "attention")
DECODER_POOLING_MODES = ("last", "mean")


def mean_pool(hidden: jax.Array, mask: jax.Array) -> jax.Array:
    """``sum_t mask[b,t] h[b,t] / max(sum_t mask[b,t], 1e-9)`` -> ``[B, H]``."""
    mask = mask.astype(hidden.dtype)[..., None]
    return (hidden * mask).sum(axis=1) / jnp.clip(mask.sum(axis=1), 1e-9)


def last_token_pool(hidden: jax.Array, mask: jax.Array) -> jax.Array:
    """``h[b, t_b]`` with ``t_b`` the largest ``t`` where ``mask[b, t] == 1`` -> ``[B, H]``.

    ``t_b = L - 1 - argmax(reversed mask)``: the last real token whether padding is on the left
    (``t_b = L - 1``) or on the right (``t_b = sum(mask) - 1``).
    """
    length = mask.shape[1]
    last = length - 1 - jnp.argmax(mask[:, ::-1] > 0, axis=1)
    return jnp.take_along_axis(hidden, last[:, None, None], axis=1)[:, 0]


def l2_normalize(vectors: jax.Array, eps: float = 1e-12) -> jax.Array:
    """``v / max(||v||_2, eps)`` row-wise (as torch.nn.functional.normalize)."""
    return vectors / jnp.maximum(jnp.linalg.norm(vectors, axis=-1, keepdims=True), eps)


class AttentionPooling(nn.Module):
    hidden_size: int

    @nn.compact
    def __call__(self, hidden, mask):
        projected = jnp.tanh(nn.Dense(
            self.hidden_size, kernel_init=nn.with_logical_partitioning(
                nn.initializers.normal(0.02), ("embed", "mlp")), name="proj")(hidden))
        logits = nn.Dense(1, kernel_init=nn.with_logical_partitioning(
            nn.initializers.normal(0.02), ("mlp", None)), name="score")(projected)[..., 0]
        logits = jnp.where(mask > 0, logits.astype(jnp.float32), -1e9)
        weights = jax.nn.softmax(logits, axis=-1).astype(hidden.dtype)
        return jnp.einsum("bl,blh->bh", weights, hidden)


class ProjectionHead(nn.Module):
    """Writing7's optional projection head: Dense(``features``) -> GELU -> LayerNorm."""

    features: int

    @nn.compact
    def __call__(self, x):
        x = nn.Dense(self.features, name="dense", kernel_init=nn.with_logical_partitioning(
            nn.initializers.normal(0.02), ("embed", "mlp")),
            bias_init=nn.with_logical_partitioning(nn.initializers.zeros_init(), ("mlp",)))(x)
        x = jax.nn.gelu(x, approximate=False)
        return nn.LayerNorm(epsilon=1e-5, name="norm")(x)


class SentenceEncoder(nn.Module):
    """BERT encoder + pooling (+ optional projection head, + optional L2 normalisation):
    ``[B, L]`` ids -> ``[B, H]`` float32 (``H = projection_dim`` when set)."""

    config: EncoderConfig
    pooling: str = "mean"
    normalize: bool = True
    dtype: jnp.dtype = jnp.float32
    projection_dim: int | None = None
    dropout_rate: float = 0.0
    remat: bool = False
    attention_groups: int = 0  # ``bert.grouped_attention``: 0 whole batch, g: g sequences per step
    fused_attention: Mesh | str | None = None  # attention in kernels.cpu_attention (bert's docstring)
    attention_dropout_rate: float = 0.0  # attention-probability dropout in training (bert's docstring)

    def setup(self):
        if self.pooling not in POOLING_MODES:
            raise ValueError(f"pooling {self.pooling!r} not in {POOLING_MODES}")
        self.encoder = BertEncoder(self.config, self.dtype, self.dropout_rate, self.remat,
                                   self.attention_groups, self.fused_attention, self.attention_dropout_rate)
        if self.pooling == "attention":
            self.attention_pool = AttentionPooling(self.config.hidden_size)
        if self.projection_dim:
            self.projection = ProjectionHead(self.projection_dim)

    def __call__(self, input_ids, attention_mask, token_type_ids=None, deterministic: bool = True):
        hidden = self.encoder(input_ids, attention_mask, token_type_ids, deterministic)
        if self.pooling == "mean":  # float32 sums under bfloat16 compute (a no-op cast in float32)
            pooled = mean_pool(hidden.astype(jnp.float32), attention_mask)
        elif self.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            pooled = self.attention_pool(hidden, attention_mask)
        pooled = pooled.astype(jnp.float32)
        if self.projection_dim:
            pooled = self.projection(pooled)
        return l2_normalize(pooled) if self.normalize else pooled


class DecoderSentenceEncoder(nn.Module):
    """Causal decoder + ``last`` or ``mean`` pooling (+ optional L2): ``[B, L]`` ids -> ``[B, H]`` float32.

    ``last`` takes the compute-dtype hidden state; ``mean`` sums in float32 (more accurate than
    sentence-transformers' sum in the model dtype under bfloat16); both are returned as float32.
    """

    config: DecoderConfig
    pooling: str = "last"
    normalize: bool = True
    dtype: jnp.dtype = jnp.float32
    param_dtype: jnp.dtype = jnp.float32

    def setup(self):
        if self.pooling not in DECODER_POOLING_MODES:
            raise ValueError(f"pooling {self.pooling!r} not in {DECODER_POOLING_MODES}")
        self.decoder = CausalDecoder(self.config, self.dtype, self.param_dtype)

    def __call__(self, input_ids, attention_mask):
        hidden = self.decoder(input_ids, attention_mask)
        if self.pooling == "last":
            pooled = last_token_pool(hidden, attention_mask)
        else:
            pooled = mean_pool(hidden.astype(jnp.float32), attention_mask)
        pooled = pooled.astype(jnp.float32)
        return l2_normalize(pooled) if self.normalize else pooled
