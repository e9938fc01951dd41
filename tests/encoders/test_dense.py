"""``bert.token_dense`` / ``bert.Dense``: the forward is ``nn.Dense``'s product, the custom gradient
equals autodiff's, and the compiled kernel gradient contracts the token axis of both operands as
they are (no transposed copy of the cotangent: the reason it exists)."""

import re

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from stylebench_jax.encoders.bert import Dense, HeadMerge, HeadProjection, token_dense


def _plain(x, kernel):
    return jax.lax.dot_general(x, kernel, (((x.ndim - 1,), (0,)), ((), ())))


@pytest.mark.parametrize("dtype,tol", [(jnp.float32, 1e-6), (jnp.bfloat16, 1e-2)])
def test_token_dense_value_and_gradients_equal_autodiff(dtype, tol):
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.standard_normal((3, 7, 16)), dtype)
    kernel = jnp.asarray(rng.standard_normal((16, 24)) * 0.2, dtype)
    cotangent = jnp.asarray(rng.standard_normal((3, 7, 24)), dtype)
    ours, ours_vjp = jax.vjp(token_dense, x, kernel)
    plain, plain_vjp = jax.vjp(_plain, x, kernel)
    np.testing.assert_array_equal(np.asarray(ours, np.float32), np.asarray(plain, np.float32))
    for got, want in zip(ours_vjp(cotangent), plain_vjp(cotangent)):
        assert got.dtype == want.dtype and got.shape == want.shape
        scale = float(jnp.max(jnp.abs(want.astype(jnp.float32))))
        np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32),
                                   rtol=0, atol=tol * scale)


def test_dense_has_nn_dense_parameters_output_and_gradients():
    x = jnp.asarray(np.random.default_rng(1).standard_normal((2, 5, 8)), jnp.float32)
    ours, theirs = Dense(6), nn.Dense(6)
    params = theirs.init(jax.random.key(0), x)
    assert jax.tree.map(jnp.shape, ours.init(jax.random.key(0), x)) == jax.tree.map(jnp.shape, params)
    np.testing.assert_array_equal(ours.apply(params, x), theirs.apply(params, x))

    def loss(module, p):
        return jnp.sum(jnp.sin(module.apply(p, x)))

    got, want = jax.grad(lambda p: loss(ours, p))(params), jax.grad(lambda p: loss(theirs, p))(params)
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_sequence_major_projections_equal_the_head_major_ones_and_their_gradients():
    hidden = jnp.asarray(np.random.default_rng(2).standard_normal((2, 5, 12)), jnp.float32)
    seq, head = HeadProjection(3, 4, sequence_major=True), HeadProjection(3, 4)
    params = head.init(jax.random.key(1), hidden)
    params = jax.tree.map(lambda p: p + 0.1, params)  # non-zero bias
    np.testing.assert_allclose(seq.apply(params, hidden), head.apply(params, hidden).transpose(0, 2, 1, 3),
                               rtol=1e-6, atol=1e-6)
    merge_seq, merge_head = HeadMerge(12, sequence_major=True), HeadMerge(12)
    context = head.apply(params, hidden)  # [B, heads, L, d]
    merge_params = merge_head.init(jax.random.key(2), context)

    def loss(sequence_major, p, mp):
        proj, merge = (seq, merge_seq) if sequence_major else (head, merge_head)
        return jnp.sum(jnp.cos(merge.apply(mp, proj.apply(p, hidden))))

    np.testing.assert_allclose(loss(True, params, merge_params), loss(False, params, merge_params), rtol=1e-6)
    got = jax.grad(loss, argnums=(1, 2))(True, params, merge_params)
    want = jax.grad(loss, argnums=(1, 2))(False, params, merge_params)
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_kernel_gradient_contracts_the_token_axis_without_a_transposed_copy():
    x = jnp.ones((8, 64, 32), jnp.float32)
    kernel = jnp.ones((32, 96), jnp.float32)

    def grads(fn):
        grad = jax.jit(jax.grad(lambda k, a: jnp.sum(jnp.tanh(fn(a, k)))))
        text = grad.lower(kernel, x).compile().as_text()
        return [line for line in text.splitlines() if re.search(r"= f32\[32,96\]\S* dot\(", line)]

    (ours,) = grads(token_dense)
    assert "lhs_contracting_dims={0}, rhs_contracting_dims={0}" in ours, ours
