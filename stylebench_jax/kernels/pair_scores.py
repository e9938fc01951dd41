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
and compacted into a ``[count]`` key list. Its distinct key prefixes (top ``b`` bits, ``b`` in
16..24 chosen for the fewest passes, then the smallest tables) become slots with a full table of
the ``32 - b`` low bits; one pass over all tiles then counts the other class at its full key
inside the slots and per prefix elsewhere. Every rarer-class key ``k`` then knows exactly how many
other-class pairs score below it and equal to it, which is the Mann-Whitney U, ties included.
When the slot tables exceed ``max_fine_bytes`` they are split over passes (each later pass must
reproduce the first one's per-prefix totals, or it raises). Memory within ``max_fine_bytes``:
during the collection a buffer of the rarer class's 4-byte keys on each device (any device may
hold them all) and the host's key list; then the host's keys plus one pass's tables (per-prefix
int32 counts, the slot tables, the prefix-to-slot lookup on each device). Passes at N = 50,000:
1 (plus the collection tiles) where radix needs 2 (384-d data) or 4 (hard data).

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
FNR = FPR is always refined, so the EER stays exact. Memory per device: the embeddings, a few
``[B, B]`` tile temporaries, and one histogram of ``2^(w + 1)`` int32 per refined bin (``w`` bits of
the level); one pass's histograms (device copies, plus the host's running total when a pass needs
more than one call of up to 2^31 - 1 pairs) take at most ``max_fine_bytes``, more bins take more
passes. Each pass is folded into the sums as it finishes (within-bin U, the EER crossing's
sub-bins, the next level's mixed bins), so only one pass's histograms are ever held (before, every
pass's int64 counts were kept: 8.9 GB at N = 50,000 for a 512 MB budget). In dense regions the last
level needs about 8 bytes per distinct float32 value in the score range where both classes occur
(a few hundred MB for cosines), independent of N.
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


def _tile(x, labels, n, block, r, c):
    """Keys, validity (``i < j < n``) and positive flags of tile (row block r, column block c)."""
    a = lax.dynamic_slice_in_dim(x, r * block, block)
    b = lax.dynamic_slice_in_dim(x, c * block, block)
    s = lax.dot_general(a, b, (((1,), (1,)), ((), ())), precision=lax.Precision.HIGHEST)
    i = r * block + jnp.arange(block, dtype=jnp.int32)
    j = c * block + jnp.arange(block, dtype=jnp.int32)
    valid = (i[:, None] < j[None, :]) & (j[None, :] < n) & (r >= 0)
    la = lax.dynamic_slice_in_dim(labels, r * block, block)
    lb = lax.dynamic_slice_in_dim(labels, c * block, block)
    return float_keys(s), valid, (la[:, None] == lb[None, :]).astype(jnp.int32)


def _key_bits(keys, bits: tuple[int, ...], level: int) -> jnp.ndarray:
    shift = 32 - sum(bits[: level + 1])
    return ((keys >> shift) & jnp.uint32((1 << bits[level]) - 1)).astype(jnp.int32)


def _tile_histogram(tiles, x, labels, n, block: int, size: int, index_of):
    """``[size]`` int32 counts of one device's tiles, summed over devices: each pair of each tile
    adds 1 at ``index_of(keys, valid, positive)`` (``size`` or more: dropped)."""

    def body(t, hist):
        index = index_of(*_tile(x, labels, n, block, tiles[t, 0], tiles[t, 1]))
        return hist.at[index.ravel()].add(1, mode="drop")

    init = lax.pcast(jnp.zeros(size, jnp.int32), ("data",), to="varying")
    hist = lax.fori_loop(0, tiles.shape[0], body, init)
    # One device: the loop's buffer is the output. A psum there (a no-op) made XLA copy it into a
    # second output buffer: 2x the pass's histogram bytes (measured with the compiled memory analysis).
    return lax.psum(hist, "data") if lax.axis_size("data") > 1 else hist


def _histogram_step(local_fn, mesh: Mesh, **static):
    """``local_fn(tiles, x, labels, n, table, slot0, **static)`` over the mesh, jitted: tiles split
    over ``data``, everything else replicated, the summed histogram replicated."""
    fn = jax.shard_map(functools.partial(local_fn, **static), mesh=mesh,
                       in_specs=(P("data"), P(), P(), P(), P(), P()),
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


def _local_counts(tiles, x, labels, n, lut, slot0, *, block: int, bits: int, slots: int, cls: int,
                  first: bool):
    """Counts of this device's pairs of the other class than ``cls`` (the majority), summed over
    devices: ``[2^bits * first + slots * 2^(32 - bits)]`` int32. A pair whose key prefix (top
    ``bits`` bits) has a slot in ``lut`` within ``[slot0, slot0 + slots)`` is counted at its full
    key: ``coarse + (slot - slot0) * 2^(32 - bits) + low bits``; with ``first`` every other pair
    is counted at its prefix (index < ``2^bits``); the rest are dropped."""
    shift = 32 - bits
    width = 1 << shift
    coarse = (1 << bits) if first else 0
    size = coarse + slots * width

    def index_of(keys, valid, positive):
        prefix = (keys >> shift).astype(jnp.int32)
        local = lut[prefix] - slot0  # lut -1: no key of the rarer class has this prefix
        fine = (local >= 0) & (local < slots)
        low = (keys & jnp.uint32(width - 1)).astype(jnp.int32)
        index = jnp.where(fine, coarse + local * width + low, prefix if first else size)
        return jnp.where(valid & (positive != cls), index, size)

    return _tile_histogram(tiles, x, labels, n, block, size, index_of)


@functools.lru_cache(maxsize=16)
def _count_step(mesh: Mesh, block: int, bits: int, slots: int, cls: int, first: bool):
    return _histogram_step(_local_counts, mesh, block=block, bits=bits, slots=slots, cls=cls, first=first)


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


def _within_u(counts: np.ndarray, temp_bytes: int = 32 << 20) -> int:
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
    L2-normalise first for cosine), positive when ``labels[i] == labels[j]`` (any hashable labels).

    ``method``: ``"minority"`` (the rarer class's scores collected exactly, then one counting pass
    over all tiles when its tables fit ``max_fine_bytes``; see the module docstring), ``"radix"``
    (level-by-level key histograms; ``tolerance`` and ``level_bits`` apply to it), or ``"auto"``:
    minority when the rarer class's keys and its tables fit ``max_fine_bytes``, ``level_bits`` is
    not given and it needs fewer counting passes than radix has levels, else radix. Both are exact
    (``tolerance=0``); minority ignores ``tolerance`` (its error is 0).

    Returns a :class:`PairsRoc` (``auroc_error_bound`` 0 when exact). Memory per device:
    O(N D + block^2) plus histograms; those of one pass take at most ``max_fine_bytes`` over all
    devices (more mixed bins -> more passes). Radix ``level_bits``: key bits per level (sum 32);
    default ``(20, 12)`` above ``DENSE_PAIRS`` pairs (two passes), else ``(16, 8, 8)`` (small tables).
    """
    if method not in ("auto", "minority", "radix"):
        raise ValueError(f"method: expected 'auto', 'minority' or 'radix', found {method!r}")
    x = np.ascontiguousarray(np.asarray(embeddings), dtype=np.float32)
    if x.ndim != 2:
        raise ValueError(f"embeddings: expected a 2-D array [N, D], found shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError(f"embeddings: row {int(np.flatnonzero(~np.isfinite(x).all(1))[0])} holds NaN/inf")
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
        fit = max(1, max_fine_bytes // slot_bytes)
        # powers of two (few shapes to compile), never above the budget
        per_pass = min(1 << (n_slots - 1).bit_length(), 1 << (fit.bit_length() - 1))
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


def _exact_sum(values: np.ndarray, bound: int) -> int:
    """Exact sum (Python int) of non-negative int64 ``values`` each at most ``bound``."""
    piece = max(1, (1 << 62) // max(bound, 1))
    return sum(int(values[i:i + piece].sum()) for i in range(0, values.size, piece))


def _minority_roc(x, codes, n_pos: int, n_neg: int, *, block: int, mesh: Mesh, max_fine_bytes: int,
                  total_dtype, max_passes: int | None = None) -> tuple[PairsRoc | None, int]:
    """The minority method: ``(result, tiles computed)``; result None when its keys or tables do
    not fit ``max_fine_bytes`` (checked before any tile is computed) or when the counting would take
    more than ``max_passes`` passes (known once the keys are collected).

    1. Rows are sorted by label, so the pairs of the rarer class ``cls`` (usually the positives)
       sit in few tiles (near the diagonal); those tiles are computed once and the class's float32
       keys collected exactly.
    2. A prefix width ``b`` (16-24 bits) is chosen so that the prefixes holding a collected key
       ("slots") fit the budget, each with a full ``2^(32 - b)`` table of low bits, in as few passes
       as possible (usually one).
    3. One pass over all tiles counts the other class: at the full key inside the slots, per
       prefix elsewhere. With each rarer-class key ``k``: ``below(k)`` other-class pairs with a
       smaller key (prefix totals before its slot plus its slot's table below ``k``) and ``eq(k)``
       equal ones give ``2 U`` exactly. Later passes (more slots than fit) must reproduce the first
       pass's per-prefix totals (checked: a tile recomputed differently would raise).
    The EER's crossing entry (prefix level) is expanded to its full keys when it is a slot.
    """
    n = x.shape[0]
    n_pairs = n_pos + n_neg
    n_data = mesh.shape["data"]
    cls = 1 if n_pos <= n_neg else 0
    m = min(n_pos, n_neg)
    tiles = _Tiles(n, block, mesh)
    # per count: device copies; more calls add the fetched part and the running total
    per_count = 4 * n_data * _copies_per_device(n_data) + (0 if tiles.n_calls == 1 else
                                                           4 + np.dtype(total_dtype).itemsize)
    # the collection: a buffer of m keys per device (any device may hold them all), on several
    # devices the fetched copy of all of them, and the host's key list; afterwards the host keeps the
    # m keys beside the counting tables (at least one slot's)
    collect_bytes = 4 * m * (n_data * (2 if n_data > 1 else 1) + 1)
    least_tables = min(_table_bytes(bits, 1, per_count, n_data) for bits in PREFIX_BITS) + 4 * m
    if max(collect_bytes, least_tables) > max_fine_bytes or m + block * block >= 2**31:
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
    release_free_heap()  # the collection's freed temporaries, before the counting tables are allocated

    best = None
    for bits in PREFIX_BITS:
        n_slots = _distinct_prefixes(keys, 32 - bits).size
        room = max_fine_bytes - 4 * m - _table_bytes(bits, 0, per_count, n_data)
        fit = min(room // _table_bytes(bits, 1, per_count, n_data, slots_only=True),
                  (2**31 - 1 - (1 << bits)) >> (32 - bits))  # int32 histogram indices
        if fit >= 1:
            passes = -(-n_slots // fit)
            per_pass = -(-n_slots // passes)
            cost = (passes, _table_bytes(bits, per_pass, per_count, n_data))  # fewest passes, smallest
            if best is None or cost < best[0]:
                best = (cost, bits, per_pass)
    (passes, _), bits, per_pass = best  # one slot per pass fits (checked before the collection)
    if max_passes is not None and passes > max_passes:
        return None, len(collect.pairs)
    shift = 32 - bits
    width = 1 << shift
    prefixes = _distinct_prefixes(keys, shift)
    n_slots = prefixes.size
    lut_dev = _slot_lut(jax.device_put(prefixes.astype(np.int32), rep), bits)  # built on the devices
    # keys of slot s: keys[starts[s]:starts[s + 1]]
    starts = np.append(np.searchsorted(keys, prefixes << np.uint32(shift)), m)
    n_major = n_neg if cls == 1 else n_pos

    twice = 0  # sum over the rarer class's keys of 2 below + eq
    slot_totals = slot_before = None
    cross_slot, cross_sub = -1, None
    for slot0 in range(0, n_slots, per_pass):
        first = slot0 == 0
        k = min(per_pass, n_slots - slot0)
        step = _count_step(mesh, block, bits, per_pass, cls, first)
        total = _pass_total(step, tiles, (*data, lut_dev, jax.device_put(np.int32(slot0), rep)), total_dtype)
        fine = total[(1 << bits) if first else 0:][:k * width].reshape(k, width)
        totals = fine.sum(axis=1, dtype=np.int64)
        if first:
            # other-class pairs per prefix: the slots of this pass from their tables, every other
            # prefix (later passes' slots included) from the per-prefix counts
            coarse = total[:1 << bits]
            slot_totals = coarse[prefixes].astype(np.int64)
            slot_totals[:k] = totals
            found = int(coarse.sum(dtype=np.int64)) + int(totals.sum())
            if found != n_major:
                raise RuntimeError(f"all pairs: the counting pass found {found} pairs of the other class, "
                                   f"the labels give {n_major}")
            # before slot j: every prefix count below its prefix (0 at this pass's slots), plus
            # this pass's slot totals below j
            slot_before = _sums_before(coarse, prefixes)
            slot_before[:k] += np.cumsum(totals) - totals
            slot_before[k:] += int(totals.sum())
            cross, cross_other, above = _prefix_crossing(coarse, prefixes, slot_totals, np.diff(starts), cls,
                                                         n_pos, n_neg)
            cross_slot = int(np.searchsorted(prefixes, cross))
            if cross_slot == n_slots or prefixes[cross_slot] != cross:
                cross_slot = -1  # one class only at the crossing: its ROC segment is straight
            del coarse
        elif not np.array_equal(totals, slot_totals[slot0:slot0 + k]):
            raise RuntimeError("all pairs: a later pass counted other totals per score prefix than the first "
                               "(tiles recomputed with different float32 scores)")
        if slot0 <= cross_slot < slot0 + k:
            cross_sub = fine[cross_slot - slot0].astype(np.int64)
        rows = max(1, (32 << 20) // (8 * width))  # int64 cumulative tables of ~32 MB at a time
        for a in range(0, k, rows):
            b = min(k, a + rows)
            table = np.cumsum(fine[a:b], axis=1, dtype=np.int64)
            for lo in range(starts[slot0 + a], starts[slot0 + b], 1 << 20):  # the rows' keys, 2^20 at a time
                part = keys[lo:min(lo + (1 << 20), starts[slot0 + b])]
                r = np.searchsorted(prefixes[slot0 + a:slot0 + b], part >> np.uint32(shift))
                c = (part & np.uint32(width - 1)).astype(np.int64)
                eq = fine[a:b][r, c].astype(np.int64)
                below = slot_before[slot0 + a + r] + table[r, c] - eq
                twice += _exact_sum(2 * below + eq, 2 * n_major)
            del table
        del total, fine
    u2 = twice if cls == 1 else 2 * n_pos * n_neg - twice
    # ROC entries for the EER: everything below the crossing prefix, the crossing prefix (its full
    # keys when it holds both classes), everything above. Merging the entries on either side keeps
    # the polyline's points at the crossing segment, so the interpolated EER is unchanged.
    if cross_slot >= 0:
        low = keys[starts[cross_slot]:starts[cross_slot + 1]] & np.uint32(width - 1)
        cross_rare_other = (np.bincount(low, minlength=width).astype(np.int64), cross_sub)
    else:
        cross_rare_other = (np.zeros(1, np.int64), np.array([cross_other], np.int64))
    sub_pos, sub_neg = cross_rare_other if cls == 1 else cross_rare_other[::-1]
    above_pos, above_neg = above
    entry_pos = np.concatenate([[n_pos - above_pos - sub_pos.sum()], sub_pos, [above_pos]])
    entry_neg = np.concatenate([[n_neg - above_neg - sub_neg.sum()], sub_neg, [above_neg]])
    return PairsRoc(float(Fraction(u2, 2 * n_pos * n_neg)), eer_from_counts(entry_pos, entry_neg), n_pos,
                    n_neg, n_pairs, 0.0, (bits, shift), passes, n_slots, method="minority",
                    tiles=len(tiles.pairs),
                    tile_evaluations=len(collect.pairs) + passes * len(tiles.pairs)), len(collect.pairs)


@functools.partial(jax.jit, static_argnums=1)
def _slot_lut(prefixes, bits: int):
    """``[2^bits]`` int32: the slot of each key prefix (``prefixes`` ascending), -1 elsewhere."""
    return jnp.full(1 << bits, -1, jnp.int32).at[prefixes].set(jnp.arange(prefixes.size, dtype=jnp.int32))


def _prefix_crossing(coarse: np.ndarray, prefixes: np.ndarray, slot_other: np.ndarray, slot_rare: np.ndarray,
                     cls: int, n_pos: int, n_neg: int, chunk: int = 1 << 20):
    """The key prefix whose ROC entry crosses FNR = FPR (:func:`_crossing` on the per-prefix
    entries), its other-class count, and the (positive, negative) pairs above it. Per-prefix counts
    are ``coarse`` (other class) with ``slot_other`` / ``slot_rare`` at the slot ``prefixes``;
    scanned from the top in chunks, so memory is O(chunk) (empty prefixes never cross first)."""
    seen_pos = seen_neg = 0
    for hi in range(coarse.size, 0, -chunk):
        lo = max(0, hi - chunk)
        other = coarse[lo:hi].astype(np.int64)
        rare = np.zeros(hi - lo, np.int64)
        inside = slice(*np.searchsorted(prefixes, [lo, hi]))
        other[prefixes[inside] - lo] = slot_other[inside]
        rare[prefixes[inside] - lo] = slot_rare[inside]
        pos, neg = (rare, other) if cls == 1 else (other, rare)
        above_pos = seen_pos + np.cumsum(pos[::-1])
        above_neg = seen_neg + np.cumsum(neg[::-1])
        hit = np.flatnonzero(1.0 - above_pos / n_pos - above_neg / n_neg <= 0)
        if hit.size:
            i = int(hit[0])
            return (hi - 1 - i, int(other[hi - lo - 1 - i]),
                    (int(above_pos[i] - pos[::-1][i]), int(above_neg[i] - neg[::-1][i])))
        seen_pos, seen_neg = int(above_pos[-1]), int(above_neg[-1])
    raise RuntimeError("all pairs: the ROC never reached FNR = FPR")  # the last entry always does


def _table_bytes(bits: int, slots: int, per_count: int, n_data: int, *, slots_only: bool = False) -> int:
    """Bytes of a minority counting pass with ``slots`` slot tables at prefix width ``bits``: the
    first pass's ``2^bits`` per-prefix counts and the prefix-to-slot lookup on each device, plus
    ``2^(32 - bits)`` counts per slot (``per_count`` bytes per count: device copies and host sums)."""
    fixed = 0 if slots_only else (1 << bits) * (per_count + 4 * n_data)
    return fixed + slots * (1 << (32 - bits)) * per_count


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


def _sums_before(values: np.ndarray, positions: np.ndarray, chunk: int = 1 << 20) -> np.ndarray:
    """``values[:p].sum()`` (int64) for each of the ascending ``positions``, in chunks of ``values``
    (O(chunk) temporaries: ``np.add.reduceat`` on the fetched 2^24 prefix counts took +80 MB)."""
    out = np.empty(positions.size, np.int64)
    running = 0
    for lo in range(0, values.size, chunk):
        hi = min(values.size, lo + chunk)
        inside = slice(*np.searchsorted(positions, [lo, hi]))
        cumulative = np.cumsum(values[lo:hi], dtype=np.int64)
        at = positions[inside].astype(np.int64) - lo
        out[inside] = running + np.where(at > 0, cumulative[np.maximum(at - 1, 0)], 0)
        running += int(cumulative[-1])
    return out


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
