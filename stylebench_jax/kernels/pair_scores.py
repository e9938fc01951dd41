"""Streaming pair scores: exact AUROC/EER over all N(N-1)/2 pairs, and over a given list of pairs.

``all_pairs_auroc_eer(embeddings [N, D], labels [N])`` scores every pair ``i < j`` by the inner
product (cosine for L2-normalised rows); a pair is positive when both labels are equal. The
``N x N`` matrix is never formed: ``[B, B]`` tiles of the upper triangle are scored on the devices
(tiles dealt out over the mesh's ``data`` axis) and counted into histograms keyed by the float32
score's bit pattern, mapped to an unsigned 32-bit key that sorts like the float (``-0.0`` counted
as ``+0.0``). Each pass over the tiles recomputes every tile's ``[B, B]`` product, so the methods
differ in how many passes they need.

**Minority method** (the default when it fits; ``_minority_roc``). The class counts come from the
labels alone (``sum_g n_g (n_g - 1) / 2`` positives). The rarer class (positives, unless one label
holds most items) is collected exactly: with the rows sorted by label its pairs lie in the tiles
near the diagonal (at N = 50,000 in groups of ~50 and B = 2048, 49 of 325 tiles), computed once
and compacted into a ``[count]`` key list, ``d`` distinct keys ``u_0 < ... < u_{d-1}``. One pass
over all tiles then ranks every pair of the other class among them: the pair with key ``v`` adds
1 to bin ``2 g + e`` of a ``2 (d + 1)`` histogram, ``g`` = distinct keys below ``v``, ``e`` = 1
when ``v == u_g``. So every rarer-class key knows exactly how many other-class pairs score below
it and equal to it, which is the Mann-Whitney U, ties included, and the bins are the exact ROC.
The rank comes from the key's top ``b`` bits (``b`` in 16..24, chosen for the fewest passes, then
the fewest bytes): a ``2^b`` int32 lookup gives the prefix's slot (prefixes holding a distinct key)
or, elsewhere, ``-(g + 1)``; a slot's rank table (``2^(32 - b) + 1`` uint8 / uint16 ranks of its
keys' low bits) gives the rest. When the tables exceed the budget they are split over passes
(each pass ranks exactly the keys of its slots). On CPU the counting of each tile runs in C++
(``cpu_pairs.cc``: XLA computes the tile's products, the kernel ranks and counts them over XLA's
threads, no ``[B, B]`` index temporaries); elsewhere the same arithmetic in XLA. Before, the slots
held ``2^(32 - b)`` int32 counts each (408 MB of tables at N = 50,000 on hard data, 606-613 MB
working set, 21.5 s); the rank tables take 90 MB there (305-331 MB working set, 19-24 s).
Passes at N = 50,000: 1 (plus the collection tiles) where radix needs 2 (384-d data) or 4-5
(hard data).

**Radix method** (``method="radix"``; ``"auto"`` falls back to it when the minority method's keys
or tables do not fit the budget, or when it would need as many passes as radix's least).
The key is resolved level by level (``level_bits``, e.g. 16 + 8 + 8 bits), one pass over all tiles
per level:

* level 0 counts positives and negatives per key prefix. Pairs in different prefixes are ordered by
  the prefix, so all cross-prefix comparisons of the Mann-Whitney U are known exactly; the pairs
  inside a prefix are first counted as ties (half).
* level l refines only the "mixed" bins of level l - 1 (holding both classes) into their next
  bits; bins holding one class need nothing (ties within a class change neither the AUROC nor the
  ROC shape). U is corrected bin by bin. The last level reaches all 32 bits, i.e. single float32
  values, so the result is exact, ties included.

With ``tolerance > 0`` refinement stops once the unrefined mixed bins, counted as ties, can move the
AUROC by at most ``tolerance`` (``auroc_error_bound`` in the result); the bin where the ROC crosses
FNR = FPR is always refined, so the EER stays exact. Each pass is folded into the sums as it
finishes (within-bin U, the EER crossing's sub-bins, the next level's mixed bins), so only one
pass's histograms are ever held (before, every pass's int64 counts were kept: 8.9 GB at
N = 50,000 for a 512 MB budget). In dense regions the last level needs about 8 bytes per distinct
float32 value in the score range where both classes occur (a few hundred MB for cosines),
independent of N.

**Memory** (``max_fine_bytes``, default 512 MB): the call's working set besides the embeddings'
copies. Each plan counts its tables and histograms (the devices' copies, the host's arrays and
running totals), XLA's temporaries of the counting program (read from its compiled memory
analysis: the ``[B, B]`` tiles' arithmetic) and leaves ``_runtime_reserve`` (an eighth of the
budget, at most 64 MB) to the compiled programs and the runtime; more bins or slots take more
passes (radix keeps at least one bin's histogram per pass: a budget below that is exceeded).
Measured at N = 50,000 on hard data: 305-331 MB (minority) and 437-440 MB (radix, 5 passes) of
resident memory above the start of the call (``benchmarks/bench_topk.py --pairs-n``).
AUROC and EER definitions: :mod:`stylebench_jax.metrics.roc` (the kernels count, the metrics decide).
"""

from __future__ import annotations

import dataclasses
import functools
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

from stylebench_jax.kernels.blockwise import canonical
from stylebench_jax.metrics.labels import encode_labels
from stylebench_jax.metrics.roc import auroc_eer, eer_from_counts, exact_dot, twice_u
from stylebench_jax.parallel import batch_sharding, pad_rows, replicated, resolve_mesh, round_up
from stylebench_jax.runtime import release_free_heap

PREFIX_BITS = range(16, 25)  # the minority method's prefix widths
SPARSE_LEVELS = (16, 8, 8)  # key bits resolved per histogram level (sum 32): few pairs per bin
DENSE_LEVELS = (20, 12)  # one pass fewer when bins are well filled (> DENSE_PAIRS pairs)
DENSE_PAIRS = 1 << 26
MAX_COUNTS_PER_CALL = 2**31 - 1  # pairs per jitted call, all devices: the int32 histograms cannot overflow
# Part of max_fine_bytes left to what no plan counts: XLA's compiled programs and runtime, the
# call's smaller arrays (resident memory grew 60-96 MB before the first counting pass at
# N = 50,000); an eighth of the budget, at most this.
RUNTIME_BYTES = 64 << 20
WITHIN_BYTES = 8 << 20  # int64 temporaries of the radix fold per chunk of bins (a few alive at once)


def _runtime_reserve(max_fine_bytes: int) -> int:
    return min(RUNTIME_BYTES, max_fine_bytes // 8)


@dataclasses.dataclass(frozen=True)
class PairsRoc:
    """AUROC and EER of a pair set. ``auroc_error_bound``: 0 when exact (``tolerance=0``);
    ``level_bits``, ``passes``, ``refined_bins``, ``method``: how the all-pairs histograms were
    resolved (radix: bits per level, passes over all tiles, refined bins; minority: (prefix bits,
    low bits), counting passes over all tiles (the collection's tiles not included), slots);
    ``tiles``: upper-triangle ``[B, B]`` tiles, ``tile_evaluations``: tiles computed in all (a
    tile computed in two passes counts twice; the collection's included). Empty / 0 for a listed
    pair set."""

    auroc: float
    eer: float
    n_pos: int
    n_neg: int
    n_pairs: int
    auroc_error_bound: float = 0.0
    level_bits: tuple[int, ...] = ()
    passes: int = 0
    refined_bins: int = 0
    method: str = ""
    tiles: int = 0
    tile_evaluations: int = 0


def float_keys(scores: jnp.ndarray) -> jnp.ndarray:
    """uint32 keys ordered like the float32 ``scores`` (``-0.0`` and ``+0.0`` share a key)."""
    bits = lax.bitcast_convert_type(canonical(scores), jnp.uint32)
    return jnp.where((bits >> 31) == 1, ~bits, bits | jnp.uint32(0x80000000))


def _tile_scores(x, labels, block, r, c):
    """Scores ``[B, B]`` of tile (row block r, column block c) and the two blocks' labels."""
    a = lax.dynamic_slice_in_dim(x, r * block, block)
    b = lax.dynamic_slice_in_dim(x, c * block, block)
    s = lax.dot_general(a, b, (((1,), (1,)), ((), ())), precision=lax.Precision.HIGHEST)
    la = lax.dynamic_slice_in_dim(labels, r * block, block)
    return s, la, lax.dynamic_slice_in_dim(labels, c * block, block)


def _tile(x, labels, n, block, r, c):
    """Keys, validity (``i < j < n``) and positive flags of tile (row block r, column block c)."""
    s, la, lb = _tile_scores(x, labels, block, r, c)
    i = r * block + jnp.arange(block, dtype=jnp.int32)
    j = c * block + jnp.arange(block, dtype=jnp.int32)
    valid = (i[:, None] < j[None, :]) & (j[None, :] < n) & (r >= 0)
    return float_keys(s), valid, (la[:, None] == lb[None, :]).astype(jnp.int32)


def _key_bits(keys, bits: tuple[int, ...], level: int) -> jnp.ndarray:
    shift = 32 - sum(bits[: level + 1])
    return ((keys >> shift) & jnp.uint32((1 << bits[level]) - 1)).astype(jnp.int32)


def _tile_histogram(tiles, x, labels, n, block: int, size: int, index_of):
    """``[size]`` int32 counts of one device's tiles, summed over devices: each pair of each tile
    adds 1 at ``index_of(keys, valid, positive)`` (``size`` or more: dropped)."""

    def update(r, c, hist):
        index = index_of(*_tile(x, labels, n, block, r, c))
        return hist.at[index.ravel()].add(1, mode="drop")

    return _fold_tiles(tiles, size, update)


def _fold_tiles(tiles, size: int, update):
    """``[size]`` int32 counts, ``hist = update(r, c, hist)`` for each of this device's tiles
    (row block r, column block c), summed over devices."""
    init = lax.pcast(jnp.zeros(size, jnp.int32), ("data",), to="varying")
    hist = lax.fori_loop(0, tiles.shape[0], lambda t, h: update(tiles[t, 0], tiles[t, 1], h), init)
    # One device: the loop's buffer is the output. A psum there (a no-op) made XLA copy it into a
    # second output buffer: 2x the pass's histogram bytes (measured with the compiled memory analysis).
    return lax.psum(hist, "data") if lax.axis_size("data") > 1 else hist


def _histogram_step(local_fn, mesh: Mesh, n_tables: int = 2, **static):
    """``local_fn(tiles, x, labels, n, *tables, **static)`` (``n_tables`` of them) over the mesh,
    jitted: tiles split over ``data``, everything else replicated, the summed histogram replicated."""
    fn = jax.shard_map(functools.partial(local_fn, **static), mesh=mesh,
                       in_specs=(P("data"), P(), P(), P(), *(P(),) * n_tables),
                       out_specs=P() if mesh.shape["data"] > 1 else P("data"), check_vma=True)
    return jax.jit(fn)


def _local_hist(tiles, x, labels, n, luts, slot0, *, block: int, bits: tuple[int, ...], level: int,
                slots: int):
    """One device's tiles, histogrammed and summed over devices: ``[slots * 2^w * 2]`` int32
    counts (``w = bits[level]``), index ``((slot - slot0) * 2^w + bits) * 2 + positive``.
    A pair's slot comes from chaining ``luts`` (one per earlier level, -1 = not refined) over the
    earlier levels' key bits; pairs outside ``[slot0, slot0 + slots)`` are dropped."""
    width = 1 << bits[level]
    size = 2 * slots * width

    def index_of(keys, valid, positive):
        slot = jnp.zeros(keys.shape, jnp.int32)
        for j, lut in enumerate(luts):
            flat = slot * (1 << bits[j]) + _key_bits(keys, bits, j)
            slot = jnp.where(slot >= 0, lut[jnp.maximum(flat, 0)], -1)
        local = slot - slot0
        valid = valid & (local >= 0) & (local < slots)
        return jnp.where(valid, ((local * width) + _key_bits(keys, bits, level)) * 2 + positive, size)

    return _tile_histogram(tiles, x, labels, n, block, size, index_of)


def _copies_per_device(n_data: int) -> int:
    """int32 histograms each device holds during a pass: its own loop carry, plus the psum's
    output when there is more than one device."""
    return 2 if n_data > 1 else 1


@functools.lru_cache(maxsize=32)
def _hist_step(mesh: Mesh, block: int, bits: tuple[int, ...], level: int, slots: int):
    return _histogram_step(_local_hist, mesh, block=block, bits=bits, level=level, slots=slots)


@functools.lru_cache(maxsize=32)
def _hist_temp(mesh: Mesh, block: int, shape: tuple[int, int], bits: tuple[int, ...], level: int,
               per_call: int, lut_sizes: tuple[int, ...]) -> int:
    """XLA's temporaries per device of a radix pass at ``level`` (probed with one slot: they hold the
    tiles' ``[B, B]`` arithmetic, whatever the histogram's size)."""
    luts = tuple(jax.ShapeDtypeStruct((size,), jnp.int32) for size in lut_sizes)
    return _temp_bytes(_hist_step(mesh, block, bits, level, 1), mesh, per_call, round_up(shape[0], block),
                       shape[1], luts, jax.ShapeDtypeStruct((), jnp.int32))


def _local_collect(tiles, x, labels, n, *, block: int, cls: int, cap: int):
    """Keys of this device's pairs of class ``cls`` (1: same label, 0: different labels):
    ``[cap]`` uint32 whose first ``count`` entries are set (tile order), and ``count``."""

    def body(t, carry):
        buf, count = carry
        keys, valid, positive = _tile(x, labels, n, block, tiles[t, 0], tiles[t, 1])
        take = (valid & (positive == cls)).ravel()
        rank = jnp.cumsum(take.astype(jnp.int32))
        index = jnp.where(take, count + rank - 1, cap)
        return buf.at[index].set(keys.ravel(), mode="drop"), count + rank[-1]

    init = (lax.pcast(jnp.zeros(cap, jnp.uint32), ("data",), to="varying"),
            lax.pcast(jnp.int32(0), ("data",), to="varying"))
    buf, count = lax.fori_loop(0, tiles.shape[0], body, init)
    return buf, count[None]


@functools.lru_cache(maxsize=8)
def _collect_step(mesh: Mesh, block: int, cls: int, cap: int):
    fn = jax.shard_map(functools.partial(_local_collect, block=block, cls=cls, cap=cap), mesh=mesh,
                       in_specs=(P("data"), P(), P(), P()), out_specs=(P("data"), P("data")), check_vma=True)
    return jax.jit(fn)


def _local_ranks(tiles, x, labels, n, lut, starts, table, slot0, *, block: int, bits: int, cls: int,
                 size: int, native: bool):
    """Ranks of this device's pairs of the other class than ``cls`` among the rarer class's distinct
    keys ``u_0 < u_1 < ... < u_{d-1}``, counted and summed over devices: ``[size]`` int32,
    ``size = 2 (d + 1)``. A pair with key ``v`` adds 1 at ``2 g + e``: ``g`` = the number of distinct
    keys below ``v``, ``e`` = 1 when ``v == u_g``.

    ``lut [2^bits]`` int32 per key prefix (top ``bits`` bits): the prefix's slot ``s >= 0`` when
    distinct keys have that prefix, else ``-(g + 1)`` (all keys of such a prefix share ``g``).
    A pair in slot ``s`` of this pass (``table [k, 2^(32 - bits) + 1]``, rows ``slot0 .. slot0 + k
    - 1``): ``g = starts[s] + table[s - slot0, low]``, the slot's distinct keys whose low
    ``32 - bits`` bits are below the pair's, and ``e`` = 1 when ``table[., low + 1]`` is one more
    (modulo the table's unsigned dtype: a slot of 256 keys wraps a uint8 row's last entry). A pair
    in a slot outside this pass counts at ``2 starts[s]``: below every key of the later slots and
    above every key of the earlier ones, all this pass's keys need from it.

    ``native``: each tile's scores from XLA's product, counted by the C++ kernel (``cpu_pairs.cc``:
    one sweep, no ``[B, B]`` temporaries); else the same arithmetic in XLA (gathers and a scatter)."""
    if native:
        return _native_ranks(tiles, x, labels, n, lut, starts, table, slot0, block=block, bits=bits, cls=cls,
                             size=size)
    shift = 32 - bits
    width = 1 << shift
    k = table.shape[0]
    mask = (1 << (8 * table.dtype.itemsize)) - 1
    flat = table.ravel()

    def index_of(keys, valid, positive):
        entry = lut[(keys >> shift).astype(jnp.int32)]
        slot = jnp.maximum(entry, 0)
        local = slot - slot0
        inside = (entry >= 0) & (local >= 0) & (local < k)
        at = jnp.where(inside, local, 0) * (width + 1) + (keys & jnp.uint32(width - 1)).astype(jnp.int32)
        rank = flat[at].astype(jnp.int32)
        equal = inside & (((flat[at + 1].astype(jnp.int32) - rank) & mask) == 1)
        g = jnp.where(entry >= 0, starts[slot] + jnp.where(inside, rank, 0), -entry - 1)
        return jnp.where(valid & (positive != cls), 2 * g + equal.astype(jnp.int32), size)

    return _tile_histogram(tiles, x, labels, n, block, size, index_of)


def _native_ranks(tiles, x, labels, n, lut, starts, table, slot0, *, block: int, bits: int, cls: int,
                  size: int):
    """:func:`_local_ranks` with the C++ counting kernel (the histogram updated in place per tile)."""
    from stylebench_jax.kernels import native

    call = jax.ffi.ffi_call(native.PAIRS_TARGET, (jax.ShapeDtypeStruct((size,), jnp.int32),
                                                  jax.ShapeDtypeStruct((block * block + block,), jnp.int32)),
                            input_output_aliases={0: 0})

    def update(r, c, hist):
        s, la, lb = _tile_scores(x, labels, block, r, c)
        meta = jnp.stack([r, c, n, slot0]).astype(jnp.int32)
        out, _ = call(hist, s, la, lb, meta, lut, starts, table, shift=np.int64(32 - bits), cls=np.int64(cls))
        return native.varying_like((out,), hist)[0]  # the scratch output (the bins) is dropped

    return _fold_tiles(tiles, size, update)


RANK_KERNEL = "auto"  # "auto": the C++ counting on CPU devices where it builds; "xla": XLA's (tests)


def _rank_native(mesh: Mesh) -> bool:
    """Whether the minority counting runs the C++ kernel on ``mesh``."""
    from stylebench_jax.kernels import native

    if RANK_KERNEL == "xla" or mesh.devices.flat[0].platform != "cpu":
        return False
    return native.unavailable() is None


@functools.lru_cache(maxsize=16)
def _rank_step(mesh: Mesh, block: int, bits: int, cls: int, size: int, native: bool):
    return _histogram_step(_local_ranks, mesh, 4, block=block, bits=bits, cls=cls, size=size, native=native)


def _minority_tiles(codes: np.ndarray, block: int, cls: int) -> np.ndarray:
    """Upper-triangle tiles ``[T, 2]`` (row block, column block) holding a pair ``i < j`` of class
    ``cls`` when ``codes`` are sorted. Sorted, blocks r < c share a label only as r's last and c's
    first; all of a tile's labels are equal only when r's first equals c's last."""
    n = codes.size
    n_blocks = -(-n // block)
    starts = np.arange(n_blocks) * block
    first, last = codes[starts], codes[np.minimum(starts + block, n) - 1]
    r, c = np.triu_indices(n_blocks)
    if cls == 1:
        same_next = np.flatnonzero(codes[1:] == codes[:-1])  # rows k, k + 1 share a label
        inside = same_next[same_next // block == (same_next + 1) // block] // block
        has_dup = np.bincount(inside, minlength=n_blocks) > 0
        keep = np.where(r == c, has_dup[r], last[r] == first[c])
    else:
        keep = first[r] != last[c]
    return np.stack([r[keep], c[keep]], axis=1)


class _Tiles:
    """Tile list (default: the whole upper triangle) dealt out over devices, in calls of bounded
    size (each call's int32 counts stay below 2^31)."""

    def __init__(self, n: int, block: int, mesh: Mesh, pairs: np.ndarray | None = None):
        n_blocks = -(-n // block)
        if pairs is None:
            r, c = np.triu_indices(n_blocks)
            pairs = np.stack([r, c], axis=1)
        self.pairs = np.asarray(pairs, np.int32).reshape(-1, 2)
        self.n_data = mesh.shape["data"]
        budget = MAX_COUNTS_PER_CALL // (block * block * self.n_data)
        self.per_call = max(1, min(budget, -(-len(self.pairs) // self.n_data)))
        self.n_calls = -(-len(self.pairs) // (self.n_data * self.per_call))
        self.mesh = mesh

    def calls(self):
        """Device arrays ``[n_data * per_call, 2]``, tiles dealt round-robin (padding: r = -1)."""
        chunk = self.n_data * self.per_call
        sharding = batch_sharding(self.mesh, 1)
        order = np.arange(chunk).reshape(self.per_call, self.n_data).T.ravel()
        for start in range(0, len(self.pairs), chunk):
            part = self.pairs[start:start + chunk]
            padded = np.zeros((chunk, 2), np.int32)
            padded[:, 0] = -1
            padded[: len(part)] = part
            yield jax.device_put(padded[order], sharding)


def _pass_total(step, tiles: _Tiles, args: tuple, total_dtype) -> np.ndarray:
    """One pass over ``tiles``: ``step(tile_array, *args)`` per call, the int32 counts summed on
    the host (int32 / int64 ``total_dtype``)."""
    total = None
    for tile_arr in tiles.calls():
        out = step(tile_arr, *args)
        part = np.asarray(jax.device_get(out))
        del out
        if total is None:
            # one call: its output, read-only as fetched, is the total (a writeable copy
            # doubled the pass's memory); more calls: a running total to add into
            total = part if tiles.n_calls == 1 else part.astype(total_dtype, copy=True)
        else:
            np.add(total, part, out=total, casting="unsafe")
        del part
    return total


def _crossing(pos: np.ndarray, neg: np.ndarray, n_pos: int, n_neg: int) -> int:
    """Index (ascending order) of the entry whose ROC segment crosses FNR = FPR."""
    gap = 1.0 - np.cumsum(pos[::-1]) / n_pos - np.cumsum(neg[::-1]) / n_neg
    return len(pos) - 1 - int(np.argmax(gap <= 0))


def _within_u(counts: np.ndarray, temp_bytes: int = WITHIN_BYTES) -> int:
    """``2 U`` summed over refined bins ``counts [bins, 2^w, 2]`` (neg, pos), a few bins at a time
    so the int64 temporaries stay near ``temp_bytes``."""
    chunk = max(1, temp_bytes // (8 * counts.shape[1]))
    return sum(twice_u(counts[i:i + chunk, :, 1], counts[i:i + chunk, :, 0])
               for i in range(0, counts.shape[0], chunk))


def _choose(mixed, pos, neg, n_pos: int, n_neg: int, allowance: float, forced: int | None):
    """Mixed bins to refine and the AUROC bound left by the rest. ``mixed``: ascending flat
    indices of the bins holding both classes, ``pos``/``neg`` their counts. Biggest ``P_b N_b``
    first until the rest, counted as ties, can move the AUROC by at most ``allowance``; ``forced``
    (the EER crossing) is always refined when mixed. Returns (positions into ``mixed``, ascending;
    bound)."""
    weight = pos.astype(np.float64) * neg / (2.0 * n_pos * n_neg)
    order = np.argsort(-weight, kind="stable")
    rest = np.concatenate([np.cumsum(weight[order][::-1])[::-1], [0.0]])
    chosen = order[: int(np.argmax(rest <= allowance))]
    if forced is not None:
        at = int(np.searchsorted(mixed, forced))
        if at < mixed.size and mixed[at] == forced:
            chosen = np.union1d(chosen, [at])
    chosen = np.sort(chosen)
    left = np.ones(mixed.size, bool)
    left[chosen] = False
    return chosen, float(weight[left].sum())


def _mixed(flat_pos: np.ndarray, flat_neg: np.ndarray, offset: int = 0):
    """(flat indices + ``offset``, pos, neg) of the bins holding both classes (int64)."""
    both = np.flatnonzero((flat_pos > 0) & (flat_neg > 0))
    return both + offset, flat_pos[both].astype(np.int64), flat_neg[both].astype(np.int64)


def all_pairs_auroc_eer(embeddings, labels, *, block_size: int = 1024, mesh: Mesh | None = None,
                        tolerance: float = 0.0, max_fine_bytes: int = 512 << 20,
                        level_bits: tuple[int, ...] | None = None, method: str = "auto") -> PairsRoc:
    """AUROC and EER over all pairs ``i < j`` of ``embeddings [N, D]`` (float32 inner products;
    L2-normalise first for cosine), positive when ``labels[i] == labels[j]`` (a 1-D array of ints or
    strings; NaN labels count as equal to each other, as ``np.unique`` groups them).

    ``method``: ``"minority"`` (the rarer class's scores collected exactly, then one counting pass
    over all tiles when its tables fit ``max_fine_bytes``; see the module docstring), ``"radix"``
    (level-by-level key histograms; ``tolerance`` and ``level_bits`` apply to it), or ``"auto"``:
    minority when the rarer class's keys and its tables fit ``max_fine_bytes``, ``level_bits`` is
    not given and it needs fewer counting passes than radix has levels, else radix. Both are exact
    (``tolerance=0``); minority ignores ``tolerance`` (its error is 0).

    Returns a :class:`PairsRoc` (``auroc_error_bound`` 0 when exact). Memory: the embeddings'
    copies plus at most ``max_fine_bytes`` (tables, one pass's histograms over all devices and the
    host, XLA's temporaries, a reserve for the runtime; module docstring): more bins -> more passes.
    Radix ``level_bits``: key bits per level (sum 32); default ``(20, 12)`` above ``DENSE_PAIRS``
    pairs (two passes), else ``(16, 8, 8)`` (small tables).
    """
    if method not in ("auto", "minority", "radix"):
        raise ValueError(f"method: expected 'auto', 'minority' or 'radix', found {method!r}")
    x = np.ascontiguousarray(np.asarray(embeddings), dtype=np.float32)
    if x.ndim != 2:
        raise ValueError(f"embeddings: expected a 2-D array [N, D], found shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError(f"embeddings: row {int(np.flatnonzero(~np.isfinite(x).all(1))[0])} holds NaN/inf")
    squares = np.einsum("ij,ij->i", x, x)
    if not np.isfinite(squares).all():  # |x| above ~1e19: the pair scores would be inf or NaN
        raise ValueError(f"embeddings: row {int(np.flatnonzero(~np.isfinite(squares))[0])} is too large to "
                         "square in float32 (|x| above ~1e19); rescale or L2-normalise the rows")
    labels = np.asarray(labels)
    if labels.shape != (x.shape[0],):
        raise ValueError(f"labels: expected shape ({x.shape[0]},), found {labels.shape}")
    codes = encode_labels(labels)[0].astype(np.int32)
    n = x.shape[0]
    n_pairs = n * (n - 1) // 2
    sizes = np.bincount(codes).astype(np.int64)
    n_pos = int((sizes * (sizes - 1) // 2).sum())
    n_neg = n_pairs - n_pos
    if n_pos == 0 or n_neg == 0:  # known from the labels: refused before any tile is computed
        raise ValueError(f"AUROC/EER need positive and negative pairs, found {n_pos} and {n_neg}")
    bits = tuple(level_bits or (DENSE_LEVELS if n_pairs > DENSE_PAIRS else SPARSE_LEVELS))
    if sum(bits) != 32 or min(bits) < 1 or max(bits) > 24:
        raise ValueError(f"level_bits: expected levels of 1..24 bits summing to 32, found {bits}")
    mesh = resolve_mesh(mesh)
    block = min(block_size, round_up(n, 8))
    # int32 totals while no count can pass 2^31 - 1 (each call's own counts are int32 anyway)
    total_dtype = np.int32 if n_pairs < 2**31 else np.int64
    spent = 0  # tiles a minority attempt computed before handing over to radix
    if method == "minority" or (method == "auto" and level_bits is None):
        # auto: minority only with fewer counting passes than radix's least (one per level)
        result, spent = _minority_roc(x, codes, n_pos, n_neg, block=block, mesh=mesh,
                                      max_fine_bytes=max_fine_bytes, total_dtype=total_dtype,
                                      max_passes=None if method == "minority" else len(bits) - 1)
        if result is not None:
            return result
        if method == "minority":
            raise ValueError(f"method='minority': the {min(n_pos, n_neg):,} scores of the rarer class and "
                             f"their tables do not fit max_fine_bytes={max_fine_bytes:,}; use method='radix' "
                             f"or a larger budget")
    return _radix_roc(x, codes, n_pos, n_neg, block=block, mesh=mesh, tolerance=tolerance,
                      max_fine_bytes=max_fine_bytes, bits=bits, total_dtype=total_dtype, spent_tiles=spent)


def _device_data(x: np.ndarray, codes: np.ndarray, block: int, mesh: Mesh):
    """Rows padded to a whole block (labels -1), replicated on every device, and ``n``."""
    n = x.shape[0]
    padded = round_up(n, block)
    rep = replicated(mesh)
    return (jax.device_put(pad_rows(x, padded), rep), jax.device_put(pad_rows(codes, padded, value=-1), rep),
            jax.device_put(np.int32(n), rep))


def _radix_roc(x, codes, n_pos: int, n_neg: int, *, block: int, mesh: Mesh, tolerance: float,
               max_fine_bytes: int, bits: tuple[int, ...], total_dtype, spent_tiles: int = 0) -> PairsRoc:
    """The radix method: level 0 over all keys, then each level refines the mixed bins
    (``spent_tiles``: tiles already computed by a minority attempt, counted in the result)."""
    n = x.shape[0]
    n_pairs = n_pos + n_neg
    rep = replicated(mesh)
    data = _device_data(x, codes, block, mesh)
    tiles = _Tiles(n, block, mesh)

    def histograms(level: int, luts: tuple, n_slots: int):
        """Yield ``(slot0, counts [m, 2^w, 2])`` (neg, pos) for the refined slots ``slot0 + [0, m)``
        of ``level``, one pass over all tiles each. Only one pass's counts live at a time (the caller
        folds them in): per pass the device copies of the int32 histogram (``_copies_per_device``
        each), the fetched part and the running total fit ``max_fine_bytes``."""
        width = 1 << bits[level]
        n_data = mesh.shape["data"]
        # one call (up to 2^31 - 1 pairs): its int32 output is the total (on CPU, fetched without a
        # copy); more calls add the fetched part and the running total
        summed = 0 if tiles.n_calls == 1 else 4 + np.dtype(total_dtype).itemsize
        slot_bytes = 2 * width * (4 * n_data * _copies_per_device(n_data) + summed)
        # the budget also holds the earlier levels' lookups (device copies and the host's) and XLA's
        # temporaries of the pass (the [B, B] tiles' arithmetic)
        temp = _hist_temp(mesh, block, x.shape, bits, level, tiles.per_call, tuple(lut.size for lut in luts))
        held = (n_data + 1) * sum(lut.nbytes for lut in luts) + n_data * temp + 4 * WITHIN_BYTES
        room = max_fine_bytes - _runtime_reserve(max_fine_bytes) - held
        # at least one slot per pass (a budget below that is exceeded rather than refused); int32
        # histogram indices
        fit = max(1, min(room // slot_bytes, (2**31 - 1) // (2 * width)))
        passes = -(-n_slots // fit)
        per_pass = -(-n_slots // passes)  # one shape for all of the level's passes, the fewest passes
        step = _hist_step(mesh, block, bits, level, per_pass)
        luts_dev = tuple(jax.device_put(lut, rep) for lut in luts)
        for slot0 in range(0, n_slots, per_pass):
            total = _pass_total(step, tiles, (*data, luts_dev, jax.device_put(np.int32(slot0), rep)),
                                total_dtype)
            stats["passes"] += 1
            yield slot0, total.reshape(per_pass, width, 2)[: min(per_pass, n_slots - slot0)]
            del total

    stats = {"passes": 0, "refined_bins": 0}
    _, counts = next(histograms(0, (), 1))
    neg, pos = counts[..., 0].ravel().astype(np.int64), counts[..., 1].ravel().astype(np.int64)
    del counts
    if (int(pos.sum()), int(neg.sum())) != (n_pos, n_neg):
        raise RuntimeError(f"all pairs: level 0 counted {int(pos.sum())} positive and {int(neg.sum())} "
                           f"negative pairs, the labels give {n_pos} and {n_neg}")
    u2 = twice_u(pos, neg)  # every bin counted as one tie group; refinement corrects that below
    # ROC sequence for the EER: level-0 bins with the crossing bin replaced by its sub-bins, level
    # after level; seq[at:at + window] are the current level's bins base .. base + window - 1.
    seq_pos, seq_neg, at, window, base = pos, neg, 0, len(pos), 0
    n_entries = len(pos)
    mixed = _mixed(pos, neg)  # the current level's mixed bins (flat index, pos, neg): all it keeps
    luts, bound = (), 0.0
    for level in range(1, len(bits)):
        cross = _crossing(seq_pos, seq_neg, n_pos, n_neg) - at
        forced = base + cross if 0 <= cross < window else None
        chosen, left = _choose(*mixed, n_pos, n_neg, tolerance - bound, forced)
        bound += left
        if chosen.size == 0:
            break
        refine = mixed[0][chosen]
        stats["refined_bins"] += int(refine.size)
        lut = np.full(n_entries, -1, np.int32)
        lut[refine] = np.arange(refine.size, dtype=np.int32)
        luts = (*luts, lut)
        last = level + 1 == len(bits)
        width = 1 << bits[level]
        u2 -= exact_dot(mixed[1][chosen], mixed[2][chosen])
        sub, found = None, []
        # Fold each pass as it finishes: within-bin U, the crossing bin's sub-bins, and (before the
        # last level) the next level's mixed bins; its counts are then dropped.
        release_free_heap()  # the earlier level's freed arrays, before this level's histograms
        for slot0, counts in histograms(level, luts, refine.size):
            u2 += _within_u(counts)
            if forced is not None and slot0 <= lut[forced] < slot0 + counts.shape[0]:
                sub = counts[lut[forced] - slot0].astype(np.int64)
            if not last:
                found.append(_mixed(counts[..., 1].ravel(), counts[..., 0].ravel(), slot0 * width))
            del counts  # before the next pass allocates its own
        if sub is not None:  # expand the crossing bin in the ROC sequence
            at += cross
            seq_pos = np.concatenate([seq_pos[:at], sub[:, 1], seq_pos[at + 1:]])
            seq_neg = np.concatenate([seq_neg[:at], sub[:, 0], seq_neg[at + 1:]])
            window, base = sub.shape[0], int(lut[forced]) * sub.shape[0]
        else:
            window = 0  # the crossing bin holds one class only: its ROC segment is straight
        if not last:
            mixed = tuple(np.concatenate([f[i] for f in found]) for i in range(3))
            n_entries = refine.size * width
    return PairsRoc(float(Fraction(u2, 2 * n_pos * n_neg)), eer_from_counts(seq_pos, seq_neg), n_pos, n_neg,
                    n_pairs, bound, bits, stats["passes"], stats["refined_bins"], method="radix",
                    tiles=len(tiles.pairs), tile_evaluations=stats["passes"] * len(tiles.pairs) + spent_tiles)


def _weighted_sum(weights: np.ndarray, values: np.ndarray) -> int:
    """Exact ``sum(weights * values)`` (Python int) of non-negative int64 vectors, ``weights`` below
    2^42 and ``values`` below 2^63 (split into 40-bit limbs for :func:`exact_dot`)."""
    low = values & ((1 << 40) - 1)
    return exact_dot(weights, low) + (exact_dot(weights, values >> 40) << 40)


def _table_dtype(bits: int):
    """Rank tables' dtype: a row's ranks up to ``2^(32 - bits) - 1`` fit it."""
    return np.uint8 if 32 - bits <= 8 else np.uint16


def _minority_plan(bits: int, d: int, n_slots: int, k: int, per_count: int, n_data: int, temp: int,
                   count_bytes: int = 4) -> int:
    """Peak bytes of the minority counting at prefix width ``bits`` with ``k`` slot tables per pass,
    for ``d`` distinct rarer-class keys in ``n_slots`` prefixes (``c = count_bytes``; the prefix
    lookup ``L = 4 2^bits``, slot starts ``S = 4 n_slots``, tables ``T = k (2^(32 - bits) + 1)``
    uint8/uint16; ``H = 2 (d + 1) per_count``: the counts' device copies and host sums), the largest
    of three phases:

    * building a pass's tables: distinct keys, multiplicities, the keys' rows (``(8 + c) d``), ranks
      when there are several passes (``2 c d``), ``L + S + T`` on every device and as host arrays;
    * counting: multiplicities (and distinct keys and ranks with several passes), ``L + S + T`` on
      the devices, ``H``, ``temp`` (XLA's temporaries) per device;
    * folding: multiplicities, ranks and ``H`` (one pass: the tables are gone by then);

    plus the host's slot starts and bounds (``8 n_slots``)."""
    lut_starts_tables = 4 * (1 << bits) + 4 * n_slots + k * ((1 << (32 - bits)) + 1) * np.dtype(
        _table_dtype(bits)).itemsize
    slots_host = 8 * n_slots  # the host's slot starts and bounds (int32)
    hist = 2 * (d + 1) * per_count
    several = k < n_slots
    ranks = 2 * count_bytes * d
    build = (8 + count_bytes) * d + (ranks if several else 0) + (n_data + 1) * lut_starts_tables
    count = (((4 + count_bytes) * d + ranks if several else count_bytes * d)
             + n_data * (lut_starts_tables + temp))
    fold = count_bytes * d + ranks + hist + (4 * d + n_data * lut_starts_tables if several else 0)
    return slots_host + max(build, count + hist, fold)


def _runs(keys: np.ndarray, dtype, chunk: int = 1 << 22) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values (uint32, ascending) of the sorted ``keys`` and their multiplicities
    (``dtype``), with a flag per key and O(chunk) temporaries besides the results."""
    m = keys.size
    d = 1 + int(np.count_nonzero(keys[1:] != keys[:-1]))
    distinct, mult = np.empty(d, np.uint32), np.empty(d, dtype)
    filled, last = 0, 0  # runs found so far; the position where the latest run starts
    for lo in range(0, m, chunk):
        part = keys[lo:lo + chunk]
        new = np.empty(part.size, bool)
        new[0] = lo == 0 or part[0] != keys[lo - 1]
        np.not_equal(part[1:], part[:-1], out=new[1:])
        at = np.flatnonzero(new) + lo
        if at.size:
            distinct[filled:filled + at.size] = part[new]
            if filled:
                mult[filled - 1] = at[0] - last
            mult[filled:filled + at.size - 1] = np.diff(at)
            filled, last = filled + at.size, int(at[-1])
    mult[filled - 1] = m - last
    return distinct, mult


def _temp_bytes(step, mesh: Mesh, per_call: int, rows: int, dim: int, *tables) -> int:
    """XLA's temporary bytes per device of a pass program ``step`` (its compiled memory analysis:
    the program's working buffers, neither arguments nor outputs; 0 where the backend gives none),
    lowered for ``per_call`` tiles per device, ``[rows, dim]`` embeddings and the replicated
    ``tables`` (shape/dtype structs, or tuples of them) after ``(tiles, x, labels, n)``."""
    rep, n_data = replicated(mesh), mesh.shape["data"]
    head = (jax.ShapeDtypeStruct((n_data * per_call, 2), jnp.int32, sharding=batch_sharding(mesh, 1)),
            jax.ShapeDtypeStruct((rows, dim), jnp.float32, sharding=rep),
            jax.ShapeDtypeStruct((rows,), jnp.int32, sharding=rep),
            jax.ShapeDtypeStruct((), jnp.int32, sharding=rep))
    tail = jax.tree.map(lambda t: jax.ShapeDtypeStruct(t.shape, t.dtype, sharding=rep), tables)
    analysis = step.lower(*head, *tail).compile().memory_analysis()
    return int(getattr(analysis, "temp_size_in_bytes", 0) or 0) if analysis is not None else 0


@functools.lru_cache(maxsize=32)
def _collect_temp(mesh: Mesh, block: int, rows: int, dim: int, cls: int, cap: int, per_call: int) -> int:
    """Temporaries per device of the collecting program (its compiled memory analysis)."""
    return _temp_bytes(_collect_step(mesh, block, cls, cap), mesh, per_call, rows, dim)


@functools.lru_cache(maxsize=32)
def _rank_temp(mesh: Mesh, block: int, rows: int, dim: int, cls: int, per_call: int, native: bool) -> int:
    """Temporaries of the rank counting program per device, probed with one uint16 slot table (the
    wider table dtype: XLA's gathers of it are the larger ``[B, B]`` arrays) and two counts: they hold
    the tiles' arithmetic (the tables are arguments, the counts the output), whatever their sizes."""
    bits = PREFIX_BITS[-2]
    tables = (jax.ShapeDtypeStruct((1 << bits,), jnp.int32), jax.ShapeDtypeStruct((1,), jnp.int32),
              jax.ShapeDtypeStruct((1, (1 << (32 - bits)) + 1), _table_dtype(bits)),
              jax.ShapeDtypeStruct((), jnp.int32))
    return _temp_bytes(_rank_step(mesh, block, bits, cls, 2, native), mesh, per_call, rows, dim, *tables)


def _minority_roc(x, codes, n_pos: int, n_neg: int, *, block: int, mesh: Mesh, max_fine_bytes: int,
                  total_dtype, max_passes: int | None = None) -> tuple[PairsRoc | None, int]:
    """The minority method: ``(result, tiles computed)``; result None when its keys or tables do
    not fit ``max_fine_bytes`` (the collection and the least tables are checked before any tile is
    computed, the actual distinct keys' tables once they are collected) or when the counting would
    take more than ``max_passes`` passes.

    1. Rows are sorted by label, so the pairs of the rarer class ``cls`` (usually the positives)
       sit in few tiles (near the diagonal); those tiles are computed once and the class's float32
       keys collected exactly: ``m`` keys, ``d`` distinct ones ``u_0 < ... < u_{d-1}``.
    2. A prefix width ``b`` (16-24 bits) is chosen so that the budget holds the prefix lookup
       (``2^b`` int32), one rank table per prefix holding a key ("slot": ``2^(32 - b) + 1`` uint8 or
       uint16 ranks of its keys' low bits) and ``2 (d + 1)`` counts, in as few passes as possible
       (usually one), then in the fewest bytes.
    3. One pass over all tiles ranks every pair of the other class among the distinct keys
       (:func:`_local_ranks`): ``below(j)`` other-class pairs under ``u_j`` and ``eq(j)`` equal to
       it, so ``2 U = sum_j mult(j) (2 below(j) + eq(j))`` exactly, ties included. With more slots
       than fit, each pass holds some slots' tables and yields their keys' ranks: one compiled
       program for every pass (the same tile products); each pass's total is checked against the
       labels' count (the earlier code's cross-pass check of per-prefix totals has no equivalent
       here: a pass aggregates the other passes' slots at their first bin).
    The ROC for the EER, ascending: per key the other class's pairs strictly between ``u_{j-1}`` and
    ``u_j``, then ``u_j`` itself (its multiplicity, ``eq(j)``); the crossing entry is found from
    the top in chunks (:func:`_rank_crossing`).
    """
    n, dim = x.shape
    n_pairs = n_pos + n_neg
    n_data = mesh.shape["data"]
    cls = 1 if n_pos <= n_neg else 0
    m = min(n_pos, n_neg)
    tiles = _Tiles(n, block, mesh)
    # per count: device copies; more calls add the fetched part and the running total
    per_count = 4 * n_data * _copies_per_device(n_data) + (0 if tiles.n_calls == 1 else
                                                           4 + np.dtype(total_dtype).itemsize)
    if 2 * (m + 1) + block * block >= 2**31:
        return None, 0
    count_dtype = np.dtype(total_dtype)  # multiplicities and ranks: below n_pairs
    budget = max_fine_bytes - _runtime_reserve(max_fine_bytes)
    # the collection: a buffer of m keys per device (any device may hold them all), on several
    # devices the fetched copy of all of them, the host's key list and the collecting program's
    # temporaries; then the distinct keys' runs (keys, a flag per key, distinct keys, multiplicities)
    rows = round_up(n, block)
    collect_bytes = max(4 * m * (n_data * (2 if n_data > 1 else 1) + 1)
                        + n_data * _collect_temp(mesh, block, rows, dim, cls, m, tiles.per_call),
                        (9 + 4 + count_dtype.itemsize) * m)
    if collect_bytes > budget:
        return None, 0
    native = _rank_native(mesh)
    temp = _rank_temp(mesh, block, rows, dim, cls, tiles.per_call, native)
    # the least any counting needs (one distinct key): refused before any tile is computed; whether
    # the actual keys fit is known once they are collected (their tiles then count as spent)
    if min(_minority_plan(b, 1, 1, 1, per_count, n_data, temp, count_dtype.itemsize)
           for b in PREFIX_BITS) > budget:
        return None, 0
    order = np.argsort(codes, kind="stable")
    codes = codes[order]
    rep = replicated(mesh)
    data = _device_data(x[order], codes, block, mesh)  # the sorted host copy is dropped once placed
    collect = _Tiles(n, block, mesh, _minority_tiles(codes, block, cls))
    step = _collect_step(mesh, block, cls, m)
    keys, filled = np.empty(m, np.uint32), 0
    for tile_arr in collect.calls():
        buf, count = step(tile_arr, *data)
        buf, count = np.asarray(jax.device_get(buf)).reshape(n_data, m), np.asarray(jax.device_get(count))
        if filled + int(count.sum()) > m:
            raise RuntimeError(f"all pairs: collected over {m} scores of the rarer class (the labels' count)")
        for d in range(n_data):
            keys[filled:filled + count[d]] = buf[d, :count[d]]
            filled += int(count[d])
        del buf
    if filled != m:
        raise RuntimeError(f"all pairs: collected {filled} scores of the rarer class, the labels give {m}")
    keys.sort()
    distinct, mult = _runs(keys, count_dtype)
    del keys
    d = distinct.size
    release_free_heap()  # the collection's freed temporaries, before the counting tables are allocated

    best = None
    for bits in PREFIX_BITS:
        n_slots = _distinct_prefixes(distinct, 32 - bits).size
        plan = functools.partial(_minority_plan, bits, d, n_slots, per_count=per_count, n_data=n_data,
                                 temp=temp, count_bytes=count_dtype.itemsize)
        width = (1 << (32 - bits)) + 1
        cap = (2**31 - 1) // width  # int32 table indices
        if n_slots <= cap and plan(n_slots) <= budget:
            passes, per_pass = 1, n_slots
        else:  # several passes; a slot's table costs at most its device copies and the host's
            row = (n_data + 1) * width * np.dtype(_table_dtype(bits)).itemsize
            fit = min((budget - plan(0)) // row, cap)
            if fit < 1:
                continue
            passes = -(-n_slots // fit)
            per_pass = -(-n_slots // passes)
        cost = (passes, plan(per_pass))
        if cost[1] <= budget and (best is None or cost < best[0]):  # fewest passes, then fewest bytes
            best = (cost, bits, per_pass)
    if best is None or (max_passes is not None and best[0][0] > max_passes):
        return None, len(collect.pairs)
    (passes, _), bits, per_pass = best
    shift = 32 - bits
    prefix = distinct >> np.uint32(shift)
    # slot s: distinct[bounds[s]:bounds[s + 1]] (int32: d < 2^30)
    first = np.flatnonzero(np.concatenate([[True], prefix[1:] != prefix[:-1]]))
    bounds = np.append(first, d).astype(np.int32)
    del first
    n_slots = bounds.size - 1
    lut_dev = jax.device_put(_rank_lut(prefix[bounds[:-1]].astype(np.int64), bounds[:-1], d, bits), rep)
    del prefix
    starts_dev = jax.device_put(bounds[:-1], rep)
    step = _rank_step(mesh, block, bits, cls, 2 * (d + 1), native)
    n_major = n_neg if cls == 1 else n_pos
    several = passes > 1
    # one pass: the ranks are read off its counts once the tables are gone; several: each pass
    # fills its keys' ranks (the distinct keys stay for the later passes' tables)
    below = equal = None
    if several:
        below, equal = np.empty(d, count_dtype), np.empty(d, count_dtype)
    for slot0 in range(0, n_slots, per_pass):
        k = min(per_pass, n_slots - slot0)
        j0, j1 = bounds[slot0], bounds[slot0 + k]
        rows = np.repeat(np.arange(k, dtype=np.int32), np.diff(bounds[slot0:slot0 + k + 1]))
        table = _rank_table(distinct[j0:j1], rows, per_pass, bits)
        del rows
        if not several:
            del distinct
        table_dev = jax.device_put(table, rep)
        del table
        total = _pass_total(step, tiles, (*data, lut_dev, starts_dev, table_dev,
                                          jax.device_put(np.int32(slot0), rep)), total_dtype)
        del table_dev
        if not several:
            del lut_dev, starts_dev
            below, equal = np.empty(d, count_dtype), np.empty(d, count_dtype)
        found = int(total.sum(dtype=np.int64))
        if found != n_major:
            raise RuntimeError(f"all pairs: the counting pass found {found} pairs of the other class, "
                               f"the labels give {n_major}")
        # every pair under u_j0's prefix (the earlier slots' pairs sit at their slot's first bin)
        running = int(total[:2 * j0].sum(dtype=np.int64))
        for lo in range(j0, j1, 1 << 20):
            hi = min(j1, lo + (1 << 20))
            part = total[2 * lo:2 * hi].astype(np.int64)
            cumulative = running + np.cumsum(part)
            below[lo:hi], equal[lo:hi] = cumulative[0::2], part[1::2]  # below(j): bins up to 2 j
            running = int(cumulative[-1])
        del total
    piece = 1 << 20  # int64 temporaries of a few MB
    twice = sum(_weighted_sum(mult[lo:lo + piece],
                              2 * below[lo:lo + piece].astype(np.int64) + equal[lo:lo + piece])
                for lo in range(0, d, piece))
    u2 = twice if cls == 1 else 2 * n_pos * n_neg - twice
    entry_rare, entry_other = _rank_crossing(mult, below, equal, n_major, cls, n_pos, n_neg)
    entry_pos, entry_neg = (entry_rare, entry_other) if cls == 1 else (entry_other, entry_rare)
    return PairsRoc(float(Fraction(u2, 2 * n_pos * n_neg)), eer_from_counts(entry_pos, entry_neg), n_pos,
                    n_neg, n_pairs, 0.0, (bits, shift), passes, n_slots, method="minority",
                    tiles=len(tiles.pairs),
                    tile_evaluations=len(collect.pairs) + passes * len(tiles.pairs)), len(collect.pairs)


def _rank_lut(prefixes: np.ndarray, starts: np.ndarray, d: int, bits: int) -> np.ndarray:
    """``[2^bits]`` int32 lookup of :func:`_local_ranks`: ``s`` at the slots' ``prefixes``
    (ascending), ``-(g + 1)`` elsewhere, ``g`` = the first distinct key index above the prefix
    (``starts`` of the next slot, ``d`` past the last). Built from runs (no temporaries of its size)."""
    after = np.append(starts, d)
    values = np.empty(2 * prefixes.size + 1, np.int32)
    values[0::2] = -after - 1  # the run of key-less prefixes before slot s (and after the last)
    values[1::2] = np.arange(prefixes.size, dtype=np.int32)
    lengths = np.empty(2 * prefixes.size + 1, np.int64)
    lengths[0::2] = np.diff(np.concatenate([[-1], prefixes, [1 << bits]])) - 1
    lengths[1::2] = 1
    return np.repeat(values, lengths)


def _rank_table(keys: np.ndarray, rows: np.ndarray, k: int, bits: int, chunk: int = 1 << 20) -> np.ndarray:
    """Rank tables ``[k, 2^(32 - bits) + 1]`` of :func:`_local_ranks`: row ``rows[i]`` holds distinct
    key ``keys[i]``; entry ``[row, v]`` = the row's keys whose low ``32 - bits`` bits are below
    ``v``, modulo the dtype's range (:func:`_table_dtype`; only the last entry of a full row wraps:
    256 keys in a uint8 row, 65,536 in a uint16 row at 16 bits). Filled ``chunk`` keys at a time
    (small index temporaries)."""
    width = 1 << (32 - bits)
    table = np.zeros((k, width + 1), _table_dtype(bits))
    flat = table.reshape(-1)
    for lo in range(0, keys.size, chunk):
        at = rows[lo:lo + chunk].astype(np.int64) * (width + 1)
        at += keys[lo:lo + chunk] & np.uint32(width - 1)
        flat[at + 1] = 1
    np.cumsum(table, axis=1, dtype=table.dtype, out=table)
    return table


def _rank_crossing(mult: np.ndarray, below: np.ndarray, equal: np.ndarray, n_major: int, cls: int,
                   n_pos: int, n_neg: int, chunk: int = 1 << 20) -> tuple[np.ndarray, np.ndarray]:
    """ROC entries (rarer class, other class; ascending, three each) for the EER: everything below
    the entry that crosses FNR = FPR, that entry, everything above it. The full sequence, ascending,
    is per distinct key ``j``: the other class's pairs between ``u_{j-1}`` and ``u_j``
    (``below(j) - below(j-1) - eq(j-1)``; rarer 0), then ``u_j`` (``mult(j)``, ``eq(j)``); last the
    other class's pairs above ``u_{d-1}``. It is scanned from the top in chunks (O(chunk) memory);
    merging the entries on either side of the crossing keeps the polyline's points at the crossing
    segment, so the interpolated EER is that of the full sequence."""
    d = mult.size
    n_rare = n_pos if cls == 1 else n_neg
    seen_rare, seen_other = 0, 0

    def find(rare, other):  # descending entries of one chunk: (index, rare, other above it) or None
        above_rare, above_other = seen_rare + np.cumsum(rare), seen_other + np.cumsum(other)
        above_pos, above_neg = (above_rare, above_other) if cls == 1 else (above_other, above_rare)
        hit = np.flatnonzero(1.0 - above_pos / n_pos - above_neg / n_neg <= 0)
        return None if not hit.size else int(hit[0])

    def entries(rare_i, other_i, rare_above, other_above):
        return (np.array([n_rare - rare_above - rare_i, rare_i, rare_above], np.int64),
                np.array([n_major - other_above - other_i, other_i, other_above], np.int64))

    top = n_major - int(below[-1]) - int(equal[-1])
    if find(np.zeros(1, np.int64), np.array([top], np.int64)) == 0:
        return entries(0, top, 0, 0)
    seen_other = top
    for hi in range(d, 0, -chunk):
        lo = max(0, hi - chunk)
        gap = below[lo:hi].copy()
        gap[1:] -= below[lo:hi - 1] + equal[lo:hi - 1]
        if lo:
            gap[0] -= below[lo - 1] + equal[lo - 1]
        rare = np.zeros(2 * (hi - lo), np.int64)
        other = np.empty(2 * (hi - lo), np.int64)
        rare[0::2], other[0::2], other[1::2] = mult[lo:hi][::-1], equal[lo:hi][::-1], gap[::-1]
        i = find(rare, other)
        if i is not None:
            return entries(int(rare[i]), int(other[i]), seen_rare + int(rare[:i].sum()),
                           seen_other + int(other[:i].sum()))
        seen_rare += int(rare.sum())
        seen_other += int(other.sum())
    raise RuntimeError("all pairs: the ROC never reached FNR = FPR")  # the last entry always does


def _distinct_prefixes(keys: np.ndarray, shift: int, chunk: int = 1 << 22) -> np.ndarray:
    """Distinct ``keys >> shift`` (uint32, ascending) of the sorted ``keys``, in chunks (O(chunk)
    temporaries besides the result)."""
    found, last = [], None
    for lo in range(0, keys.size, chunk):
        prefix = keys[lo:lo + chunk] >> np.uint32(shift)
        new = np.flatnonzero(np.concatenate([[last is None or prefix[0] != last], prefix[1:] != prefix[:-1]]))
        found.append(prefix[new])
        last = prefix[-1]
    return np.concatenate(found) if found else np.zeros(0, np.uint32)


def _rowwise(a, b):
    return jnp.einsum("md,md->m", a, b, precision=lax.Precision.HIGHEST)


def pair_cosine_scores(embeddings_a, embeddings_b, *, block_size: int = 65536,
                       mesh: Mesh | None = None) -> np.ndarray:
    """Inner products ``[M]`` float32 of row pairs ``a[m] . b[m]`` (``[M, D]`` each), computed in
    blocks of ``block_size`` rows sharded over ``data``."""
    a, b = (np.ascontiguousarray(np.asarray(e), dtype=np.float32) for e in (embeddings_a, embeddings_b))
    if a.ndim != 2 or a.shape != b.shape:
        raise ValueError(f"embeddings_a/b: expected two [M, D] arrays of one shape, "
                         f"found {a.shape} and {b.shape}")
    mesh = resolve_mesh(mesh)
    n_data = mesh.shape["data"]
    block = round_up(min(block_size, max(a.shape[0], 1)), n_data)
    fn = jax.jit(_rowwise)
    sharding = batch_sharding(mesh, 2)
    out = np.empty(a.shape[0], np.float32)
    for start in range(0, a.shape[0], block):
        part_a, part_b = a[start:start + block], b[start:start + block]
        m = part_a.shape[0]
        part_a, part_b = pad_rows(part_a, block), pad_rows(part_b, block)
        scores = fn(jax.device_put(part_a, sharding), jax.device_put(part_b, sharding))
        out[start:start + m] = jax.device_get(scores)[:m]
    return out


def pairs_auroc_eer(embeddings_a, embeddings_b, labels, *, block_size: int = 65536,
                    mesh: Mesh | None = None) -> PairsRoc:
    """Exact AUROC/EER of a given list of pairs: ``labels [M]`` bool (True = same author/class),
    scores = inner products of ``embeddings_a[m]`` and ``embeddings_b[m]``. O(M) memory."""
    scores = pair_cosine_scores(embeddings_a, embeddings_b, block_size=block_size, mesh=mesh)
    result = auroc_eer(scores, labels)
    return PairsRoc(result.auroc, result.eer, result.n_pos, result.n_neg, int(scores.size))
