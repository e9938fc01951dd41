"""Device side of the blocked top-k search: the sharded scan step and resident candidate pools.

``scan_step(mesh, cfg)`` is a jitted ``shard_map`` that folds a slab of candidate rows (sharded
over ``data``) into per-device running top lists ``[n_data, Q, keep]``. Device ``d`` of a slab
starting at global row ``base`` holds rows ``base + d * stride + [0, stride)``; within a device,
blocks are visited in increasing row order, so "lower position = lower index" holds for the
running merge (see :mod:`blockwise`). Rows at or past ``n_valid`` (padding) score ``-inf``.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

from stylebench_jax.kernels import cpu_topk
from stylebench_jax.kernels.blockwise import block_shortlist, canonical, merge_running, pick_group_size
from stylebench_jax.kernels.npy_rows import (
    ALIGN,
    NpyRows,
    flat_views,
    in_place_ok,
    prefetch,
    read_flat,
    row_source,
    view_fits,
)
from stylebench_jax.parallel import batch_sharding, pad_rows, replicated, resolve_mesh, round_up
from stylebench_jax.parallel.distributed import fetch, put_global_batch

# Candidate rows per device per matmul. Measured (bench_topk.py, 2-core AVX2 EPYC, Q = 1000, N = 5e5,
# float32): 8192 rows 70 GFLOP/s, 16384 80, 32768 101 (the rate of XLA's plain dot on that shape),
# 65536 100; the [1024, 32768] float32 score tile is 128 MB per device.
DEFAULT_BLOCK = 32768
# Most blocks per device in one call over rows used in place. Each call's temporaries (the score
# tile, the block's copy: ~180 MB at the default block and Q = 1000) are mapped afresh by XLA:CPU
# and fault in page by page (~45,000 minor faults, 25-45 ms, per call; glibc's malloc settings
# do not reach them), so calls should be few: at N = 10^6 on the 2-core AVX2 CPU, 8 blocks per
# call took 224,000 faults per search, 32 blocks 79,000 (one call, plus the head and tail). A
# pool of fewer blocks runs calls as wide as it allows (:func:`plan_spans`).
IN_PLACE_BLOCKS = 32
INT_MAX = np.iinfo(np.int32).max


@dataclasses.dataclass(frozen=True)
class ShardedPool:
    """Candidates resident on the devices: ``rows [n_data * per_device, D]`` float32 sharded over
    ``data`` (zero padding after row ``n``), optional ``groups [n_data * per_device]`` int32."""

    rows: jax.Array
    groups: jax.Array | None
    n: int
    mesh: Mesh
    block: int

    @property
    def per_device(self) -> int:
        return self.rows.shape[0] // self.mesh.shape["data"]


class ScanState(NamedTuple):
    """Per-device running state of a scan, each leaf sharded over ``data`` (leading axis n_data).

    ``keys [n_data, Q, keep]``: best scores so far (bfloat16-matmul scores in bfloat16 mode);
    ``idx [n_data, Q, keep]`` int32 their candidate indices; ``bound [n_data, Q]``: every candidate
    a block's short list left out has key <= bound (so every candidate not in the list has key <=
    max(bound, last key)); ``bad [n_data]`` int32: lowest row with NaN/inf (INT_MAX: none);
    ``sq_range [n_data, 2]``: (min, max) squared L2 norm of the rows seen. Threshold scans only
    (else zeros): ``count [n_data, Q]`` int32 admissible candidates with key >= the query's
    threshold; ``group_count [n_data, Q]`` int32 the most groups of one block holding such a key.
    """

    keys: jax.Array
    idx: jax.Array
    bound: jax.Array
    bad: jax.Array
    sq_range: jax.Array
    count: jax.Array
    group_count: jax.Array


@dataclasses.dataclass(frozen=True)
class ScanConfig:
    keep: int          # entries kept per query and device (k, or shortlist + 1 for bfloat16)
    block: int         # candidate rows per device per matmul
    block_keep: int    # top entries each block's short list must hold (block_shortlist's m)
    precision: str     # "float32" | "bfloat16"
    use_ids: bool      # exclude candidate query_ids[i] from query i
    use_groups: bool   # exclude candidates with query_groups[i] == candidate_groups[j]
    normalize: bool    # L2-normalise candidate rows before scoring
    flat_rows: int = 0         # > 0: rows arrive as flat segments of this many rows per device
    threshold: bool = False    # keep only keys >= the query's threshold, and count them
    group_size: int | None = None  # block_shortlist's group width (None: pick_group_size)
    native: bool = False       # float32, no threshold: the C++ scan (kernels.cpu_topk) on CPU devices

    def __post_init__(self):
        if self.native and (self.precision != "float32" or self.threshold):
            raise ValueError("ScanConfig: the native scan is float32 without thresholds "
                             f"(precision={self.precision!r}, threshold={self.threshold})")


def device_block(n: int, n_data: int, block_size: int) -> int:
    """Rows per device per step: ``block_size``, or less when the pool is small (multiple of 8)."""
    return min(block_size, round_up(-(-n // n_data), 8))


def tail_block(rows: int, n_data: int, block: int) -> int:
    """Block for the last partial slab (``rows`` rows over ``n_data`` devices) of a scan whose other
    calls use ``block``. XLA:CPU's float32 dot gives a candidate row the same bits whatever the
    block's row count only while that count is a multiple of 16 (measured: an odd multiple of 8
    runs another kernel and changes the last bit of most scores, so exact duplicates in the tail
    would stop tying with their copies elsewhere). So the tail is rounded up to 16 rows per device
    when ``block`` is a multiple of 16, and is a whole ``block`` otherwise."""
    if block % 16:
        return block
    return min(block, round_up(-(-rows // n_data), 16))


def block_group_size(cfg: ScanConfig) -> int:
    """Group width of :func:`blockwise.block_shortlist` for ``cfg``'s blocks (1: whole block)."""
    m = min(cfg.block_keep, cfg.block)
    if cfg.group_size is None:
        return pick_group_size(cfg.block, m)
    return cfg.group_size if cfg.block % cfg.group_size == 0 else 1


def local_scan(state: ScanState, rows, row_groups, queries, query_ids, query_groups, thresholds, leads,
               base, stride, n_valid, skip, *, cfg: ScanConfig) -> ScanState:
    """One device: fold ``rows`` (block after block) into its running top list ``state``
    (:class:`ScanState` with a leading axis of 1: this device's slice). ``rows``: ``[1, width]``
    flat segment with its rows ``leads[0]`` elements in (``cfg.flat_rows``), else ``[rows, D]``;
    its first row is global row ``base + device * stride``; ``row_groups``: one label per segment
    row. The first ``skip`` blocks of the segment are left out (rows another call scanned: a
    shifted call, :class:`Span`); rows at or past ``n_valid`` are padding."""
    keys, idx, bound, bad, sq_range, count, group_count = state
    start = base + lax.axis_index("data") * stride
    if cfg.native:  # the whole call in one C++ call: no score tile (kernels.cpu_topk)
        lead = leads[0] if cfg.flat_rows else jnp.int32(0)
        info = jnp.stack([start, n_valid, lead, skip]).astype(jnp.int32)
        keys, idx, bad, sq_range = cpu_topk.scan_rows(
            keys, idx, rows, queries, query_ids, query_groups, row_groups, info, bad, sq_range,
            n_rows=cfg.flat_rows or rows.shape[0], block=cfg.block, normalize=cfg.normalize,
            use_ids=cfg.use_ids, use_groups=cfg.use_groups)
        return ScanState(keys, idx, bound, bad, sq_range, count, group_count)
    group_size = block_group_size(cfg)
    low = queries.astype(jnp.bfloat16) if cfg.precision == "bfloat16" else None
    dims = (((1,), (1,)), ((), ()))
    dim = queries.shape[1]
    if cfg.flat_rows:
        n_rows, flat, lead = cfg.flat_rows, rows[0], leads[0]

        def take(first_row, count):
            return lax.dynamic_slice_in_dim(flat, lead + first_row * dim, count * dim).reshape(count, dim)
    else:
        n_rows = rows.shape[0]

        def take(first_row, count):
            return lax.dynamic_slice_in_dim(rows, first_row, count)

    def stats(x, gidx, bad, sq_range):
        """Fold rows ``x`` (global indices ``gidx``) into ``bad`` and ``sq_range``; returns the rows
        (L2-normalised with ``cfg.normalize``; the range is then that of the normalised rows)."""
        valid = gidx < n_valid
        sq = jnp.sum(x * x, axis=1)  # NaN/inf anywhere in a row (or |x| > ~1e19) makes it non-finite
        bad = jnp.minimum(bad, jnp.min(jnp.where(valid & ~jnp.isfinite(sq), gidx, INT_MAX)))
        if cfg.normalize:
            x = x * row_scale(sq)[:, None]
            sq = jnp.sum(x * x, axis=1)
        sq_range = jnp.stack([jnp.minimum(sq_range[0, 0], jnp.min(jnp.where(valid, sq, jnp.inf))),
                              jnp.maximum(sq_range[0, 1], jnp.max(jnp.where(valid, sq, 0.0)))])[None]
        return x, bad, sq_range

    # Row statistics per block, from the block the loop takes anyway, when rows are normalised or
    # arrive flat (taking all of a flat segment at once is a copy of it: measured 130 -> 152
    # GFLOP/s on float32 calls of 8 blocks); otherwise in one pass over all rows of the call
    # (per block it would read each block a second time through a copy: ~6% of a bfloat16 search).
    in_loop = cfg.normalize or cfg.flat_rows > 0
    if not in_loop:
        _, bad, sq_range = stats(take(0, n_rows), start + jnp.arange(n_rows, dtype=jnp.int32), bad, sq_range)

    def body(b, carry):
        keys, idx, bound, bad, sq_range, count, group_count = carry
        x = take(b * cfg.block, cfg.block)
        if in_loop:
            x, bad, sq_range = stats(x, start + b * cfg.block + jnp.arange(cfg.block, dtype=jnp.int32),
                                     bad, sq_range)
        first = start + b * cfg.block
        local_groups = (lax.dynamic_slice_in_dim(row_groups, b * cfg.block, cfg.block)
                        if cfg.use_groups else None)

        def admissible(pos):  # pos: int32 positions in the block, broadcastable to [Q, m]
            ok = first + pos < n_valid
            if cfg.use_ids:
                ok = ok & (first + pos != query_ids[:, None])
            if cfg.use_groups:
                ok = ok & (local_groups[pos] != query_groups[:, None])
            return ok

        if low is None:
            s = lax.dot_general(queries, x, dims, precision=lax.Precision.HIGHEST)
        else:
            s = lax.dot_general(low, x.astype(jnp.bfloat16), dims, preferred_element_type=jnp.float32)

        def shortlist(s, mask):
            return block_shortlist(s, cfg.block_keep, group_size, admissible if mask else None)

        if cfg.threshold:
            above = admissible(jnp.arange(cfg.block, dtype=jnp.int32)[None, :]) & (s >= thresholds[:, None])
            s = jnp.where(above, s, -jnp.inf)
            count = count + jnp.sum(above, axis=1, dtype=jnp.int32)[None]
            if group_size > 1 and cfg.block // group_size > cfg.block_keep:
                held = jnp.sum(s.reshape(s.shape[0], -1, group_size).max(axis=-1) > -jnp.inf, axis=1,
                               dtype=jnp.int32)
                group_count = jnp.maximum(group_count, held[None])
            values, pos, dropped = shortlist(s, False)
        elif cfg.use_ids or cfg.use_groups:
            values, pos, dropped = shortlist(s, True)
        else:
            # Only a block reaching past n_valid (padding) needs the mask, which costs a pass
            # writing the masked [Q, block] tile before the group maxima.
            values, pos, dropped = lax.cond(first + cfg.block > n_valid,
                                            functools.partial(shortlist, mask=True),
                                            functools.partial(shortlist, mask=False), s)
        bound = jnp.maximum(bound, dropped[None])
        keys, idx = merge_running((keys[0], idx[0]), (values, first + pos), cfg.keep)
        return ScanState(keys[None], idx[None], bound, bad, sq_range, count, group_count)

    # skip > 0 only for flat segments (shifted calls), whose row statistics are taken in the loop
    return lax.fori_loop(skip, n_rows // cfg.block, body,
                         ScanState(keys, idx, bound, bad, sq_range, count, group_count))


def row_scale(sq: jnp.ndarray) -> jnp.ndarray:
    """``1 / sqrt(sq)`` where ``sq > 0``, else 0: the factor that L2-normalises a row."""
    return jnp.where(sq > 0, lax.rsqrt(jnp.where(sq > 0, sq, 1.0)), 0.0)


@functools.lru_cache(maxsize=64)
def scan_step(mesh: Mesh, cfg: ScanConfig):
    """Jitted ``shard_map`` of :func:`local_scan`: state and rows sharded over ``data``."""
    state_spec = ScanState(*(P("data"),) * len(ScanState._fields))
    fn = jax.shard_map(
        functools.partial(local_scan, cfg=cfg), mesh=mesh,
        in_specs=(state_spec, P("data", None), P("data"), P(), P(), P(), P(), P("data"), P(), P(), P(), P()),
        out_specs=state_spec, check_vma=True)
    return jax.jit(fn)


def rescore_rows(queries: jnp.ndarray, rows: jnp.ndarray, normalize: bool) -> jnp.ndarray:
    """Float32 scores ``[Q, S]`` of ``queries [Q, D]`` against their own rows ``[Q, S, D]``
    (L2-normalised first with ``normalize``, by the same formula as the scan)."""
    if normalize:
        rows = rows * row_scale(jnp.sum(rows * rows, axis=-1))[..., None]
    return canonical(jnp.einsum("qd,qsd->qs", queries, rows, precision=lax.Precision.HIGHEST))


rescore_gathered = jax.jit(rescore_rows, static_argnames="normalize")


@functools.lru_cache(maxsize=16)
def pool_rescore_step(mesh: Mesh, normalize: bool):
    """Jitted ``shard_map``: float32 scores ``[Q, S]`` of ``queries`` against pool rows ``idx [Q, S]``
    (global indices, replicated). Each device scores the rows it holds; one ``psum`` adds the
    single non-zero contribution per entry, so the pool never leaves its devices."""

    def local(rows, queries, idx):
        per_device = rows.shape[0]
        local_idx = idx - lax.axis_index("data") * per_device
        own = (local_idx >= 0) & (local_idx < per_device)
        scores = rescore_rows(queries, rows[jnp.clip(local_idx, 0, per_device - 1)], normalize)
        return lax.psum(jnp.where(own, scores, 0.0), "data")

    fn = jax.shard_map(local, mesh=mesh, in_specs=(P("data", None), P(), P()), out_specs=P(),
                       check_vma=True)
    return jax.jit(fn)


UPLOAD_ROWS = 65536  # host rows per transfer when filling a device shard


@functools.cache
def _zeros_on(device) -> Callable:
    """``shape -> float32 zeros`` made on ``device`` by a compiled program (no host buffer or
    transfer: ``jnp.zeros(..., device=)`` sends its fill value from the host)."""
    return jax.jit(lambda shape: jnp.zeros(shape, jnp.float32), static_argnums=0,
                   out_shardings=jax.sharding.SingleDeviceSharding(device))


@functools.partial(jax.jit, donate_argnums=0)
def _write_rows(shard: jax.Array, rows: jax.Array, start: jax.Array) -> jax.Array:
    """``shard`` with ``rows`` written from row ``start`` (in place: the shard is donated)."""
    return lax.dynamic_update_slice(shard, rows, (start, jnp.int32(0)))


def _device_shard(source, start: int, stop: int, n: int, device, chunk_rows: int) -> jax.Array:
    """Rows ``[start, stop)`` of ``source`` (``[n, D]`` array or :class:`NpyRows`) as one array on
    ``device``, zero past row ``n``: a zero shard made on the device, then filled ``chunk_rows`` host
    rows at a time. Host memory: one chunk (none for a float32 C-ordered array: its slices are
    views); device memory: the shard plus one chunk. A host shard padded and filled first (the
    earlier way) cost a zero-fill and a copy of the whole pool before the transfer: on an H100,
    10^6 x 384 rows, 1.21-1.23 s against 0.22-0.26 s for PyTorch's ``.to("cuda")`` (2026-11-27)."""
    shard = _zeros_on(device)((stop - start, source.shape[1]))
    for first in range(start, min(stop, n), chunk_rows):
        last = min(first + chunk_rows, stop, n)
        rows = source.read(first, last) if isinstance(source, NpyRows) else source[first:last]
        rows = jax.device_put(np.asarray(rows, np.float32), device)
        shard = _write_rows(shard, rows, jax.device_put(np.int32(first - start), device))
    return shard


def shard_pool(candidates, mesh: Mesh | None = None, *, groups=None,
               block_size: int = DEFAULT_BLOCK, chunk_rows: int = UPLOAD_ROWS) -> ShardedPool:
    """Place ``candidates [N, D]`` (array, ``.npy`` path or memmap) on the devices, sharded over
    ``data`` and zero-padded to ``n_data * per_device`` rows (``per_device`` a multiple of the
    block). Each device's shard is filled on the device ``chunk_rows`` rows at a time
    (:func:`_device_shard`): host memory is one chunk on top of the source."""
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows: expected a positive row count, found {chunk_rows}")
    mesh = resolve_mesh(mesh)
    source = row_source(candidates)
    n, dim = source.shape
    n_data = mesh.shape["data"]
    block = device_block(n, n_data, block_size)
    per_device = round_up(-(-n // n_data), block)
    total = n_data * per_device
    sharding = batch_sharding(mesh, 2)
    shards = []
    for device, index in sharding.addressable_devices_indices_map((total, dim)).items():
        start = index[0].start or 0
        stop = index[0].stop if index[0].stop is not None else total
        shards.append(_device_shard(source, start, stop, n, device, chunk_rows))
    rows = jax.make_array_from_single_device_arrays((total, dim), sharding, shards)
    group_array = None
    if groups is not None:
        padded = np.zeros(total, np.int32)
        padded[:n] = as_int32_labels(groups, n, "candidate_groups")
        group_array = jax.device_put(padded, batch_sharding(mesh, 1))
    return ShardedPool(rows, group_array, n, mesh, block)


def as_int32_labels(values, n: int, name: str) -> np.ndarray:
    """``values`` as int32 ``[n]``; ValueError naming ``name`` if the shape or dtype is wrong."""
    arr = np.asarray(values)
    if arr.shape != (n,):
        raise ValueError(f"{name}: expected shape ({n},), found {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise ValueError(f"{name}: expected integer labels, found dtype {arr.dtype}")
    if arr.size and (arr.min() < np.iinfo(np.int32).min or arr.max() > INT_MAX):
        raise ValueError(f"{name}: labels must fit in int32")
    return arr.astype(np.int32)


@dataclasses.dataclass(frozen=True)
class ScanResult:
    """Host copies of the per-device top lists ``[n_data, Q, keep]`` and row statistics."""

    keys: np.ndarray       # ranking scores (float32; bfloat16-matmul scores in bfloat16 mode)
    indices: np.ndarray    # int32 candidate indices (meaningless where keys == -inf)
    bound: np.ndarray      # [n_data, Q] largest key dropped by a block's own selection
    bad_row: int           # lowest index of a candidate row with NaN/inf, or -1
    sq_range: tuple[float, float]  # (min, max) squared L2 norm of the scored rows
    count: np.ndarray      # [n_data, Q] keys >= threshold (threshold scans; else zeros)
    group_count: np.ndarray  # [n_data, Q] most groups of one block holding such keys

    def rows(self, sl) -> ScanResult:
        """The result for the queries ``sl`` (a slice or index array) only."""
        return dataclasses.replace(self, keys=self.keys[:, sl], indices=self.indices[:, sl],
                                   bound=self.bound[:, sl], count=self.count[:, sl],
                                   group_count=self.group_count[:, sl])


def _initial_state(mesh: Mesh, q: int, keep: int):
    n_data = mesh.shape["data"]
    host = ScanState(
        np.full((n_data, q, keep), -np.inf, np.float32), np.full((n_data, q, keep), -1, np.int32),
        np.full((n_data, q), -np.inf, np.float32), np.full(n_data, INT_MAX, np.int32),
        np.tile(np.array([[np.inf, 0.0]], np.float32), (n_data, 1)),
        np.zeros((n_data, q), np.int32), np.zeros((n_data, q), np.int32))
    return ScanState(*(jax.device_put(a, batch_sharding(mesh, a.ndim)) for a in host))


def _query_args(mesh: Mesh, queries, query_ids, query_groups, thresholds):
    rep = replicated(mesh)
    q = queries.shape[0]
    ids = np.full(q, -1, np.int32) if query_ids is None else query_ids
    groups = np.zeros(q, np.int32) if query_groups is None else query_groups
    limits = np.full(q, -np.inf, np.float32) if thresholds is None else thresholds
    return tuple(jax.device_put(a, rep) for a in (queries, ids, groups, limits))


def _scalar(mesh: Mesh, value: int):
    return jax.device_put(np.int32(value), replicated(mesh))


def _finish(state: ScanState) -> ScanResult:
    # gathered from every process when sharded across them
    keys, idx, bound, bad, sq, count, group_count = fetch(tuple(state))
    bad_row = int(bad.min())
    return ScanResult(keys, idx, bound, -1 if bad_row == INT_MAX else bad_row,
                      (float(sq[:, 0].min()), float(sq[:, 1].max())), count, group_count)


def scan_pool(pool: ShardedPool, queries: np.ndarray, query_ids, query_groups, thresholds,
              cfg: ScanConfig) -> ScanResult:
    """One pass of ``queries [Q, D]`` over a resident pool (a single jitted call)."""
    mesh = pool.mesh
    step = scan_step(mesh, cfg)
    vec = batch_sharding(mesh, 1)
    groups = pool.groups
    if groups is None:
        groups = jax.device_put(np.zeros(mesh.shape["data"], np.int32), vec)
    leads = jax.device_put(np.zeros(mesh.shape["data"], np.int32), vec)
    state = step(_initial_state(mesh, queries.shape[0], cfg.keep), pool.rows, groups,
                 *_query_args(mesh, queries, query_ids, query_groups, thresholds), leads,
                 _scalar(mesh, 0), _scalar(mesh, pool.per_device), _scalar(mesh, pool.n), _scalar(mesh, 0))
    return _finish(state)


@dataclasses.dataclass(frozen=True)
class Span:
    """One device call of a host scan: rows ``[start, stop)``, device ``d`` holding rows
    ``start + d * stride + [0, stride)`` (zero rows past ``stop``) scanned ``block`` at a time;
    ``in_place``: handed over as views of the source array (:func:`npy_rows.flat_views`), else
    copied (:func:`npy_rows.read_flat`). ``skip > 0`` (in place only): a shifted call, whose
    segments start ``skip`` blocks before the device's rows (rows an earlier call scanned), so
    that it runs the same program as the full calls before it and only its loop starts later."""

    start: int
    stop: int
    stride: int
    block: int
    in_place: bool
    skip: int = 0

    @property
    def segment_rows(self) -> int:
        """Rows per device segment: ``stride`` plus the skipped blocks."""
        return self.stride + self.skip * self.block

    def segment_starts(self, n_data: int) -> list[int]:
        """First row of each device's segment."""
        return [self.start + d * self.stride - self.skip * self.block for d in range(n_data)]


def plan_spans(n: int, n_data: int, block: int, chunk_rows: int, array=None) -> list[Span]:
    """The device calls covering rows ``[0, n)`` in order.

    ``array`` given and usable in place (:func:`npy_rows.in_place_ok`): calls of views (no copy) of
    ``w = min(IN_PLACE_BLOCKS, whole slabs)`` blocks per device, then the whole slabs left over (fewer than
    ``w``) in one shifted call of the same shape (:class:`Span` ``skip``), so a pool of any size takes
    one program and few calls. When the data is not 64-byte aligned the first row's view would start
    before the array: the first ``h`` rows (1 for D >= 16, at most 16) go first in copied calls of their
    own (more than one when ``h`` exceeds a slab). A segment that would end past the array (its slack)
    is not viewed: those slabs are copied one per call. Otherwise (files, other arrays) copies in chunks
    of ``chunk_rows`` (rounded to slabs). The last partial slab gets a block of its own size
    (:func:`tail_block`), so at most ``n_data * 16 - 1`` padding rows are scanned.
    """
    slab = n_data * block
    spans, at = [], 0

    def copied(lo: int, hi: int) -> Span:
        """Rows ``[lo, hi)``, fewer than a slab, in a copied call with a block of their own."""
        tail = tail_block(hi - lo, n_data, block)
        return Span(lo, hi, tail, tail, False)

    if array is not None and in_place_ok(array):
        head = next((h for h in range(ALIGN // 4 + 1) if view_fits(array, h, 0)), n)
        # a segment reaches 16 elements past its rows: leave at least the last row out of the width
        width = min(IN_PLACE_BLOCKS, max(0, n - head - 1) // slab)
        if width and head:
            # the head can be longer than a slab (small blocks, D < 16): whole slabs, then the rest
            while at + slab <= head:
                spans.append(Span(at, at + slab, block, block, False))
                at += slab
            if at < head:
                spans.append(copied(at, head))
            at = head

        def fits(span: Span) -> bool:
            return all(view_fits(array, first, span.segment_rows)
                       for first in span.segment_starts(n_data)[::max(1, n_data - 1)])

        while width and at + width * slab <= n:
            span = Span(at, at + width * slab, width * block, block, True)
            if not fits(span):
                break
            spans.append(span)
            at = span.stop
        for left in range(min((n - at) // slab, width), 0, -1):
            span = Span(at, at + left * slab, left * block, block, True, width - left)
            if fits(span):
                spans.append(span)
                at = span.stop
                break
    else:
        chunk = max(1, round(chunk_rows / slab)) * slab
        while at + chunk <= n and chunk > slab:
            spans.append(Span(at, at + chunk, chunk // n_data, block, False))
            at += chunk
    while at + slab <= n:
        spans.append(Span(at, at + slab, block, block, False))
        at += slab
    if at < n:
        spans.append(copied(at, n))
    return spans


def scan_stream(source, mesh: Mesh, queries: np.ndarray, query_ids, query_groups, thresholds,
                candidate_groups: np.ndarray | None, cfg: ScanConfig, spans: list[Span],
                prefetch_depth: int = 2, progress: Callable[[int], None] | None = None) -> ScanResult:
    """One pass of ``queries`` over host rows (array or ``NpyRows``) in the calls ``spans``.

    Every call gets flat segments (``cfg.flat_rows``): views of the source for in-place spans
    (no copy, no host memory), otherwise copies made by a background thread while the devices
    work on the previous call; at most ``prefetch_depth`` copies wait on the host and two calls
    are in flight on the devices. ``progress(rows)`` is called as each call's rows are done.
    """
    n_data = mesh.shape["data"]
    flat_sharding = batch_sharding(mesh, 2)
    vec_sharding = batch_sharding(mesh, 1)
    dummy_groups = jax.device_put(np.zeros(n_data, np.int32), vec_sharding)
    zero_leads = np.zeros(n_data, np.int32)

    def calls():
        for span in spans:
            firsts = span.segment_starts(n_data)
            if span.in_place:
                views, leads = flat_views(source, firsts, span.segment_rows)
            else:
                views, leads = read_flat(source, firsts, span.stride, span.stop), zero_leads
            groups = (None if candidate_groups is None else np.concatenate(
                [pad_rows(candidate_groups[first:min(first + span.segment_rows, span.stop)],
                          span.segment_rows) for first in firsts]))
            yield span, views, leads, groups

    query_args = _query_args(mesh, queries, query_ids, query_groups, thresholds)
    state = _initial_state(mesh, queries.shape[0], cfg.keep)
    in_flight = []
    for span, views, leads, groups in prefetch(calls(), prefetch_depth):
        rows_dev = _segments_array(views, flat_sharding)
        # groups and leads: the same host array on every process, each transfers its own share
        groups_dev = dummy_groups if groups is None else put_global_batch(groups, mesh)
        step = scan_step(mesh, dataclasses.replace(cfg, block=span.block, flat_rows=span.segment_rows))
        # rows past the span's stop (a copied call's zero rows) are padding
        state = step(state, rows_dev, groups_dev, *query_args, put_global_batch(leads, mesh),
                     _scalar(mesh, span.start - span.skip * span.block), _scalar(mesh, span.stride),
                     _scalar(mesh, span.stop), _scalar(mesh, span.skip))
        in_flight.append((state.bad, span.stop - span.start))
        if len(in_flight) > 2:
            _wait(in_flight.pop(0), progress)
    for item in in_flight:
        _wait(item, progress)
    return _finish(state)


def _segments_array(views, sharding) -> jax.Array:
    """``[n_data, width]`` array sharded over ``data`` whose device ``d`` holds ``views[d]``; each
    is put on its device explicitly (on CPU, an aligned view is wrapped without a copy)."""
    shape = (len(views), views[0].shape[-1])
    arrays = [jax.device_put(views[index[0].start or 0][None], device)
              for device, index in sharding.addressable_devices_indices_map(shape).items()]
    return jax.make_array_from_single_device_arrays(shape, sharding, arrays)


def _wait(item, progress: Callable[[int], None] | None) -> None:
    marker, rows = item
    jax.block_until_ready(marker)
    if progress is not None:
        progress(rows)
