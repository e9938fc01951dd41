"""``bert.token_dense`` / ``bert.Dense``: the forward is ``nn.Dense``'s product, the custom gradient
equals autodiff's (ranks 2-4, float32 and bfloat16, inside a ``check_vma`` ``shard_map`` with a
replicated kernel), ``Dense`` keeps ``nn.Dense``'s parameters and partitioning, and the compiled
kernel gradient on CPU contracts the token axis of both operands as they are (no transposed copy of
the cotangent: the reason it exists)."""

import re

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

from stylebench_jax.encoders.bert import Dense, HeadMerge, HeadProjection, _init, token_dense
from stylebench_jax.parallel import make_mesh


def _plain(x, kernel):
    return jax.lax.dot_general(x, kernel, (((x.ndim - 1,), (0,)), ((), ())))


@pytest.mark.parametrize("lead", [(21,), (3, 7), (3, 2, 5)])
@pytest.mark.parametrize("dtype,tol", [(jnp.float32, 1e-6), (jnp.bfloat16, 1e-2)])
def test_token_dense_value_and_gradients_equal_autodiff(lead, dtype, tol):
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.standard_normal((*lead, 16)), dtype)
    kernel = jnp.asarray(rng.standard_normal((16, 24)) * 0.2, dtype)
    cotangent = jnp.asarray(rng.standard_normal((*lead, 24)), dtype)
    ours, ours_vjp = jax.vjp(token_dense, x, kernel)
    plain, plain_vjp = jax.vjp(_plain, x, kernel)
    np.testing.assert_array_equal(np.asarray(ours, np.float32), np.asarray(plain, np.float32))
    for got, want in zip(ours_vjp(cotangent), plain_vjp(cotangent)):
        assert got.dtype == want.dtype and got.shape == want.shape
        scale = float(jnp.max(jnp.abs(want.astype(jnp.float32))))
        np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32),
                                   rtol=0, atol=tol * scale)


@pytest.mark.parametrize("dtype,tol", [(jnp.float32, 1e-6), (jnp.bfloat16, 2e-2)])
def test_dense_has_nn_dense_parameters_output_and_gradients(dtype, tol):
    x = jnp.asarray(np.random.default_rng(1).standard_normal((2, 5, 8)), jnp.float32)
    init = {"kernel_init": _init(("embed", "mlp")), "bias_init": nn.with_logical_partitioning(
        nn.initializers.normal(0.5), ("mlp",))}
    ours, theirs = Dense(6, dtype=dtype, **init), nn.Dense(6, dtype=dtype, **init)
    boxed = theirs.init(jax.random.key(0), x)
    mine = ours.init(jax.random.key(0), x)
    assert nn.get_partition_spec(mine) == nn.get_partition_spec(boxed)
    params = nn.unbox(boxed)
    for a, b in zip(jax.tree.leaves(nn.unbox(mine)), jax.tree.leaves(params)):
        assert a.dtype == b.dtype == jnp.float32
        np.testing.assert_array_equal(a, b)  # same initial values from the same key
    out, reference = ours.apply(params, x), theirs.apply(params, x)
    assert out.dtype == reference.dtype == dtype
    np.testing.assert_array_equal(np.asarray(out, np.float32), np.asarray(reference, np.float32))

    def loss(module, p):
        return jnp.sum(jnp.sin(module.apply(p, x).astype(jnp.float32)))

    got, want = jax.grad(lambda p: loss(ours, p))(params), jax.grad(lambda p: loss(theirs, p))(params)
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_gradient_inside_a_checked_shard_map_sums_a_replicated_kernel_over_the_shards():
    """The train step's shape of the problem: rows sharded over ``data``, the kernel replicated
    (invariant); the kernel's gradient is the sum of the shards' (what autodiff of the plain
    product gives), and ``check_vma`` accepts the custom rule's types."""
    mesh = make_mesh("data=4")
    rng = np.random.default_rng(3)
    x = jnp.asarray(rng.standard_normal((8, 5, 6)), jnp.float32)
    kernel = jnp.asarray(rng.standard_normal((6, 7)), jnp.float32)

    def grads(fn):
        def local(k, rows):
            return jax.grad(lambda k, r: jnp.sum(jnp.tanh(fn(r, k))), argnums=(0, 1))(k, rows)

        mapped = jax.shard_map(local, mesh=mesh, in_specs=(P(), P("data")), out_specs=(P(), P("data")),
                               check_vma=True)
        return jax.jit(mapped)(kernel, x)

    for got, want in zip(grads(token_dense), grads(_plain)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    whole = jax.grad(lambda k: jnp.sum(jnp.tanh(_plain(x, k))))(kernel)
    np.testing.assert_allclose(grads(token_dense)[0], whole, rtol=1e-5, atol=1e-6)


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


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="XLA:CPU's layout of the gradient")
def test_kernel_gradient_contracts_the_token_axis_without_a_transposed_copy():
    x = jnp.ones((8, 64, 32), jnp.float32)  # 512 tokens
    kernel = jnp.ones((32, 96), jnp.float32)
    grad = jax.jit(jax.grad(lambda k, a: jnp.sum(jnp.tanh(token_dense(a, k)))))
    text = grad.lower(kernel, x).compile().as_text()
    products = [line for line in text.splitlines() if re.search(r"= f32\[32,96\]\S* dot\(", line)]
    assert products and all("lhs_contracting_dims={0}, rhs_contracting_dims={0}" in line for line in products)
    assert "f32[96,512]" not in text  # no transposed copy of the [512, 96] cotangent
