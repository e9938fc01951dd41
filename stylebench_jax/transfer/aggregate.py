"""Benchmark aggregates from the trace (seed 003 §7.2 step 6): per run (backend), per excerpt, per
book, per author and per topic, the mean, median and standard deviation (sample, ``ddof = 1``; none
for one value) of ``cosine``, ``score_0_1`` and ``score_calibrated``, each also x100 (the seed reports
0-100); plus a paired comparison of the backends, each pair on the items both of them produced.

Only ``status == "ok"`` units carry scores; failed and skipped units are counted with their reasons.
The paired comparison uses the primary score (calibrated when a calibration is configured, else
cosine): per pair of backends the mean difference with a 95% percentile bootstrap interval over
excerpts (each resampled excerpt brings all its samples' stories; ``metrics.bootstrap_ci``, 1000
resamples, seed 0) and the share of items where the first
scores higher. ``ordering`` checks the expected order of the local anchors, copy > markov > shuffle.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stylebench_jax.metrics import bootstrap_ci

SCORES = ("cosine", "score_0_1", "score_calibrated")
EXPECTED_ORDER = ("copy", "markov", "shuffle")


def stats(values: Sequence[float]) -> dict:
    v = np.asarray([x for x in values if x is not None], np.float64)
    if v.size == 0:
        return {"n": 0}
    out = {"n": int(v.size), "mean": float(v.mean()), "median": float(np.median(v)),
           "std": float(v.std(ddof=1)) if v.size > 1 else None}  # a sample std needs two values
    out.update({f"{k}_x100": None if out[k] is None else 100.0 * out[k] for k in ("mean", "median", "std")})
    return out


def _group_stats(rows: list[dict]) -> dict:
    ok = [r for r in rows if r["status"] == "ok"]
    out = {"n_units": len(rows), "n_ok": len(ok), "n_failed": sum(r["status"] == "failed" for r in rows),
           "n_skipped": sum(r["status"] == "skipped" for r in rows)}
    for key in SCORES:
        out[key] = stats([r["scores"][key] for r in ok])
    return out


def _by(rows: list[dict], key: str) -> dict:
    groups: dict[str, list[dict]] = {}
    for row in rows:
        groups.setdefault(str(row[key]), []).append(row)
    return {name: _group_stats(group) for name, group in sorted(groups.items())}


def primary_score(rows: list[dict]) -> str:
    calibrated = [r for r in rows if r["status"] == "ok" and r["scores"].get("score_calibrated") is not None]
    return "score_calibrated" if calibrated else "cosine"


def paired(rows: list[dict], backends: Sequence[str], score: str, seed: int = 0, *,
           common_only: bool = False) -> dict:
    """Backends compared pair by pair on the items both produced (module docstring), or with
    ``common_only`` on the items all of them produced (``ordering``); ``n_items`` and ``means``: on
    the items all of them produced."""
    values: dict[str, dict[str, float]] = {b: {} for b in backends}
    excerpt_of: dict[str, str] = {}
    for row in rows:
        if row["status"] == "ok" and row["backend"] in values:
            values[row["backend"]][row["item"]] = row["scores"][score]
            excerpt_of[row["item"]] = str(row.get("excerpt", row["item"]))
    common = sorted(set.intersection(*(set(v) for v in values.values()))) if values else []
    out = {"score": score, "n_items": len(common), "means": {}, "differences": {}}
    if common:
        out["means"] = {b: float(np.mean([values[b][i] for i in common])) for b in backends}
    for i, a in enumerate(backends):
        for b in backends[i + 1:]:
            # a backend that failed on other items hides nothing of the others' comparisons
            both = common if common_only else sorted(set(values[a]) & set(values[b]))
            if not both:
                continue
            diff = np.array([values[a][k] - values[b][k] for k in both])
            low, high = (_excerpt_bootstrap(diff, [excerpt_of[k] for k in both], seed) if diff.size > 1
                         else (float("nan"), float("nan")))
            out["differences"][f"{a} - {b}"] = {"mean": float(diff.mean()), "ci_low": low, "ci_high": high,
                                                "share_first_higher": float(np.mean(diff > 0)),
                                                "n_items": len(both)}
    return out


def _excerpt_bootstrap(diff: np.ndarray, excerpts: Sequence[str], seed: int) -> tuple[float, float]:
    """95% percentile interval of ``mean(diff)`` resampling *excerpts* with all their items (the
    stories of one excerpt's samples share its text, so they are not independent); with one story
    per excerpt it is the item bootstrap, bit for bit (the same weights stream)."""
    codes, cluster = np.unique(np.asarray(excerpts), return_inverse=True)
    sums = np.bincount(cluster, weights=diff, minlength=codes.size)
    sizes = np.bincount(cluster, minlength=codes.size).astype(np.float64)
    if codes.size == diff.size:  # one item per excerpt: exactly the plain bootstrap of the items
        return bootstrap_ci(diff, seed=seed)
    if codes.size < 2:
        return float("nan"), float("nan")
    return bootstrap_ci(lambda w: (w @ sums) / (w @ sizes), n=codes.size, seed=seed)


def ordering(rows: list[dict], kinds: dict[str, str], score: str) -> dict | None:
    """Whether the local anchors rank copy > markov > shuffle on the items all three produced (None
    unless the run has exactly one backend of each of these kinds)."""
    anchors = [b for b, k in kinds.items() if k in EXPECTED_ORDER]
    by_kind = {kinds[b]: b for b in anchors}
    if len(anchors) != 3 or set(by_kind) != set(EXPECTED_ORDER):
        return None
    pair = paired(rows, [by_kind[k] for k in EXPECTED_ORDER], score, common_only=True)
    if not pair["n_items"]:
        return None
    means = {k: pair["means"][by_kind[k]] for k in EXPECTED_ORDER}
    observed = sorted(EXPECTED_ORDER, key=lambda k: -means[k])
    return {"expected": list(EXPECTED_ORDER), "observed": observed, "holds": observed == list(EXPECTED_ORDER),
            "score": score, "n_items": pair["n_items"], "means": means, "backends": by_kind,
            "differences": pair["differences"]}


def aggregate(rows: list[dict], backends: Sequence[str], kinds: dict[str, str]) -> dict:
    """Everything ``results.json`` holds besides the run description (module docstring)."""
    out = {"runs": {}, "by_excerpt": {}, "by_book": {}, "by_author": {}, "by_topic": {}, "flags": {}}
    for backend in backends:
        mine = [r for r in rows if r["backend"] == backend]
        run = _group_stats(mine)
        reasons: dict[str, int] = {}
        for r in mine:
            if r["status"] != "ok":
                reason = r.get("reason") or r["status"]
                reasons[reason] = reasons.get(reason, 0) + 1
        run["not_ok_reasons"] = dict(sorted(reasons.items()))
        out["runs"][backend] = run
        for key, field in (("by_excerpt", "excerpt"), ("by_book", "book"), ("by_author", "author"),
                           ("by_topic", "topic")):
            out[key][backend] = _by(mine, field)
        flags: dict[str, int] = {}
        for r in mine:
            for flag in (r.get("originality") or {}).get("flags", []):
                flags[flag] = flags.get(flag, 0) + 1
        out["flags"][backend] = flags
    score = primary_score(rows)
    out["paired"] = paired(rows, list(backends), score)
    out["ordering"] = ordering(rows, kinds, score)
    return out
