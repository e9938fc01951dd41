"""Digests of texts, shared by every cache keyed on a list of texts (embeddings, features), and of
files (cache shards' checksums, a built benchmark's manifest)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path


def file_sha256(path: str | Path) -> str:
    """SHA-256 (hex) of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def texts_digest(texts: Iterable[str]) -> str:
    """SHA-256 (hex) of a list of texts: each text's length, then its UTF-8 bytes (lone surrogates
    kept via ``surrogatepass``), so ``["ab", "c"]`` and ``["a", "bc"]`` differ."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(len(text).to_bytes(8, "little"))
        digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()
