"""Streaming all-pairs and listed-pairs AUROC/EER equal scikit-learn's on the full pair list."""

import jax
import numpy as np
import pytest
from kernel_helpers import dyadic, meshes, unit_rows
from sklearn.metrics import roc_auc_score, roc_curve

from stylebench_jax.kernels import all_pairs_auroc_eer, native, pair_scores, pairs_auroc_eer
from stylebench_jax.kernels.pair_scores import float_keys
from stylebench_jax.metrics.roc import auroc_eer, eer_from_counts, exact_dot
from stylebench_jax.parallel import make_mesh


def sklearn_auroc_eer(scores, labels):
    """roc_auc_score, and the EER interpolated on roc_curve's polyline (drop_intermediate=False)."""
    fpr, tpr, _ = roc_curve(labels, scores, drop_intermediate=False)
    gap = (1 - tpr) - fpr
    i = int(np.argmax(gap <= 0))
    eer = fpr[i] if gap[i] == 0 else fpr[i - 1] + gap[i - 1] / (gap[i - 1] - gap[i]) * (fpr[i] - fpr[i - 1])
    return roc_auc_score(labels, scores), eer


def all_pairs_reference(x, labels):
    iu = np.triu_indices(len(x), 1)
    return sklearn_auroc_eer((x @ x.T)[iu], (labels[:, None] == labels[None, :])[iu])


def clustered(rng, n, dim, n_labels, spread=0.8):
    labels = rng.integers(0, n_labels, n)
    centres = rng.standard_normal((n_labels, dim)).astype(np.float32)
    x = rng.standard_normal((n, dim)).astype(np.float32) + spread * centres[labels]
    return x / np.linalg.norm(x, axis=1, keepdims=True), labels


@pytest.mark.parametrize("method", ["minority", "radix"])
def test_dyadic_ties_are_exact(mesh, method):
    """Few distinct scores, many ties across classes: must match to the last bit."""
    rng = np.random.default_rng(0)
    x, labels = dyadic(rng, (257, 6)), rng.integers(0, 5, 257)
    with jax.transfer_guard("disallow"):
        ours = all_pairs_auroc_eer(x, labels, block_size=64, mesh=mesh, method=method)
    auroc, eer = all_pairs_reference(x, labels)
    assert ours.auroc == pytest.approx(auroc, abs=1e-12)
    assert ours.eer == pytest.approx(eer, abs=1e-12)
    assert ours.n_pos + ours.n_neg == ours.n_pairs == 257 * 256 // 2
    assert ours.auroc_error_bound == 0.0


@pytest.mark.parametrize("n", [9, 500])
@pytest.mark.parametrize("method", ["minority", "radix"])
def test_small_pools_on_every_mesh(mesh, n, method):
    rng = np.random.default_rng(n)
    x, labels = clustered(rng, n, 16, 3)
    ours = all_pairs_auroc_eer(x, labels, block_size=128, mesh=mesh, method=method)
    auroc, eer = all_pairs_reference(x, labels)
    assert abs(ours.auroc - auroc) < 1e-6 and abs(ours.eer - eer) < 1e-6


def test_three_thousand_items_match_sklearn():
    rng = np.random.default_rng(1)
    x, labels = clustered(rng, 3000, 32, 40)
    auroc, eer = all_pairs_reference(x, labels)
    radix = all_pairs_auroc_eer(x, labels, block_size=512, mesh=meshes()["1dev"], method="radix")
    ours = all_pairs_auroc_eer(x, labels, block_size=512, mesh=meshes()["1dev"])
    for result in (radix, ours):
        assert abs(result.auroc - auroc) < 1e-6 and abs(result.eer - eer) < 1e-6
        assert result.refined_bins > 0
    assert (ours.auroc, ours.eer) == (radix.auroc, radix.eer)
    # the default computes the tiles holding positives, then every tile once (radix: once per level)
    assert ours.method == "minority" and ours.passes == 1 and radix.passes == 3
    assert ours.tiles == radix.tiles == 21
    assert radix.tile_evaluations == 63 and 21 < ours.tile_evaluations < 2 * 21


def test_minority_method_negatives_rarer_and_several_passes():
    """One big label: the negatives are the rarer class; a small budget splits the counting into
    passes, each holding some prefixes' rank tables."""
    rng = np.random.default_rng(9)
    labels = (rng.random(900) < 0.93).astype(int)  # two labels, one holding most items
    x = rng.standard_normal((900, 16)) + 0.8 * rng.standard_normal((2, 16))[labels]
    x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    auroc, eer = all_pairs_reference(x, labels)
    one = all_pairs_auroc_eer(x, labels, block_size=128, mesh=meshes()["1dev"], method="minority")
    assert one.n_neg < one.n_pos and one.passes == 1
    assert abs(one.auroc - auroc) < 1e-6 and abs(one.eer - eer) < 1e-6
    radix = all_pairs_auroc_eer(x, labels, block_size=128, mesh=meshes()["1dev"], method="radix")
    assert (one.auroc, one.eer) == (radix.auroc, radix.eer)
    many = all_pairs_auroc_eer(x, labels, block_size=128, mesh=meshes()["1dev"], method="minority",
                               max_fine_bytes=64 << 20)
    assert many.passes > 1 and (many.auroc, many.eer) == (one.auroc, one.eer)


def test_minority_method_needs_its_budget():
    rng = np.random.default_rng(10)
    x, labels = clustered(rng, 300, 8, 4)
    with pytest.raises(ValueError, match="method='minority'.*max_fine_bytes"):
        all_pairs_auroc_eer(x, labels, method="minority", max_fine_bytes=1 << 16)
    auto = all_pairs_auroc_eer(x, labels, max_fine_bytes=1 << 16)  # falls back to radix, still exact
    auroc, eer = all_pairs_reference(x, labels)
    assert auto.method == "radix" and abs(auto.auroc - auroc) < 1e-6 and abs(auto.eer - eer) < 1e-6
    # the keys fit (241 x 4 bytes) but no prefix table does: refused before any tile is computed
    x, labels = clustered(np.random.default_rng(14), 50, 8, 5)
    with pytest.raises(ValueError, match="their tables do not fit"):
        all_pairs_auroc_eer(x, labels, block_size=16, method="minority", max_fine_bytes=600 << 10)
    auto = all_pairs_auroc_eer(x, labels, block_size=16, max_fine_bytes=600 << 10)
    assert auto.method == "radix" and auto.tile_evaluations == auto.passes * auto.tiles


def test_auto_prefers_radix_when_minority_needs_more_passes():
    """A budget that splits the minority counting into more passes than radix's least: auto hands
    over to radix after the collection, whose tiles count in ``tile_evaluations``."""
    rng = np.random.default_rng(9)
    labels = (rng.random(900) < 0.93).astype(int)
    x = rng.standard_normal((900, 16)) + 0.8 * rng.standard_normal((2, 16))[labels]
    x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    minority = all_pairs_auroc_eer(x, labels, block_size=128, mesh=meshes()["1dev"], method="minority",
                                   max_fine_bytes=64 << 20)
    auto = all_pairs_auroc_eer(x, labels, block_size=128, mesh=meshes()["1dev"], max_fine_bytes=64 << 20)
    assert minority.passes > len(auto.level_bits) and auto.method == "radix"
    collected = minority.tile_evaluations - minority.passes * minority.tiles
    assert auto.tile_evaluations == auto.passes * auto.tiles + collected > auto.passes * auto.tiles
    assert (auto.auroc, auto.eer) == (minority.auroc, minority.eer)
    with pytest.raises(ValueError, match="method"):
        all_pairs_auroc_eer(x, labels, method="sorted")


def test_tolerance_bounds_the_error_and_keeps_eer_exact():
    rng = np.random.default_rng(2)
    x, labels = clustered(rng, 1200, 16, 10)
    exact = all_pairs_auroc_eer(x, labels, block_size=256, mesh=meshes()["1dev"], method="radix")
    loose = all_pairs_auroc_eer(x, labels, block_size=256, mesh=meshes()["1dev"], tolerance=1e-3,
                                method="radix")
    assert 0 < loose.auroc_error_bound <= 1e-3
    assert loose.refined_bins < exact.refined_bins
    assert abs(loose.auroc - exact.auroc) <= loose.auroc_error_bound
    assert loose.eer == exact.eer


@pytest.mark.parametrize("level_bits", [(20, 12), (16, 8, 8), (8, 8, 8, 8), (12, 20)])
def test_every_level_split_is_exact(level_bits):
    rng = np.random.default_rng(8)
    x, labels = clustered(rng, 400, 16, 6)
    ours = all_pairs_auroc_eer(x, labels, block_size=128, mesh=meshes()["1dev"], level_bits=level_bits)
    auroc, eer = all_pairs_reference(x, labels)
    assert abs(ours.auroc - auroc) < 1e-9 and abs(ours.eer - eer) < 1e-9
    assert ours.level_bits == level_bits


def test_several_fine_passes_give_the_same_answer(monkeypatch):
    """Passes folded one by one (small budget: the last level's lookup alone takes 16 MB here, held
    on the device and the host), and several jitted calls summed per pass."""
    rng = np.random.default_rng(3)
    x, labels = clustered(rng, 700, 16, 7)
    one = all_pairs_auroc_eer(x, labels, block_size=128, mesh=meshes()["1dev"], method="radix")
    many = all_pairs_auroc_eer(x, labels, block_size=128, mesh=meshes()["1dev"], max_fine_bytes=80 << 20,
                               method="radix")
    assert many.passes > 2
    assert (many.auroc, many.eer) == (one.auroc, one.eer)
    monkeypatch.setattr(pair_scores, "MAX_COUNTS_PER_CALL", 3 * 128 * 128)  # 3 tiles per call: 7 calls
    split = all_pairs_auroc_eer(x, labels, block_size=128, mesh=meshes()["1dev"], max_fine_bytes=80 << 20,
                                method="radix")
    assert (split.auroc, split.eer) == (one.auroc, one.eer)
    assert split.passes > many.passes  # the running total counts against the budget too


def test_string_labels_and_errors():
    rng = np.random.default_rng(4)
    x = unit_rows(rng, (40, 8))
    labels = np.array(["ann", "bob", "cy", "dee"])[rng.integers(0, 4, 40)]
    auroc, eer = all_pairs_reference(x, labels)
    assert all_pairs_auroc_eer(x, labels).auroc == pytest.approx(auroc, abs=1e-6)
    with pytest.raises(ValueError, match="positive and negative"):
        all_pairs_auroc_eer(x, np.zeros(40, int))
    with pytest.raises(ValueError, match="labels"):
        all_pairs_auroc_eer(x, np.zeros(39, int))
    with pytest.raises(ValueError, match="level_bits"):
        all_pairs_auroc_eer(x, labels, level_bits=(32,))
    x[3, 1] = np.nan
    with pytest.raises(ValueError, match="row 3"):
        all_pairs_auroc_eer(x, labels)
    x[3, 1], x[5, 0] = 0.0, 3e19  # finite, but its products are not: an AUROC of inf/NaN scores
    with pytest.raises(ValueError, match="row 5 is too large to square"):
        all_pairs_auroc_eer(x, labels)


def test_listed_pairs_match_sklearn(mesh):
    rng = np.random.default_rng(5)
    a, b = unit_rows(rng, (3001, 12)), unit_rows(rng, (3001, 12))
    labels = rng.random(3001) < 0.3
    b[labels] = a[labels] + 0.5 * b[labels]
    b /= np.linalg.norm(b, axis=1, keepdims=True)
    ours = pairs_auroc_eer(a, b, labels, block_size=512, mesh=mesh)
    auroc, eer = sklearn_auroc_eer(np.einsum("md,md->m", a, b), labels)
    assert abs(ours.auroc - auroc) < 1e-6 and abs(ours.eer - eer) < 1e-6
    assert ours.n_pos == labels.sum() and ours.n_pairs == 3001


def test_auroc_eer_from_scores_with_ties():
    rng = np.random.default_rng(6)
    scores = rng.integers(0, 6, 2000).astype(np.float32)
    scores[:7] = -0.0
    labels = rng.random(2000) < scores / 8
    ours = auroc_eer(scores, labels)
    auroc, eer = sklearn_auroc_eer(scores, labels)
    assert ours.auroc == pytest.approx(auroc, abs=1e-12) and ours.eer == pytest.approx(eer, abs=1e-12)
    perfect = auroc_eer(np.array([0.1, 0.2, 0.9, 0.8]), np.array([0, 0, 1, 1]))
    assert perfect.auroc == 1.0 and perfect.eer == 0.0


def test_float_keys_sort_like_floats():
    values = np.array([-np.inf, -2.0, -1e-30, -0.0, 0.0, 1e-40, 1e-30, 0.5, 1.0, np.inf], np.float32)
    keys = np.asarray(float_keys(values))
    assert (np.diff(keys.astype(np.int64)) >= 0).all()
    assert keys[3] == keys[4]  # -0.0 and +0.0 tie


def test_exact_dot_beyond_int64():
    a = np.full(5, (1 << 41) + 3, np.int64)
    b = np.full(5, (1 << 41) - 1, np.int64)
    assert exact_dot(a, b) == 5 * ((1 << 41) + 3) * ((1 << 41) - 1)


@pytest.mark.slow
def test_twenty_thousand_items_all_pairs():
    """2e8 pairs, never materialised; exact (the collection and one counting pass), checked against
    a 1,500-item subsample: the AUROC of clustered data is far from 0.5 and all counts add up.
    (N = 50,000, 1.25e9 pairs, is ``benchmarks/bench_topk.py --pairs-n 50000``: 15-35 s on the
    2-core AVX-512 machine, 2026-11-27, too long for the suite.)"""
    rng = np.random.default_rng(7)
    x, labels = clustered(rng, 20_000, 16, 200, spread=0.6)
    # One device: 8 fake CPU devices would only add per-device dispatch on the 2 real cores.
    mesh = make_mesh("data=1,model=1", devices=jax.devices()[:1])
    result = all_pairs_auroc_eer(x, labels, block_size=2048, mesh=mesh)
    assert result.n_pairs == 20_000 * 19_999 // 2 == result.n_pos + result.n_neg
    assert result.auroc_error_bound == 0.0
    sub = rng.choice(20_000, 1500, replace=False)
    auroc, eer = all_pairs_reference(x[sub], labels[sub])
    assert abs(result.auroc - auroc) < 0.02 and abs(result.eer - eer) < 0.03


@pytest.mark.parametrize("cls", [0, 1])
def test_rank_crossing_scans_in_chunks_like_the_whole_roc(cls):
    """The minority method's EER entries (the crossing one and the merged rest, found from the top in
    chunks) give the EER of the whole per-key ROC sequence."""
    rng = np.random.default_rng(11)
    d = 300
    mult = rng.integers(1, 5, d)
    gaps = rng.integers(0, 40, d + 1)
    gaps[rng.random(d + 1) < 0.3] = 0
    equal = rng.integers(0, 3, d)
    below = np.cumsum(gaps[:-1]) + np.concatenate([[0], np.cumsum(equal[:-1])])
    n_major = int(gaps.sum() + equal.sum())
    rare_seq = np.zeros(2 * d + 1, np.int64)
    rare_seq[1::2] = mult
    other_seq = np.empty(2 * d + 1, np.int64)
    other_seq[0::2], other_seq[1::2] = gaps, equal
    n_rare = int(mult.sum())
    n_pos, n_neg = (n_rare, n_major) if cls == 1 else (n_major, n_rare)
    pos, neg = (rare_seq, other_seq) if cls == 1 else (other_seq, rare_seq)
    expected = eer_from_counts(pos, neg)
    for chunk in (1, 7, 64, 1 << 20):
        rare, other = pair_scores._rank_crossing(mult, below, equal, n_major, cls, n_pos, n_neg, chunk=chunk)
        assert rare.sum() == n_rare and other.sum() == n_major
        got = eer_from_counts(*((rare, other) if cls == 1 else (other, rare)))
        assert got == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize("seed, crossing_holds_positives", [(0, True), (2, False)])
def test_minority_eer_whether_or_not_the_crossing_entry_holds_positives(monkeypatch, seed,
                                                                        crossing_holds_positives):
    """The EER's crossing entry is a positive key (with the negatives equal to it) or a run of
    negatives between two positive keys: both exact (sklearn), both equal to radix's bits."""
    seen = []
    crossing = pair_scores._rank_crossing

    def spy(*args, **kwargs):
        found = crossing(*args, **kwargs)
        seen.append(bool(found[0][1] > 0))
        return found

    monkeypatch.setattr(pair_scores, "_rank_crossing", spy)
    x, labels = clustered(np.random.default_rng(seed), 400, 16, 120, spread=0.2)
    ours = all_pairs_auroc_eer(x, labels, block_size=128, mesh=meshes()["1dev"], method="minority")
    assert seen == [crossing_holds_positives]
    radix = all_pairs_auroc_eer(x, labels, block_size=128, mesh=meshes()["1dev"], method="radix")
    auroc, eer = all_pairs_reference(x, labels)
    assert abs(ours.auroc - auroc) < 1e-6 and ours.eer == pytest.approx(eer, abs=1e-12)
    assert (ours.auroc, ours.eer) == (radix.auroc, radix.eer)


def keys_np(scores):
    bits = np.asarray(scores, np.float32).view(np.uint32)
    return np.where(bits >> 31 == 1, ~bits, bits | np.uint32(0x80000000)).astype(np.uint32)


def floats_np(keys):
    keys = np.asarray(keys, np.uint32)
    return np.where(keys >> 31 == 1, keys & np.uint32(0x7FFFFFFF), ~keys).astype(np.uint32).view(np.float32)


@pytest.mark.parametrize("kernel", ["native", "xla"])
@pytest.mark.parametrize("bits", [24, 20])
def test_rank_counting_matches_searchsorted(monkeypatch, kernel, bits):
    """Counted pairs land at ``2 g + e`` (``g`` distinct keys below, ``e`` equal) for slots inside the
    pass, at ``2 starts[s]`` for slots outside it and at ``2 g`` for key-less prefixes; with a full
    slot (every low value of one prefix: a wrapping uint8 row at 24 bits), in both kernels."""
    if kernel == "native" and native.unavailable() is not None:
        pytest.skip(f"C++ kernels: {native.unavailable()}")
    monkeypatch.setattr(pair_scores, "RANK_KERNEL", "auto" if kernel == "native" else "xla")
    rng = np.random.default_rng(bits)
    shift = 32 - bits
    full = (keys_np(0.5) >> shift << shift) + np.arange(1 << shift, dtype=np.uint32)  # one whole prefix
    sparse = keys_np(rng.uniform(-1, 1, 300).astype(np.float32))
    distinct = np.unique(np.concatenate([full, sparse]))
    # pair scores: every distinct key, its neighbours, and scores far from any
    probe = np.concatenate([distinct, distinct + 1, distinct - 1, keys_np(rng.uniform(-1, 1, 200))])
    block = 64
    probe = probe[rng.permutation(probe.size)][: block * (probe.size // block)]
    prefix = distinct >> np.uint32(shift)
    new_slot = np.concatenate([[True], prefix[1:] != prefix[:-1]])
    starts = np.flatnonzero(new_slot)
    slot_of = np.cumsum(new_slot) - 1
    n_slots, d = starts.size, distinct.size
    lut = pair_scores._rank_lut(prefix[starts].astype(np.int64), starts, d, bits)
    # a middle pass holding the full slot: slots before and after it are outside
    full_slot = int(slot_of[np.searchsorted(distinct, full[0])])
    k = max(3, n_slots // 3)
    slot0 = max(1, full_slot - k // 2)
    assert slot0 <= full_slot < slot0 + k < n_slots
    inside = (slot_of >= slot0) & (slot_of < slot0 + k)
    table = pair_scores._rank_table(distinct[inside], slot_of[inside] - slot0, k, bits)
    entry = lut[probe >> np.uint32(shift)]
    g = np.searchsorted(distinct, probe)
    e = (g < d) & (distinct[np.minimum(g, d - 1)] == probe)
    slot = np.maximum(entry, 0)
    in_pass = (entry >= 0) & (slot >= slot0) & (slot < slot0 + k)
    expected_bins = np.where(entry < 0, 2 * g, np.where(in_pass, 2 * g + e, 2 * starts[slot]))
    in_full = in_pass & (slot == full_slot)
    assert (in_full & e).sum() >= 1 << shift  # every key of the full slot is met exactly (wrap included)
    assert ((entry < 0).any() and (~in_pass & (entry >= 0)).any())
    assert np.array_equal(np.where(entry < 0, -entry - 1, g), g)  # the lookup's g for key-less prefixes
    mesh = meshes()["1dev"]
    size = 2 * (d + 1)  # each column's score below meets all 64 rows
    for start in range(0, probe.size, block):
        # rows (1, 0) and columns (v, 0): the tile's scores are the columns' values v, exactly
        cols = np.zeros((block, 2), np.float32)
        cols[:, 0] = floats_np(probe[start:start + block])
        rows = np.zeros((block, 2), np.float32)
        rows[:, 0] = 1.0
        x = np.concatenate([rows, cols])
        labels = np.concatenate([np.zeros(block, np.int32), np.ones(block, np.int32)])
        step = pair_scores._rank_step(mesh, block, bits, 1, size, kernel == "native")
        hist = step(np.array([[0, 1]], np.int32), x, labels, np.int32(2 * block), lut,
                    starts.astype(np.int32), table, np.int32(slot0))
        expected_part = np.zeros(size, np.int64)
        np.add.at(expected_part, expected_bins[start:start + block], block)
        assert np.array_equal(np.asarray(hist), expected_part)


def test_rank_kernels_agree_on_every_mesh(monkeypatch, mesh):
    """The C++ counting and XLA's give the same AUROC/EER bits, on one device and sharded."""
    if native.unavailable() is not None:
        pytest.skip(f"C++ kernels: {native.unavailable()}")
    x, labels = clustered(np.random.default_rng(15), 700, 8, 30, spread=0.3)
    found = []
    for kernel in ("auto", "xla"):
        monkeypatch.setattr(pair_scores, "RANK_KERNEL", kernel)
        for budget in (512 << 20, 48 << 20):  # one pass, several
            result = all_pairs_auroc_eer(x, labels, block_size=128, mesh=mesh, method="minority",
                                         max_fine_bytes=budget)
            assert (result.passes > 1) == (budget < 64 << 20)
            found.append((result.auroc, result.eer))
    assert len(set(found)) == 1
    auroc, eer = all_pairs_reference(x, labels)
    assert abs(found[0][0] - auroc) < 1e-6 and found[0][1] == pytest.approx(eer, abs=1e-12)
    # a histogram of 6 counts, fewer than XLA's threads may be: the C++ kernel splits its range
    # over threads (a range past the end once counted every pair again)
    x, labels = dyadic(np.random.default_rng(16), (6, 4)), np.array([0, 0, 0, 1, 1, 1])
    monkeypatch.setattr(pair_scores, "RANK_KERNEL", "auto")
    tiny = all_pairs_auroc_eer(x, labels, block_size=8, mesh=mesh, method="minority")
    assert (tiny.auroc, tiny.eer) == pytest.approx(all_pairs_reference(x, labels), abs=1e-12)


def test_memory_plan_holds_the_tile_temporaries():
    """The plan counts XLA's temporaries of the counting program, probed from its compiled memory
    analysis (at least the tile's [B, B] scores), once per device."""
    mesh = meshes()["1dev"]
    temp = pair_scores._rank_temp(mesh, 2048, 4096, 16, 1, 2, pair_scores._rank_native(mesh))
    assert temp >= 2048 * 2048 * 4
    # 8 devices: the counting phase (tables and temporaries on every device) is the peak
    twice = pair_scores._minority_plan(24, 900, 800, 800, 4, 8, 2 * temp)
    assert twice - pair_scores._minority_plan(24, 900, 800, 800, 4, 8, temp) == 8 * temp


def test_runs_in_chunks():
    keys = np.sort(np.random.default_rng(17).integers(0, 40, 3000).astype(np.uint32))
    values, counts = np.unique(keys, return_counts=True)
    for chunk in (1, 7, 64, 1 << 22):
        distinct, mult = pair_scores._runs(keys, np.int32, chunk=chunk)
        assert np.array_equal(distinct, values) and np.array_equal(mult, counts) and mult.dtype == np.int32


def test_distinct_prefixes_in_chunks():
    keys = np.sort(np.random.default_rng(13).integers(0, 2**32, 5000, dtype=np.uint64).astype(np.uint32))
    for shift in (8, 20, 28):
        expected = np.unique(keys >> np.uint32(shift))
        for chunk in (3, 64, 1 << 22):
            assert np.array_equal(pair_scores._distinct_prefixes(keys, shift, chunk=chunk), expected)
