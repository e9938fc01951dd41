"""Streaming all-pairs and listed-pairs AUROC/EER equal scikit-learn's on the full pair list."""

import jax
import numpy as np
import pytest
from kernel_helpers import dyadic, meshes, unit_rows
from sklearn.metrics import roc_auc_score, roc_curve

from stylebench_jax.kernels import all_pairs_auroc_eer, pair_scores, pairs_auroc_eer
from stylebench_jax.kernels.pair_scores import float_keys
from stylebench_jax.metrics.roc import auroc_eer, exact_dot
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
    passes whose per-prefix totals are checked against the first."""
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
                               max_fine_bytes=3 << 20)
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
                                   max_fine_bytes=3 << 20)
    auto = all_pairs_auroc_eer(x, labels, block_size=128, mesh=meshes()["1dev"], max_fine_bytes=3 << 20)
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
    """Passes folded one by one (small budget), and several jitted calls summed per pass."""
    rng = np.random.default_rng(3)
    x, labels = clustered(rng, 700, 16, 7)
    one = all_pairs_auroc_eer(x, labels, block_size=128, mesh=meshes()["1dev"], method="radix")
    many = all_pairs_auroc_eer(x, labels, block_size=128, mesh=meshes()["1dev"], max_fine_bytes=1 << 16,
                               method="radix")
    assert many.passes > 2
    assert (many.auroc, many.eer) == (one.auroc, one.eer)
    monkeypatch.setattr(pair_scores, "MAX_COUNTS_PER_CALL", 3 * 128 * 128)  # 3 tiles per call: 7 calls
    split = all_pairs_auroc_eer(x, labels, block_size=128, mesh=meshes()["1dev"], max_fine_bytes=1 << 16,
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
    """2e8 pairs, never materialised; exact (both passes), checked against a 1,500-item subsample:
    the AUROC of clustered data is far from 0.5 and all counts add up. (N = 50,000, 1.25e9 pairs, is
    ``benchmarks/bench_topk.py --pairs-n 50000``: 64 s here, too long for the suite.)"""
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
def test_prefix_crossing_scans_in_chunks_like_the_whole_roc(cls):
    """The minority method's crossing search (chunked, from the top) finds the entry
    ``_crossing`` finds on the whole per-prefix ROC, and the counts above it."""
    rng = np.random.default_rng(11)
    coarse = rng.integers(0, 50, 300).astype(np.int32)
    coarse[rng.random(300) < 0.4] = 0
    prefixes = np.sort(rng.choice(300, 40, replace=False))
    slot_other, slot_rare = rng.integers(0, 30, 40), rng.integers(1, 30, 40)
    coarse[prefixes] = slot_other  # a later pass's slots keep their per-prefix count
    other, rare = coarse.astype(np.int64), np.zeros(300, np.int64)
    rare[prefixes] = slot_rare
    pos, neg = (rare, other) if cls == 1 else (other, rare)
    at = pair_scores._crossing(pos, neg, int(pos.sum()), int(neg.sum()))
    for chunk in (7, 64, 1 << 20):
        found = pair_scores._prefix_crossing(coarse, prefixes, slot_other, slot_rare, cls, int(pos.sum()),
                                             int(neg.sum()), chunk=chunk)
        assert found == (at, int(other[at]), (int(pos[at + 1:].sum()), int(neg[at + 1:].sum())))


@pytest.mark.parametrize("seed, crossing_holds_positives", [(0, True), (2, False)])
def test_minority_eer_whether_or_not_the_crossing_prefix_holds_positives(monkeypatch, seed,
                                                                         crossing_holds_positives):
    """The EER's crossing prefix is expanded to full keys when it holds both classes, and kept
    whole when it holds negatives only: both exact (sklearn), both equal to radix's bits."""
    seen = []
    crossing = pair_scores._prefix_crossing

    def spy(coarse, prefixes, *args, **kwargs):
        found = crossing(coarse, prefixes, *args, **kwargs)
        seen.append(found[0] in set(prefixes.tolist()))
        return found

    monkeypatch.setattr(pair_scores, "_prefix_crossing", spy)
    x, labels = clustered(np.random.default_rng(seed), 400, 16, 120, spread=0.2)
    ours = all_pairs_auroc_eer(x, labels, block_size=128, mesh=meshes()["1dev"], method="minority")
    assert seen == [crossing_holds_positives]
    radix = all_pairs_auroc_eer(x, labels, block_size=128, mesh=meshes()["1dev"], method="radix")
    auroc, eer = all_pairs_reference(x, labels)
    assert abs(ours.auroc - auroc) < 1e-6 and ours.eer == pytest.approx(eer, abs=1e-12)
    assert (ours.auroc, ours.eer) == (radix.auroc, radix.eer)


def test_sums_before_in_chunks():
    rng = np.random.default_rng(12)
    values = rng.integers(0, 1000, 5000).astype(np.int32)
    positions = np.sort(rng.choice(5000, 300, replace=False))
    positions[0] = 0
    expected = np.array([values[:p].sum() for p in positions])
    for chunk in (7, 1000, 1 << 20):
        assert np.array_equal(pair_scores._sums_before(values, positions, chunk=chunk), expected)


def test_distinct_prefixes_in_chunks():
    keys = np.sort(np.random.default_rng(13).integers(0, 2**32, 5000, dtype=np.uint64).astype(np.uint32))
    for shift in (8, 20, 28):
        expected = np.unique(keys >> np.uint32(shift))
        for chunk in (3, 64, 1 << 22):
            assert np.array_equal(pair_scores._distinct_prefixes(keys, shift, chunk=chunk), expected)
