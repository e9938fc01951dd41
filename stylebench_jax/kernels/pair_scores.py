"""Streaming pair scores: exact AUROC/EER over all N(N-1)/2 pairs, and over a given list of pairs.

``all_pairs_auroc_eer(embeddings [N, D], labels [N])`` scores every pair ``i < j`` by the inner
product (cosine for L2-normalised rows); a pair is positive when both labels are equal. The
``N x N`` matrix is never formed: ``[B, B]`` tiles of the upper triangle are scored on the devices
(tiles dealt out over the mesh's ``data`` axis) and counted into histograms keyed by the float32
score's bit pattern, mapped to an unsigned 32-bit key that sorts like the float (``-0.0`` counted
as ``+0.0``). The key is resolved level by level (``level_bits``, e.g. 16 + 8 + 8 bits), one pass
over all tiles per level:

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

SPARSE_LEVELS = (16, 8, 8)  # key bits resolved per histogram level (sum 32): few pairs per bin
DENSE_LEVELS = (20, 12)  # one pass fewer when bins are well filled (> DENSE_PAIRS pairs)
DENSE_PAIRS = 1 << 26
MAX_COUNTS_PER_CALL = 2**31 - 1  # pairs per jitted call, all devices: the int32 histograms cannot overflow


@dataclasses.dataclass(frozen=True)
class PairsRoc:
    """AUROC and EER of a pair set. ``auroc_error_bound``: 0 when exact (``tolerance=0``);
    ``level_bits``, ``passes``, ``refined_bins``: how the all-pairs histograms were resolved
    (empty / 0 for a listed pair set)."""

    auroc: float
    eer: float
    n_pos: int
    n_neg: int
    n_pairs: int
    auroc_error_bound: float = 0.0
    level_bits: tuple[int, ...] = ()
    passes: int = 0
    refined_bins: int = 0


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


def _local_hist(tiles, x, labels, n, luts, slot0, *, block: int, bits: tuple[int, ...], level: int,
                slots: int):
    """One device's tiles, histogrammed and summed over devices: ``[slots * 2^w * 2]`` int32
    counts (``w = bits[level]``), index ``((slot - slot0) * 2^w + bits) * 2 + positive``.
    A pair's slot comes from chaining ``luts`` (one per earlier level, -1 = not refined) over the
    earlier levels' key bits; pairs outside ``[slot0, slot0 + slots)`` are dropped."""
    width = 1 << bits[level]
    size = 2 * slots * width

    def body(t, hist):
        keys, valid, positive = _tile(x, labels, n, block, tiles[t, 0], tiles[t, 1])
        slot = jnp.zeros(keys.shape, jnp.int32)
        for j, lut in enumerate(luts):
            flat = slot * (1 << bits[j]) + _key_bits(keys, bits, j)
            slot = jnp.where(slot >= 0, lut[jnp.maximum(flat, 0)], -1)
        local = slot - slot0
        valid = valid & (local >= 0) & (local < slots)
        index = jnp.where(valid, ((local * width) + _key_bits(keys, bits, level)) * 2 + positive, size)
        return hist.at[index.ravel()].add(1, mode="drop")

    init = lax.pcast(jnp.zeros(size, jnp.int32), ("data",), to="varying")
    hist = lax.fori_loop(0, tiles.shape[0], body, init)
    # One device: the loop's buffer is the output. A psum there (a no-op) made XLA copy it into a
    # second output buffer: 2x the pass's histogram bytes (measured with the compiled memory analysis).
    return lax.psum(hist, "data") if lax.axis_size("data") > 1 else hist


def _copies_per_device(n_data: int) -> int:
    """int32 histograms each device holds during a pass: its own loop carry, plus the psum's
    output when there is more than one device."""
    return 2 if n_data > 1 else 1


@functools.lru_cache(maxsize=32)
def _hist_step(mesh: Mesh, block: int, bits: tuple[int, ...], level: int, slots: int):
    fn = jax.shard_map(
        functools.partial(_local_hist, block=block, bits=bits, level=level, slots=slots), mesh=mesh,
        in_specs=(P("data"), P(), P(), P(), P(), P()),
        out_specs=P() if mesh.shape["data"] > 1 else P("data"), check_vma=True)
    return jax.jit(fn)


class _Tiles:
    """Upper-triangle tile list dealt out over devices, in calls of bounded size."""

    def __init__(self, n: int, block: int, mesh: Mesh):
        n_blocks = -(-n // block)
        r, c = np.triu_indices(n_blocks)
        self.pairs = np.stack([r, c], axis=1).astype(np.int32)
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
                        level_bits: tuple[int, ...] | None = None) -> PairsRoc:
    """AUROC and EER over all pairs ``i < j`` of ``embeddings [N, D]`` (float32 inner products;
    L2-normalise first for cosine), positive when ``labels[i] == labels[j]`` (any hashable labels).

    Returns a :class:`PairsRoc` (``auroc_error_bound`` 0 when exact, ``tolerance=0``). Memory per device:
    O(N D + block^2) plus histograms; those of one pass take at most ``max_fine_bytes`` over all
    devices (more mixed bins -> more passes). ``level_bits``: key bits per level (sum 32); default
    ``(20, 12)`` above ``DENSE_PAIRS`` pairs (two passes), else ``(16, 8, 8)`` (small tables).
    """
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
    mesh = resolve_mesh(mesh)
    block = min(block_size, round_up(n, 8))
    padded = round_up(n, block)
    rep = replicated(mesh)
    data = (jax.device_put(pad_rows(x, padded), rep), jax.device_put(pad_rows(codes, padded, value=-1), rep),
            jax.device_put(np.int32(n), rep))
    tiles = _Tiles(n, block, mesh)
    n_pairs = n * (n - 1) // 2
    bits = tuple(level_bits or (DENSE_LEVELS if n_pairs > DENSE_PAIRS else SPARSE_LEVELS))
    if sum(bits) != 32 or min(bits) < 1 or max(bits) > 24:
        raise ValueError(f"level_bits: expected levels of 1..24 bits summing to 32, found {bits}")

    # int32 totals while no count can pass 2^31 - 1 (each call's own counts are int32 anyway)
    total_dtype = np.int32 if n_pairs < 2**31 else np.int64

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
            total = None
            for tile_arr in tiles.calls():
                out = step(tile_arr, *data, luts_dev, jax.device_put(np.int32(slot0), rep))
                part = np.asarray(jax.device_get(out))
                del out
                if total is None:
                    # one call: its output, read-only as fetched, is the total (a writeable copy
                    # doubled the pass's memory); more calls: a running total to add into
                    total = part if tiles.n_calls == 1 else part.astype(total_dtype, copy=True)
                else:
                    np.add(total, part, out=total, casting="unsafe")
                del part
            stats["passes"] += 1
            yield slot0, total.reshape(per_pass, width, 2)[: min(per_pass, n_slots - slot0)]
            del total

    stats = {"passes": 0, "refined_bins": 0}
    _, counts = next(histograms(0, (), 1))
    neg, pos = counts[..., 0].ravel().astype(np.int64), counts[..., 1].ravel().astype(np.int64)
    del counts
    n_pos, n_neg = int(pos.sum()), int(neg.sum())
    if n_pos == 0 or n_neg == 0:
        raise ValueError(f"AUROC/EER need positive and negative pairs, found {n_pos} and {n_neg}")
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
                    n_pairs, bound, bits, stats["passes"], stats["refined_bins"])


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
