"""Digests of this package's own source code, for caches and stored results that must not outlive
the code that produced them."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent
SOURCE_SUFFIXES = (".py", ".cc", ".h")


@functools.lru_cache(maxsize=16)
def source_digest(*parts: str) -> str:
    """16 hex digits of SHA-256 over the source files of the package (``.py`` and the native
    kernels' ``.cc``/``.h``; relative path and bytes, sorted by path), restricted to the
    sub-directories or files ``parts`` (relative to the package) when given. Read once per process:
    the sources of a running program do not change."""
    roots = [PACKAGE_ROOT / part for part in parts] or [PACKAGE_ROOT]
    files = sorted({path for root in roots
                    for path in ([root] if root.is_file() else root.rglob("*"))
                    if path.suffix in SOURCE_SUFFIXES})
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(PACKAGE_ROOT).as_posix().encode("utf-8") + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]
