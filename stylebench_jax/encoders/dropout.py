"""Dropout for training the encoders and heads: 16-bit keep decisions from XLA's bit generator.

``flax.linen.Dropout`` draws one 32-bit word per element with JAX's default threefry generator.
On CPUs that generator dominates: a keep mask for a MiniLM train step (13 masks of 32 x 128 x 384
elements) cost ~0.45-0.6 s of a 4-5.5 s step on the 2-core EPYC (step with and without dropout).
Here each 32-bit word gives two 16-bit decisions and the words come from XLA's ``RngBitGenerator``
(JAX's ``rbg`` key type, seeded from the module's threefry ``dropout`` key): ~3.3x less generator
work per element, 1.65x from the generator (measured: a 5 x 10^7-element Bernoulli mask 0.66 s
with ``rbg`` vs 1.09 s with threefry) times 2 from half as many words (not timed apart).

An element is kept when its 16-bit draw ``u`` is ``>= t``, ``t = round(rate * 2^16)``, so the keep
probability is ``1 - t / 2^16`` (0.8999939 for ``rate`` 0.1); kept values are divided by that exact
probability, so the layer is unbiased in expectation like ``flax.linen.Dropout``. The masks differ
from flax's (another generator): a run is reproducible with the same seed on the same backend and
JAX version, as XLA's bit generator does not promise the same bits across backends or versions.

Attention-probability dropout (BERT's ``attention_probs_dropout_prob``, ``AttentionDropout``) is a
counter-based draw instead: element ``(i, j)`` of attention unit ``u = b * heads + h`` (query ``i``,
key ``j``) is kept when ``attention_draws`` (32 bits from MurmurHash3's finaliser applied to the
seed, ``u``, ``i`` and ``j``; the formula in ``kernels/cpu_attention.cc``'s header) is
``>= attention_threshold(rate)``. The C++ attention kernels compute the same draws without storing a
mask (the backward regenerates the forward's, key-major); XLA's attention
(``encoders.bert.softmax_attention``) computes them here, so both paths drop the same elements.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

DRAW_BITS = 16
DRAW_RANGE = 1 << DRAW_BITS


def keep_threshold(rate: float) -> int:
    """``t`` of the module docstring: an element is kept when its 16-bit draw is ``>= t``."""
    if not 0.0 <= rate < 1.0:
        raise ValueError(f"dropout rate: expected 0 <= rate < 1, found {rate}")
    return int(round(rate * DRAW_RANGE))


def keep_mask(key: jax.Array, shape: tuple[int, ...], rate: float) -> jax.Array:
    """Boolean ``shape``: True with probability ``1 - keep_threshold(rate) / 2^16`` per element,
    independently; two elements per 32-bit word (low and high halves fill the two halves of the
    last axis)."""
    threshold = keep_threshold(rate)
    *lead, width = shape
    half = (width + 1) // 2
    state = jax.random.bits(key, (4,), jnp.uint32)  # seeds XLA's generator from any key type
    words = jax.random.bits(jax.random.wrap_key_data(state, impl="rbg"), (*lead, half), jnp.uint32)
    draws = jnp.concatenate([words & (DRAW_RANGE - 1), words >> DRAW_BITS], axis=-1)[..., :width]
    return draws >= threshold


class Dropout(nn.Module):
    """Inverted dropout with :func:`keep_mask` (the ``dropout`` rng collection, as flax's)."""

    rate: float

    @nn.compact
    def __call__(self, x: jax.Array, deterministic: bool = True) -> jax.Array:
        if deterministic or self.rate == 0.0 or math.prod(x.shape) == 0:
            return x
        keep = keep_mask(self.make_rng("dropout"), x.shape, self.rate)
        probability = 1.0 - keep_threshold(self.rate) / DRAW_RANGE
        return jnp.where(keep, x / jnp.asarray(probability, x.dtype), jnp.zeros((), x.dtype))


# ----------------------------------------------------------------- attention-probability dropout

GOLDEN = 0x9E3779B9  # kernels/cpu_attention.cc: unit and row steps
COLUMN, COLUMN_OFFSET = 0x85EBCA77, 0x27D4EB2F  # column keys j * COLUMN + COLUMN_OFFSET


class AttentionDropout(NamedTuple):
    """One call's attention dropout: ``seed`` u32[2] (from the module's ``dropout`` rng) and
    ``threshold`` (``attention_threshold(rate)``, a Python int; draws below it are dropped)."""

    seed: jax.Array
    threshold: int

    @property
    def scale(self) -> float:
        """``1 / (1 - threshold / 2^32)``: what kept probabilities are multiplied by (a float32,
        rounded from float64 as the kernel rounds it)."""
        return float(np.float32(1.0 / (1.0 - self.threshold / 2.0**32)))

    @classmethod
    def draw(cls, key: jax.Array, rate: float) -> AttentionDropout:
        return cls(jax.random.bits(key, (2,), jnp.uint32), attention_threshold(rate))


def attention_threshold(rate: float) -> int:
    """``round(rate * 2^32)``: a 32-bit draw below it drops its element (keep probability
    ``1 - threshold / 2^32``)."""
    if not 0.0 <= rate < 1.0:
        raise ValueError(f"attention dropout rate: expected 0 <= rate < 1, found {rate}")
    return min(int(round(rate * 2.0**32)), 2**32 - 1)


def _fmix32(x: jax.Array) -> jax.Array:
    """MurmurHash3's 32-bit finaliser on uint32 arrays (products wrap modulo 2^32)."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x85EBCA6B)
    x = x ^ (x >> 13)
    x = x * jnp.uint32(0xC2B2AE35)
    return x ^ (x >> 16)


def attention_draws(seed: jax.Array, units: jax.Array, length: int) -> jax.Array:
    """uint32 ``[*units.shape, length, length]``: the draw of element ``(i, j)`` of each attention unit
    (``units``: uint32 unit indices ``b * heads + h``, e.g. ``[B, heads]``)."""
    seed = seed.astype(jnp.uint32)
    unit_key = _fmix32(seed[0] ^ _fmix32(seed[1] + units.astype(jnp.uint32) * jnp.uint32(GOLDEN)))
    positions = jnp.arange(length, dtype=jnp.uint32)
    rows = _fmix32(unit_key[..., None] + positions * jnp.uint32(GOLDEN))  # [..., L]
    columns = positions * jnp.uint32(COLUMN) + jnp.uint32(COLUMN_OFFSET)
    return _fmix32(rows[..., :, None] ^ columns)


def attention_keep(dropout: AttentionDropout, units: jax.Array, length: int) -> jax.Array:
    """Boolean ``[*units.shape, length, length]``: which attention probabilities ``dropout`` keeps."""
    return attention_draws(dropout.seed, units, length) >= jnp.uint32(dropout.threshold)
