"""The encoders' dropout: keep rate, no correlation between neighbouring elements, rows and seeds,
unbiasedness, identity when off, reproducibility per key, the draw formulas (hidden and attention)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from stylebench_jax.encoders.dropout import (
    AttentionDropout,
    Dropout,
    attention_draws,
    attention_keep,
    element_draws,
    keep_mask,
    keep_probability,
    keep_threshold,
)


def test_keep_rate_and_no_correlation():
    """Keep rate within 5 standard errors over 10^6 draws; neighbouring elements, rows and two keys
    agree at the independent rate p^2 + (1-p)^2 (no correlation)."""
    rate = 0.1
    mask = np.asarray(keep_mask(jax.random.key(3), (500, 2048), rate))
    expected = keep_probability(rate)
    assert keep_threshold(rate) == 429496730 and abs(expected - 0.9) < 1e-9
    assert abs(mask.mean() - expected) < 5 * np.sqrt(expected * (1 - expected) / mask.size)
    same = expected**2 + (1 - expected)**2
    other = np.asarray(keep_mask(jax.random.key(4), (500, 2048), rate))
    for a, b in ((mask[:, :-1], mask[:, 1:]), (mask[:-1], mask[1:]), (mask, other)):
        assert abs((a == b).mean() - same) < 5 * np.sqrt(same * (1 - same) / a.size)
    for a, b in ((mask[:, :-1], mask[:, 1:]), (mask[:-1], mask[1:])):
        correlation = np.corrcoef(a.astype(float).ravel(), b.astype(float).ravel())[0, 1]
        assert abs(correlation) < 5 / np.sqrt(a.size)


def test_same_key_same_mask_other_key_other_mask_odd_width():
    a = keep_mask(jax.random.key(0), (4, 7), 0.5)
    b = keep_mask(jax.random.key(0), (4, 7), 0.5)
    c = keep_mask(jax.random.key(1), (4, 7), 0.5)
    assert a.shape == (4, 7) and a.dtype == jnp.bool_
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_dropout_unbiased_and_identity_when_off():
    x = jnp.ones((400, 1000), jnp.float32)
    layer = Dropout(0.1)
    y = layer.apply({}, x, False, rngs={"dropout": jax.random.key(5)})
    kept = np.asarray(y) != 0
    np.testing.assert_allclose(np.asarray(y)[kept], 1 / keep_probability(0.1), rtol=1e-6)
    assert abs(float(y.mean()) - 1.0) < 5 * np.sqrt(0.1 / 0.9 / x.size)
    np.testing.assert_array_equal(layer.apply({}, x, True), x)
    np.testing.assert_array_equal(Dropout(0.0).apply({}, x, False), x)
    with pytest.raises(ValueError, match="dropout rate"):
        keep_threshold(1.0)


def _fmix32(x: int) -> int:
    x ^= x >> 16
    x = (x * 0x85EBCA6B) & 0xFFFFFFFF
    x ^= x >> 13
    x = (x * 0xC2B2AE35) & 0xFFFFFFFF
    return x ^ (x >> 16)


def test_element_draws_follow_the_formula():
    """The hidden dropout's draws equal the module docstring's formula in Python integers."""
    seed = np.array([0x12345678, 0x9ABCDEF0], np.uint32)
    draws = np.asarray(element_draws(jnp.asarray(seed), (3, 5)))
    for n in range(15):
        inner = _fmix32((n * 0x9E3779B9 + int(seed[1])) & 0xFFFFFFFF)
        assert draws.ravel()[n] == _fmix32(inner ^ int(seed[0])), n


def test_attention_draws_follow_the_kernel_formula():
    """The jnp draws equal the formula of cpu_attention.cc's header computed with Python integers
    (the C++ kernels compute the same function: tests/kernels compare the two paths)."""
    seed = np.array([0xDEADBEEF, 12345], np.uint32)
    units = np.array([[0, 1, 2], [3, 4, 5000]], np.uint32)
    draws = np.asarray(attention_draws(jnp.asarray(seed), jnp.asarray(units), 9))
    for (b, h), u in np.ndenumerate(units):
        unit_key = _fmix32(int(seed[0]) ^ _fmix32((int(seed[1]) + int(u) * 0x9E3779B9) & 0xFFFFFFFF))
        for i in (0, 4, 8):
            row = _fmix32((unit_key + i * 0x9E3779B9) & 0xFFFFFFFF)
            for j in (0, 5, 8):
                column = (j * 0x85EBCA77 + 0x27D4EB2F) & 0xFFFFFFFF
                assert draws[b, h, i, j] == _fmix32(row ^ column), (b, h, i, j)


def test_attention_keep_rate_and_independence():
    """Keep rate 1 - round(rate 2^32) / 2^32 within 5 standard errors over 4 x 8 x 128 x 128 draws;
    rows, columns and units uncorrelated (equal-position agreement of two rows, of two units and of
    two seeds at the independent rate p^2 + (1-p)^2); rate 0 keeps everything."""
    drop = AttentionDropout.draw(jax.random.key(1), 0.1)
    assert drop.threshold == round(0.1 * 2**32) and abs(drop.scale - 1 / 0.9) < 1e-6
    units = jnp.arange(32, dtype=jnp.uint32).reshape(4, 8)
    keep = np.asarray(attention_keep(drop, units, 128))
    n = keep.size
    assert abs(keep.mean() - (1 - drop.threshold / 2**32)) < 5 * np.sqrt(0.09 / n)
    same = 0.9**2 + 0.1**2
    reseeded = np.asarray(attention_keep(AttentionDropout.draw(jax.random.key(2), 0.1), units, 128))
    for a, b in ((keep[:, :, :-1], keep[:, :, 1:]), (keep[..., :-1], keep[..., 1:]),
                 (keep[:, :-1], keep[:, 1:]), (keep, reseeded)):
        assert abs((a == b).mean() - same) < 5 * np.sqrt(same * (1 - same) / a.size)
    assert np.asarray(attention_keep(AttentionDropout(drop.seed, keep_threshold(0.0)), units, 16)).all()
