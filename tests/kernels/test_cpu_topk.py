"""The C++ float32 top-k scan (``kernels.cpu_topk``): the default float32 scan on CPU, equal to brute
force (and to XLA's scan) bit for bit on dyadic inputs, with long runs of exact ties across threads
and calls, partial register blocks, exclusions, normalisation with zero rows; refused by name
where it cannot run."""

import jax
import numpy as np
import pytest
from kernel_helpers import assert_topk_equal, dyadic, meshes, unit_rows

from stylebench_jax import runtime
from stylebench_jax.kernels import cpu_topk, native, shard_pool, topk_cosine
from stylebench_jax.kernels import topk as topk_module
from stylebench_jax.kernels.scan import ScanConfig

MISSING = native.missing_prerequisite()
needs_kernel = pytest.mark.skipif(MISSING is not None, reason=f"the C++ kernels cannot run: {MISSING}")


@needs_kernel
@pytest.mark.parametrize("kernel", ["native", "xla"])
@pytest.mark.parametrize(("n", "dim", "k", "block", "chunk"), [
    (5000, 4, 50, 1024, 65536),    # units of 1536 rows over both threads; values in {-1/4, 0, 1/4}
    (1237, 13, 7, 64, 256),        # many calls (the running list's K-th key carries over), D % 8 != 0
    (9, 3, 20, 8, 16),             # k > N: -1 and -inf past the pool
    (2000, 8, 1, 128, 700),        # k = 1: a heap of one
])
def test_ties_threads_calls_and_exclusions_match_brute_force(mesh, kernel, n, dim, k, block, chunk):
    """Few distinct values, so nearly every score ties: the lower index must win across units,
    threads, calls and devices; the query's own row and its group are never returned."""
    assert native.unavailable() is None
    rng = np.random.default_rng(n)
    c = dyadic(rng, (n, dim), levels=1)
    q = np.concatenate([c[:5], dyadic(rng, (6, dim), levels=1)])
    groups = rng.integers(0, 7, n)
    query_groups = np.concatenate([groups[:5], rng.integers(0, 7, 6)])
    excluded = query_groups[:, None] == groups[None, :]
    excluded[np.arange(5), np.arange(5)] = True
    ids = np.concatenate([np.arange(5), np.full(6, -1)])
    result = topk_cosine(q, c, k, mesh=mesh, block_size=block, chunk_rows=chunk, query_ids=ids,
                         query_groups=query_groups, candidate_groups=groups, kernel=kernel)
    assert result.kernel == kernel
    assert_topk_equal(result, q, c, k, excluded)
    plain = topk_cosine(q, c, k, mesh=mesh, block_size=block, chunk_rows=chunk, kernel=kernel)
    assert_topk_equal(plain, q, c, k)


@needs_kernel
def test_native_equals_xla_on_real_valued_rows_and_resident_pools(mesh):
    """Gaussian rows (no ties), normalised on the fly with a zero row, from a host array and from a
    resident pool: the two scans return the same indices and scores within a few float32 ulps."""
    rng = np.random.default_rng(5)
    c = rng.standard_normal((3001, 40)).astype(np.float32) * 3
    c[17] = 0.0  # its factor is 0: scores 0, and the norm range counts it
    q = unit_rows(rng, (21, 40))
    runs = {kernel: topk_cosine(q, c, 9, mesh=mesh, block_size=256, normalize=True, kernel=kernel)
            for kernel in ("native", "xla")}
    np.testing.assert_array_equal(runs["native"].indices, runs["xla"].indices)
    np.testing.assert_allclose(runs["native"].scores, runs["xla"].scores, atol=1e-6, rtol=0)
    np.testing.assert_allclose(runs["native"].norm_range, runs["xla"].norm_range, atol=1e-6)
    assert runs["native"].norm_range[0] == 0.0
    cn = c / np.maximum(np.linalg.norm(c, axis=1, keepdims=True), 1e-30)
    assert_topk_equal(runs["native"], q, cn, 9, exact=False, tol=2e-6)
    pool = shard_pool(c, mesh, block_size=256)
    resident = topk_cosine(q, pool, 9, normalize=True, kernel="native")
    assert resident.kernel == "native" and topk_cosine(q, pool, 9, normalize=True).kernel == "native"
    np.testing.assert_array_equal(resident.indices, runs["native"].indices)
    np.testing.assert_array_equal(resident.scores, runs["native"].scores)


@needs_kernel
def test_native_is_the_default_float32_scan_and_bfloat16_stays_in_xla():
    rng = np.random.default_rng(2)
    c, q = unit_rows(rng, (300, 16)), unit_rows(rng, (4, 16))
    assert topk_cosine(q, c, 3).kernel == "native"
    assert topk_cosine(q, c, 3, precision="bfloat16").kernel == "xla"
    assert topk_cosine(q, c, 3, kernel="xla").kernel == "xla"


def test_kernel_choice_is_checked(monkeypatch):
    c = np.eye(4, dtype=np.float32)
    with pytest.raises(ValueError, match="kernel: expected one of 'auto', 'native', 'xla', found 'gpu'"):
        topk_cosine(c, c, 1, kernel="gpu")
    monkeypatch.setattr(cpu_topk, "applies", lambda mesh: "no C++ compiler found (test)")
    with pytest.raises(ValueError, match="native float32 scan cannot run: no C\\+\\+ compiler found"):
        topk_cosine(c, c, 1, kernel="native")
    result = topk_cosine(c, c, 1)  # auto: XLA's scan, said in the result
    assert result.kernel == "xla"
    np.testing.assert_array_equal(result.indices[:, 0], np.arange(4))
    assert topk_module.resolve_kernel("auto", jax.sharding.Mesh(np.array(jax.devices()[:1]), ("data",)),
                                      "bfloat16") == "xla"
    with pytest.raises(ValueError, match="native scan is float32 without thresholds"):
        ScanConfig(10, 64, 10, "bfloat16", False, False, False, native=True)


@needs_kernel
def test_every_vector_width_gives_the_same_bits(monkeypatch):
    """AVX2's 16-query panels and AVX-512's 32-query layout (run here in AVX2 code, ``VARIANT`` 2)
    return the same indices and bit-equal scores (the same FMA chain per lane), equal to brute
    force on dyadic ties, with 40 queries (a partial last panel) on 1 and 8 devices; on a CPU with
    AVX-512F the AVX-512 width itself (``VARIANT`` 3) too, on one without it is refused by name."""
    from stylebench_jax.kernels import scan as scan_module

    rng = np.random.default_rng(8)
    c = dyadic(rng, (3001, 20), levels=1)
    q = np.concatenate([c[:7], dyadic(rng, (33, 20), levels=1)])
    groups = rng.integers(0, 9, 3001)
    results = {}
    widths = (1, 2, 3) if "avx512f" in runtime.cpu_flags() else (1, 2)  # 3: AVX-512 itself
    for variant in widths:
        monkeypatch.setattr(cpu_topk, "VARIANT", variant)
        scan_module.scan_step.cache_clear()
        for mesh_name, mesh in (("1dev", meshes()["1dev"]), ("8dev", meshes()["8dev"])):
            results[variant, mesh_name] = topk_cosine(q, c, 11, mesh=mesh, block_size=256, exclude_self=False,
                                                      query_groups=groups[:40], candidate_groups=groups,
                                                      normalize=True, kernel="native")
    scan_module.scan_step.cache_clear()
    first = results[1, "1dev"]
    for key, result in results.items():
        np.testing.assert_array_equal(result.indices, first.indices, err_msg=str(key))
        np.testing.assert_array_equal(result.scores, first.scores, err_msg=str(key))
    plain = {}
    for variant in widths:
        monkeypatch.setattr(cpu_topk, "VARIANT", variant)
        scan_module.scan_step.cache_clear()
        plain[variant] = topk_cosine(q, c, 11, mesh=meshes()["8dev"], block_size=256, kernel="native")
        assert_topk_equal(plain[variant], q, c, 11)
    if "avx512f" not in runtime.cpu_flags():
        monkeypatch.setattr(cpu_topk, "VARIANT", 3)
        scan_module.scan_step.cache_clear()
        with pytest.raises(Exception, match="lacks AVX-512"):
            topk_cosine(q, c, 11, kernel="native")
    scan_module.scan_step.cache_clear()
