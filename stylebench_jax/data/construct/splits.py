"""A.7 split construction: deterministic, stratified by bucket, leakage-free by construction.

Records are first joined into *groups* that must share a split (union-find): the same hashed
author (AuthBench's "no author overlap"), exact or near duplicates that a detection-only final
pass reported (the default pass removes them instead, see ``pipeline``), and, when asked
(``isolate``), the same source and/or the same thread. A group's position is
``u = SHA-256(seed, smallest id in the group) / 2^256`` (A.7's ``Hash(id) mod 1``). Each group is
stratified under its dominant bucket (the bucket most of its documents fall in; ties: the smaller
key); within a stratum groups are laid end to end in ``u`` order on a circle of circumference 1
(each as long as its share of the stratum's documents), turned by the stratum's own hash
``u_s = SHA-256(seed, stratum) / 2^256``, and a group goes to the split whose arc of the circle
(the ``proportions`` in order) holds its midpoint: systematic sampling with a hashed start, A.7's
"``Hash(id) mod 1`` mapped to the split proportions, subject to per-bucket constraints". So the
assignment depends only on ids, seed and config; every bucket's split shares are the proportions
to within one group, and a bucket of one group lands in each split with that split's probability
(dealing groups to the split furthest below its target, as before, sent every such bucket to the
largest split, so rare buckets never reached dev or test); no group ever straddles two splits.
"""

from __future__ import annotations

import hashlib
import itertools
from collections import Counter, defaultdict
from collections.abc import Sequence

from stylebench_jax.data.construct.config import SplitConfig
from stylebench_jax.data.construct.records import Record


class _UnionFind:
    def __init__(self, n: int):
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def _position(seed: int, record_id: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}\0{record_id}".encode()).digest(), "big")


def groups(records: Sequence[Record], config: SplitConfig,
           linked: Sequence[tuple[str, str]] = ()) -> list[list[int]]:
    """Indices of ``records`` joined into groups (module docstring); ``linked`` = pairs of record
    keys that must share a split (duplicates found but kept)."""
    uf = _UnionFind(len(records))
    first: dict[tuple[str, str], int] = {}
    index = {r.key: i for i, r in enumerate(records)}
    for i, record in enumerate(records):
        units = [("author", record.author_id)]
        if "source" in config.isolate:
            units.append(("source", record.source))
        if "thread" in config.isolate and record.thread:
            units.append(("thread", f"{record.source}\0{record.thread}"))
        for unit in units:
            if unit in first:
                uf.union(first[unit], i)
            else:
                first[unit] = i
    for a, b in linked:
        if a in index and b in index:
            uf.union(index[a], index[b])
    members: dict[int, list[int]] = defaultdict(list)
    for i in range(len(records)):
        members[uf.find(i)].append(i)
    return list(members.values())


def assign_splits(records: Sequence[Record], buckets: Sequence[str], config: SplitConfig, seed: int,
                  linked: Sequence[tuple[str, str]] = ()) -> list[str]:
    """The split of every record (module docstring)."""
    names = list(config.proportions)
    strata: dict[str, list[tuple[int, list[int]]]] = defaultdict(list)
    for group in groups(records, config, linked):
        counts = Counter(buckets[i] for i in group)
        dominant = min(counts, key=lambda b: (-counts[b], b))
        strata[dominant].append((_position(seed, min(records[i].id for i in group)), group))
    bounds = list(itertools.accumulate(config.proportions[s] for s in names))
    out = [""] * len(records)
    for stratum in sorted(strata):
        members = [group for _, group in sorted(strata[stratum])]
        total = sum(len(group) for group in members)
        start = _position(seed, f"stratum\0{stratum}") / 2**256
        done = 0
        for group in members:
            middle = ((done + len(group) / 2) / total + start) % 1.0
            split = next((s for s, bound in zip(names, bounds) if middle < bound), names[-1])
            done += len(group)
            for i in group:
                out[i] = split
    return out
