"""Dropout for training the encoders and heads: counter-based keep decisions, a hash of each
element's index and the call's seed.

``flax.linen.Dropout`` draws one 32-bit word per element with JAX's threefry generator; on CPUs that
dominated: the keep masks of a MiniLM train step (13 masks of 32 x 128 x 384 elements) cost
~0.45-0.6 s of a 4-5.5 s step on the 2-core EPYC. 16-bit halves of XLA's ``RngBitGenerator`` words
(the previous version of this module) still took ~0.2 s of a ~3.3 s step (jax.profiler: the generator
calls and the concatenation of the halves). Here element ``n`` (its index in the flattened array)
draws

    draw(n) = fmix32(fmix32(n * 0x9E3779B9 + seed[1]) ^ seed[0])

(``fmix32``: MurmurHash3's 32-bit finaliser, a bijection with full avalanche; ``seed``: two words
from the module's ``dropout`` key), plain integer arithmetic that XLA fuses into the mask's consumer:
12 masks of 32 x 128 x 384 applied to activations in a jitted call took 5.7 ms against 174 ms for
the 16-bit generator masks (best of 7, 2026-11-27, same machine). An element is kept when its draw is
``>= t``, ``t = keep_threshold(rate) = round(rate * 2^32)``, so the keep probability is ``1 - t /
2^32``; kept values are divided by it (unbiased in expectation like ``flax.linen.Dropout``). A hash is
not a cryptographic generator; what dropout needs is the keep rate and no correlation between
elements, rows and calls (tests/encoders/test_dropout.py checks them). The masks differ from flax's;
the same seed gives the same bits on every backend and JAX version (integer arithmetic only).

Attention-probability dropout (BERT's ``attention_probs_dropout_prob``, ``AttentionDropout``) is a
counter-based draw too, structured for the attention kernels: element ``(i, j)`` of attention unit
``u = b * heads + h`` (query ``i``, key ``j``) is kept when ``attention_draws`` (32 bits from
MurmurHash3's finaliser applied to the seed, ``u``, ``i`` and ``j``; the formula in
``kernels/cpu_attention.cc``'s header) is ``>= keep_threshold(rate)``. The C++ attention kernels
compute the same draws without storing a mask (the backward regenerates the forward's, key-major);
XLA's attention (``encoders.bert.softmax_attention``) computes them here, so both paths drop the
same elements.
"""

from __future__ import annotations

import dataclasses
import math

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

GOLDEN = 0x9E3779B9  # odd: n * GOLDEN is a bijection of the 32-bit counters
MAX_ELEMENTS = 1 << 32  # flat indices are 32-bit counters


def keep_threshold(rate: float) -> int:
    """``round(rate * 2^32)``: an element whose 32-bit draw is below it is dropped (keep probability
    ``1 - threshold / 2^32``)."""
    if not 0.0 <= rate < 1.0:
        raise ValueError(f"dropout rate: expected 0 <= rate < 1, found {rate}")
    return min(int(round(rate * 2.0**32)), MAX_ELEMENTS - 1)


def keep_probability(rate: float) -> float:
    """``1 - keep_threshold(rate) / 2^32``: what kept values are divided by."""
    return 1.0 - keep_threshold(rate) / 2.0**32


def _fmix32(x: jax.Array) -> jax.Array:
    """MurmurHash3's 32-bit finaliser on uint32 arrays (products wrap modulo 2^32)."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x85EBCA6B)
    x = x ^ (x >> 13)
    x = x * jnp.uint32(0xC2B2AE35)
    return x ^ (x >> 16)


def _keyed(seed: jax.Array, counters: jax.Array) -> jax.Array:
    """``fmix32(seed[0] ^ fmix32(seed[1] + counter * GOLDEN))`` of uint32 ``counters``: the hidden
    dropout's draws, and the attention draws' unit keys (kernels/cpu_attention.cc's ``unit_key``)."""
    seed = seed.astype(jnp.uint32)
    return _fmix32(seed[0] ^ _fmix32(seed[1] + counters.astype(jnp.uint32) * jnp.uint32(GOLDEN)))


def element_draws(seed: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """uint32 ``shape``: ``draw(n)`` of the module docstring for each element's flat index ``n``."""
    size = math.prod(shape)
    if size > MAX_ELEMENTS:
        raise ValueError(f"dropout: an array of {size} elements exceeds the 2^32 counters of one draw")
    return _keyed(seed, jnp.arange(size, dtype=jnp.uint32).reshape(shape))


def keep_mask(key: jax.Array, shape: tuple[int, ...], rate: float) -> jax.Array:
    """Boolean ``shape``: True with probability ``1 - keep_threshold(rate) / 2^32`` per element
    (the draws of ``element_draws`` with the seed ``jax.random.bits(key, (2,), uint32)``)."""
    seed = jax.random.bits(key, (2,), jnp.uint32)
    return element_draws(seed, shape) >= jnp.uint32(keep_threshold(rate))


class Dropout(nn.Module):
    """Inverted dropout with :func:`keep_mask` (the ``dropout`` rng collection, as flax's)."""

    rate: float

    @nn.compact
    def __call__(self, x: jax.Array, deterministic: bool = True) -> jax.Array:
        if deterministic or self.rate == 0.0 or math.prod(x.shape) == 0:
            return x
        keep = keep_mask(self.make_rng("dropout"), x.shape, self.rate)
        # divided in float32 (bfloat16's 0.9 is 0.8984: 0.17% too much) and rounded once
        kept = (x.astype(jnp.float32) / np.float32(keep_probability(self.rate))).astype(x.dtype)
        return jnp.where(keep, kept, jnp.zeros((), x.dtype))


# ----------------------------------------------------------------- attention-probability dropout

COLUMN, COLUMN_OFFSET = 0x85EBCA77, 0x27D4EB2F  # column keys j * COLUMN + COLUMN_OFFSET


@dataclasses.dataclass(frozen=True)
class AttentionDropout:
    """One call's attention dropout: ``seed`` u32[2] (from the module's ``dropout`` rng) and
    ``threshold`` (``keep_threshold(rate)``, a Python int; draws below it are dropped). Not a pytree:
    closed over, never traced, so ``threshold`` stays a static int."""

    seed: jax.Array
    threshold: int

    @property
    def scale(self) -> float:
        """``1 / (1 - threshold / 2^32)``: what kept probabilities are multiplied by (a float32,
        rounded from float64 as the kernel rounds it)."""
        return float(np.float32(1.0 / (1.0 - self.threshold / 2.0**32)))

    @classmethod
    def draw(cls, key: jax.Array, rate: float) -> AttentionDropout:
        return cls(jax.random.bits(key, (2,), jnp.uint32), keep_threshold(rate))


def attention_draws(seed: jax.Array, units: jax.Array, length: int) -> jax.Array:
    """uint32 ``[*units.shape, length, length]``: the draw of element ``(i, j)`` of each attention unit
    (``units``: uint32 unit indices ``b * heads + h``, e.g. ``[B, heads]``)."""
    unit_key = _keyed(seed, units)
    positions = jnp.arange(length, dtype=jnp.uint32)
    rows = _fmix32(unit_key[..., None] + positions * jnp.uint32(GOLDEN))  # [..., L]
    columns = positions * jnp.uint32(COLUMN) + jnp.uint32(COLUMN_OFFSET)
    return _fmix32(rows[..., :, None] ^ columns)


def attention_keep(dropout: AttentionDropout, units: jax.Array, length: int) -> jax.Array:
    """Boolean ``[*units.shape, length, length]``: which attention probabilities ``dropout`` keeps."""
    return attention_draws(dropout.seed, units, length) >= jnp.uint32(dropout.threshold)
