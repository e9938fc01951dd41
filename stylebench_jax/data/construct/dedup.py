"""A.2 de-duplication: exact (SHA-256 of the normalised text) and near-duplicate (character n-gram
MinHash with locality-sensitive hashing, ``datasketch``).

Near duplicates follow A.2's greedy rule in record order: a text is removed when an *earlier kept*
text has Jaccard similarity ``J >= threshold`` over their sets of character ``n``-grams (we use the
set, not the multiset the paper writes: MinHash estimates set resemblance). LSH proposes candidates
and a candidate counts only when the MinHash estimate of ``J`` reaches the threshold, so the decision
is the MinHash estimate's (with 128 permutations its standard deviation is ``sqrt(J (1 - J) / 128)``,
0.03 at ``J = 0.86``). LSH can only lose pairs, never add them, so its band split is chosen for
recall (:func:`lsh_bands`): ``b`` bands of ``r`` rows miss a pair of similarity ``J`` with
probability ``(1 - J^r)^b``, and we take the largest ``r`` (fewest chance candidates) that keeps
that at most 1e-3 at ``J = threshold + 0.05``: 18 bands of 7 rows for 0.8 and 128 permutations
(miss 0.014 at ``J = 0.8``, 9e-4 at 0.85, 8e-6 at 0.9; chance candidates 13% at ``J = 0.5``,
0.04% at 0.3). datasketch's own split for that threshold (9 bands of 13 rows, optimised for equal
false-positive and false-negative areas) misses 60% of pairs at ``J = 0.8`` and 31% at 0.85.

n-grams are hashed to 32 bits with a vectorised polynomial hash of their code points (datasketch's
``affine32`` scheme mixes the values with MurmurHash3's finaliser before permuting, so a simple
hash is enough), then fed to ``MinHash.update_batch`` through an identity hash function; unique
n-grams only, in blocks, so a whole novel costs bounded memory. Texts shorter than ``n`` characters
are one n-gram.
"""

from __future__ import annotations

import hashlib

import numpy as np

_BLOCK = 1 << 15
_MULT = np.uint64(0x100000001B3)  # FNV-1a 64-bit prime as the polynomial base


_MISS = 1e-3       # largest chance of LSH missing a pair at J = threshold + _MARGIN
_MARGIN = 0.05


def lsh_bands(threshold: float, num_perm: int) -> tuple[int, int]:
    """``(bands, rows)`` for ``num_perm`` permutations (module docstring): the largest ``rows`` whose
    split ``bands = num_perm // rows`` misses a pair at ``J = threshold + min(0.05, (1 - threshold) / 2)``
    with probability ``(1 - J^rows)^bands <= 1e-3``; one row per band when none does."""
    j = threshold + min(_MARGIN, (1.0 - threshold) / 2.0)
    for rows in range(num_perm, 0, -1):
        bands = num_perm // rows
        if (1.0 - j ** rows) ** bands <= _MISS:
            return bands, rows
    return num_perm, 1


def _identity(value):
    return value


def ngram_hashes(text: str, n: int) -> np.ndarray:
    """Sorted unique 32-bit hashes of the character ``n``-grams of ``text`` (uint32)."""
    cps = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    if cps.size == 0:
        return np.zeros(0, dtype=np.uint32)
    if cps.size < n:
        cps = np.concatenate([cps, np.zeros(n - cps.size, np.uint64)])
    with np.errstate(over="ignore"):
        h = np.zeros(cps.size - n + 1, dtype=np.uint64)
        for i in range(n):
            h = h * _MULT + cps[i:cps.size - n + 1 + i] + np.uint64(1)
        h ^= h >> np.uint64(29)
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(32)
    return np.unique((h & np.uint64(0xFFFFFFFF)).astype(np.uint32))


def ngram_set(text: str, n: int) -> set[str]:
    """The set of character ``n``-grams (reference for tests and exact checks)."""
    if len(text) < n:
        return {text} if text else set()
    return {text[i:i + n] for i in range(len(text) - n + 1)}


def jaccard(a: str, b: str, n: int) -> float:
    """Exact Jaccard similarity of two texts' character ``n``-gram sets."""
    sa, sb = ngram_set(a, n), ngram_set(b, n)
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


class NearDuplicateIndex:
    """Greedy near-duplicate filter (module docstring): ``check(key, text)`` returns the key of an
    earlier kept text it duplicates, or None (and then keeps it)."""

    def __init__(self, threshold: float, *, ngram: int = 5, num_perm: int = 128, seed: int = 1):
        from datasketch import MinHash, MinHashLSH

        self._minhash = MinHash
        self.threshold = threshold
        self.ngram = ngram
        self.num_perm = num_perm
        self.seed = seed
        self.lsh = MinHashLSH(num_perm=num_perm, params=lsh_bands(threshold, num_perm))
        self.signatures: dict[str, object] = {}
        self.order: dict[str, int] = {}
        # one permutation table for every signature (datasketch draws it from the seed)
        self._permutations = MinHash(num_perm=num_perm, seed=seed).permutations

    def signature(self, text: str):
        m = self._minhash(num_perm=self.num_perm, seed=self.seed, hashfunc=_identity,
                          permutations=self._permutations, scheme="affine32")
        hashes = ngram_hashes(text, self.ngram)
        for start in range(0, hashes.size, _BLOCK):
            m.update_batch(hashes[start:start + _BLOCK])
        return m

    def find(self, text: str, signature=None) -> tuple[str | None, object]:
        """``(key of the earliest kept near duplicate or None, signature)`` without inserting."""
        signature = signature if signature is not None else self.signature(text)
        best = None
        for key in sorted(self.lsh.query(signature), key=self.order.__getitem__):
            if self.signatures[key].jaccard(signature) >= self.threshold:
                best = key
                break
        return best, signature

    def add(self, key: str, signature) -> None:
        self.lsh.insert(key, signature)
        self.signatures[key] = signature
        self.order[key] = len(self.order)

    def check(self, key: str, text: str) -> str | None:
        duplicate, signature = self.find(text)
        if duplicate is None:
            self.add(key, signature)
        return duplicate


class Deduplicator:
    """Exact then near-duplicate removal over a stream, with per-rule counts."""

    def __init__(self, *, exact: bool, near: bool, threshold: float, ngram: int, num_perm: int, seed: int):
        self.exact = exact
        self.seen: dict[str, str] = {}
        self.near = NearDuplicateIndex(threshold, ngram=ngram, num_perm=num_perm, seed=seed) if near else None

    def duplicate_of(self, key: str, text: str) -> tuple[str, str] | None:
        """``(rule, key of the kept original)`` if ``text`` duplicates a kept text, else None (kept)."""
        if self.exact:
            digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
            if digest in self.seen:
                return "exact", self.seen[digest]
        if self.near is not None:
            original = self.near.check(key, text)
            if original is not None:
                return "near", original
        if self.exact:
            self.seen[digest] = key
        return None
