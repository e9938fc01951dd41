"""Content-addressed on-disk embedding cache, shared by every task and run.

Layout under the cache root (``--cache-dir``, ``$STYLEBENCH_CACHE`` or ``~/.cache/stylebench``)::

    <root>/<space>/identity.txt           the embedder identity this space belongs to
    <root>/<space>/<shard>.vectors.npy    [n, D] float32
    <root>/<space>/<shard>.keys.npy       [n, 32] uint8: SHA-256 of each text's UTF-8 bytes

``space`` is the SHA-256 of the embedder ``identity`` (which covers the weights digest, the
architecture read from ``config.json``, the tokenizer, pooling, normalisation, max length,
long-text policy, sentence splitter and dtype) and of the embedding code (``EMBEDDING_CODE``:
``encoders/``, ``text/`` and the CPU attention kernel's Python and C++ sources: a fixed encoder,
kernel or chunker must not be served vectors its old version computed), so the key of a vector is
(identity, code, text). ``embed`` computes the missing texts in blocks of at most ``STORE_EVERY``
and writes one shard per block as soon as it is done (a killed run keeps the blocks it finished,
so the same command resumes): vectors first, keys last, each by write-to-temp + rename. A shard
counts only when its keys
file exists and matches its vectors file, so a run killed at any point leaves either a complete
shard or ignorable leftovers (removed by ``clean``; orphaned temporaries also when the space is
next opened).

Sharing: several processes and runs may use one cache directory at once. Temporaries have unique
names (host, pid, random); a shard's name is the digest of its keys, so two writers of the same
texts write the same shard (equal content; each rename is atomic, so a reader sees one complete
version) and writers of different texts never touch each other's files. ``clean`` leaves alone
incomplete shards younger than ``INCOMPLETE_GRACE`` seconds (a live writer between its two
renames). In a multi-process run (``parallel.distributed``) the processes agree on the misses
(a text counts as cached only if every process finds it: their caches may be different disks),
embed them together, and the primary stores them; another process then stores them too only if
its cache directory does not show the primary's shard (a host-local disk).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from stylebench_jax.encoders.base import Embedder
from stylebench_jax.fileio import atomic_open, remove_orphans, save_npy_atomic
from stylebench_jax.hashing import file_sha256
from stylebench_jax.parallel import distributed
from stylebench_jax.runtime import XLA_CACHE_DIR
from stylebench_jax.sources import source_digest

KEY_BYTES = 32
STORE_EVERY = 16384  # new texts embedded per stored shard: what a killed run loses at most (~4 min, CPU)
INCOMPLETE_GRACE = 600  # seconds an incomplete shard is left to its writer by ``clean``
_SPACE_NAME = re.compile(r"[0-9a-f]{32}")


def default_cache_dir() -> Path:
    env = os.environ.get("STYLEBENCH_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "stylebench"


def text_keys(texts: Sequence[str]) -> np.ndarray:
    """``[N, 32]`` uint8 SHA-256 digests of the texts' UTF-8 bytes."""
    keys = np.empty((len(texts), KEY_BYTES), np.uint8)
    for i, text in enumerate(texts):
        keys[i] = np.frombuffer(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest(), np.uint8)
    return keys


# The code that turns texts into vectors: the encoders, text handling, and the CPU attention kernel
# that BERT-family encoders run on CPU (its C++ sources included).
EMBEDDING_CODE = ("encoders", "text", "kernels/native.py", "kernels/cpu_attention.py",
                  "kernels/cpu_attention.cc", "kernels/cpu_attention_units.h", "kernels/native_isa.h",
                  "kernels/native_pool.h")


def space_label(embedder: Embedder) -> str:
    """What a cache space belongs to: the embedder identity plus the embedding code's digest."""
    return f"{embedder.identity} code={source_digest(*EMBEDDING_CODE)}"


def _shard_complete(vectors_path: Path, keys_path: Path, dim: int | None = None) -> bool:
    """A shard counts when both files read, agree on the row count, and the vectors are a float32
    matrix (of width ``dim`` when given) (module docstring)."""
    try:
        keys = np.load(keys_path, mmap_mode="r", allow_pickle=False)
        vectors = np.load(vectors_path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError):  # EOFError: an empty file
        return False
    return (keys.ndim == 2 and keys.shape[1] == KEY_BYTES and vectors.ndim == 2
            and vectors.shape[0] == keys.shape[0] and vectors.dtype == np.dtype("<f4")
            and (dim is None or vectors.shape[1] == dim))


def _checksum_path(vectors_path: Path) -> Path:
    return vectors_path.with_name(vectors_path.name.replace(".vectors.npy", ".sha256"))


def _checksum_holds(vectors_path: Path) -> bool:
    """Whether the vectors file matches the SHA-256 written beside it; a shard written before
    checksums (no file) holds, an unreadable checksum file does not."""
    try:
        expected = _checksum_path(vectors_path).read_text(encoding="ascii").strip()
    except FileNotFoundError:
        return True
    except (OSError, UnicodeDecodeError):
        return False
    return file_sha256(vectors_path) == expected


def _recent(*paths: Path) -> bool:
    """Whether any of ``paths`` was modified in the last ``INCOMPLETE_GRACE`` seconds."""
    now = time.time()
    for path in paths:
        try:
            if now - path.stat().st_mtime < INCOMPLETE_GRACE:
                return True
        except FileNotFoundError:
            continue
    return False


class EmbeddingCache:
    """``embed(embedder, texts)`` returns cached rows and computes (then stores) only the misses."""

    def __init__(self, root: str | Path | None = None, *, enabled: bool = True):
        self.root = Path(root) if root is not None else default_cache_dir()
        self.enabled = enabled
        self._index: dict[str, dict[bytes, tuple[Path, int]]] = {}
        self._verified: dict[Path, bool] = {}  # vectors files checked against their checksum
        self._damage_reported: set[Path] = set()
        self.hits = 0
        self.misses = 0
        self._store_failed = False  # a store failed (full disk...): said once

    def space(self, embedder: Embedder) -> Path:
        digest = hashlib.sha256(space_label(embedder).encode("utf-8")).hexdigest()[:32]
        return self.root / digest

    def _load_index(self, space: Path, dim: int | None = None, *,
                    sweep: bool = True) -> dict[bytes, tuple[Path, int]]:
        key = str(space)
        if key in self._index:
            return self._index[key]
        index: dict[bytes, tuple[Path, int]] = {}
        if space.is_dir():
            if sweep:  # not for `cache info`, which only reads (and may be given a read-only cache)
                with contextlib.suppress(PermissionError):  # a space another user made: read it as is
                    remove_orphans(space)  # temporaries of writers killed mid-write (fileio)
            for keys_path in sorted(space.glob("*.keys.npy")):
                vectors_path = keys_path.with_name(keys_path.name.replace(".keys.npy", ".vectors.npy"))
                if not _shard_complete(vectors_path, keys_path, dim):
                    # keys are renamed into place last, so a shard with keys that does not read whole
                    # was damaged after it was written (a writer killed between the renames leaves
                    # vectors without keys, which is not said); either way its texts are recomputed
                    if sweep and vectors_path.exists():
                        self._report_damage(vectors_path, "does not read as a whole shard")
                    continue
                keys = np.load(keys_path, allow_pickle=False)
                for row, k in enumerate(keys):
                    index.setdefault(k.tobytes(), (vectors_path, row))
        self._index[key] = index
        return index

    def lookup(self, embedder: Embedder, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(vectors [N, D] float32, found [N] bool)``; rows not found are zeros."""
        keys = text_keys(texts)
        out = np.zeros((len(texts), embedder.dim), np.float32)
        found = np.zeros(len(texts), bool)
        if not self.enabled:
            return out, found
        index = self._load_index(self.space(embedder), embedder.dim)
        by_file: dict[Path, list[tuple[int, int]]] = {}
        for i, k in enumerate(keys):
            hit = index.get(k.tobytes())
            if hit is not None:
                by_file.setdefault(hit[0], []).append((i, hit[1]))
        for path, pairs in by_file.items():
            try:
                if not self._intact(path):
                    continue  # damaged on disk: these texts are embedded again (and the shard rewritten)
                vectors = np.load(path, mmap_mode="r", allow_pickle=False)
                dest, src = map(list, zip(*pairs))
                out[dest] = vectors[np.asarray(src)]
            except (OSError, ValueError, EOFError):  # removed meanwhile (`cache clear` by another process)
                self._index.pop(str(path.parent), None)
                continue
            found[dest] = True
        return out, found

    def _intact(self, vectors_path: Path) -> bool:
        """Whether the vectors file still has the checksum written with it (once per process and
        file; shards written before checksums have none and are trusted). A damaged one is
        reported once on stderr."""
        if vectors_path not in self._verified:
            ok = _checksum_holds(vectors_path)
            self._verified[vectors_path] = ok
            if not ok:
                self._report_damage(vectors_path, "does not match its checksum")
        return self._verified[vectors_path]

    def _report_damage(self, vectors_path: Path, what: str) -> None:
        """Say once per process and shard, on stderr, that ``vectors_path``'s shard is damaged."""
        if vectors_path not in self._damage_reported:
            self._damage_reported.add(vectors_path)
            print(f"stylebench: cache shard {vectors_path} {what} (damaged on disk); its texts are "
                  "embedded again (`stylebench cache clean` removes it)", file=sys.stderr)

    def store(self, embedder: Embedder, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Write one new shard holding ``vectors`` for ``texts`` (atomic: vectors, their checksum,
        then keys). A cache that cannot be written (a full disk, a folder removed meanwhile) is
        reported once and skipped: the cache is an optimisation, the command goes on."""
        if not self.enabled or not len(texts):
            return
        try:
            self._store(embedder, texts, vectors)
        except OSError as error:
            if not self._store_failed:
                print(f"stylebench: cannot store embeddings in the cache ({error.filename or self.root}: "
                      f"{error.strerror or error}); going on without storing", file=sys.stderr)
            self._store_failed = True

    def _store(self, embedder: Embedder, texts: Sequence[str], vectors: np.ndarray) -> None:
        space = self.space(embedder)
        space.mkdir(parents=True, exist_ok=True)
        identity_file = space / "identity.txt"
        if not identity_file.exists():
            with atomic_open(identity_file, "w", every_process=True) as handle:
                handle.write(space_label(embedder) + "\n")
        keys = text_keys(texts)
        vectors_path, keys_path = self._shard_paths(space, keys)
        save_npy_atomic(vectors_path, np.ascontiguousarray(vectors, dtype=np.float32), every_process=True)
        with atomic_open(_checksum_path(vectors_path), "w", every_process=True) as handle:
            handle.write(file_sha256(vectors_path) + "\n")
        save_npy_atomic(keys_path, keys, every_process=True)
        self._verified[vectors_path] = True
        index = self._load_index(space, embedder.dim)
        for row, k in enumerate(keys):
            index[k.tobytes()] = (vectors_path, row)

    @staticmethod
    def _shard_paths(space: Path, keys: np.ndarray) -> tuple[Path, Path]:
        shard = hashlib.sha256(keys.tobytes()).hexdigest()[:24]
        return space / f"{shard}.vectors.npy", space / f"{shard}.keys.npy"

    def embed(self, embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
        """``[N, D]`` float32 for ``texts`` in order; each distinct missing text is embedded once.
        Every process of a multi-process run must call it with the same texts (module docstring)."""
        texts = list(texts)
        vectors, found = self.lookup(embedder, texts)
        several = distributed.process_count() > 1
        if several:  # cached only where every process has it
            found = np.stack(distributed.allgather_rows(found)).all(axis=0)
        missing = list(dict.fromkeys(t for t, f in zip(texts, found) if not f))
        self.hits += int(found.sum())
        self.misses += len(missing)
        if missing:
            # every process holds the same ``missing`` (agreed above), so all embed the same blocks
            computed = np.concatenate([self._embed_and_store(embedder, missing[start:start + STORE_EVERY],
                                                             several)
                                       for start in range(0, len(missing), STORE_EVERY)])
            position = {t: i for i, t in enumerate(missing)}
            rows = [i for i, f in enumerate(found) if not f]
            vectors[rows] = computed[[position[texts[i]] for i in rows]]
        return vectors

    def _embed_and_store(self, embedder: Embedder, block: list[str], several: bool) -> np.ndarray:
        """``[len(block), D]`` float32 for distinct uncached texts, stored before returning."""
        computed = np.asarray(embedder.embed(block), dtype=np.float32)
        if computed.shape != (len(block), embedder.dim):
            raise RuntimeError(f"{embedder.name} returned shape {computed.shape}, "
                               f"expected {(len(block), embedder.dim)}")
        if not several or distributed.is_primary():
            self.store(embedder, block, computed)
        if several:
            distributed.barrier("stylebench-cache-store")
            if not distributed.is_primary() and self.enabled and not all(
                    p.exists() for p in self._shard_paths(self.space(embedder), text_keys(block))):
                self.store(embedder, block, computed)
        return computed

    # ----------------------------------------------------------------- maintenance
    def info(self) -> list[dict]:
        """One entry per embedder space: identity, number of vectors, bytes on disk."""
        rows = []
        if not self.root.is_dir():
            return rows
        for space in sorted(p for p in self.root.iterdir() if p.is_dir() and _SPACE_NAME.fullmatch(p.name)):
            try:
                identity = (space / "identity.txt").read_text(encoding="utf-8", errors="replace").strip()
            except OSError:  # missing, or not a file
                identity = "?"
            size = sum(p.stat().st_size for p in space.iterdir() if p.is_file())
            rows.append({"space": space.name, "identity": identity,
                         "vectors": len(self._load_index(space, sweep=False)), "bytes": size})
        self._index.clear()  # read without the sweep: not the index a lookup should use
        return rows

    def clean(self) -> dict[str, int]:
        """Remove what killed runs or damage left behind: orphaned temporaries (``fileio.remove_orphans``),
        incomplete shards (vectors or keys without their partner, rows that do not match, vectors
        that are not a float32 matrix) older than ``INCOMPLETE_GRACE``, and shards whose vectors no
        longer match their checksum. Complete shards and files being written by live processes are
        kept. Returns counts and bytes freed."""
        stats = {"orphans": 0, "incomplete_shards": 0, "damaged_shards": 0, "bytes": 0}
        if not self.root.is_dir():
            return stats
        spaces = sorted(p for p in self.root.iterdir() if p.is_dir() and _SPACE_NAME.fullmatch(p.name))
        for directory in (self.root, *spaces):
            count, freed = remove_orphans(directory)
            stats["orphans"] += count
            stats["bytes"] += freed
        for space in spaces:
            shards = {p.name.split(".")[0] for p in space.glob("*.vectors.npy")} | \
                {p.name.split(".")[0] for p in space.glob("*.keys.npy")}
            for shard in sorted(shards):
                vectors_path, keys_path = space / f"{shard}.vectors.npy", space / f"{shard}.keys.npy"
                checksum = _checksum_path(vectors_path)
                if _shard_complete(vectors_path, keys_path):
                    if _checksum_holds(vectors_path):
                        continue
                    kind = "damaged_shards"
                elif _recent(vectors_path, keys_path):
                    continue
                else:
                    kind = "incomplete_shards"
                for path in (vectors_path, keys_path, checksum):
                    if path.exists():
                        stats["bytes"] += path.stat().st_size
                        path.unlink()
                stats[kind] += 1
        self._index.clear()
        self._verified.clear()
        return stats

    def programs_bytes(self) -> int:
        """Bytes of the compiled XLA programs kept beside the spaces (``<root>/xla``,
        ``runtime.enable_compilation_cache``)."""
        programs = self.root / XLA_CACHE_DIR
        return sum(p.stat().st_size for p in programs.rglob("*") if p.is_file()) if programs.is_dir() else 0

    def clear(self) -> int:
        """Delete every embedder space under the root and the compiled programs beside them
        (``<root>/xla``; nothing else); returns bytes freed."""
        if not self.root.is_dir():
            return 0
        size = self.programs_bytes()
        if size or (self.root / XLA_CACHE_DIR).is_dir():
            _remove_tree(self.root / XLA_CACHE_DIR)
        for space in self.root.iterdir():
            if space.is_dir() and _SPACE_NAME.fullmatch(space.name):
                size += sum(p.stat().st_size for p in space.rglob("*") if p.is_file())
                _remove_tree(space)
        self._index.clear()
        self._verified.clear()
        return size


def _remove_tree(path: Path, attempts: int = 5) -> None:
    """``shutil.rmtree`` that tolerates a writer working in the tree meanwhile: files already gone
    are fine, and a directory that gained a file during the walk is walked again."""
    for _ in range(attempts):
        try:
            shutil.rmtree(path)
            return
        except FileNotFoundError:
            if not path.exists():
                return
        except OSError as error:
            if error.errno != errno.ENOTEMPTY:
                raise OSError(error.errno, error.strerror, str(path)) from None
    shutil.rmtree(path, ignore_errors=True)
