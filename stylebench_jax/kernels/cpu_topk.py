"""Exact float32 top-k scan on XLA:CPU: a C++ kernel (``cpu_topk.cc``) called through ``jax.ffi``.

XLA's blocked scan (:func:`scan.local_scan`) scores a ``[Q, block]`` tile with one matmul, writes it
to memory and reads it back to select each block's best; the kernel compares every score with its
query's running K-th best while the score is still in a register (6 candidate rows x 16 queries
per AVX2/FMA register block, x 32 with AVX-512; a heap per query and thread), so no tile exists.
Measured with ``benchmarks/bench_topk.py`` on the 2-core AVX2 EPYC, 2026-11-27 (Q = 1000, D = 384,
k = 10; README's Benchmarks): 0.64-0.85x the time of faiss ``IndexFlatIP`` at N = 10^5 to 3 x 10^6 on
Gaussian, clustered and tiled real MiniLM pools, 0.64-0.82x the time of XLA's scan; on a 2-core
AVX-512 EPYC (Zen 4) the same day, 0.80-0.94x faiss and 0.73-0.84x XLA's scan over the same pools
(its AVX-512 and AVX2 widths within 2% of each other there: Zen 4 runs 512-bit FMAs as two 256-bit
halves).

Same contract as XLA's scan step (a drop-in for its fold over one call's rows): the running lists
come in and go out sorted by (score descending, index ascending); rows at or past ``n_valid`` and
excluded candidates never enter; ``bad`` and ``sq_range`` fold the same row statistics. Scores are
float32 sums of float32 products in index order with FMA, normalisation (``normalize``) applied to
the sum rather than to the row: XLA's dot sums in another order, so the two scans' scores differ by
rounding, at most ~``D 2^-24 |q| |x|`` (a few ulps in practice), and candidates whose scores agree to
that can come out in either order. Each candidate's score is computed the same way wherever it
sits, so exact duplicates tie and the result does not depend on the mesh or the threads
(``cpu_topk.cc``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

NORMALIZE, USE_IDS, USE_GROUPS = 1, 2, 4  # the kernel's flags (cpu_topk.cc)
# The kernel's vector width (cpu_topk.cc's Variant): 0 = the CPU's widest (AVX-512 where it has
# AVX-512F, else AVX2), 1 = AVX2, 2 = AVX2 in AVX-512's 32-query panels (tests the wide layout on
# AVX2 CPUs), 3 = AVX-512. Read when a scan step is traced (scan.scan_step caches per config).
VARIANT = 0


def applies(mesh) -> str | None:
    """Why the kernel cannot scan on ``mesh`` (devices not CPU, or the library's reason), or None."""
    from stylebench_jax.kernels import native  # imported on use: `python -m ...native` runs it as main

    platform = mesh.devices.flat[0].platform
    if platform != "cpu":
        return f"the devices are {platform}, the kernel is CPU code"
    return native.unavailable()


def scan_rows(keys, idx, rows, queries, query_ids, query_groups, row_groups, info, bad, sq_range, *,
              n_rows: int, block: int, normalize: bool, use_ids: bool, use_groups: bool):
    """One device's fold of rows ``[skip * block, n_rows // block * block)`` of ``rows`` into its
    running lists. keys ``[1, Q, K]`` float32, idx ``[1, Q, K]`` int32 (sorted lists from earlier
    calls); rows: ``[n_rows, D]`` or a flat segment whose row 0 starts ``info[2]`` values in;
    queries ``[Q, D]``; query_ids / query_groups ``[Q]`` int32; row_groups ``[n_rows]`` int32 (read
    with ``use_groups`` only); info int32 ``[4]`` = (global index of row 0, global index where
    padding starts, offset of row 0 in ``rows``, blocks to skip); bad ``[1]`` int32, sq_range
    ``[1, 2]`` float32. Returns the new (keys, idx, bad, sq_range)."""
    from stylebench_jax.kernels import native

    reason = native.unavailable()  # builds and registers the target on first use (cached)
    if reason is not None:
        raise RuntimeError(f"the native top-k scan cannot run: {reason}")
    flags = (NORMALIZE if normalize else 0) | (USE_IDS if use_ids else 0) | (USE_GROUPS if use_groups else 0)
    out = (jax.ShapeDtypeStruct(keys.shape, jnp.float32), jax.ShapeDtypeStruct(idx.shape, jnp.int32),
           jax.ShapeDtypeStruct(bad.shape, jnp.int32), jax.ShapeDtypeStruct(sq_range.shape, jnp.float32))
    call = jax.ffi.ffi_call(native.TOPK_TARGET, out)
    results = call(keys, idx, rows, queries, query_ids, query_groups, row_groups, info, bad, sq_range,
                   flags=np.int64(flags), n_rows=np.int64(n_rows), block=np.int64(block),
                   variant=np.int64(VARIANT))
    return native.varying_like(results, keys)
