"""Row blocks of a 2-D ``.npy`` file (or an in-memory array) with bounded memory.

``NpyRows(path)`` parses the ``.npy`` header and reads rows ``[start, stop)`` with positional reads
(``os.preadv``) into fresh buffers. Pages come from the OS page cache exactly as with ``mmap``, but
are never mapped into this process, so its resident memory stays at the few blocks in flight even
for a 15 GiB pool (a ``np.load(mmap_mode="r")`` array sliced block by block keeps every touched
page mapped, and RSS grows to the file size). A ``np.memmap`` straight from ``np.load(...,
mmap_mode="r")`` is recognised and read the same way.

Blocks are returned in 64-byte aligned buffers: XLA's CPU client then wraps them without a copy
(``jax.device_put`` of an array whose data is not 64-byte aligned copies it).

Flat segments (:func:`flat_views`, :func:`read_flat`) are how the top-k scan receives host rows: each
device gets one 1-D float32 buffer of ``flat_width(rows, D)`` elements holding its ``rows`` rows
starting ``lead`` (0..15) elements in. A C-contiguous float32 array whose data is *not* 64-byte
aligned (what ``np.load`` and NumPy's random generators return: 16-byte aligned) is handed over in
place this way: the view starts at the last 64-byte boundary at or before the device's first row,
so XLA wraps it without a copy, and the kernel skips ``lead`` elements.

``prefetch(iterator, depth)`` runs a block iterator in a background thread (file reads release the
GIL), so reading block ``i + 1`` overlaps the device work on block ``i``.
"""

from __future__ import annotations

import mmap
import os
import queue
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from stylebench_jax.errors import located
from stylebench_jax.fileio import input_file_problem
from stylebench_jax.parallel import round_up

ALIGN = 64  # bytes; XLA CPU buffers of this alignment are used in place
FLAT_PAD = ALIGN // 4  # float32 elements of slack after a flat segment's rows (lead <= 15)


class NpyRows:
    """A C-ordered 2-D ``.npy`` file ``[N, D]`` of floats, read by row blocks as float32."""

    def __init__(self, path: str | os.PathLike, *, offset: int | None = None,
                 shape: tuple[int, int] | None = None, dtype: np.dtype | None = None):
        self.path = Path(path)
        if offset is None:
            offset, shape, dtype = read_npy_header(self.path)
        self.offset, self.shape, self.dtype = int(offset), tuple(int(s) for s in shape), np.dtype(dtype)
        self.row_bytes = self.shape[1] * self.dtype.itemsize

    @classmethod
    def from_memmap(cls, array: np.memmap) -> NpyRows | None:
        """Rows of a whole-file ``np.memmap`` (as made by ``np.load(mmap_mode="r")``), read from its
        file, else None. Not for copy-on-write maps (``mmap_mode="c"``): their changed pages are
        private to the mapping, so the file would give the rows as they were before (shared maps,
        ``"r+"``/``"w+"``, write through the page cache, which reads see). The file must not be
        replaced while the search runs."""
        if (isinstance(array, np.memmap) and isinstance(array.base, mmap.mmap) and array.ndim == 2
                and array.flags.c_contiguous and array.filename and getattr(array, "mode", "r") != "c"):
            return cls(array.filename, offset=array.offset, shape=array.shape, dtype=array.dtype)
        return None

    def __len__(self) -> int:
        return self.shape[0]

    def read(self, start: int, stop: int) -> np.ndarray:
        """Rows ``[start, stop)`` as a new C-contiguous float32 array ``[stop - start, D]``."""
        stop = min(stop, self.shape[0])
        out = aligned_empty((max(stop - start, 0), self.shape[1]), self.dtype)
        with open(self.path, "rb", buffering=0) as handle:
            self._fill(handle, memoryview(out).cast("B"), start)
        return _as_float32(out)

    def read_into(self, out: np.ndarray, start: int) -> None:
        """Fill ``out [m, D]`` (float32, C-contiguous) with rows ``[start, start + m)``."""
        if self.dtype != np.float32:
            out[:] = self.read(start, start + out.shape[0])
            return
        with open(self.path, "rb", buffering=0) as handle:
            self._fill(handle, memoryview(out).cast("B"), start)

    def take(self, indices: np.ndarray) -> np.ndarray:
        """Rows at sorted unique ``indices`` as an aligned float32 array ``[len(indices), D]``;
        runs of consecutive rows are read with one positional read each."""
        out = aligned_empty((len(indices), self.shape[1]), self.dtype)
        view = memoryview(out).cast("B")
        breaks = np.flatnonzero(np.diff(indices) != 1) + 1
        with open(self.path, "rb", buffering=0) as handle:
            for run in np.split(np.arange(len(indices)), breaks):
                if run.size == 0:
                    continue
                first, count = int(indices[run[0]]), run.size
                if first + count > self.shape[0] or first < 0:
                    raise IndexError(f"row {first + count - 1} outside [0, {self.shape[0]})")
                self._fill(handle, view[run[0] * self.row_bytes:(run[0] + count) * self.row_bytes], first)
        return _as_float32(out)

    def _fill(self, handle, view: memoryview, first_row: int) -> None:
        """Fill ``view`` (whole rows) from the file, starting at row ``first_row``."""
        pos, done = self.offset + first_row * self.row_bytes, 0
        while done < len(view):
            got = os.preadv(handle.fileno(), [view[done:]], pos + done)
            if got == 0:
                last = first_row + len(view) // self.row_bytes
                raise located(self.path, f"file ends before row {last} (truncated .npy?)")
            done += got


def _as_float32(rows: np.ndarray) -> np.ndarray:
    """``rows`` itself if float32, else an aligned float32 copy."""
    if rows.dtype == np.float32:
        return rows
    converted = aligned_empty(rows.shape)
    with np.errstate(over="ignore"):  # beyond float32's range: infinity, which the scan reports by row
        np.copyto(converted, rows, casting="unsafe")
    return converted


def read_npy_header(path: Path, *, fortran_ok: bool = False) -> tuple[int, tuple[int, int], np.dtype]:
    """``(data offset in bytes, shape, dtype)`` of a 2-D float ``.npy`` (format 1.0, 2.0 or 3.0),
    C-ordered unless ``fortran_ok`` (for files loaded whole); UserInputError otherwise."""
    problem = input_file_problem(path)
    if problem is not None:
        raise located(path, problem)
    try:
        with open(path, "rb") as handle:
            version = np.lib.format.read_magic(handle)
            # 3.0 differs from 2.0 only in a UTF-8 header, which a float array's ASCII header is
            reader = {(1, 0): np.lib.format.read_array_header_1_0,
                      (2, 0): np.lib.format.read_array_header_2_0,
                      (3, 0): np.lib.format.read_array_header_2_0}.get(version)
            if reader is None:
                raise ValueError(f"unsupported .npy version {version}")
            shape, fortran_order, dtype = reader(handle)
            offset = handle.tell()
    except ValueError as error:
        raise located(path, f"not a readable .npy file ({error})") from None
    if len(shape) != 2:
        raise located(path, f"expected a 2-D array [N, D], found shape {tuple(shape)}")
    if dtype.kind != "f":
        raise located(path, f"expected floating-point embeddings, found dtype {dtype}")
    if fortran_order and shape[0] > 1 and shape[1] > 1 and not fortran_ok:
        raise located(path, "expected a C-ordered array (rows contiguous), found Fortran order")
    expected = offset + shape[0] * shape[1] * dtype.itemsize
    if path.stat().st_size < expected:
        raise located(path, f"file has {path.stat().st_size} bytes, header promises {expected}")
    return offset, (int(shape[0]), int(shape[1])), dtype


def row_source(candidates) -> NpyRows | np.ndarray:
    """A path or whole-file memmap becomes ``NpyRows``; any other array-like is returned as given."""
    if isinstance(candidates, (str, os.PathLike)):
        return NpyRows(candidates)
    rows = NpyRows.from_memmap(candidates) if isinstance(candidates, np.memmap) else None
    return rows if rows is not None else candidates


def aligned_empty(shape: tuple[int, ...], dtype=np.float32, align: int = ALIGN) -> np.ndarray:
    """Uninitialised C-ordered array whose data pointer is a multiple of ``align`` bytes."""
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.empty(nbytes + align, np.uint8)
    offset = (-raw.ctypes.data) % align
    return raw[offset:offset + nbytes].view(dtype).reshape(shape)


def is_aligned(array: np.ndarray, align: int = ALIGN) -> bool:
    return array.flags.c_contiguous and array.ctypes.data % align == 0


def flat_width(rows: int, dim: int) -> int:
    """Elements of a flat segment holding ``rows`` rows of ``dim``: room for a lead of up to 15
    elements, and a multiple of 16 (so segments stacked ``[n_data, width]`` all stay aligned)."""
    return round_up(rows * dim, 16) + FLAT_PAD


def in_place_ok(array) -> bool:
    """Whether :func:`flat_views` can hand ``array``'s rows to the devices without a copy: a
    C-contiguous float32 2-D NumPy array (any alignment of at least 4 bytes, the float's own)."""
    return (isinstance(array, np.ndarray) and array.ndim == 2 and array.dtype == np.float32
            and array.flags.c_contiguous and array.size > 0 and array.ctypes.data % 4 == 0)


def view_fits(array: np.ndarray, first_row: int, rows: int) -> bool:
    """Whether the flat segment of rows ``[first_row, first_row + rows)`` lies inside ``array``:
    it starts up to 15 elements before ``first_row`` (at a 64-byte boundary) and is
    ``flat_width(rows, D)`` long."""
    dim = array.shape[1]
    start = first_row * dim - _lead(array, first_row)
    return start >= 0 and start + flat_width(rows, dim) <= array.size


def _lead(array: np.ndarray, row: int) -> int:
    return (array.ctypes.data + 4 * row * array.shape[1]) % ALIGN // 4


def flat_views(array: np.ndarray, first_rows: list[int], rows: int) -> tuple[list[np.ndarray], np.ndarray]:
    """Flat segments of ``array [N, D]`` (see :func:`in_place_ok`) without copying: for each start
    row, a 64-byte aligned 1-D view ``[flat_width(rows, D)]`` beginning ``lead`` elements before
    that row (the tail of the previous row; the elements after the rows belong to the next rows).
    Returns (views, leads int32). ValueError if a segment would leave the array
    (:func:`view_fits`)."""
    dim, flat = array.shape[1], array.reshape(-1)
    views, leads = [], []
    for row in first_rows:
        if not view_fits(array, row, rows):
            raise ValueError(f"rows [{row}, {row + rows}) cannot be viewed in place: the segment "
                             f"leaves the array of {array.shape[0]} rows")
        lead = _lead(array, row)
        start = row * dim - lead
        views.append(flat[start:start + flat_width(rows, dim)])
        leads.append(lead)
    return views, np.asarray(leads, np.int32)


def read_flat(source, first_rows: list[int], rows: int, stop: int) -> np.ndarray:
    """Copied flat segments ``[len(first_rows), flat_width(rows, D)]`` (aligned float32, lead 0):
    segment ``d`` holds rows ``first_rows[d] + [0, rows)`` of ``NpyRows`` or an array, zeros past
    row ``stop`` and in the slack."""
    dim = source.shape[1]
    out = aligned_empty((len(first_rows), flat_width(rows, dim)))
    for segment, first in zip(out, first_rows):
        count = max(0, min(rows, stop - first))
        body = segment[:count * dim].reshape(count, dim)
        if count == 0:
            pass
        elif isinstance(source, NpyRows):
            source.read_into(body, first)
        else:
            np.copyto(body, source[first:first + count], casting="unsafe")
        segment[count * dim:] = 0
    return out


def take_rows(source, indices: np.ndarray) -> np.ndarray:
    """Rows ``source[indices]`` (any order, repeats allowed) of ``NpyRows`` or an array, as a
    C-ordered float32 array ``[len(indices), D]``. Each distinct row is read once."""
    unique, inverse = np.unique(np.asarray(indices, np.int64), return_inverse=True)
    if isinstance(source, NpyRows):
        rows = source.take(unique)
    else:
        rows = np.asarray(source[unique], dtype=np.float32)
    return rows[inverse.reshape(-1)]


def prefetch(iterator: Iterator, depth: int = 2) -> Iterator:
    """Yield the items of ``iterator``, produced ``depth`` items ahead in a daemon thread.

    An exception in the producer is re-raised in the consumer. Closing the generator early stops
    the producer after at most one more item.
    """
    items: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    done = object()

    def produce():
        try:
            for item in iterator:
                if stop.is_set():
                    return
                items.put(item)
            items.put(done)
        except BaseException as error:  # handed to the consumer
            items.put(error)

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    try:
        while True:
            item = items.get()
            if item is done:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while thread.is_alive():
            try:
                items.get(timeout=0.05)
            except queue.Empty:
                pass
