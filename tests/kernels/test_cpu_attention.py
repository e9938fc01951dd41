"""The fused CPU attention kernels (``kernels.cpu_attention``, C++ through ``jax.ffi``): equal
``bert.softmax_attention`` under padding masks, forward and gradients, are exact per (sequence,
head) (the same bits however the batch is ordered or sharded), gather nothing on a sharded mesh, and
the embedder uses them where they apply, says why where they do not, and refuses them where asked
for and impossible."""

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from stylebench_jax import runtime
from stylebench_jax.encoders import neural
from stylebench_jax.encoders.bert import softmax_attention
from stylebench_jax.encoders.dropout import AttentionDropout, attention_keep
from stylebench_jax.encoders.neural import FlaxEncoderEmbedder
from stylebench_jax.errors import InvalidOption
from stylebench_jax.kernels import cpu_attention
from stylebench_jax.parallel import make_mesh
from tests.helpers.tiny_models import write_tiny_model

# Skipped only where the machine lacks what the kernel needs (no x86-64 AVX2/FMA, no compiler); a
# kernel that fails to build or load on a machine that has them fails the tests.
MISSING = cpu_attention.missing_prerequisite()
needs_kernel = pytest.mark.skipif(MISSING is not None, reason=f"fused CPU attention cannot run: {MISSING}")


@pytest.fixture(autouse=True)
def _kernel_registered():
    if MISSING is None:
        assert cpu_attention.unavailable() is None


def _inputs(batch, heads, length, head_dim, seed=0):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((batch, heads, length, head_dim), dtype=np.float32) * 2 for _ in range(3))
    lengths = rng.integers(1, length + 1, size=batch)
    lengths[0] = length
    if batch > 1:
        lengths[1] = 1  # a single visible key
    mask = np.arange(length)[None, :] < lengths[:, None]
    bias = np.where(mask[:, None, None, :], 0.0, -1e9).astype(np.float32)
    return q, k, v, bias, mask


def _reference(q, k, v, bias):
    """Float64 ``softmax(q k^T / sqrt(d) + bias) v``."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    scores = np.einsum("bnqd,bnkd->bnqk", q, k) / np.sqrt(q.shape[-1]) + bias
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    return np.einsum("bnqk,bnkd->bnqd", weights / weights.sum(-1, keepdims=True), v)


@needs_kernel
@pytest.mark.parametrize("shape", [(6, 3, 9, 16), (2, 2, 37, 32), (3, 2, 256, 64), (1, 1, 1, 16),
                                   (4, 12, 20, 32)])
def test_fused_attention_matches_softmax_attention(shape):
    """Lengths not divisible by the kernel's 6-row and 8/16-column blocks, one-token sequences."""
    q, k, v, bias, mask = _inputs(*shape)
    ours = np.asarray(jax.jit(cpu_attention.fused_attention)(q, k, v, bias))
    xla = np.asarray(jax.jit(softmax_attention)(q, k, v, bias))
    exact = _reference(q, k, v, bias)
    # as close to the float64 result as XLA's float32 computation is (both ~1e-6 at these score sizes),
    # give or take 4 ulps of the largest output: XLA's own error depends on the CPU's vector width
    # (on an AVX-512 EPYC its (2, 2, 37, 32) error was 1.7e-6, the kernel's 3.7e-6, outputs up to 5.2)
    ulp = np.finfo(np.float32).eps * np.abs(exact).max()
    assert np.abs(ours - exact).max() <= 2 * np.abs(xla - exact).max() + 4 * ulp
    np.testing.assert_allclose(ours, xla, atol=1e-5, rtol=0)
    # padded keys get exactly no weight: changing their values changes no bit
    v2 = v.copy()
    v2[np.broadcast_to(~mask[:, None, :, None], v.shape)] = 1e3
    np.testing.assert_array_equal(np.asarray(cpu_attention.fused_attention(q, k, v2, bias)), ours)


@needs_kernel
def test_fused_attention_is_exact_per_sequence_and_head():
    """Each (sequence, head) is one thread's fixed computation: permuting the batch permutes the
    output bit for bit, and repeated calls agree bit for bit."""
    q, k, v, bias, _ = _inputs(8, 4, 50, 32, seed=3)
    ours = np.asarray(cpu_attention.fused_attention(q, k, v, bias))
    np.testing.assert_array_equal(np.asarray(cpu_attention.fused_attention(q, k, v, bias)), ours)
    perm = np.random.default_rng(1).permutation(len(q))
    np.testing.assert_array_equal(
        np.asarray(cpu_attention.fused_attention(q[perm], k[perm], v[perm], bias[perm])), ours[perm])
    assert np.abs(ours - ours[::-1]).max() > 1e-3  # rows differ, so a mix-up would show


@needs_kernel
def test_non_finite_scores_give_nan_rows_as_xla_does():
    """A NaN query value makes that query's row NaN; a NaN key value every row of its (sequence,
    head); other outputs stay finite and equal (a max instruction alone would drop the NaN)."""
    q, k, v, bias, _ = _inputs(2, 2, 20, 16, seed=7)
    q[0, 0, 3, 5] = np.nan
    k[1, 1, 17, 2] = np.nan  # row 1 sees one key: key 17 is masked, so its NaN does not count
    k[0, 1, 9, 0] = np.nan
    ours = np.asarray(cpu_attention.fused_attention(q, k, v, bias))
    xla = np.asarray(softmax_attention(q, k, v, bias))
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(xla))
    assert np.isnan(ours[0, 0, 3]).all() and not np.isnan(ours[0, 0, 2]).any()
    assert np.isnan(ours[0, 1]).all()
    finite = ~np.isnan(xla)
    np.testing.assert_allclose(ours[finite], xla[finite], atol=1e-5, rtol=0)


@needs_kernel
def test_fused_attention_runs_per_shard():
    """On a data=4, model=2 mesh the call runs per shard (batch over data, heads over model): the
    same bits as on one device, and the compiled program moves no data between devices."""
    q, k, v, bias, _ = _inputs(8, 4, 24, 16, seed=5)
    mesh = make_mesh("data=4,model=2")
    fn = jax.jit(lambda *a: cpu_attention.fused_attention(*a, mesh=mesh))
    heads = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("data", "model"))
    rows = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("data"))
    args = [jax.device_put(x, heads) for x in (q, k, v)] + [jax.device_put(bias, rows)]
    assert not re.search(r"all-gather|all-to-all|collective-permute", fn.lower(*args).compile().as_text())
    single = np.asarray(cpu_attention.fused_attention(q, k, v, bias))
    np.testing.assert_array_equal(np.asarray(fn(*args)), single)
    # a batch data does not divide (6 on 4) and heads model does not divide (3 on 2): replicated there
    q, k, v, bias, _ = _inputs(6, 3, 10, 16, seed=6)
    np.testing.assert_array_equal(np.asarray(fn(q, k, v, bias)),
                                  np.asarray(cpu_attention.fused_attention(q, k, v, bias)))


def _weighted_sum(attention, weights):
    """A scalar loss whose gradient reaches every output element with its own weight."""
    return lambda q, k, v, b: jnp.sum(attention(q, k, v, b) * weights)


@needs_kernel
@pytest.mark.parametrize("shape", [(3, 2, 37, 32), (2, 12, 128, 32), (2, 2, 200, 64), (2, 1, 7, 16),
                                   (3, 2, 9, 16), (3, 2, 10, 16), (3, 2, 11, 16)])
def test_gradients_match_float64(shape):
    """d q, d k, d v and d bias of the backward kernel are as close to float64 gradients as XLA's
    float32 gradients of ``softmax_attention`` (within 2.5x its error, plus 2e-6 of the largest
    gradient: ``ds = p (dp - rowsum(d_out out))`` cancels to ~0 for a row with one visible key, and
    the two sums round differently); a bias with values of its own (not only 0 / -1e9) checks the
    bias gradient. The last 6-row block holds 1 to 6 rows across the lengths; the last sequence has
    every key masked (scores near -1e9, where max + log(sum) in float32 would lose the log: each key
    then weighs 1/L)."""
    q, k, v, bias, mask = _inputs(*shape, seed=11)
    rng = np.random.default_rng(12)
    bias = bias + rng.standard_normal(bias.shape).astype(np.float32)
    if shape[0] > 2:
        bias[-1] = -1e9
    weights = rng.standard_normal(q.shape).astype(np.float32)
    grad = functools.partial(jax.grad, argnums=(0, 1, 2, 3))
    ours = jax.jit(grad(_weighted_sum(cpu_attention.fused_attention, weights)))(q, k, v, bias)
    xla = jax.jit(grad(_weighted_sum(softmax_attention, weights)))(q, k, v, bias)
    with jax.enable_x64():
        exact = jax.jit(grad(_weighted_sum(softmax_attention, weights.astype(np.float64))))(
            *(x.astype(np.float64) for x in (q, k, v, bias)))
    for name, a, b, c in zip(("q", "k", "v", "bias"), ours, xla, exact):
        a, b, c = (np.asarray(x, np.float64) for x in (a, b, c))
        assert a.shape == c.shape, name
        error, xla_error = np.abs(a - c).max(), np.abs(b - c).max()
        assert error <= 2.5 * xla_error + 2e-6 * np.abs(c).max(), (name, error, xla_error)
    # padded keys (bias -1e9) of sequences with a visible key have probability 0: exactly no
    # gradient reaches their k, v or bias
    padded = ~mask
    if shape[0] > 2:
        padded[-1] = False
    assert padded.any()
    assert not np.asarray(ours[3])[:, 0, 0][padded].any()
    for grad in ours[1:3]:
        assert not np.asarray(grad).transpose(0, 2, 1, 3)[padded].any()


def _reference_dropout_gradients(q, k, v, bias, keep, scale, weights):
    """Float64 gradients of ``sum(weights * attention)`` with the probabilities ``p`` replaced by
    ``p * keep * scale`` (``keep`` boolean ``[B, H, L, L]``), by hand: the formulas a kernel that
    ignored the mask in its backward would get wrong."""
    q, k, v, bias, w = (x.astype(np.float64) for x in (q, k, v, bias, weights))
    d = q.shape[-1] ** -0.5
    s = np.einsum("bnqd,bnkd->bnqk", q, k) * d + bias
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    z = keep * scale
    out = np.einsum("bnqk,bnkd->bnqd", p * z, v)
    dp = np.einsum("bnqd,bnkd->bnqk", w, v) * z
    ds = p * (dp - (w * out).sum(-1, keepdims=True))
    return (out, np.einsum("bnqk,bnkd->bnqd", ds, k) * d, np.einsum("bnqk,bnqd->bnkd", ds, q) * d,
            np.einsum("bnqk,bnqd->bnkd", p * z, w), ds.sum((1, 2))[:, None, None, :])


@needs_kernel
@pytest.mark.parametrize("shape, rate", [((3, 2, 37, 32), 0.3), ((2, 12, 128, 32), 0.3),
                                         ((3, 2, 11, 16), 0.3), ((2, 1, 7, 16), 0.3), ((2, 3, 21, 16), 0.7)])
def test_attention_dropout_matches_xla_and_float64(shape, rate):
    """Attention-probability dropout (rate 0.3): the kernels drop what XLA's attention drops (the
    same counter-based draws, ``encoders.dropout.attention_keep``, regenerated key-major in the
    backward): output and gradients of q, k, v and the bias as close to a float64 computation with
    the same mask as XLA's float32 ones (lengths with 1-7 columns past the last 8-wide block; a
    threshold above 2^31 too, the kernel's signed-compare offset); the rate dropped, and another seed
    drops other probabilities."""
    q, k, v, bias, mask = _inputs(*shape, seed=21)
    rng = np.random.default_rng(22)
    bias = bias + rng.standard_normal(bias.shape).astype(np.float32)
    weights = rng.standard_normal(q.shape).astype(np.float32)
    drop = AttentionDropout.draw(jax.random.key(23), rate)
    units = jnp.arange(shape[0] * shape[1], dtype=jnp.uint32).reshape(shape[:2])
    keep = np.asarray(attention_keep(drop, units, shape[2]))
    visible = np.broadcast_to(mask[:, None, None, :], keep.shape)
    assert abs(1 - keep[visible].mean() - rate) < 5 * np.sqrt(rate * (1 - rate) / visible.sum())
    other = np.asarray(attention_keep(AttentionDropout.draw(jax.random.key(24), rate), units, shape[2]))
    assert 0.3 < (keep != other).mean() < 0.5  # independent masks differ in 2 r (1 - r) = 42%
    exact = _reference_dropout_gradients(q, k, v, bias, keep, drop.scale, weights)
    fused = functools.partial(cpu_attention.fused_attention, dropout=drop)
    xla = functools.partial(softmax_attention, dropout=drop)
    outputs = [np.asarray(jax.jit(fn)(q, k, v, bias)) for fn in (fused, xla)]
    grad = functools.partial(jax.grad, argnums=(0, 1, 2, 3))
    grads = [jax.jit(grad(_weighted_sum(fn, weights)))(q, k, v, bias) for fn in (fused, xla)]
    for name, ours, theirs, reference in zip(("out", "q", "k", "v", "bias"), [outputs[0], *grads[0]],
                                             [outputs[1], *grads[1]], exact):
        ours, theirs = np.asarray(ours, np.float64), np.asarray(theirs, np.float64)
        error, xla_error = np.abs(ours - reference).max(), np.abs(theirs - reference).max()
        assert error <= 2.5 * xla_error + 2e-6 * np.abs(reference).max(), (name, error, xla_error)
    without = np.asarray(cpu_attention.fused_attention(q, k, v, bias))
    assert np.abs(outputs[0] - without).max() > 0.1


def _heads_swapped(x):
    """``[B, heads, L, d]`` <-> ``[B, L, heads, d]``."""
    return jnp.swapaxes(x, 1, 2)


@needs_kernel
@pytest.mark.parametrize("shape, rate", [((3, 4, 37, 32), 0.0), ((3, 4, 37, 32), 0.3),
                                         ((2, 12, 128, 32), 0.1), ((2, 3, 7, 16), 0.3)])
def test_sequence_major_layout_is_the_head_major_call_transposed(shape, rate):
    """``sequence_major`` (``[B, L, heads, d]``, the projections' layout, read in place): the same
    arithmetic per (sequence, head) as the head-major call, so output and the gradients of q, k, v
    and the bias are the same bits transposed, with and without attention dropout (units ``b *
    heads + h`` either way)."""
    q, k, v, bias, _ = _inputs(*shape, seed=31)
    bias = bias + np.random.default_rng(32).standard_normal(bias.shape).astype(np.float32)
    weights = np.random.default_rng(33).standard_normal(q.shape).astype(np.float32)
    drop = AttentionDropout.draw(jax.random.key(34), rate) if rate else None
    heads = functools.partial(cpu_attention.fused_attention, dropout=drop)
    rows = functools.partial(cpu_attention.fused_attention, dropout=drop, sequence_major=True)
    swapped = [_heads_swapped(x) for x in (q, k, v)]
    np.testing.assert_array_equal(np.asarray(_heads_swapped(jax.jit(rows)(*swapped, bias))),
                                  np.asarray(jax.jit(heads)(q, k, v, bias)))
    grad = functools.partial(jax.grad, argnums=(0, 1, 2, 3))
    expected = jax.jit(grad(_weighted_sum(heads, weights)))(q, k, v, bias)
    found = jax.jit(grad(_weighted_sum(rows, _heads_swapped(weights))))(*swapped, bias)
    for name, a, b in zip(("q", "k", "v"), found, expected):
        np.testing.assert_array_equal(np.asarray(_heads_swapped(a)), np.asarray(b), err_msg=name)
    np.testing.assert_array_equal(np.asarray(found[3]), np.asarray(expected[3]))


HAS_AVX512 = "avx512f" in runtime.cpu_flags()


@needs_kernel
@pytest.mark.parametrize("shape, rate, sequence_major", [
    ((3, 2, 37, 32), 0.0, False), ((2, 3, 130, 48), 0.3, False), ((2, 12, 128, 32), 0.1, True),
    ((2, 1, 7, 16), 0.0, True)])
def test_vector_widths_give_the_same_bits(monkeypatch, shape, rate, sequence_major):
    """The products in AVX2 (two ymm per 16-float row) and AVX-512 (one zmm): each element the same
    FMA chain, so the forward, the training forward and the gradients of q, k, v and the bias are
    bit-equal. Where the CPU lacks AVX-512 only AVX2 runs and asking for AVX-512 is refused."""
    q, k, v, bias, _ = _inputs(*shape, seed=41)
    bias = bias + np.random.default_rng(42).standard_normal(bias.shape).astype(np.float32)
    weights = np.random.default_rng(43).standard_normal(q.shape).astype(np.float32)
    drop = AttentionDropout.draw(jax.random.key(44), rate) if rate else None
    if sequence_major:
        q, k, v, weights = (_heads_swapped(x) for x in (q, k, v, weights))
    attention = functools.partial(cpu_attention.fused_attention, dropout=drop, sequence_major=sequence_major)
    grad = functools.partial(jax.grad, argnums=(0, 1, 2, 3))
    results = {}
    for width in (1, 2) if HAS_AVX512 else (1,):
        monkeypatch.setattr(cpu_attention, "WIDTH", width)  # read when traced: fresh jits below
        results[width] = [jax.jit(lambda *a: attention(*a))(q, k, v, bias),
                          *jax.jit(grad(_weighted_sum(attention, weights)))(q, k, v, bias)]
    if not HAS_AVX512:
        monkeypatch.setattr(cpu_attention, "WIDTH", 2)
        with pytest.raises(Exception, match="lacks AVX-512"):
            jax.block_until_ready(jax.jit(lambda *a: attention(*a))(q, k, v, bias))
        return
    for name, a, b in zip(("out", "q", "k", "v", "bias"), results[1], results[2]):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=name)


@needs_kernel
def test_sequence_major_runs_per_shard():
    """Sequence-major on a data=4, model=2 mesh: heads (axis 2) over model, no data moved, the
    one-device bits."""
    q, k, v, bias, _ = _inputs(8, 4, 24, 16, seed=35)
    q, k, v = (_heads_swapped(x) for x in (q, k, v))
    mesh = make_mesh("data=4,model=2")
    fn = jax.jit(lambda *a: cpu_attention.fused_attention(*a, mesh=mesh, sequence_major=True))
    heads = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("data", None, "model"))
    rows = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("data"))
    args = [jax.device_put(x, heads) for x in (q, k, v)] + [jax.device_put(bias, rows)]
    assert not re.search(r"all-gather|all-to-all|collective-permute", fn.lower(*args).compile().as_text())
    np.testing.assert_array_equal(
        np.asarray(fn(*args)), np.asarray(cpu_attention.fused_attention(q, k, v, bias, sequence_major=True)))


@needs_kernel
def test_attention_dropout_refused_on_a_sharded_mesh():
    """Per-shard unit indices would repeat one shard's draws on every shard: a named error."""
    q, k, v, bias, _ = _inputs(8, 4, 24, 16, seed=5)
    drop = AttentionDropout.draw(jax.random.key(0), 0.1)
    with pytest.raises(ValueError, match="attention dropout runs on one device's arrays"):
        cpu_attention.fused_attention(q, k, v, bias, make_mesh("data=4,model=2"), drop)


@needs_kernel
def test_gradients_per_shard_equal_one_device():
    """On data=4, model=2 the backward runs per shard too: gradients (the bias's summed over the
    heads of both model shards) equal the one-device ones; also where the batch (6 on 4) and the
    heads (3 on 2) do not divide and the call runs replicated there."""
    q, k, v, bias, _ = _inputs(8, 4, 24, 16, seed=13)
    bias = bias + np.random.default_rng(14).standard_normal(bias.shape).astype(np.float32)
    weights = np.random.default_rng(15).standard_normal(q.shape).astype(np.float32)
    mesh = make_mesh("data=4,model=2")
    grad = functools.partial(jax.grad, argnums=(0, 1, 2, 3))
    sharded = jax.jit(grad(_weighted_sum(lambda *a: cpu_attention.fused_attention(*a, mesh=mesh), weights)))
    single = jax.jit(grad(_weighted_sum(cpu_attention.fused_attention, weights)))
    heads = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("data", "model"))
    rows = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("data"))
    args = [jax.device_put(x, heads) for x in (q, k, v)] + [jax.device_put(bias, rows)]
    for name, a, b in zip(("q", "k", "v", "bias"), sharded(*args), single(q, k, v, bias)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-6, err_msg=name)
    q, k, v, bias, _ = _inputs(6, 3, 10, 16, seed=16)
    bias = bias + np.random.default_rng(17).standard_normal(bias.shape).astype(np.float32)
    weights = np.random.default_rng(18).standard_normal(q.shape).astype(np.float32)
    sharded = jax.jit(grad(_weighted_sum(lambda *a: cpu_attention.fused_attention(*a, mesh=mesh), weights)))
    single = jax.jit(grad(_weighted_sum(cpu_attention.fused_attention, weights)))
    for name, a, b in zip(("q", "k", "v", "bias"), sharded(q, k, v, bias), single(q, k, v, bias)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-6, err_msg=name)


@needs_kernel
@pytest.mark.parametrize("spec", ["data=1,model=1", "data=4,model=2"])
def test_embedder_uses_the_kernel_where_it_applies(tmp_path, spec):
    """A float32 BERT-family model with 16-wide heads on CPU runs the kernel by default; its vectors
    equal XLA's attention's within float32 rounding (micro-batched forward, sharded mesh too)."""
    folder = write_tiny_model(tmp_path / "tiny", num_heads=2)  # hidden 32: heads of 16
    mesh = make_mesh(spec, devices=jax.devices()[:1] if spec.startswith("data=1,") else None)
    fused = FlaxEncoderEmbedder(folder, mesh=mesh, progress=False, batch_size=16)
    plain = FlaxEncoderEmbedder(folder, mesh=mesh, progress=False, batch_size=16, fused_attention=False)
    assert fused.attention_kernel == "fused-cpu" and plain.attention_kernel == "xla (asked for)"
    texts = ["the cat sat on the mat .", "it was a good day and the sun ran fast !", "rain", "the dog"] * 5
    ours, theirs = fused.embed(texts), plain.embed(texts)
    np.testing.assert_allclose(ours, theirs, atol=2e-6, rtol=0)
    assert np.abs(ours[0] - ours[1]).max() > 1e-3
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 30, size=(16, 12)).astype(np.int32)
    mask = (np.arange(12)[None, :] < rng.integers(1, 13, size=16)[:, None]).astype(np.int32)
    text = fused._forward.lower(fused.params, ids, mask).compile().as_text()
    assert "custom-call" in text and cpu_attention.ATTENTION_TARGET in text
    assert not re.search(r"all-gather|all-to-all|collective-permute", text)


def test_embedder_keeps_xla_attention_where_the_kernel_does_not_apply(tmp_path, monkeypatch, capsys):
    """Heads of 8 or bfloat16: XLA's attention without a word; asked for, a named refusal. A kernel
    that cannot build (no compiler here): XLA's attention, said on stderr, or a refusal naming why."""
    folder = write_tiny_model(tmp_path / "tiny")  # 4 heads of 8
    mesh = make_mesh("data=1", jax.devices()[:1])
    narrow = FlaxEncoderEmbedder(folder, mesh=mesh, progress=False)
    assert narrow.attention_kernel.startswith("xla (")
    assert "float32 and head sizes divisible by 16" in narrow.attention_kernel
    with pytest.raises(InvalidOption, match="fused_attention.*not float32 and 8"):
        FlaxEncoderEmbedder(folder, mesh=mesh, progress=False, fused_attention=True)
    wide = write_tiny_model(tmp_path / "wide", num_heads=2)
    half = FlaxEncoderEmbedder(wide, mesh=mesh, progress=False, dtype="bfloat16")
    assert "bfloat16" in half.attention_kernel
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(cpu_attention, "unavailable", lambda: "no C++ compiler found (test)")
    neural._warn_once.cache_clear()
    embedder = FlaxEncoderEmbedder(wide, mesh=mesh, progress=False)
    assert embedder.attention_kernel == "xla (no C++ compiler found (test))"
    assert "fused CPU attention unavailable (no C++ compiler found (test))" in capsys.readouterr().err
    with pytest.raises(InvalidOption, match="cannot run: no C\\+\\+ compiler found"):
        FlaxEncoderEmbedder(wide, mesh=mesh, progress=False, fused_attention=True)
    assert jnp.asarray(embedder.embed(["the cat"])).shape == (1, 32)
