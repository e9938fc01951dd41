"""Atomic file writes: write to a temporary file in the same directory, fsync, then rename.

A reader never sees a half-written file: either the old content (or nothing) or the new one.

Temporary names are ``.<name>~<host>~<pid>~<random>.tmp``, so a writer killed before its rename
(SIGKILL, power loss) leaves an *orphan* that :func:`remove_orphans` can recognise: one whose
process is gone (same host), or older than a day (another host sharing the directory). Every
atomic write removes the orphans of its own target first, and the embedding cache sweeps its
spaces (``stylebench cache clean`` sweeps on demand).

Multi-process runs (``parallel.distributed``): results, reports and logs are written once, by the
primary process. Every writer here takes ``every_process``: left False, a non-primary process's
write goes nowhere (its content is the primary's, computed the same way); True is for files each
process owns (its own embedding-cache shards, for one).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

_SEP = "~"
TMP_SUFFIX = ".tmp"
FOREIGN_ORPHAN_AGE = 24 * 3600  # seconds: a temporary of another host is an orphan after this long
LEGACY_ORPHAN_AGE = 600  # seconds: temporaries named before hosts and pids were recorded


def _host() -> str:
    return socket.gethostname().replace(_SEP, "-") or "host"


def _tmp_prefix(name: str) -> str:
    return f".{name}{_SEP}{_host()}{_SEP}{os.getpid()}{_SEP}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def is_orphan(path: Path, now: float | None = None) -> bool:
    """True if ``path`` is a temporary of an atomic write whose writer is gone (module docstring)."""
    name = path.name
    if not (name.startswith(".") and name.endswith(TMP_SUFFIX)):
        return False
    try:
        age = (time.time() if now is None else now) - path.lstat().st_mtime
    except FileNotFoundError:
        return False
    parts = name[1:-len(TMP_SUFFIX)].split(_SEP)
    if len(parts) < 4 or not parts[-2].isdigit():
        return age > LEGACY_ORPHAN_AGE
    host, pid = parts[-3], int(parts[-2])
    if host == _host():
        return pid != os.getpid() and not _pid_alive(pid)
    return age > FOREIGN_ORPHAN_AGE


def remove_orphans(directory: str | os.PathLike, name: str | None = None) -> tuple[int, int]:
    """Delete orphaned temporaries in ``directory`` (only those of target ``name`` if given);
    returns ``(how many were removed, their bytes)``. Files being written by live processes are
    left alone."""
    directory = Path(directory)
    removed = freed = 0
    try:
        entries = list(directory.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return 0, 0
    for entry in entries:
        if name is not None and not entry.name.startswith(f".{name}{_SEP}") \
                and not entry.name.startswith(f".{name}."):
            continue
        if is_orphan(entry):
            with contextlib.suppress(FileNotFoundError):
                if entry.is_dir() and not entry.is_symlink():
                    size = sum(f.stat().st_size for f in entry.rglob("*") if f.is_file())
                    shutil.rmtree(entry)
                else:
                    size = entry.lstat().st_size
                    entry.unlink()
                freed += size
            removed += 1
    return removed, freed


def writes_here(every_process: bool = False) -> bool:
    """Whether this process writes output files: the primary process of a multi-process run (or
    the only process), or any process for files it owns (``every_process``)."""
    if every_process:
        return True
    from stylebench_jax.parallel.distributed import is_primary

    return is_primary()


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "wb", *,
                every_process: bool = False) -> Iterator[io.IOBase]:
    """Open a temporary sibling of ``path`` for writing; on success rename it onto ``path``.
    Orphaned temporaries of ``path`` left by killed writers are removed first. On a non-primary
    process of a multi-process run (unless ``every_process``) the handle discards what is written."""
    if not writes_here(every_process):
        with open(os.devnull, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as handle:
            yield handle
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_orphans(path.parent, path.name)
    fd, tmp = tempfile.mkstemp(prefix=_tmp_prefix(path.name), suffix=TMP_SUFFIX, dir=path.parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the file the usual mode
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as error:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if error.filename is None:  # a failed write or fsync (a full disk): say which file
            raise OSError(error.errno, error.strerror, str(path)) from error
        raise
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary sibling directory of ``path`` to fill; on success it replaces ``path`` as a
    whole (an existing directory is moved aside, then removed), on failure it is removed. On a
    non-primary process the directory is a private scratch directory, removed afterwards."""
    if not writes_here():
        scratch = Path(tempfile.mkdtemp(prefix="stylebench-discard-"))
        try:
            yield scratch
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    remove_orphans(final.parent, final.name)
    tmp = Path(tempfile.mkdtemp(prefix=_tmp_prefix(final.name), suffix=TMP_SUFFIX, dir=final.parent))
    try:
        yield tmp
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes 0700; give the directory the usual mode
        if final.exists():
            old = Path(tempfile.mkdtemp(prefix=_tmp_prefix(final.name), suffix=TMP_SUFFIX, dir=final.parent))
            os.replace(final, old / final.name)
            try:
                os.replace(tmp, final)
            except BaseException:
                os.replace(old / final.name, final)  # put the previous directory back
                raise
            shutil.rmtree(old)
        else:
            os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def input_file_problem(path: str | os.PathLike) -> str | None:
    """Why ``path`` cannot be read as an input file, or None: missing, a directory, or not a regular
    file (a directory said "no such file" in several commands)."""
    path = Path(path)
    if path.is_file():
        return None
    if path.is_dir():
        return "is a directory, expected a file"
    return "no such file" if not path.exists() else "is not a regular file"


def output_dir_problem(path: str | os.PathLike) -> str | None:
    """Why the output folder ``path`` cannot be made or filled, or None: it is a file, lies under a
    file, or its nearest existing folder is not writable (outputs are built beside their place and
    moved in, :func:`atomic_directory`; missing parents are made). For checks before any work."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        return "exists and is not a directory"
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                return f"{parent} is a file, not a directory"
            if not os.access(parent, os.W_OK | os.X_OK):
                return f"directory {parent} is not writable"
            return None
    return None


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def read_json_file(path: str | os.PathLike, default=None):
    """``path`` parsed as JSON, ``default`` when the file does not exist; a file that is not UTF-8
    or not valid JSON raises ``UserInputError`` naming the file, line and column."""
    from stylebench_jax.errors import located

    path = Path(path)
    if not path.exists():
        return default
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as error:
        raise located(path, f"invalid UTF-8 ({error.reason}); expected a JSON file") from None
    except json.JSONDecodeError as error:
        raise located(path, f"not valid JSON ({error.msg})", line=error.lineno, column=error.colno) from None


def json_ready(value):
    """``value`` as plain JSON: dict keys as strings, tuples as lists, NumPy scalars as Python numbers,
    and NaN or infinity (undefined metrics: an AUROC of one class, a diverged loss) as ``null``, which
    JSON has no number for (``json.dumps`` would write the invalid ``NaN``)."""
    if isinstance(value, dict):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def save_npy_atomic(path: str | os.PathLike, array: np.ndarray, *, every_process: bool = False) -> None:
    """Write ``array`` as a ``.npy`` file atomically (``np.save`` would append ``.npy`` itself)."""
    with atomic_open(path, "wb", every_process=every_process) as handle:
        np.save(handle, array, allow_pickle=False)


def write_text_atomic(path: str | os.PathLike, text: str, *, every_process: bool = False) -> None:
    with atomic_open(path, "w", every_process=every_process) as handle:
        handle.write(text)


def write_jsonl_atomic(path: str | os.PathLike, rows) -> None:
    """Write an iterable of JSON-serialisable rows, one per line, atomically."""
    with atomic_open(path, "w") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False, sort_keys=False) + "\n")


