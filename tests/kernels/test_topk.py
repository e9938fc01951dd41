"""Blocked top-k equals brute force (full matrix + stable argsort) on 1, 8 and 4x2 devices."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from kernel_helpers import assert_topk_equal, dyadic, meshes, unit_rows

from stylebench_jax.kernels import NonFiniteRowError, shard_pool, topk_cosine
from stylebench_jax.kernels import scan as scan_module
from stylebench_jax.kernels import topk as topk_module
from stylebench_jax.kernels.blockwise import block_shortlist, merge_running, pick_group_size
from stylebench_jax.kernels.npy_rows import aligned_empty
from stylebench_jax.kernels.scan import Span, plan_spans
from stylebench_jax.parallel import make_mesh


@pytest.mark.parametrize("n", [1, 5, 8, 9, 37])
def test_small_pools_with_ties_and_padding(mesh, n):
    """N < devices, N = devices, N = devices + 1; dyadic entries make exact ties everywhere."""
    rng = np.random.default_rng(n)
    c = dyadic(rng, (n, 6))
    q = dyadic(rng, (4, 6))
    with jax.transfer_guard("disallow"):
        result = topk_cosine(q, c, 7, mesh=mesh, block_size=8, chunk_rows=16)
    assert_topk_equal(result, q, c, 7)


def test_k_larger_than_pool_returns_every_candidate(mesh):
    rng = np.random.default_rng(0)
    c, q = dyadic(rng, (11, 4)), dyadic(rng, (3, 4))
    result = topk_cosine(q, c, 50, mesh=mesh, block_size=8)
    assert result.indices.shape == (3, 11)
    assert_topk_equal(result, q, c, 50)


@pytest.mark.parametrize("kernel", ["auto", "xla"])
def test_duplicates_rank_lower_index_first(mesh, kernel):
    rng = np.random.default_rng(1)
    base = unit_rows(rng, (5, 16))
    c = base[rng.integers(0, 5, 200)]  # 200 rows, only 5 distinct: long runs of exact ties
    q = np.concatenate([base[:3], unit_rows(rng, (2, 16))])
    result = topk_cosine(q, c, 60, mesh=mesh, block_size=16, chunk_rows=64, kernel=kernel)
    assert_topk_equal(result, q, c, 60, exact=False, tol=1e-6)
    s = q @ c.T
    for row in range(q.shape[0]):
        got = result.indices[row]
        ref = np.argsort(-s[row], kind="stable")[:60]
        np.testing.assert_array_equal(got, ref)  # duplicates give bitwise-equal scores


@pytest.mark.parametrize("q_rows", [1, 13])
def test_random_unit_vectors_many_blocks(mesh, q_rows):
    rng = np.random.default_rng(q_rows)
    c, q = unit_rows(rng, (1000, 24)), unit_rows(rng, (q_rows, 24))
    result = topk_cosine(q, c, 10, mesh=mesh, block_size=32, chunk_rows=256)
    assert_topk_equal(result, q, c, 10, exact=False)


def misaligned(c: np.ndarray, shift_bytes: int) -> np.ndarray:
    """A C-contiguous copy of ``c`` whose data starts ``shift_bytes`` past a 64-byte boundary."""
    raw = aligned_empty((c.size + 16,))
    out = raw[shift_bytes // 4: shift_bytes // 4 + c.size].reshape(c.shape)
    out[:] = c
    assert out.ctypes.data % 64 == shift_bytes
    return out


def test_plan_spans_in_place_copies_and_tail(monkeypatch):
    """Aligned: calls of IN_PLACE_BLOCKS blocks per device in place, the whole slabs left over in
    one shifted call of the same shape, the tail alone with its own block; misaligned: the first
    rows (whose view would start before the data) in a small copied call first; files: chunks."""
    monkeypatch.setattr(scan_module, "IN_PLACE_BLOCKS", 8)

    def plan(n, array, n_data=2, block=8):
        return [(s.start, s.stop, s.stride, s.block, s.in_place, s.skip)
                for s in plan_spans(n, n_data, block, 64, array)]

    c = np.zeros((301, 8), np.float32)
    aligned, shifted = misaligned(c, 0), misaligned(c, 16)
    assert plan(301, aligned) == [(0, 128, 64, 8, True, 0), (128, 256, 64, 8, True, 0),
                                  (256, 288, 16, 8, True, 6), (288, 301, 8, 8, False, 0)]
    # D = 8: row 1's 64-byte boundary lies before the data, row 2's inside it
    assert plan(301, shifted) == [(0, 2, 8, 8, False, 0), (2, 130, 64, 8, True, 0),
                                  (130, 258, 64, 8, True, 0), (258, 290, 16, 8, True, 6),
                                  (290, 301, 8, 8, False, 0)]
    spans = plan_spans(301, 2, 8, 64, shifted)
    assert [s.segment_starts(2) for s in spans[2:4]] == [[130, 194], [210, 226]]
    assert [s.segment_rows for s in spans] == [8, 64, 64, 64, 8]
    # fewer whole slabs than IN_PLACE_BLOCKS: calls as wide as the pool allows; the last slab's
    # segment would leave the array (its 16 elements of slack), so it is copied
    assert plan(50, misaligned(np.zeros((50, 8), np.float32), 16)) == [(0, 2, 8, 8, False, 0),
                                                                     (2, 34, 16, 8, True, 0),
                                                                     (34, 50, 8, 8, False, 0)]
    assert plan(288, misaligned(np.zeros((288, 8), np.float32), 0))[-2:] == [(256, 272, 8, 8, True, 7),
                                                                            (272, 288, 8, 8, False, 0)]
    # copies: 4-slab chunks, then one slab, then the tail
    assert [(s[0], s[2]) for s in plan(301, None)] == [(0, 32), (64, 32), (128, 32), (192, 32),
                                                       (256, 8), (272, 8), (288, 8)]
    assert plan_spans(5, 8, 8, 64, aligned)[0] == Span(0, 5, 8, 8, False)  # smaller than one slab
    # a head longer than a slab (D = 1, 16 bytes past a boundary: 12 rows; one device, 8-row blocks)
    # is copied slab by slab; it was one call of 8 rows, and rows 8-11 were never scanned
    tiny = misaligned(np.zeros((60, 1), np.float32), 16)
    spans = plan(60, tiny, n_data=1)
    assert spans[:2] == [(0, 8, 8, 8, False, 0), (8, 12, 8, 8, False, 0)] and spans[2][0] == 12
    for n_data, block in ((1, 8), (2, 4), (1, 1), (2, 8)):
        covered = np.zeros(60, int)
        for s in plan_spans(60, n_data, block, 64, tiny):
            for first in s.segment_starts(n_data):  # rows of each device's segment (skip: seen before)
                rows = np.arange(first, first + s.segment_rows)
                covered[rows[(rows >= s.start) & (rows < s.stop)]] += 1
        assert covered.tolist() == [1] * 60, (n_data, block)


@pytest.mark.parametrize("kernel", ["auto", "xla"])
def test_every_row_of_a_long_misaligned_head_is_scanned(kernel):
    c = misaligned(np.arange(1, 61, dtype=np.float32)[:, None], 16)  # D = 1: a 12-row head
    mesh = make_mesh("data=1", jax.devices()[:1])
    result = topk_cosine(np.ones((1, 1), np.float32), c, 60, mesh=mesh, block_size=8, kernel=kernel)
    assert sorted(result.indices[0].tolist()) == list(range(60))


# float32 in both scans: the C++ one (the CPU default) and XLA's (accelerators, CPUs without a compiler)
SCANS = [("float32", "auto"), ("float32", "xla"), ("bfloat16", "auto")]


@pytest.mark.parametrize(("precision", "kernel"), SCANS)
def test_shifted_call_head_and_tail_with_exclusions(mesh, precision, kernel, monkeypatch):
    """A misaligned array of 1,100 rows with 8-row blocks: a copied head call, full in-place calls,
    a shifted call (segments that start on rows an earlier call scanned, skipped by the loop)
    and a copied tail, with ids, groups and exact ties: every candidate scanned exactly once
    (bit-equal to brute force) and group labels aligned with the shifted segments."""
    monkeypatch.setattr(scan_module, "IN_PLACE_BLOCKS", 8)
    rng = np.random.default_rng(13)
    c = misaligned(dyadic(rng, (1100, 8), levels=2), 16)
    n_data = mesh.shape["data"]
    spans = plan_spans(1100, n_data, 8, 64, c)
    assert spans[0] == Span(0, 2, 8, 8, False)  # D = 8: row 2 is the first whose view fits
    assert any(s.skip for s in spans) and not spans[-1].in_place
    q = c[:11].copy()
    cg = rng.integers(0, 30, 1100)
    excluded = cg[:11, None] == cg[None, :]
    excluded[np.arange(11), np.arange(11)] = True
    with jax.transfer_guard("disallow"):
        result = topk_cosine(q, c, 40, mesh=mesh, block_size=8, exclude_self=True, query_groups=cg[:11],
                             candidate_groups=cg, precision=precision, kernel=kernel)
    assert_topk_equal(result, q, c, 40, excluded)


@pytest.mark.parametrize("kernel", ["auto", "xla"])
def test_same_answer_for_every_layout(tmp_path, kernel):
    """Mesh, block size, chunking, resident pool, .npy path, and arrays used in place at every
    alignment (or copied when not contiguous): identical bits."""
    rng = np.random.default_rng(2)
    c, q = dyadic(rng, (301, 8), levels=3), dyadic(rng, (9, 8), levels=3)
    np.save(tmp_path / "c.npy", c)
    sources = {f"shift{shift}": misaligned(c, shift) for shift in (0, 4, 16, 32, 48)}
    sources["strided"] = np.repeat(c, 2, axis=1)[:, ::2]
    sources["path"] = tmp_path / "c.npy"
    first = None
    for name, mesh in meshes().items():
        for block, chunk in [(8, 8), (16, 1000), (512, 512)]:
            got = topk_cosine(q, c, 12, mesh=mesh, block_size=block, chunk_rows=chunk, kernel=kernel)
            pool = topk_cosine(q, shard_pool(c, mesh, block_size=block), 12, kernel=kernel)
            np.testing.assert_array_equal(pool.indices, got.indices)
            for label, source in sources.items():
                with jax.transfer_guard("disallow"):
                    other = topk_cosine(q, source, 12, mesh=mesh, block_size=block, chunk_rows=chunk,
                                        kernel=kernel)
                np.testing.assert_array_equal(other.indices, got.indices, err_msg=f"{name} {label}")
                np.testing.assert_array_equal(other.scores, got.scores, err_msg=f"{name} {label}")
            if first is None:
                first = got
            np.testing.assert_array_equal(got.indices, first.indices, err_msg=f"{name} {block} {chunk}")
            np.testing.assert_array_equal(got.scores, first.scores)
    assert_topk_equal(first, q, c, 12)


def test_npy_path_and_memmap(tmp_path, mesh):
    rng = np.random.default_rng(3)
    c, q = dyadic(rng, (123, 8)), dyadic(rng, (5, 8))
    path = tmp_path / "pool.npy"
    np.save(path, c)
    with jax.transfer_guard("disallow"):
        from_path = topk_cosine(q, path, 9, mesh=mesh, block_size=8, chunk_rows=40)
        from_mmap = topk_cosine(q, np.load(path, mmap_mode="r"), 9, mesh=mesh, block_size=8, chunk_rows=40)
    assert_topk_equal(from_path, q, c, 9)
    np.testing.assert_array_equal(from_mmap.indices, from_path.indices)
    # a copy-on-write map changed in memory is searched as it is, not as its file holds it
    private = np.load(path, mmap_mode="c")
    private[:] = private[::-1]
    assert_topk_equal(topk_cosine(q, private, 9, mesh=mesh, block_size=8), q, c[::-1].copy(), 9)


def test_float64_npy_is_read_as_float32(tmp_path):
    rng = np.random.default_rng(4)
    c, q = dyadic(rng, (30, 4)).astype(np.float64), dyadic(rng, (2, 4))
    np.save(tmp_path / "pool.npy", c)
    assert_topk_equal(topk_cosine(q, tmp_path / "pool.npy", 5, block_size=8), q, c, 5)


@pytest.mark.parametrize("kind", ["float32", "float64", "fortran", "npy"])
def test_shard_pool_places_rows_chunk_by_chunk_with_zero_padding(tmp_path, mesh, kind):
    rng = np.random.default_rng(5)
    c = rng.standard_normal((123, 8)).astype(np.float32)
    source = {"float32": c, "float64": c.astype(np.float64), "fortran": np.asfortranarray(c)}.get(kind)
    if kind == "npy":
        np.save(tmp_path / "pool.npy", c)
        source = tmp_path / "pool.npy"
    with jax.transfer_guard("disallow"):  # every transfer is an explicit one
        pool = shard_pool(source, mesh, block_size=8, chunk_rows=10)
    n_data = mesh.shape["data"]
    assert pool.n == 123 and pool.rows.shape == (n_data * pool.per_device, 8)
    assert pool.per_device % pool.block == 0 and pool.per_device * n_data >= 123
    for shard in pool.rows.addressable_shards:  # each device holds its own rows
        start = shard.index[0].start or 0
        expected = np.zeros((pool.per_device, 8), np.float32)
        part = c[start:start + pool.per_device]
        expected[:len(part)] = part
        np.testing.assert_array_equal(np.asarray(shard.data), expected)


def test_exclude_self_and_query_ids(mesh):
    rng = np.random.default_rng(5)
    c = dyadic(rng, (40, 6))
    q = c[:10]
    excluded = np.zeros((10, 40), bool)
    excluded[np.arange(10), np.arange(10)] = True
    with jax.transfer_guard("disallow"):
        result = topk_cosine(q, c, 8, mesh=mesh, block_size=8, exclude_self=True)
    assert_topk_equal(result, q, c, 8, excluded)
    assert not (result.indices == np.arange(10)[:, None]).any()
    ids = np.array([3, -1, 39, 0, 5, 5, -1, 12, 1, 2])
    excluded = np.zeros((10, 40), bool)
    excluded[np.flatnonzero(ids >= 0), ids[ids >= 0]] = True
    result = topk_cosine(q, c, 8, mesh=mesh, block_size=8, query_ids=ids)
    assert_topk_equal(result, q, c, 8, excluded)


def test_group_exclusion_and_exhausted_queries(mesh):
    rng = np.random.default_rng(6)
    c = dyadic(rng, (50, 6))
    cg = rng.integers(0, 4, 50)
    cg[:45] = np.where(cg[:45] == 3, 0, cg[:45])  # group 3 only among the last rows
    q, qg = dyadic(rng, (6, 6)), np.array([0, 1, 2, 3, 0, 9])
    excluded = qg[:, None] == cg[None, :]
    with jax.transfer_guard("disallow"):
        result = topk_cosine(q, c, 48, mesh=mesh, block_size=8, query_groups=qg, candidate_groups=cg)
    assert_topk_equal(result, q, c, 48, excluded)  # rows with < 48 admissible end in -1 / -inf
    assert (result.indices[0] == -1).any() and (result.scores[result.indices == -1] == -np.inf).all()
    pool = shard_pool(c, mesh, groups=cg, block_size=8)
    np.testing.assert_array_equal(topk_cosine(q, pool, 48, query_groups=qg).indices, result.indices)


@pytest.mark.parametrize(("precision", "kernel"), SCANS)
def test_grouped_short_lists_with_exclusions(mesh, precision, kernel):
    """1024-row blocks with k = 2 take block_shortlist's grouped path in XLA's scans (groups of 16
    for float32's m = 2, of 8 for bfloat16's m = 10; the C++ scan has no blocks); dyadic rows are
    exact in bfloat16 too, so every scan must equal brute force bit for bit, ties included, with
    self and same-group exclusion and a pool that no device count divides."""
    assert pick_group_size(1024, 2) == 16 and pick_group_size(1024, 10) == 8
    rng = np.random.default_rng(12)
    c = dyadic(rng, (9001, 8), levels=1)
    q = c[:37]
    excluded = np.zeros((37, 9001), bool)
    excluded[np.arange(37), np.arange(37)] = True
    with jax.transfer_guard("disallow"):
        result = topk_cosine(q, c, 2, mesh=mesh, block_size=1024, exclude_self=True, precision=precision,
                             kernel=kernel)
    assert_topk_equal(result, q, c, 2, excluded)
    cg = rng.integers(0, 50, 9001)
    result = topk_cosine(q, c, 2, mesh=mesh, block_size=1024, query_groups=cg[:37], candidate_groups=cg,
                         precision=precision, kernel=kernel)
    assert_topk_equal(result, q, c, 2, cg[:37, None] == cg[None, :])
    result = topk_cosine(q, c, 2, mesh=mesh, block_size=1024, precision=precision, kernel=kernel)
    assert_topk_equal(result, q, c, 2)
    assert result.n_recomputed < 37  # most bfloat16 answers certified, not searched again


def test_progress_reports_every_candidate_row_per_query_batch(tmp_path):
    rng = np.random.default_rng(13)
    c, q = unit_rows(rng, (1000, 8)), unit_rows(rng, (5, 8))
    np.save(tmp_path / "c.npy", c)
    seen = []
    result = topk_cosine(q, tmp_path / "c.npy", 3, block_size=32, chunk_rows=256, query_batch=2,
                         progress=seen.append)
    assert_topk_equal(result, q, c, 3, exact=False)
    assert sum(seen) == 1000 * 3  # three query batches, each over the whole pool
    assert len(seen) == 3 * 4 and max(seen) == 256  # chunk by chunk: 8 devices x 32 rows


@pytest.mark.parametrize("normalize", [False, True])
def test_bfloat16_rescores_from_every_source(tmp_path, mesh, normalize):
    """bfloat16 re-scores its shortlist wherever the rows live: host array, .npy file (positional
    reads), memmap, or the devices of a resident pool (each scores its own rows, one psum)."""
    rng = np.random.default_rng(14)
    c, q = unit_rows(rng, (777, 16)), unit_rows(rng, (6, 16))
    if normalize:
        c *= rng.uniform(0.5, 2.0, (777, 1)).astype(np.float32)
    np.save(tmp_path / "c.npy", c)
    ref = topk_cosine(q, c, 7, mesh=mesh, block_size=64, normalize=normalize)
    sources = {"array": c, "path": tmp_path / "c.npy", "memmap": np.load(tmp_path / "c.npy", mmap_mode="r"),
               "pool": shard_pool(c, mesh, block_size=64)}
    for name, source in sources.items():
        got = topk_cosine(q, source, 7, mesh=mesh, block_size=64, chunk_rows=256, normalize=normalize,
                          precision="bfloat16")
        assert got.n_recomputed < 6, name  # certified answers, not only float32 re-searches
        np.testing.assert_array_equal(got.indices, ref.indices, err_msg=name)
        np.testing.assert_allclose(got.scores, ref.scores, atol=1e-6, err_msg=name)


def test_bfloat16_is_exact_on_representable_inputs(mesh):
    rng = np.random.default_rng(7)
    c, q = dyadic(rng, (200, 8)), dyadic(rng, (7, 8))
    result = topk_cosine(q, c, 10, mesh=mesh, block_size=16, precision="bfloat16")
    assert_topk_equal(result, q, c, 10)


@pytest.mark.parametrize("shortlist,max_grown", [(None, None), (10, None), (10, 1)])
def test_bfloat16_certificate_grown_shortlist_and_float32_recheck(mesh, shortlist, max_grown, monkeypatch):
    """Unit vectors in D=256 have top scores closer together than the bfloat16 margin, so a
    shortlist of exactly k cannot be certified: those queries get a grown shortlist (second
    bfloat16 pass keeping every key above the threshold), and only when that would need more than
    ``MAX_GROWN_KEEP`` entries are they searched again in float32. Same indices either way."""
    if max_grown is not None:
        monkeypatch.setattr(topk_module, "MAX_GROWN_KEEP", max_grown)
    rng = np.random.default_rng(8)
    q = unit_rows(rng, (12, 256))
    near = q[0] + 1e-4 * rng.standard_normal((200, 256)).astype(np.float32)  # all within eps of q[0]
    c = np.concatenate([unit_rows(rng, (1500, 256)), near])
    result = topk_cosine(q, c, 10, mesh=mesh, block_size=64, chunk_rows=512, precision="bfloat16",
                         shortlist=shortlist)
    exact = topk_cosine(q, c, 10, mesh=mesh, block_size=64, chunk_rows=512)
    assert_topk_equal(result, q, c, 10, exact=False)
    np.testing.assert_array_equal(result.indices, exact.indices)
    assert result.precision == "bfloat16"
    if shortlist == 10 and max_grown is None:
        assert result.n_grown > 0 and result.n_recomputed == 0
    if max_grown is not None:
        assert result.n_recomputed > 0


def test_normalize_gives_cosine(mesh):
    rng = np.random.default_rng(9)
    c = unit_rows(rng, (60, 8)) * rng.uniform(0.5, 3.0, (60, 1)).astype(np.float32)
    q = unit_rows(rng, (3, 8)) * 7.0
    result = topk_cosine(q, c, 5, mesh=mesh, block_size=8, normalize=True)
    cn = c / np.linalg.norm(c, axis=1, keepdims=True)
    assert_topk_equal(result, q / 7.0, cn, 5, exact=False)
    np.testing.assert_allclose(result.norm_range, (1.0, 1.0), atol=1e-6)
    # queries are normalised in float64: a float32 norm of 3e19-scaled rows overflowed to inf
    big = topk_cosine(q / 7.0 * 3e19, c, 5, mesh=mesh, block_size=8, normalize=True)
    np.testing.assert_array_equal(big.indices, result.indices)


@pytest.mark.parametrize("kernel", ["auto", "xla"])
def test_non_finite_rows_are_reported(mesh, kernel):
    rng = np.random.default_rng(10)
    c = dyadic(rng, (30, 4))
    c[17, 2] = np.nan
    c[23, 0] = np.inf
    with pytest.raises(NonFiniteRowError) as info:
        topk_cosine(dyadic(rng, (2, 4)), c, 3, mesh=mesh, block_size=8, kernel=kernel)
    assert info.value.row == 17
    with pytest.raises(ValueError, match="queries: row 1"):
        topk_cosine(np.array([[0, 0, 0, 1], [np.nan, 0, 0, 0]], np.float32), c[:10], 3)


def test_bad_arguments_raise():
    c = np.ones((4, 3), np.float32)
    with pytest.raises(ValueError, match="dimension"):
        topk_cosine(np.ones((1, 2), np.float32), c, 1)
    with pytest.raises(ValueError, match="2-D"):
        topk_cosine(np.ones(3, np.float32), c, 1)
    with pytest.raises(ValueError, match="together"):
        topk_cosine(c, c, 1, query_groups=np.zeros(4, int))
    with pytest.raises(ValueError, match="k:"):
        topk_cosine(c, c, 0)
    with pytest.raises(ValueError, match="precision"):
        topk_cosine(c, c, 1, precision="float16")
    with pytest.raises(ValueError, match="chunk_rows"):
        shard_pool(c, chunk_rows=0)
    # each of these returned nothing, divided by zero, hung (a negative block stepped backwards) or
    # indexed past a shortlist shorter than k
    for kwargs in ({"query_batch": -1}, {"query_batch": 0}, {"block_size": 0}, {"block_size": -8},
                   {"block_size": 2.5}, {"chunk_rows": 0}, {"shortlist": True}, {"shortlist": "8"}):
        with pytest.raises(ValueError, match=f"{next(iter(kwargs))}: expected a whole number >= 1"):
            topk_cosine(c, c, 1, **kwargs)
    with pytest.raises(ValueError, match=r"shortlist: expected >= k \(3\) for a bfloat16 search"):
        topk_cosine(c, c, 3, precision="bfloat16", shortlist=2)
    assert topk_cosine(c, c, 9, precision="bfloat16", shortlist=4).indices.shape == (4, 4)  # k is 4 here
    # a list of rows is a pool like an array
    assert topk_cosine(c[:1], c.tolist(), 2).indices.tolist() == [[0, 1]]


@pytest.mark.parametrize("group_size", [1, 8, 16])
def test_block_shortlist_merge_matches_stable_argsort(group_size):
    """Short list + merge into an empty running list = the block's top 5 by stable argsort, and
    every entry left off the short list is <= its bound."""
    rng = np.random.default_rng(11)
    s = rng.integers(-3, 4, (6, 128)).astype(np.float32)
    s[0] = -np.inf
    s[1, ::3] = -np.inf
    s[2, 40] = -0.0

    def top5(s):
        values, pos, bound = block_shortlist(s, 5, group_size)
        empty = (jnp.full((6, 5), -jnp.inf), jnp.zeros((6, 5), jnp.int32))
        return (*merge_running(empty, (values, pos), 5), pos, bound)

    values, pos, short_pos, bound = map(np.asarray, jax.jit(top5)(s))
    ref = np.argsort(-s, axis=1, kind="stable")[:, :5]
    np.testing.assert_array_equal(values, np.take_along_axis(s, ref, 1))
    real = values > -np.inf  # -inf entries (row 0) are "no candidate"; their index is unused
    np.testing.assert_array_equal(pos[real], ref[real])
    for row in range(6):
        left_out = np.setdiff1d(np.arange(128), short_pos[row])
        assert (s[row, left_out] <= bound[row]).all()
        assert (group_size == 1) == (left_out.size == 0)


def _fake_mesh(platform: str):
    device = type("Device", (), {"platform": platform})()
    return type("FakeMesh", (), {"devices": np.array([device])})()


@pytest.mark.parametrize(("platform", "cpu_bf16", "native", "expected"), [
    ("gpu", False, False, "float32"),    # H100: certified bfloat16 lost on real and clustered pools
    ("tpu", False, False, "float32"),
    ("cpu", False, True, "float32"),     # AVX2 only: XLA's bfloat16 dot is slower
    ("cpu", True, False, "bfloat16"),    # AMX / AVX512-BF16 without the C++ float32 scan
    ("cpu", True, True, "float32"),      # ... with it: the C++ float32 scan is faster
])
def test_auto_precision_by_platform(monkeypatch, platform, cpu_bf16, native, expected):
    flags = frozenset({"amx_bf16"} if cpu_bf16 else {"avx2"})
    monkeypatch.setattr(topk_module, "_cpu_flags", lambda: flags)
    monkeypatch.setattr(topk_module.cpu_topk, "applies", lambda mesh: None if native else "no compiler")
    mesh = _fake_mesh(platform)
    assert topk_module.resolve_precision("auto", mesh) == expected
    if platform == "cpu" and cpu_bf16:  # float32 asked to run XLA's scan: bfloat16 is the faster
        assert topk_module.resolve_precision("auto", mesh, kernel="xla") == "bfloat16"
    assert topk_module.resolve_precision("float32", mesh) == "float32"
    assert topk_module.resolve_precision("bfloat16", mesh) == "bfloat16"
