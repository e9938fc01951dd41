"""The encoders' dropout: keep rate, independence of the two 16-bit halves, unbiasedness, identity
when off, reproducibility per key."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from stylebench_jax.encoders.dropout import DRAW_RANGE, Dropout, keep_mask, keep_threshold


def test_keep_rate_and_halves_independent():
    rate = 0.1
    mask = np.asarray(keep_mask(jax.random.key(3), (500, 2048), rate))
    expected = 1 - keep_threshold(rate) / DRAW_RANGE
    assert keep_threshold(rate) == 6554
    sigma = np.sqrt(expected * (1 - expected) / mask.size)
    assert abs(mask.mean() - expected) < 5 * sigma
    low, high = mask[:, :1024].astype(float), mask[:, 1024:].astype(float)  # the two halves of each word
    assert abs(low.mean() - high.mean()) < 10 * sigma
    correlation = np.corrcoef(low.ravel(), high.ravel())[0, 1]
    assert abs(correlation) < 5 / np.sqrt(low.size)
    rows = np.corrcoef(mask[:-1].astype(float).ravel(), mask[1:].astype(float).ravel())[0, 1]
    assert abs(rows) < 5 / np.sqrt(mask[1:].size)


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
    np.testing.assert_allclose(np.asarray(y)[kept], DRAW_RANGE / (DRAW_RANGE - 6554), rtol=1e-6)
    assert abs(float(y.mean()) - 1.0) < 5 * np.sqrt(0.1 / 0.9 / x.size)
    np.testing.assert_array_equal(layer.apply({}, x, True), x)
    np.testing.assert_array_equal(Dropout(0.0).apply({}, x, False), x)
    with pytest.raises(ValueError, match="dropout rate"):
        keep_threshold(1.0)
