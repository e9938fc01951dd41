"""Exact blocked top-k cosine search, sharded over the mesh's ``data`` axis.

``topk_cosine(queries [Q, D], candidates [N, D], k)`` never holds the ``[Q, N]`` score matrix:
candidate rows stream through a jitted ``shard_map`` step in blocks of ``block_size`` rows per
device; each block is scored with one matmul, reduced to its own top list (:mod:`blockwise`) and
merged into a running ``[Q, L]`` list per device. The per-device lists are merged once at the end
on the host, lexicographically by (score descending, candidate index ascending). On CPU devices
the float32 step is by default one C++ call per device and call (:mod:`cpu_topk`:
each score compared with its query's running k-th best in registers, no score tile;
``kernel="xla"`` keeps XLA's blocked step), with the same inputs and outputs; its scores can
differ from XLA's in the last bits (another summation order, :mod:`cpu_topk`).

Candidates can be an in-memory array, a ``.npy`` path or whole-file ``np.memmap`` (read by
positional reads with a prefetch thread, see :mod:`npy_rows`), or a :class:`ShardedPool` resident
on the devices (search many query batches without moving the pool again). A C-contiguous float32
array is used in place on CPU whatever its alignment: each device call gets, per device, a view
that starts at the 64-byte boundary at or before its first row (which XLA wraps without a copy)
and skips the few elements before the row (:func:`npy_rows.flat_views`). The calls are few and
run one program: up to ``scan.IN_PLACE_BLOCKS`` blocks per device each, the rest of the whole
blocks in one shifted call of the same shape (:func:`scan.plan_spans`); only the first row (a few
more when D < 16: when the data is not 64-byte aligned, their view would start before the
array) and the last partial slab are copied. Any other array, and files, stream in chunks of ``chunk_rows``
copied rows (few chunks in flight), so memory stays the pool plus a bounded working set. The
last partial slab is scanned with a block of its own size (:func:`scan.tail_block`), so padding
costs at most ``16 * devices`` rows.

Padding rows (N need not divide the device count) and excluded candidates score ``-inf`` and can
never be returned: a query with fewer than ``k`` admissible candidates gets index ``-1`` and score
``-inf`` in its trailing columns.

Precision ``"bfloat16"`` scores blocks with a bfloat16 matmul (float32 accumulation) and keeps,
per query, the ``S`` best bfloat16 scores ("keys"): each block hands the running list a short
list holding its best ``m = max(2k, k + 8)`` keys (:func:`blockwise.block_shortlist`). Only at
the end are those ``S`` rows re-scored in float32 (gathered from the host array or file, or
scored on the devices holding a resident pool), and their float32 top ``k`` is returned. The
answer is certified exact per query: every candidate left off the shortlist has a key ``<= b``,
where ``b`` is the larger of the ``S + 1``-th best key and the largest key any block's short
list left out (at most that block's ``m``-th best), hence a float32 score ``<= b + eps`` with

    eps = |q| max|c| (2u + u^2 + 2 g_D (1 + (1 + u)^2)),  u = 2^-8, g_D = D 2^-24 / (1 - D 2^-24)

(bfloat16 rounding of both inputs, float32 accumulation in any order of both computations, with a
factor 2 margin on the accumulation terms). If the k-th returned float32 score ``s_k`` exceeds
``b + eps`` nothing left off can enter the top ``k``.

A query whose certificate fails (more than ``S`` candidates score within ``eps`` of its k-th, as
with near-duplicates) grows its shortlist instead of rescanning in float32: only a candidate with
key ``>= t = s_k - eps`` can beat the ``k`` candidates already found (its float32 score is at most
``key + eps``), so a second bfloat16 pass over the pool, for the failed queries only, keeps every
key ``>= t`` and counts them per device. When every device's list holds all the keys it counted,
the grown shortlist is complete and its float32 top ``k`` is exact; otherwise one more such pass
runs with lists sized from those exact counts. Only a query needing more than ``MAX_GROWN_KEEP``
entries per device (or whose sized pass still came back incomplete, which the counts rule out) is
searched again in float32. So the returned indices are always those of the float32 search; the
only difference can come from the float32 scores themselves, which are computed by a different
kernel (matrix-vector instead of matrix-matrix) and may differ in the last bit, i.e. swap two
candidates whose float32 scores agree to ~``D * 2^-24``.

Precision ``"auto"`` picks ``"bfloat16"`` only on a CPU with native bfloat16 dot instructions
(AVX512-BF16 / AMX-BF16, :func:`fast_bfloat16`) whose float32 search would run XLA's scan rather
than the C++ one, and ``"float32"`` everywhere else, accelerators included: the certificate pays
only where few close scores crowd the k-th, which Gaussian pools have and style embeddings do not.
On a 2-core AVX-512/AVX512-BF16 EPYC (Zen 4; ``bench_topk.py``, 2026-11-27, Q = 1000) certified
bfloat16 was 8-9% faster than the C++ float32 scan on Gaussian pools of 10^6 and 3 x 10^6 rows,
but 1.5-2.4x slower on tiled real MiniLM and clustered pools (and 1.2x slower at 10^5). On CPUs
without native bfloat16 (e.g. AVX2-only), XLA's bfloat16 matmul is *slower* than its float32 one
(0.6x measured on a 2-core AVX2 EPYC), so bfloat16 can only lose there. On an H100 (N = 10^6,
Q = 1000, D = 384, pool resident on the card): float32 0.031-0.033 s on Gaussian, clustered
(200 centres) and tiled real MiniLM pools; certified bfloat16 0.020 s on Gaussian (2026-11-26) but
0.062 s clustered and 0.049 s real (2026-11-27: 930 / 282 of 1000 queries needed a grown
shortlist); a host array streamed to the card is transfer-bound (float32 0.178 s, bfloat16 0.209 s
on Gaussian).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import jax
import numpy as np
from jax.sharding import Mesh

from stylebench_jax.errors import is_count
from stylebench_jax.kernels import cpu_topk
from stylebench_jax.kernels.npy_rows import row_source, take_rows
from stylebench_jax.kernels.scan import (
    DEFAULT_BLOCK,
    ScanConfig,
    ScanResult,
    ShardedPool,
    as_int32_labels,
    block_group_size,
    device_block,
    plan_spans,
    pool_rescore_step,
    rescore_gathered,
    scan_pool,
    scan_stream,
    shard_pool,
)
from stylebench_jax.parallel import pad_rows, replicated, resolve_mesh, round_up
from stylebench_jax.runtime import cpu_flags as _cpu_flags

DEFAULT_CHUNK_ROWS = 65536     # host rows moved per transfer when streaming
DEFAULT_QUERY_BATCH = 1024     # queries scored together; bounds the [queries, block] tile
BF16_UNIT = 2.0 ** -8
PRECISIONS = ("auto", "float32", "bfloat16")
KERNELS = ("auto", "native", "xla")
GROWTH = 4                     # first grown pass: lists and block short lists this many times longer
MAX_GROWN_KEEP = 4096          # per device and query; past it a query is searched in float32
RESCORE_BYTES = 256 << 20      # gathered float32 rows per re-scoring call


class NonFiniteRowError(ValueError):
    """A candidate row holds NaN or infinity (or values whose squares overflow float32, |x| >
    ~1.8e19: the check is that the row's squared norm is finite); ``row`` is its pool index."""

    def __init__(self, row: int):
        super().__init__(f"candidate row {row} holds NaN or infinity")
        self.row = row


@dataclasses.dataclass(frozen=True)
class TopK:
    """Result of a search. ``indices [Q, k'] int64`` (``-1`` = no admissible candidate left),
    ``scores [Q, k'] float32`` (``-inf`` there), ``k' = min(k, N)``, rows sorted best first with
    ties by lower index. ``precision``: the one that ran (``"auto"`` resolved). bfloat16 only:
    ``n_grown`` queries whose first certificate failed and that were certified by a grown
    shortlist (second bfloat16 pass); ``n_recomputed`` queries searched again in float32.
    ``kernel``: the scan that ran, ``"native"`` (:mod:`cpu_topk`, float32) or ``"xla"`` (a
    bfloat16 search says ``"xla"`` even when some queries were re-searched in float32 natively).
    ``norm_range``: (min, max) L2 norm of the scored candidate rows."""

    indices: np.ndarray
    scores: np.ndarray
    n_recomputed: int = 0
    norm_range: tuple[float, float] = (math.nan, math.nan)
    n_grown: int = 0
    precision: str = "float32"
    kernel: str = "xla"


def fast_bfloat16(mesh: Mesh) -> bool:
    """Whether a bfloat16 matmul (float32 accumulation) outruns a float32 one on ``mesh``'s devices:
    True on accelerators (GPU tensor cores, TPU MXU); on CPU only with native bfloat16 dot
    instructions (``avx512_bf16`` or ``amx_bf16`` in ``/proc/cpuinfo``), which XLA:CPU uses; an
    AVX2-only CPU runs XLA's bfloat16 matmul at ~0.6x its float32 rate."""
    if mesh.devices.flat[0].platform != "cpu":
        return True
    return bool(_cpu_flags() & {"avx512_bf16", "amx_bf16"})


def _check_precision(precision: str) -> None:
    if precision not in PRECISIONS:
        raise ValueError(f"precision: expected one of {', '.join(map(repr, PRECISIONS))}, "
                         f"found {precision!r}")


def resolve_precision(precision: str, mesh: Mesh, *, kernel: str = "auto") -> str:
    """``"auto"`` -> ``"bfloat16"`` on a CPU where :func:`fast_bfloat16` and the float32 search
    would not run the C++ scan (``kernel`` ``"xla"``, or the scan cannot run), else ``"float32"``
    (accelerators included: module docstring); other precisions as given."""
    _check_precision(precision)
    if precision != "auto":
        return precision
    if mesh.devices.flat[0].platform != "cpu" or not fast_bfloat16(mesh):
        return "float32"
    return "float32" if kernel != "xla" and cpu_topk.applies(mesh) is None else "bfloat16"


def _check_kernel(kernel: str) -> None:
    if kernel not in KERNELS:
        raise ValueError(f"kernel: expected one of {', '.join(map(repr, KERNELS))}, found {kernel!r}")


def resolve_kernel(kernel: str, mesh: Mesh, precision: str) -> str:
    """The float32 scan: ``"auto"`` -> ``"native"`` (the C++ kernel, :mod:`cpu_topk`: measured faster
    than XLA's scan on AVX2 and AVX-512 CPUs) where it can run on ``mesh`` (CPU devices, AVX2/FMA, a
    compiler), else ``"xla"``; ``"native"`` where it cannot run raises ValueError naming why.
    bfloat16 scans always run in XLA (the kernel is float32)."""
    _check_kernel(kernel)
    if kernel == "xla" or precision != "float32":
        return "xla"
    reason = cpu_topk.applies(mesh)
    if reason is None:
        return "native"
    if kernel == "native":
        raise ValueError(f"kernel: the native float32 scan cannot run: {reason}")
    return "xla"


def row_blocks_f64(rows: np.ndarray, block: int = DEFAULT_CHUNK_ROWS):
    """``(start, rows [b, D] float64, L2 norms [b] float64)`` block by block: the one pass that
    checking and normalising rows share, in float64 (a float32 norm of tiny rows underflows, of huge
    ones overflows) with bounded extra memory for large row counts."""
    for start in range(0, rows.shape[0], block):
        wide = rows[start:start + block].astype(np.float64)  # a copy: callers may scale it in place
        yield start, wide, np.linalg.norm(wide, axis=1)


def _check_queries(queries, normalize: bool) -> np.ndarray:
    q = np.asarray(queries)
    if q.ndim != 2:
        raise ValueError(f"queries: expected a 2-D array [Q, D], found shape {q.shape}")
    q = np.ascontiguousarray(q, dtype=np.float32)
    bad = np.flatnonzero(~np.isfinite(q).all(axis=1))
    if bad.size:
        raise ValueError(f"queries: row {bad[0]} holds NaN or infinity")
    if normalize:
        q = q.copy()
        for start, wide, norms in row_blocks_f64(q):
            q[start:start + len(wide)] = wide / np.where(norms > 0, norms, 1.0)[:, None]
    return q


def default_shortlist(k: int, n: int) -> int:
    """bfloat16 shortlist size ``S`` for top ``k`` of ``n`` candidates.

    The certificate fails when more than ``S`` candidates score within ``eps`` (~0.008 for unit
    rows) of the k-th, and a failed query costs a second bfloat16 pass (for the failed queries
    only); the top of a larger pool is denser. Measured with unit Gaussian rows, D = 384,
    Q = 1000, k = 10: ``S = 42`` certifies every query at N = 10^6, but leaves 1 query uncertified
    at N = 10^7, where ``S = 74`` certifies all.
    """
    return max(2 * k, k + 32) if n <= 2**21 else max(4 * k, k + 64)


def bf16_margin(query_norms: np.ndarray, max_candidate_norm: float, dim: int) -> np.ndarray:
    """``eps`` per query: bound on |bfloat16-matmul score - float32 score| (module docstring)."""
    u = BF16_UNIT
    gamma = dim * 2.0 ** -24 / (1.0 - dim * 2.0 ** -24)
    return query_norms * max_candidate_norm * (2 * u + u * u + 2 * gamma * (1 + (1 + u) ** 2)) + 1e-30


@dataclasses.dataclass(frozen=True)
class _Plan:
    mesh: Mesh
    n: int
    dim: int
    pool: ShardedPool | None
    source: object
    groups: np.ndarray | None
    block: int
    spans: list


def _merge_devices(result: ScanResult):
    """Merge per-device lists ``[n_data, Q, keep]`` into ``[Q, n_data * keep]`` sorted by
    (key descending, index ascending); returns (keys, indices)."""
    n_data, q, keep = result.keys.shape

    def flat(a):
        return a.transpose(1, 0, 2).reshape(q, n_data * keep)

    keys, idx = flat(result.keys), flat(result.indices).astype(np.int64)
    order = np.lexsort((idx, -keys), axis=-1)
    return np.take_along_axis(keys, order, 1), np.take_along_axis(idx, order, 1)


def _final(scores: np.ndarray, idx: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    scores, idx = scores[:, :k].astype(np.float32), idx[:, :k].copy()
    idx[scores == -np.inf] = -1
    return idx, scores


def _rescore(plan: _Plan, queries: np.ndarray, idx: np.ndarray, normalize: bool) -> np.ndarray:
    """Float32 scores ``[Q, S]`` of ``queries`` against candidates ``idx [Q, S]`` (-1: none), in
    query chunks of at most ``RESCORE_BYTES`` gathered rows."""
    safe = np.maximum(idx, 0)
    step = max(1, RESCORE_BYTES // max(1, idx.shape[1] * plan.dim * 4))
    if step < idx.shape[0]:
        return np.concatenate([_rescore(plan, queries[lo:lo + step], idx[lo:lo + step], normalize)
                               for lo in range(0, idx.shape[0], step)])
    if plan.pool is not None:
        rep = replicated(plan.mesh)
        scores = pool_rescore_step(plan.mesh, normalize)(
            plan.pool.rows, jax.device_put(queries, rep), jax.device_put(safe.astype(np.int32), rep))
    else:
        rows = take_rows(plan.source, safe.reshape(-1)).reshape(*idx.shape, plan.dim)
        scores = rescore_gathered(jax.device_put(queries), jax.device_put(rows), normalize=normalize)
    return np.asarray(scores)


def _exact_order(plan: _Plan, queries: np.ndarray, keys: np.ndarray, idx: np.ndarray, normalize: bool):
    """Float32 scores of the entries ``idx`` (``-inf`` where the key is), sorted by (score
    descending, index ascending); returns (scores, indices)."""
    exact = np.where(keys == -np.inf, -np.inf, _rescore(plan, queries, idx, normalize))
    order = np.lexsort((idx, -exact), axis=-1)
    return np.take_along_axis(exact, order, 1), np.take_along_axis(idx, order, 1)


def _select_bf16(plan: _Plan, queries: np.ndarray, result: ScanResult, k: int, shortlist: int,
                 eps: np.ndarray, normalize: bool):
    """Top ``k`` by float32 score among the ``shortlist`` best bfloat16 keys; certified mask."""
    keys, idx = _merge_devices(result)
    bound = keys[:, shortlist] if keys.shape[1] > shortlist else np.full(keys.shape[0], -np.inf)
    bound = np.maximum(bound, result.bound.max(axis=0))
    exact, idx = _exact_order(plan, queries, keys[:, :shortlist], idx[:, :shortlist], normalize)
    kth = exact[:, k - 1]
    certified = (bound == -np.inf) | (kth > bound.astype(np.float64) + eps)
    return exact, idx, certified


def _threshold(kth: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """float32 ``t <= kth - eps`` (rounded down): keys below it cannot reach the top ``k``."""
    t = kth.astype(np.float64) - eps
    t32 = t.astype(np.float32)
    return np.where(t32.astype(np.float64) > t, np.nextafter(t32, np.float32(-np.inf)), t32)


def _plan(candidates, mesh, candidate_groups, block_size: int, chunk_rows: int) -> _Plan:
    if isinstance(candidates, jax.Array):
        candidates = shard_pool(candidates, mesh, groups=candidate_groups, block_size=block_size)
        candidate_groups = None
    if isinstance(candidates, ShardedPool):
        if candidate_groups is not None:
            raise ValueError("candidate_groups: pass them to shard_pool() together with the rows")
        return _Plan(candidates.mesh, candidates.n, candidates.rows.shape[1], candidates, None, None,
                     candidates.block, [])
    source = row_source(candidates)
    if len(source.shape) != 2:
        raise ValueError(f"candidates: expected a 2-D array [N, D], found shape {source.shape}")
    mesh = resolve_mesh(mesh)
    n, dim = source.shape
    n_data = mesh.shape["data"]
    block = device_block(n, n_data, block_size)
    spans = plan_spans(n, n_data, block, chunk_rows, source if isinstance(source, np.ndarray) else None)
    groups = None if candidate_groups is None else as_int32_labels(candidate_groups, n, "candidate_groups")
    return _Plan(mesh, n, dim, None, source, groups, block, spans)


def _query_exclusions(q: int, exclude_self: bool, query_ids, query_groups, plan: _Plan):
    if exclude_self and query_ids is not None:
        raise ValueError("pass either exclude_self=True or query_ids, not both")
    ids = np.arange(q, dtype=np.int32) if exclude_self else None
    if query_ids is not None:
        ids = as_int32_labels(query_ids, q, "query_ids")
    has_candidate_groups = plan.groups is not None or (plan.pool is not None and plan.pool.groups is not None)
    if (query_groups is None) != (not has_candidate_groups):
        raise ValueError("query_groups and candidate_groups must be given together")
    groups = None if query_groups is None else as_int32_labels(query_groups, q, "query_groups")
    return ids, groups


@dataclasses.dataclass(frozen=True)
class _Search:
    """One call's fixed inputs: the plan, the (normalised) queries and their exclusions."""

    plan: _Plan
    queries: np.ndarray
    ids: np.ndarray | None
    groups: np.ndarray | None
    k: int
    normalize: bool
    query_batch: int
    progress: Callable[[int], None] | None

    def scan(self, rows: np.ndarray, cfg: ScanConfig, thresholds: np.ndarray | None = None) -> ScanResult:
        """Scan the queries ``rows`` (indices); raises on a non-finite candidate row."""
        def take(values):
            return None if values is None else values[rows]

        result = _scan_batch(self.plan, self.queries[rows], take(self.ids), take(self.groups),
                             take(thresholds), cfg, self.progress)
        if result.bad_row >= 0:
            raise NonFiniteRowError(result.bad_row)
        return result


def topk_cosine(queries, candidates, k: int, *, mesh: Mesh | None = None,
                block_size: int = DEFAULT_BLOCK, exclude_self: bool = False, query_ids=None,
                query_groups=None, candidate_groups=None, precision: str = "float32",
                shortlist: int | None = None, normalize: bool = False,
                query_batch: int = DEFAULT_QUERY_BATCH, chunk_rows: int = DEFAULT_CHUNK_ROWS,
                progress: Callable[[int], None] | None = None, kernel: str = "auto") -> TopK:
    """Exact top-``k`` candidates by inner product (cosine for L2-normalised rows) per query.

    queries: ``[Q, D]`` float (cast to float32). candidates: ``[N, D]`` float array, ``.npy`` path,
    ``np.memmap``, ``jax.Array`` or :class:`ShardedPool`. exclude_self: never return candidate
    ``i`` for query ``i`` (pool contains the queries first); query_ids: ``[Q]`` int, candidate to
    exclude per query (-1: none). query_groups ``[Q]`` / candidate_groups ``[N]`` int: never
    return a candidate of the query's own group (same author/book). precision: ``"float32"``,
    ``"bfloat16"`` (certified, see module docstring) or ``"auto"`` (the faster of the two on this
    hardware, :func:`resolve_precision`); shortlist: bfloat16 shortlist size (default
    :func:`default_shortlist`). normalize: L2-normalise queries and candidate rows first (a row
    whose float32 squared norm is 0, all zeros or below ~1e-19, scores 0 with every query;
    ``TopK.norm_range`` starts at 0 when the pool had one).
    Memory: the chunks in flight (none for a C-contiguous float32 array, which is used in place)
    plus, for XLA's scan, ``query_batch * block_size`` float32 scores per device (the C++ scan
    keeps only its ``[Q, k]`` lists per thread); bfloat16 adds the re-scored rows, at most
    ``RESCORE_BYTES`` at a time. Raises ValueError for ``kernel="native"`` where the C++ scan
    cannot run (the message says why).
    progress: called with a number of candidate rows each time that many are done (per query
    batch, so the total is ``N`` times the number of batches, plus one pass per batch of queries
    whose shortlist grew or that were searched again in float32); a resident pool reports once
    per batch.
    Raises ValueError on bad shapes/labels, :class:`NonFiniteRowError` on NaN/inf candidates.
    """
    _check_precision(precision)
    for name, value in (("k", k), ("block_size", block_size), ("query_batch", query_batch),
                        ("chunk_rows", chunk_rows)):
        if not is_count(value):
            raise ValueError(f"{name}: expected a whole number >= 1, found {value!r}")
    if shortlist is not None and not is_count(shortlist):
        raise ValueError(f"shortlist: expected a whole number >= 1, found {shortlist!r}")
    if isinstance(candidates, (list, tuple)):
        candidates = np.asarray(candidates)
    q = _check_queries(queries, normalize)
    plan = _plan(candidates, mesh, candidate_groups, block_size, chunk_rows)
    if q.shape[1] != plan.dim:
        raise ValueError(f"queries have dimension {q.shape[1]}, candidates {plan.dim}")
    # precision "auto" on a CPU with bfloat16 dot instructions asks whether the C++ scan runs
    # (building the library); resolve_kernel checks the name, float32 only: a bfloat16 search
    # neither builds the library nor refuses kernel="native" (its float32 re-search resolves it)
    precision = resolve_precision(precision, plan.mesh, kernel=kernel)
    ran = resolve_kernel(kernel, plan.mesh, precision)
    ids, qgroups = _query_exclusions(q.shape[0], exclude_self, query_ids, query_groups, plan)
    search = _Search(plan, q, ids, qgroups, min(k, plan.n), normalize, query_batch, progress)
    kk = search.k
    if shortlist is not None and precision == "bfloat16" and shortlist < kk:
        raise ValueError(f"shortlist: expected >= k ({kk}) for a bfloat16 search, found {shortlist}")
    short = min(shortlist or default_shortlist(kk, plan.n), plan.n)
    keep = kk if precision == "float32" else (short + 1 if short < plan.n else plan.n)
    block_keep = keep if precision == "float32" else min(keep, max(2 * kk, kk + 8))
    cfg = ScanConfig(keep, plan.block, block_keep, precision, ids is not None, qgroups is not None, normalize,
                     native=ran == "native")
    out_idx = np.full((q.shape[0], kk), -1, np.int64)
    out_scores = np.full((q.shape[0], kk), -np.inf, np.float32)
    failed, thresholds, norm_range = [], np.zeros(q.shape[0], np.float32), (math.inf, 0.0)
    for lo in range(0, q.shape[0], query_batch):
        rows = np.arange(lo, min(lo + query_batch, q.shape[0]))
        result = search.scan(rows, cfg)
        norm_range = (min(norm_range[0], result.sq_range[0]), max(norm_range[1], result.sq_range[1]))
        if precision == "float32":
            scores, idx = _merge_devices(result)
        else:
            eps = bf16_margin(np.linalg.norm(q[rows].astype(np.float64), axis=1),
                              math.sqrt(result.sq_range[1]), plan.dim)
            scores, idx, certified = _select_bf16(plan, q[rows], result, kk, short, eps, normalize)
            failed.extend(rows[~certified])
            thresholds[rows] = _threshold(scores[:, kk - 1], eps)
        out_idx[rows], out_scores[rows] = _final(scores, idx, kk)
    n_grown, left = 0, np.asarray(failed, np.int64)
    if left.size:
        grown = _grow_shortlists(search, cfg, left, thresholds, out_idx, out_scores)
        n_grown, left = left.size - grown.size, grown
    if left.size:
        again = topk_cosine(
            q[left], candidates if plan.pool is None else plan.pool, k, mesh=plan.mesh,
            block_size=block_size, query_ids=None if ids is None else ids[left],
            query_groups=None if qgroups is None else qgroups[left],
            candidate_groups=plan.groups, precision="float32", query_batch=query_batch,
            chunk_rows=chunk_rows, normalize=normalize, progress=progress, kernel=kernel)
        out_idx[left], out_scores[left] = again.indices, again.scores
    norms = (math.sqrt(norm_range[0]), math.sqrt(norm_range[1])) if norm_range[0] <= norm_range[1] else (
        math.nan, math.nan)
    return TopK(out_idx, out_scores, int(left.size), norms, n_grown, precision, ran)


def _grow_shortlists(search: _Search, cfg: ScanConfig, pending: np.ndarray, thresholds: np.ndarray,
                     out_idx: np.ndarray, out_scores: np.ndarray) -> np.ndarray:
    """Certify the queries ``pending`` (first certificate failed) by collecting every key
    ``>= thresholds`` in a second bfloat16 pass (module docstring); writes their exact top ``k``
    into ``out_idx``/``out_scores`` and returns the queries it could not certify.

    First pass: lists ``GROWTH`` times longer than the first scan's (per device and per block);
    queries left incomplete get one more pass with lists sized from the exact counts of the
    first (per device: its count; per block: the most groups holding a key ``>= t``)."""
    keep = max(cfg.keep, min(MAX_GROWN_KEEP, round_up(GROWTH * cfg.keep, 8)))  # >= k: see width
    grown = dataclasses.replace(cfg, keep=keep, block_keep=min(GROWTH * cfg.block_keep, keep), threshold=True)
    for attempt in range(2):
        need_keep = np.zeros(pending.size, np.int64)
        need_groups = np.zeros(pending.size, np.int64)
        complete = np.zeros(pending.size, bool)
        for lo in range(0, pending.size, search.query_batch):
            part = slice(lo, lo + search.query_batch)
            rows = pending[part]
            result = search.scan(rows, grown, thresholds)
            keys, idx = _merge_devices(result)
            found = (keys > -np.inf).sum(axis=1)
            complete[part] = found == result.count.sum(axis=0)
            need_keep[part], need_groups[part] = result.count.max(axis=0), result.group_count.max(axis=0)
            width = max(search.k, int(found.max()))  # <= n_data * keep, as keep >= k
            exact, idx = _exact_order(search.plan, search.queries[rows], keys[:, :width], idx[:, :width],
                                      search.normalize)
            done = rows[complete[part]]
            out_idx[done], out_scores[done] = _final(exact[complete[part]], idx[complete[part]], search.k)
        pending = pending[~complete]
        if not pending.size or attempt == 1:
            break
        keep = int(need_keep[~complete].max())
        if keep > MAX_GROWN_KEEP:
            break
        keep = round_up(keep, 8)
        groups = int(max(need_groups[~complete].max(), grown.block_keep))
        grown = dataclasses.replace(grown, keep=keep, block_keep=min(groups, grown.block),
                                    group_size=block_group_size(grown))
    return pending


def _scan_batch(plan: _Plan, queries: np.ndarray, ids, groups, thresholds, cfg: ScanConfig,
                progress) -> ScanResult:
    """Pad the query batch to a multiple of 8 rows (fewer shapes to compile), scan, unpad."""
    q = queries.shape[0]
    padded = round_up(q, 8)
    queries = pad_rows(queries, padded)
    ids = None if ids is None else pad_rows(ids, padded, value=-1)
    groups = None if groups is None else pad_rows(groups, padded)
    thresholds = None if thresholds is None else pad_rows(thresholds, padded, value=np.inf)
    if plan.pool is not None:
        result = scan_pool(plan.pool, queries, ids, groups, thresholds, cfg)
        if progress is not None:
            progress(plan.n)
    else:
        result = scan_stream(plan.source, plan.mesh, queries, ids, groups, thresholds, plan.groups, cfg,
                             plan.spans, progress=progress)
    return result.rows(slice(0, q))
