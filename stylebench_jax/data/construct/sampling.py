"""A.5 balanced bucketed sampling over ``b(x) = (language, length bin, genre, task type)``.

1. Per-author cap: an author with more than ``max_docs_per_author`` documents keeps that many,
   drawn uniformly (seeded by the author), so prolific writers cannot dominate.
2. Length bins: AuthBench's fixed buckets (short 1-10, medium 11-100, long 101-500, extra_long >500
   tokens), or per-language quantile bins (``q1of4`` ...) of the token lengths.
3. Quotas ``Q_b``: explicit ``quotas`` where given; otherwise, with ``total = T``, equal mass per
   language, then equal per length bin within a language, then equal per (genre, task type) within
   (language, bin) -- the three balance goals of A.5 -- rounded by largest remainder in key order.
   Without ``total`` and quotas every bucket keeps everything (only the caps apply).
4. Deficits: where ``N_b < Q_b`` the shortfall moves to the sibling buckets sharing (language, task
   type) that still have documents, in proportion to their quotas, until it is placed or no
   sibling has any left; what cannot be placed is reported.
5. Uniform sampling without replacement within each bucket (seeded by the bucket key), keeping
   the input order.
6. Authors left with fewer than ``min_docs_per_author`` documents are dropped (an attribution query
   needs another document by its author; 1 keeps them as distractors): :func:`drop_small_authors`,
   which the pipeline applies *after* A.6's canonicalisation and final de-duplication (those can
   still remove an author's document), whether or not sampling is enabled.

``mode: reservoir`` is the single-pass variant for sources that do not fit in memory: every bucket
keeps a uniform reservoir (Vitter's algorithm R) of at most ``reservoir_capacity`` documents while
the stream goes by, and steps 1, 3-5 then run on the reservoirs. It equals the exact mode's
distribution when the capacity is at least every quota; memory is the reservoirs, not the stream.
What did not fit in a reservoir is reported as ``reservoir_dropped``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np

from stylebench_jax.data.construct.config import SamplingConfig
from stylebench_jax.data.construct.records import Record, length_bucket
from stylebench_jax.data.sampling import unit_rng


def quantile_edges(records: Sequence[Record], n_bins: int) -> dict[str, np.ndarray]:
    """Per language, the ``n_bins - 1`` inner quantile edges of the token lengths."""
    lengths: dict[str, list[int]] = defaultdict(list)
    for record in records:
        lengths[record.language].append(record.token_length)
    inner = np.linspace(0, 1, n_bins + 1)[1:-1]
    return {lang: np.quantile(np.asarray(v), inner) for lang, v in lengths.items()}


def length_bin(record: Record, config: SamplingConfig, edges: dict[str, np.ndarray] | None) -> str:
    if config.length_bins == "fixed" or edges is None:
        return length_bucket(record.token_length)
    index = int(np.searchsorted(edges[record.language], record.token_length, side="left"))
    return f"q{index + 1}of{config.n_quantile_bins}"


def bucket_key(record: Record, bin_name: str) -> str:
    return f"{record.language}/{bin_name}/{record.genre}/{record.task_type}"


def cap_authors(records: list[Record], cap: int | None, seed: int) -> tuple[list[Record], int]:
    """At most ``cap`` documents per author, drawn uniformly (order kept); returns (kept, dropped)."""
    if cap is None:
        return records, 0
    by_author: dict[str, list[int]] = defaultdict(list)
    for i, record in enumerate(records):
        by_author[record.author_id].append(i)
    keep = np.ones(len(records), dtype=bool)
    for author, indices in by_author.items():
        if len(indices) > cap:
            rng = unit_rng(seed, "author", author)
            chosen = set(rng.choice(len(indices), size=cap, replace=False).tolist())
            for j, i in enumerate(indices):
                keep[i] = j in chosen
    return [r for r, k in zip(records, keep) if k], int((~keep).sum())


def _largest_remainder(shares: dict[str, float], total: int) -> dict[str, int]:
    floors = {k: int(np.floor(v)) for k, v in shares.items()}
    left = total - sum(floors.values())
    order = sorted(shares, key=lambda k: (-(shares[k] - floors[k]), k))
    for k in order[:max(left, 0)]:
        floors[k] += 1
    return floors


def computed_quotas(available: dict[str, int], total: int) -> dict[str, int]:
    """Equal mass per language, per length bin within a language, per (genre, task) within that."""
    tree: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for key in sorted(available):
        lang, bin_name, _, _ = key.split("/")
        tree[lang][bin_name].append(key)
    shares: dict[str, float] = {}
    for bins in tree.values():
        for keys in bins.values():
            for key in keys:
                shares[key] = total / len(tree) / len(bins) / len(keys)
    return _largest_remainder(shares, total)


def redistribute(quotas: dict[str, int], available: dict[str, int]) -> tuple[dict[str, int], dict[str, int]]:
    """Step 4: ``(final counts per bucket, {"moved": n, "unplaced": n})``."""
    final = {k: min(q, available.get(k, 0)) for k, q in quotas.items()}
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for key in sorted(quotas):
        lang, _, _, task = key.split("/")
        groups[(lang, task)].append(key)
    moved = unplaced = 0
    for keys in groups.values():
        deficit = sum(quotas[k] - final[k] for k in keys)
        while deficit > 0:
            open_ = [k for k in keys if available.get(k, 0) > final[k]]
            if not open_:
                unplaced += deficit
                break
            weight = {k: max(quotas[k], 1) for k in open_}
            total_weight = sum(weight.values())
            give = _largest_remainder({k: deficit * weight[k] / total_weight for k in open_}, deficit)
            placed = 0
            for k in open_:
                extra = min(give[k], available[k] - final[k])
                final[k] += extra
                placed += extra
            moved += placed
            deficit -= placed
    return final, {"moved": moved, "unplaced": unplaced}


class Reservoirs:
    """Per-bucket uniform reservoirs (algorithm R), each seeded by its bucket key."""

    def __init__(self, capacity: int, seed: int):
        self.capacity = capacity
        self.seed = seed
        self.items: dict[str, list[tuple[int, Record]]] = {}
        self.seen: dict[str, int] = defaultdict(int)
        self.rngs: dict[str, np.random.Generator] = {}

    def add(self, key: str, position: int, record: Record) -> None:
        seen = self.seen[key]
        self.seen[key] = seen + 1
        items = self.items.setdefault(key, [])
        if seen < self.capacity:
            items.append((position, record))
            return
        rng = self.rngs.setdefault(key, unit_rng(self.seed, "reservoir", key))
        slot = int(rng.integers(seen + 1))
        if slot < self.capacity:
            items[slot] = (position, record)

    def records(self) -> list[Record]:
        """Every kept record, in stream order."""
        kept = [item for items in self.items.values() for item in items]
        return [record for _, record in sorted(kept, key=lambda item: item[0])]


def drop_small_authors(records: Sequence[Record], min_docs: int) -> tuple[list[Record], int]:
    """Step 6: the records of authors with at least ``min_docs`` of them (order kept), and how many
    records were dropped."""
    per_author: dict[str, int] = defaultdict(int)
    for record in records:
        per_author[record.author_id] += 1
    kept = [r for r in records if per_author[r.author_id] >= min_docs]
    return kept, len(records) - len(kept)


def sample(records: Iterable[Record], config: SamplingConfig, seed: int) -> tuple[list[Record], dict]:
    """Steps 1-5 (module docstring); returns the kept records (input order) and a report. Step 6
    (``drop_small_authors``) is the pipeline's, after canonicalisation."""
    report: dict = {}
    if config.mode == "reservoir":
        reservoirs = Reservoirs(config.reservoir_capacity, seed)
        for position, record in enumerate(records):
            reservoirs.add(bucket_key(record, length_bucket(record.token_length)), position, record)
        report["reservoir_seen"] = dict(sorted(reservoirs.seen.items()))
        records = reservoirs.records()
        report["reservoir_dropped"] = sum(reservoirs.seen.values()) - len(records)
    else:
        records = list(records)
    records, report["author_cap_dropped"] = cap_authors(records, config.max_docs_per_author, seed)
    edges = quantile_edges(records, config.n_quantile_bins) if config.length_bins == "quantile" else None
    if edges is not None:
        report["quantile_edges"] = {lang: [float(x) for x in e] for lang, e in sorted(edges.items())}
    keys = [bucket_key(r, length_bin(r, config, edges)) for r in records]
    members: dict[str, list[int]] = defaultdict(list)
    for i, key in enumerate(keys):
        members[key].append(i)
    available = {k: len(v) for k, v in members.items()}
    if config.total is None and not config.quotas:
        quotas = dict(available)
    else:
        quotas = computed_quotas(available, config.total) if config.total is not None else dict(available)
        quotas.update({k: v for k, v in config.quotas.items()})
    final, moves = redistribute(quotas, available)
    keep = np.zeros(len(records), dtype=bool)
    for key, indices in members.items():
        n = final.get(key, 0)
        if n >= len(indices):
            keep[indices] = True
        elif n > 0:
            chosen = unit_rng(seed, "bucket", key).choice(len(indices), size=n, replace=False)
            keep[np.asarray(indices)[chosen]] = True
    kept = [r for r, k in zip(records, keep) if k]
    report.update(buckets={k: {"available": available.get(k, 0), "quota": quotas.get(k, 0),
                               "sampled": final.get(k, 0)} for k in sorted(set(available) | set(quotas))},
                  deficit=moves)
    return kept, report
