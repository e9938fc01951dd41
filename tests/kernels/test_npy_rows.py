"""Block reads of .npy pools: header checks, aligned zero-copy blocks, prefetch errors."""

import numpy as np
import pytest

from stylebench_jax.errors import UserInputError
from stylebench_jax.kernels.npy_rows import (
    NpyRows,
    aligned_empty,
    flat_views,
    flat_width,
    in_place_ok,
    is_aligned,
    prefetch,
    read_flat,
    row_source,
    take_rows,
    view_fits,
)


def test_blocks_equal_the_array_and_are_aligned(tmp_path):
    x = np.arange(70 * 3, dtype=np.float32).reshape(70, 3)
    np.save(tmp_path / "x.npy", x)
    rows = NpyRows(tmp_path / "x.npy")
    assert rows.shape == (70, 3)
    for start, stop in [(0, 7), (63, 70), (65, 100)]:
        block = rows.read(start, stop)
        np.testing.assert_array_equal(block, x[start:stop])
        assert is_aligned(block) and block.dtype == np.float32
    assert isinstance(row_source(np.load(tmp_path / "x.npy", mmap_mode="r")), NpyRows)
    assert isinstance(row_source(np.load(tmp_path / "x.npy", mmap_mode="r")[3:]), np.ndarray)


@pytest.mark.parametrize("payload, message", [
    (np.zeros((2, 2, 2), np.float32), "2-D"),
    (np.zeros((4, 2), np.int32), "floating-point"),
    (np.asfortranarray(np.zeros((4, 3), np.float32)), "Fortran"),
])
def test_bad_headers(tmp_path, payload, message):
    np.save(tmp_path / "bad.npy", payload)
    with pytest.raises(UserInputError, match=message):
        NpyRows(tmp_path / "bad.npy")


def test_truncated_file_and_missing_file(tmp_path):
    np.save(tmp_path / "x.npy", np.ones((100, 4), np.float32))
    data = (tmp_path / "x.npy").read_bytes()
    (tmp_path / "cut.npy").write_bytes(data[: len(data) - 40])
    with pytest.raises(UserInputError, match="bytes, header promises"):
        NpyRows(tmp_path / "cut.npy")
    with pytest.raises(UserInputError, match="no such file"):
        NpyRows(tmp_path / "nope.npy")
    (tmp_path / "adir.npy").mkdir()  # was "no such file" too
    with pytest.raises(UserInputError, match="adir.npy: is a directory, expected a file"):
        NpyRows(tmp_path / "adir.npy")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_take_rows_gathers_any_order_with_repeats(tmp_path, dtype):
    """The bfloat16 re-scoring gathers shortlist rows: unsorted, repeated, runs of neighbours."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((300, 5)).astype(dtype)
    np.save(tmp_path / "x.npy", x)
    idx = np.concatenate([rng.integers(0, 300, 50), [7, 7, 8, 9, 10, 299, 0, 0], np.arange(120, 160)])
    expected = x[idx].astype(np.float32)
    for source in (x, row_source(tmp_path / "x.npy"), np.load(tmp_path / "x.npy", mmap_mode="r")):
        got = take_rows(row_source(source), idx)
        assert got.dtype == np.float32 and got.shape == (idx.size, 5)
        np.testing.assert_array_equal(got, expected)
    with pytest.raises(IndexError):
        NpyRows(tmp_path / "x.npy").take(np.array([298, 299, 300]))


def test_prefetch_passes_items_and_errors_through():
    assert list(prefetch(iter(range(10)), depth=2)) == list(range(10))

    def broken():
        yield 1
        raise OSError("disk gone")

    got = []
    with pytest.raises(OSError, match="disk gone"):
        for item in prefetch(broken()):
            got.append(item)
    assert got == [1]


@pytest.mark.parametrize("shift", [0, 4, 12, 16, 32, 48, 60])
def test_flat_views_are_aligned_zero_copy_views(tmp_path, shift):
    """The top-k scan's in-place path: a view per device, starting at the 64-byte boundary at or
    before its first row, holds the rows ``lead`` elements in, and XLA wraps it without a copy."""
    import jax

    raw = aligned_empty((40 * 7 + 16,))
    x = raw[shift // 4: shift // 4 + 40 * 7].reshape(40, 7)
    x[:] = np.arange(x.size, dtype=np.float32).reshape(40, 7)
    assert in_place_ok(x) and x.ctypes.data % 64 == shift
    firsts = [3, 11, 19]
    views, leads = flat_views(x, firsts, 8)
    for view, lead, first in zip(views, leads, firsts):
        assert np.shares_memory(view, x) and view.ctypes.data % 64 == 0 and 0 <= lead < 16
        assert view.size == flat_width(8, 7) and flat_width(8, 7) % 16 == 0
        np.testing.assert_array_equal(view[lead:lead + 56].reshape(8, 7), x[first:first + 8])
        assert jax.device_put(view).unsafe_buffer_pointer() == view.ctypes.data  # no copy
    assert view_fits(x, 0, 8) == (shift == 0)  # a lead before row 0 would leave the array
    assert not view_fits(x, 33, 7)  # the slack after the rows would run past the end
    with pytest.raises(ValueError, match="cannot be viewed in place"):
        flat_views(x, [38], 2)
    np.save(tmp_path / "x.npy", x)
    for source in (x, NpyRows(tmp_path / "x.npy")):
        copied = read_flat(source, [30, 38], 4, 40)
        assert copied.shape == (2, flat_width(4, 7)) and is_aligned(copied)
        np.testing.assert_array_equal(copied[0, :28].reshape(4, 7), x[30:34])
        np.testing.assert_array_equal(copied[1, :14].reshape(2, 7), x[38:40])
        assert not copied[1, 14:].any()
    assert not in_place_ok(x[:, ::2]) and not in_place_ok(x.astype(np.float64))


@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
def test_every_npy_format_version_is_read(tmp_path, version):
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    with open(tmp_path / "x.npy", "wb") as handle:
        np.lib.format.write_array(handle, x, version=version)
    np.testing.assert_array_equal(NpyRows(tmp_path / "x.npy").read(0, 4), x)
