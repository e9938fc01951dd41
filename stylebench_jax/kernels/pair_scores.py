"""Streaming pair scores: exact AUROC/EER over all N(N-1)/2 pairs, and over a given list of pairs.

``all_pairs_auroc_eer(embeddings [N, D], labels [N])`` scores every pair ``i < j`` by the inner
product (cosine for L2-normalised rows); a pair is positive when both labels are equal. The
``N x N`` matrix is never formed: ``[B, B]`` tiles of the upper triangle are scored on the devices
(tiles dealt out over the mesh's ``data`` axis) and counted into histograms keyed by the float32
score's bit pattern, mapped to an unsigned key that sorts like the float (``-0.0`` counted as
``+0.0``). Exact, in two kinds of pass over the tiles:

1. coarse: counts of positives and negatives per key prefix (top ``32 - FINE_BITS`` bits). Pairs
   in different prefixes are ordered by the prefix, so every cross-prefix comparison is known.
2. fine (only for "mixed" prefixes holding both classes): counts per full 32-bit key, i.e. per
   distinct float32 score, so ties are exact. Mixed prefixes are refined as many at a time as
   ``max_fine_bytes`` allows (several passes if there are more).

Prefixes holding one class need no refinement (ties within one class change neither the AUROC nor
the ROC shape). With ``tolerance > 0`` refinement stops once the unrefined mixed prefixes, each
counted as a tie (half its positive-negative pairs), can move the AUROC by at most ``tolerance``
(``auroc_error_bound`` in the result); the prefix where the ROC crosses FNR = FPR is always
refined, so the EER stays exact. Memory per device: the embeddings, one ``[B, B]`` tile, a coarse
histogram of ``2^(33 - FINE_BITS)`` int32 and a fine one of ``2^(FINE_BITS + 1)`` int32 per mixed
prefix refined in the pass. AUROC and EER definitions: :mod:`stylebench_jax.kernels.roc`.
"""

from __future__ import annotations

import functools
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from stylebench_jax.kernels.blockwise import canonical
from stylebench_jax.kernels.roc import auroc_eer, eer_from_counts, exact_dot, twice_u
from stylebench_jax.kernels.scan import data_mesh, round_up

FINE_BITS = 12
COARSE_BINS = 1 << (32 - FINE_BITS)
MAX_COUNTS_PER_CALL = 1 << 30  # pairs per device per jitted call: int32 histograms cannot overflow


def float_keys(scores: jnp.ndarray) -> jnp.ndarray:
    """uint32 keys ordered like the float32 ``scores`` (``-0.0`` and ``+0.0`` share a key)."""
    bits = lax.bitcast_convert_type(canonical(scores), jnp.uint32)
    return jnp.where((bits >> 31) == 1, ~bits, bits | jnp.uint32(0x80000000))


def _tile(x, labels, n, block, r, c):
    """Scores, validity (``i < j < n``) and positive flags of tile (row block r, column block c)."""
    a = lax.dynamic_slice_in_dim(x, r * block, block)
    b = lax.dynamic_slice_in_dim(x, c * block, block)
    s = lax.dot_general(a, b, (((1,), (1,)), ((), ())), precision=lax.Precision.HIGHEST)
    i = r * block + jnp.arange(block, dtype=jnp.int32)
    j = c * block + jnp.arange(block, dtype=jnp.int32)
    valid = (i[:, None] < j[None, :]) & (j[None, :] < n) & (r >= 0)
    la = lax.dynamic_slice_in_dim(labels, r * block, block)
    lb = lax.dynamic_slice_in_dim(labels, c * block, block)
    return float_keys(s), valid, (la[:, None] == lb[None, :]).astype(jnp.int32)


def _local_hist(tiles, x, labels, n, lut, slot0, *, block: int, fine_slots: int):
    """One device: histogram its tiles. ``fine_slots == 0``: coarse counts ``[1, 2 * COARSE_BINS]``;
    else fine counts ``[1, fine_slots * 2^(FINE_BITS + 1)]`` of prefixes with
    ``lut[prefix] - slot0`` in ``[0, fine_slots)``. Index ``2 * bin + is_positive``."""
    size = 2 * (COARSE_BINS if fine_slots == 0 else fine_slots << FINE_BITS)

    def body(t, hist):
        keys, valid, positive = _tile(x, labels, n, block, tiles[t, 0], tiles[t, 1])
        prefix = (keys >> FINE_BITS).astype(jnp.int32)
        if fine_slots == 0:
            index = prefix * 2 + positive
        else:
            slot = lut[prefix] - slot0
            valid = valid & (slot >= 0) & (slot < fine_slots)
            low = (keys & jnp.uint32((1 << FINE_BITS) - 1)).astype(jnp.int32)
            index = ((slot << FINE_BITS) + low) * 2 + positive
        index = jnp.where(valid, index, size)
        return hist.at[index.ravel()].add(1, mode="drop")

    init = lax.pcast(jnp.zeros(size, jnp.int32), ("data",), to="varying")
    hist = lax.fori_loop(0, tiles.shape[0], body, init)
    return hist[None]


@functools.lru_cache(maxsize=32)
def _hist_step(mesh: Mesh, block: int, fine_slots: int):
    fn = jax.shard_map(
        functools.partial(_local_hist, block=block, fine_slots=fine_slots), mesh=mesh,
        in_specs=(P("data"), P(), P(), P(), P(), P()), out_specs=P("data"), check_vma=True)
    return jax.jit(fn)


class _Tiles:
    """Upper-triangle tile list dealt out over devices, in calls of bounded size."""

    def __init__(self, n: int, block: int, mesh: Mesh):
        n_blocks = -(-n // block)
        r, c = np.triu_indices(n_blocks)
        self.pairs = np.stack([r, c], axis=1).astype(np.int32)
        self.n_data = mesh.shape["data"]
        per_call = max(1, min(MAX_COUNTS_PER_CALL // (block * block), -(-len(self.pairs) // self.n_data)))
        self.per_call = per_call
        self.mesh = mesh

    def calls(self):
        """Device arrays ``[n_data * per_call, 2]`` (padding tiles have r = -1)."""
        chunk = self.n_data * self.per_call
        sharding = NamedSharding(self.mesh, P("data"))
        for start in range(0, len(self.pairs), chunk):
            part = self.pairs[start:start + chunk]
            padded = np.full((chunk, 2), -1, np.int32)
            padded[:, 1] = 0
            # deal tiles round-robin so every device gets a similar mix of diagonal tiles
            padded[: len(part)] = part
            order = np.arange(chunk).reshape(self.per_call, self.n_data).T.ravel()
            yield jax.device_put(padded[order], sharding)


def _histogram(tiles: _Tiles, args, block: int, fine_slots: int) -> np.ndarray:
    step = _hist_step(tiles.mesh, block, fine_slots)
    total = None
    for tile_arr in tiles.calls():
        part = jax.device_get(step(tile_arr, *args)).astype(np.int64).sum(axis=0)
        total = part if total is None else total + part
    return total


def _crossing_bin(pos: np.ndarray, neg: np.ndarray) -> int:
    """Index into ``pos``/``neg`` (ascending bins) of the bin whose ROC segment crosses FNR = FPR."""
    n_pos, n_neg = pos.sum(), neg.sum()
    tp = np.cumsum(pos[::-1])
    fp = np.cumsum(neg[::-1])
    # after including bin k (descending), FNR - FPR = 1 - tp/P - fp/N; first k where it is <= 0
    k = int(np.argmax((1.0 - tp / n_pos - fp / n_neg) <= 0))
    return len(pos) - 1 - k


def _choose_refinement(pos, neg, tolerance: float) -> tuple[np.ndarray, float]:
    """Mixed bins to refine (ascending) and the AUROC error bound left by the others."""
    mixed = np.flatnonzero((pos > 0) & (neg > 0))
    weight = pos[mixed].astype(np.float64) * neg[mixed] / (2.0 * pos.sum() * neg.sum())
    order = np.argsort(-weight, kind="stable")
    left = np.cumsum(weight[order][::-1])[::-1]  # bound if refining only order[:i]
    n_refine = int(np.argmax(np.concatenate([left, [0.0]]) <= tolerance))
    chosen = set(mixed[order[:n_refine]].tolist())
    nonzero = np.flatnonzero(pos + neg)
    crossing = nonzero[_crossing_bin(pos[nonzero], neg[nonzero])]
    if pos[crossing] > 0 and neg[crossing] > 0:
        chosen.add(int(crossing))
    chosen = np.array(sorted(chosen), dtype=np.int64)
    bound = float(weight[~np.isin(mixed, chosen)].sum())
    return chosen, bound


def all_pairs_auroc_eer(embeddings, labels, *, block_size: int = 1024, mesh: Mesh | None = None,
                        tolerance: float = 0.0, max_fine_bytes: int = 512 << 20) -> dict:
    """AUROC and EER over all pairs ``i < j`` of ``embeddings [N, D]`` (float32 inner products;
    L2-normalise first for cosine), positive when ``labels[i] == labels[j]`` (any hashable labels).

    Returns ``{"auroc", "eer", "n_pos", "n_neg", "n_pairs", "auroc_error_bound", "passes",
    "mixed_bins", "refined_bins"}``; ``auroc_error_bound`` is 0 when exact (``tolerance=0``).
    Memory O(N D + block^2 + histograms) per device (module docstring); the fine histograms of all
    devices together take at most ``max_fine_bytes`` (more mixed prefixes -> more passes).
    """
    x = np.ascontiguousarray(np.asarray(embeddings), dtype=np.float32)
    if x.ndim != 2:
        raise ValueError(f"embeddings: expected a 2-D array [N, D], found shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError(f"embeddings: row {int(np.flatnonzero(~np.isfinite(x).all(1))[0])} holds NaN/inf")
    labels = np.asarray(labels)
    if labels.shape != (x.shape[0],):
        raise ValueError(f"labels: expected shape ({x.shape[0]},), found {labels.shape}")
    codes = np.unique(labels, return_inverse=True)[1].astype(np.int32)
    n = x.shape[0]
    mesh = data_mesh(mesh)
    block = min(block_size, round_up(n, 8))
    padded = round_up(n, block)
    rep = NamedSharding(mesh, P())
    x_dev = jax.device_put(np.concatenate([x, np.zeros((padded - n, x.shape[1]), np.float32)]), rep)
    codes_dev = jax.device_put(np.concatenate([codes, np.full(padded - n, -1, np.int32)]), rep)
    n_dev, zero = jax.device_put(np.int32(n), rep), jax.device_put(np.int32(0), rep)
    tiles = _Tiles(n, block, mesh)

    dummy_lut = jax.device_put(np.zeros(1, np.int32), rep)
    coarse = _histogram(tiles, (x_dev, codes_dev, n_dev, dummy_lut, zero), block, 0)
    neg, pos = coarse[0::2], coarse[1::2]
    n_pos, n_neg = int(pos.sum()), int(neg.sum())
    if n_pos == 0 or n_neg == 0:
        raise ValueError(f"AUROC/EER need positive and negative pairs, found {n_pos} and {n_neg}")
    refine, bound = _choose_refinement(pos, neg, tolerance)
    u2 = twice_u(pos, neg) - exact_dot(pos[refine], neg[refine])  # refined bins: ties -> exact below
    nonzero = np.flatnonzero(pos + neg)
    crossing = int(nonzero[_crossing_bin(pos[nonzero], neg[nonzero])])
    crossing_fine, passes = None, 1
    if refine.size:
        lut = np.full(COARSE_BINS, -1, np.int32)
        lut[refine] = np.arange(refine.size, dtype=np.int32)
        lut_dev = jax.device_put(lut, rep)
        per_bin = mesh.shape["data"] * 4 << (FINE_BITS + 1)
        slots = max(1, min(max_fine_bytes // per_bin, refine.size))
        for slot0 in range(0, refine.size, slots):
            args = (x_dev, codes_dev, n_dev, lut_dev, jax.device_put(np.int32(slot0), rep))
            fine = _histogram(tiles, args, block, slots).reshape(slots, 1 << FINE_BITS, 2)
            fine = fine[: refine.size - slot0]
            u2 += twice_u(fine[:, :, 1], fine[:, :, 0])
            hit = np.flatnonzero(refine[slot0:slot0 + slots] == crossing)
            if hit.size:
                crossing_fine = fine[hit[0]]
            passes += 1
    # ROC polyline: coarse bins, with the crossing bin expanded to its distinct scores.
    at = int(np.searchsorted(nonzero, crossing))
    seq_pos, seq_neg = pos[nonzero], neg[nonzero]
    if crossing_fine is not None:
        seq_pos = np.concatenate([seq_pos[:at], crossing_fine[:, 1], seq_pos[at + 1:]])
        seq_neg = np.concatenate([seq_neg[:at], crossing_fine[:, 0], seq_neg[at + 1:]])
    return {"auroc": float(Fraction(u2, 2 * n_pos * n_neg)), "eer": eer_from_counts(seq_pos, seq_neg),
            "n_pos": n_pos, "n_neg": n_neg, "n_pairs": n * (n - 1) // 2, "auroc_error_bound": bound,
            "passes": passes, "mixed_bins": int(((pos > 0) & (neg > 0)).sum()),
            "refined_bins": int(refine.size)}


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
    mesh = data_mesh(mesh)
    n_data = mesh.shape["data"]
    block = round_up(min(block_size, max(a.shape[0], 1)), n_data)
    fn = jax.jit(_rowwise)
    sharding = NamedSharding(mesh, P("data", None))
    out = np.empty(a.shape[0], np.float32)
    for start in range(0, a.shape[0], block):
        part_a, part_b = a[start:start + block], b[start:start + block]
        m = part_a.shape[0]
        if m < block:
            pad = np.zeros((block - m, a.shape[1]), np.float32)
            part_a, part_b = np.concatenate([part_a, pad]), np.concatenate([part_b, pad])
        scores = fn(jax.device_put(part_a, sharding), jax.device_put(part_b, sharding))
        out[start:start + m] = jax.device_get(scores)[:m]
    return out


def pairs_auroc_eer(embeddings_a, embeddings_b, labels, *, block_size: int = 65536,
                    mesh: Mesh | None = None) -> dict:
    """Exact AUROC/EER of a given list of pairs: ``labels [M]`` bool (True = same author/class),
    scores = inner products of ``embeddings_a[m]`` and ``embeddings_b[m]``. O(M) memory."""
    scores = pair_cosine_scores(embeddings_a, embeddings_b, block_size=block_size, mesh=mesh)
    result = auroc_eer(scores, labels)
    result["n_pairs"] = int(scores.size)
    return result
