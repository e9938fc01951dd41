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

from stylebench_jax.kernels.blockwise import block_shortlist, canonical, merge_running, pick_group_size
from stylebench_jax.kernels.npy_rows import prefetch, read_rows, row_source
from stylebench_jax.parallel import batch_sharding, pad_rows, replicated, resolve_mesh, round_up
from stylebench_jax.parallel.distributed import data_slot, fetch, process_count, put_batch

DEFAULT_BLOCK = 16384          # candidate rows per device per matmul (measured, bench_topk.py)
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
    ``sq_range [n_data, 2]``: (min, max) squared L2 norm of the rows seen.
    """

    keys: jax.Array
    idx: jax.Array
    bound: jax.Array
    bad: jax.Array
    sq_range: jax.Array


@dataclasses.dataclass(frozen=True)
class ScanConfig:
    keep: int          # entries kept per query and device (k, or shortlist + 1 for bfloat16)
    block: int         # candidate rows per device per matmul
    block_keep: int    # top entries each block's short list must hold (block_shortlist's m)
    precision: str     # "float32" | "bfloat16"
    use_ids: bool      # exclude candidate query_ids[i] from query i
    use_groups: bool   # exclude candidates with query_groups[i] == candidate_groups[j]
    normalize: bool    # L2-normalise candidate rows before scoring


def device_block(n: int, n_data: int, block_size: int) -> int:
    """Rows per device per step: ``block_size``, or less when the pool is small (multiple of 8)."""
    return min(block_size, round_up(-(-n // n_data), 8))


def local_scan(state: ScanState, rows, row_groups, queries, query_ids, query_groups, base, stride, n_valid,
               *, cfg: ScanConfig) -> ScanState:
    """One device: fold ``rows`` (block after block) into its running top list ``state``
    (:class:`ScanState` with a leading axis of 1: this device's slice)."""
    keys, idx, bound, bad, sq_range = state
    start = base + lax.axis_index("data") * stride
    group_size = pick_group_size(cfg.block, min(cfg.block_keep, cfg.block))
    low = queries.astype(jnp.bfloat16) if cfg.precision == "bfloat16" else None
    dims = (((1,), (1,)), ((), ()))

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

    if not cfg.normalize:
        # One pass over all rows of the call: inside the loop it would read each block a second
        # time through a copy (~6% of a bfloat16 search).
        _, bad, sq_range = stats(rows, start + jnp.arange(rows.shape[0], dtype=jnp.int32), bad, sq_range)

    def body(b, carry):
        keys, idx, bound, bad, sq_range = carry
        x = lax.dynamic_slice_in_dim(rows, b * cfg.block, cfg.block)
        if cfg.normalize:
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

        if cfg.use_ids or cfg.use_groups:
            values, pos, dropped = shortlist(s, True)
        else:
            # Only a block reaching past n_valid (padding) needs the mask, which costs a pass
            # writing the masked [Q, block] tile before the group maxima.
            values, pos, dropped = lax.cond(first + cfg.block > n_valid,
                                            functools.partial(shortlist, mask=True),
                                            functools.partial(shortlist, mask=False), s)
        bound = jnp.maximum(bound, dropped[None])
        keys, idx = merge_running((keys[0], idx[0]), (values, first + pos), cfg.keep)
        return ScanState(keys[None], idx[None], bound, bad, sq_range)

    n_blocks = rows.shape[0] // cfg.block
    return lax.fori_loop(0, n_blocks, body, ScanState(keys, idx, bound, bad, sq_range))


def row_scale(sq: jnp.ndarray) -> jnp.ndarray:
    """``1 / sqrt(sq)`` where ``sq > 0``, else 0: the factor that L2-normalises a row."""
    return jnp.where(sq > 0, lax.rsqrt(jnp.where(sq > 0, sq, 1.0)), 0.0)


@functools.lru_cache(maxsize=64)
def scan_step(mesh: Mesh, cfg: ScanConfig):
    """Jitted ``shard_map`` of :func:`local_scan`: state and rows sharded over ``data``."""
    state_spec = ScanState(*(P("data"),) * 5)
    fn = jax.shard_map(
        functools.partial(local_scan, cfg=cfg), mesh=mesh,
        in_specs=(state_spec, P("data", None), P("data"), P(), P(), P(), P(), P(), P()),
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


def shard_pool(candidates, mesh: Mesh | None = None, *, groups=None,
               block_size: int = DEFAULT_BLOCK) -> ShardedPool:
    """Place ``candidates [N, D]`` (array, ``.npy`` path or memmap) on the devices, sharded over
    ``data`` and zero-padded to ``n_data * per_device`` rows (``per_device`` a multiple of the
    block). Host memory: one device shard at a time on top of the source."""
    mesh = resolve_mesh(mesh)
    source = row_source(candidates)
    n, dim = source.shape
    n_data = mesh.shape["data"]
    block = device_block(n, n_data, block_size)
    per_device = round_up(-(-n // n_data), block)
    total = n_data * per_device

    def rows_for(index):
        sl = index[0]
        start, stop = sl.start or 0, sl.stop if sl.stop is not None else total
        out = np.zeros((stop - start, dim), np.float32)
        part = read_rows(source, min(start, n), min(stop, n))
        out[: part.shape[0]] = part
        return out

    rows = jax.make_array_from_callback((total, dim), batch_sharding(mesh, 2), rows_for)
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


def _initial_state(mesh: Mesh, q: int, keep: int):
    n_data = mesh.shape["data"]
    host = ScanState(
        np.full((n_data, q, keep), -np.inf, np.float32), np.full((n_data, q, keep), -1, np.int32),
        np.full((n_data, q), -np.inf, np.float32), np.full(n_data, INT_MAX, np.int32),
        np.tile(np.array([[np.inf, 0.0]], np.float32), (n_data, 1)))
    return ScanState(*(jax.device_put(a, batch_sharding(mesh, a.ndim)) for a in host))


def _query_args(mesh: Mesh, queries, query_ids, query_groups):
    rep = replicated(mesh)
    q = queries.shape[0]
    ids = np.full(q, -1, np.int32) if query_ids is None else query_ids
    groups = np.zeros(q, np.int32) if query_groups is None else query_groups
    return tuple(jax.device_put(a, rep) for a in (queries, ids, groups))


def _scalar(mesh: Mesh, value: int):
    return jax.device_put(np.int32(value), replicated(mesh))


def _finish(state: ScanState) -> ScanResult:
    keys, idx, bound, bad, sq = fetch(tuple(state))  # gathered from every process when sharded across them
    bad_row = int(bad.min())
    return ScanResult(keys, idx, bound, -1 if bad_row == INT_MAX else bad_row,
                      (float(sq[:, 0].min()), float(sq[:, 1].max())))


def scan_pool(pool: ShardedPool, queries: np.ndarray, query_ids, query_groups, cfg: ScanConfig) -> ScanResult:
    """One pass of ``queries [Q, D]`` over a resident pool (a single jitted call)."""
    mesh = pool.mesh
    step = scan_step(mesh, cfg)
    groups = pool.groups
    if groups is None:
        groups = jax.device_put(np.zeros(mesh.shape["data"], np.int32), batch_sharding(mesh, 1))
    state = step(_initial_state(mesh, queries.shape[0], cfg.keep), pool.rows, groups,
                 *_query_args(mesh, queries, query_ids, query_groups),
                 _scalar(mesh, 0), _scalar(mesh, pool.per_device), _scalar(mesh, pool.n))
    return _finish(state)


def chunk_spans(n: int, slab: int, chunk_rows: int, in_place: bool) -> list[tuple[int, int, int]]:
    """``(start, stop, padded_rows)`` host chunks covering rows ``[0, n)``; ``padded_rows`` is a
    multiple of ``slab`` (devices x block). ``in_place`` (rows usable without a copy): one chunk of
    all whole slabs plus a padded tail, i.e. at most two device calls and two compiled shapes.
    Otherwise chunks of ``chunk_rows`` (rounded to slabs), the last one padded to the same shape."""
    if in_place:
        bulk = n // slab * slab
        spans = [(0, bulk, bulk)] if bulk else []
        return spans + ([(bulk, n, round_up(n - bulk, slab))] if n > bulk else [])
    chunk = min(max(1, round(chunk_rows / slab)), -(-n // slab)) * slab
    return [(start, min(start + chunk, n), chunk) for start in range(0, n, chunk)]


def scan_stream(source, mesh: Mesh, queries: np.ndarray, query_ids, query_groups,
                candidate_groups: np.ndarray | None, cfg: ScanConfig, spans: list[tuple[int, int, int]],
                prefetch_depth: int = 2, progress: Callable[[int], None] | None = None) -> ScanResult:
    """One pass of ``queries`` over host rows (array or ``NpyRows``) in the chunks ``spans``.

    A background thread reads the next chunks while the devices work on the current one; at most
    ``prefetch_depth`` chunks wait on the host and two are in flight on the devices. Chunks that
    are aligned views of the source are handed to the devices without a copy (CPU). With several
    processes each reads only the rows of its own devices (its ``data_slot``'s share of every chunk)
    and the chunk is assembled from the processes' shares.
    ``progress(rows)`` is called as each chunk's ``rows`` candidates are done.
    """
    n = source.shape[0]
    n_data = mesh.shape["data"]
    vec_sharding = batch_sharding(mesh, 1)
    slot = data_slot(mesh) if process_count() > 1 else None
    step = scan_step(mesh, cfg)
    dummy_groups = jax.device_put(np.zeros(n_data, np.int32), vec_sharding)

    def chunks():
        for start, stop, rows_padded in spans:
            share = rows_padded if slot is None else rows_padded // slot.count
            lo = start + (0 if slot is None else slot.index * share)
            first, last = min(lo, stop), min(lo + share, stop)
            rows = read_rows(source, first, last, rows=share)
            groups = None if candidate_groups is None else pad_rows(candidate_groups[first:last], share)
            yield start, rows_padded, rows, groups

    query_args = _query_args(mesh, queries, query_ids, query_groups)
    n_arg = _scalar(mesh, n)
    state = _initial_state(mesh, queries.shape[0], cfg.keep)
    in_flight = []
    for start, rows_padded, rows, groups in prefetch(chunks(), prefetch_depth):
        rows_dev = put_batch(rows, mesh, slot)
        groups_dev = dummy_groups if groups is None else put_batch(groups, mesh, slot)
        state = step(state, rows_dev, groups_dev, *query_args, _scalar(mesh, start),
                     _scalar(mesh, rows_padded // n_data), n_arg)
        in_flight.append((state.bad, min(rows_padded, n - start)))
        if len(in_flight) > 2:
            _wait(in_flight.pop(0), progress)
    for item in in_flight:
        _wait(item, progress)
    return _finish(state)


def _wait(item, progress: Callable[[int], None] | None) -> None:
    marker, rows = item
    jax.block_until_ready(marker)
    if progress is not None:
        progress(rows)
