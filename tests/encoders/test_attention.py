"""The BERT family's attention: head-major softmax attention equals ``jax.nn.dot_product_attention``
under padding masks, grouped attention (``lax.map`` over sequence groups, the CPU layout) equals the
whole-batch form, and on a data-sharded mesh it compiles without gathering the batch."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from stylebench_jax.encoders import neural
from stylebench_jax.encoders.bert import grouped_attention, softmax_attention
from stylebench_jax.encoders.dropout import AttentionDropout
from stylebench_jax.encoders.neural import FlaxEncoderEmbedder, attention_groups, micro_batch_rows
from stylebench_jax.parallel import make_mesh
from tests.helpers.tiny_models import write_tiny_model


def _inputs(batch=6, length=9, heads=3, head_dim=4, seed=0):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((batch, heads, length, head_dim), dtype=np.float32) * 2 for _ in range(3))
    lengths = rng.integers(1, length + 1, size=batch)
    lengths[0], lengths[1] = length, 1  # a full row and a single-token row
    mask = np.arange(length)[None, :] < lengths[:, None]
    bias = np.where(mask[:, None, None, :], 0.0, -1e9).astype(np.float32)
    return q, k, v, bias, mask


def test_softmax_attention_matches_dot_product_attention():
    q, k, v, bias, mask = _inputs()
    ours = np.asarray(softmax_attention(q, k, v, bias))
    # jax's reference takes [B, L, heads, d]
    t = (0, 2, 1, 3)
    theirs = np.asarray(jax.nn.dot_product_attention(q.transpose(t), k.transpose(t), v.transpose(t),
                                                     bias=bias)).transpose(t)
    np.testing.assert_allclose(ours, theirs, atol=2e-6, rtol=0)
    # padded keys get no weight: changing their values changes nothing
    v2 = v.copy()
    v2[~mask[:, None, :, None].repeat(v.shape[1], 1).repeat(v.shape[3], 3)] = 1e3
    np.testing.assert_allclose(np.asarray(softmax_attention(q, k, v2, bias)), ours, atol=2e-6, rtol=0)


@pytest.mark.parametrize("groups", [1, 2, 3, 4, 6])
def test_grouped_attention_equals_whole_batch(groups):
    """g = 4 does not divide B = 6: gcd(4, 6) = 2 sequences per step."""
    q, k, v, bias, _ = _inputs()
    whole = np.asarray(grouped_attention(q, k, v, bias, 0))
    grouped = np.asarray(jax.jit(grouped_attention, static_argnums=4)(q, k, v, bias, groups))
    np.testing.assert_allclose(grouped, whole, atol=1e-6, rtol=0)
    # rows are not mixed up: permuting the batch permutes the output
    perm = np.random.default_rng(1).permutation(len(q))
    permuted = np.asarray(grouped_attention(q[perm], k[perm], v[perm], bias[perm], groups))
    np.testing.assert_allclose(permuted, whole[perm], atol=1e-6, rtol=0)
    # attention dropout: each mapped step keeps its rows' unit indices (the whole batch's masks)
    drop = AttentionDropout.draw(jax.random.key(3), 0.4)
    whole = np.asarray(grouped_attention(q, k, v, bias, 0, drop))
    grouped = np.asarray(jax.jit(lambda *a: grouped_attention(*a, groups, drop))(q, k, v, bias))
    np.testing.assert_allclose(grouped, whole, atol=1e-6, rtol=0)
    assert np.abs(whole - np.asarray(grouped_attention(q, k, v, bias, 0))).max() > 0.1


def test_attention_groups_follow_the_mesh():
    assert attention_groups(make_mesh("data=8,model=1")) == 8
    assert attention_groups(make_mesh("data=2,model=4")) == 2


@pytest.mark.parametrize("spec", ["data=8,model=1", "data=4,model=2"])
def test_grouped_forward_is_sharding_safe(tmp_path, spec):
    """On a data-sharded CPU mesh the embedder attends ``data`` sequences per step; the compiled
    program gathers nothing (tensor parallelism's all-reduces only) and equals the whole-batch form."""
    folder = write_tiny_model(tmp_path / "tiny")
    mesh = make_mesh(spec)
    ours = FlaxEncoderEmbedder(folder, mesh=mesh, progress=False, batch_size=16)
    assert ours.module.attention_groups == int(mesh.shape["data"])
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 30, size=(16, 12)).astype(np.int32)
    mask = (np.arange(12)[None, :] < rng.integers(1, 13, size=16)[:, None]).astype(np.int32)
    text = ours._forward.lower(ours.params, ids, mask).compile().as_text()
    assert not re.search(r"all-gather|all-to-all|collective-permute", text)
    grouped = np.asarray(ours._forward(ours.params, ids, mask))
    whole_module = ours.module.clone(attention_groups=0)
    whole = np.asarray(jax.jit(lambda p, i, m: whole_module.apply({"params": p}, i, m))(
        ours.params, ids, mask))
    np.testing.assert_allclose(grouped, whole, atol=1e-6, rtol=0)
    assert np.abs(whole - whole[::-1]).max() > 1e-3  # rows differ, so a mix-up would show
    assert jnp.asarray(grouped).dtype == jnp.float32


def test_micro_batch_rows_follow_the_token_budget():
    one, eight = make_mesh("data=1,model=1", devices=jax.devices()[:1]), make_mesh("data=8,model=1")
    assert [micro_batch_rows(one, 64, n) for n in (32, 64, 128, 256, 512)] == [64, 32, 16, 8, 4]
    assert micro_batch_rows(one, 48, 128) == 16 and micro_batch_rows(one, 64, 96) == 16  # divisors of rows
    assert micro_batch_rows(eight, 64, 256) == 64 and micro_batch_rows(eight, 128, 512) == 32
    assert micro_batch_rows(eight, 64, 4096) == 8  # at least one row per device


@pytest.mark.parametrize("spec", ["data=1,model=1", "data=4,model=2"])
def test_micro_batched_forward_equals_the_whole_batch(tmp_path, monkeypatch, spec):
    """A batch run as micro-batches inside its program (CPU meshes) gives the whole batch's rows in
    their order, and on a data-sharded mesh gathers nothing."""
    monkeypatch.setattr(neural, "CPU_MICRO_BATCH_TOKENS", 24)  # 2 rows of 12 tokens per device and step
    folder = write_tiny_model(tmp_path / "tiny")
    devices = jax.devices()[:1] if spec.startswith("data=1,") else None
    mesh = make_mesh(spec, devices=devices)
    ours = FlaxEncoderEmbedder(folder, mesh=mesh, progress=False, batch_size=32)
    n_data = int(mesh.shape["data"])
    assert micro_batch_rows(mesh, 32, 12) == 2 * n_data < 32
    rng = np.random.default_rng(1)
    ids = rng.integers(5, 30, size=(32, 12)).astype(np.int32)
    mask = (np.arange(12)[None, :] < rng.integers(1, 13, size=32)[:, None]).astype(np.int32)
    text = ours._forward.lower(ours.params, ids, mask).compile().as_text()
    assert "while" in text  # the micro-batch loop is in the program
    assert not re.search(r"all-gather|all-to-all|collective-permute", text)
    micro = np.asarray(ours._forward(ours.params, ids, mask))
    whole = np.asarray(jax.jit(lambda p, i, m: ours.module.apply({"params": p}, i, m))(
        ours.params, ids, mask))
    np.testing.assert_allclose(micro, whole, atol=1e-6, rtol=0)
    assert np.abs(whole - whole[::-1]).max() > 1e-3  # rows differ, so a mix-up would show
