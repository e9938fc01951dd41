"""AuthBench attribution at scale: ours (sharded exact top-k + streaming metrics) vs faiss + NumPy.

    python benchmarks/bench_attribution.py --n 1000000 --queries 1000 --dim 384 \\
        --benchmark runs/data/authbench_en --json benchmarks/results/attribution.json

Part 1, synthetic (one seeded data set for both methods): a pool of ``--n`` unit-norm embeddings
(D = ``--dim``) written by authors whose documents-per-author follow a heavy-tailed law (a
discrete power law, ``P(m) ~ m^-alpha`` for m in 1..``--max-docs``, alpha = ``--alpha``: most
authors write 1-3 documents, a few write hundreds), each document its author's centroid plus
Gaussian noise (``--noise``). ``--queries`` documents (whose author has another document) query the *whole*
pool, themselves excluded; Success/Recall/nDCG@{1,5,10} and MRR@100.

* ours: ``tasks.attribution.attribution_per_query`` = ``kernels.topk_cosine`` (float32, the pool
  used in place) for the top 101 per query, then ``metrics.ranking_metrics_topk``;
* peer: faiss ``IndexFlatIP`` (exact) for the top 102 (the query itself comes back too), then the
  same metrics written directly in NumPy (self removed, cumulative hits, log2 discounts).

Both run twice on the full workload; the first call is reported as ``cold`` (compilation for us,
index warm-up for faiss), the second as the timing. Search and metrics are timed apart; the
metrics of both must agree (``max_abs_diff`` <= 1e-12, the summation order of nDCG's float64 sums;
a larger difference would mean float32 rounding reordered two candidates whose scores agree to
~1e-7).

Part 2, real (``--benchmark DIR``, a ``stylebench data build`` output): the test split end to
end with MiniLM: embedding cold (no cache, a fresh cache directory) and cached (the same texts
again from that cache), search and metrics, and the resulting S@5 / R@5 / nDCG@5.

The load average is stored: the 2 cores may be shared with other jobs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from stylebench_jax.kernels.npy_rows import aligned_empty  # noqa: E402
from stylebench_jax.tasks.attribution import attribution_per_query, author_codes  # noqa: E402

KS = (1, 5, 10)
MRR_CUTOFF = 100


def heavy_tailed_authors(n: int, alpha: float, max_docs: int, rng) -> np.ndarray:
    """``[n]`` author codes whose documents-per-author follow ``P(m) ~ m^-alpha``, m <= max_docs."""
    sizes = np.arange(1, max_docs + 1)
    p = sizes ** -alpha
    p /= p.sum()
    counts = []
    total = 0
    while total < n:
        batch = rng.choice(sizes, size=max(1024, (n - total) // 2), p=p)
        for m in batch:
            counts.append(min(int(m), n - total))
            total += counts[-1]
            if total >= n:
                break
    codes = np.repeat(np.arange(len(counts)), counts)
    return codes[rng.permutation(n)]


def synthetic_pool(n: int, dim: int, alpha: float, max_docs: int, noise: float, seed: int):
    rng = np.random.default_rng(seed)
    codes = heavy_tailed_authors(n, alpha, max_docs, rng)
    vectors = aligned_empty((n, dim), np.float32)
    centres = rng.standard_normal((codes.max() + 1, dim), dtype=np.float32)
    for start in range(0, n, 1 << 16):
        sl = slice(start, start + (1 << 16))
        block = centres[codes[sl]] + noise * rng.standard_normal((len(codes[sl]), dim), dtype=np.float32)
        vectors[sl] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return vectors, codes


def numpy_metrics(indices: np.ndarray, queries: np.ndarray, codes: np.ndarray) -> dict[str, np.ndarray]:
    """Success/Recall/nDCG@K and MRR@100 straight from a top list that still contains the query."""
    keep = indices != queries[:, None]
    rows = np.array([row[k][:MRR_CUTOFF] for row, k in zip(indices, keep)])
    hits = codes[rows] == codes[queries][:, None]
    n_rel = np.bincount(codes)[codes[queries]] - 1
    discount = 1.0 / np.log2(np.arange(2, MRR_CUTOFF + 2))
    out = {}
    for k in KS:
        found = hits[:, :k].sum(axis=1)
        out[f"success@{k}"] = (found > 0).astype(float)
        out[f"recall@{k}"] = found / n_rel
        ideal = np.cumsum(discount)[np.minimum(k, n_rel) - 1]
        out[f"ndcg@{k}"] = (hits[:, :k] * discount[:k]).sum(axis=1) / ideal
    first = np.argmax(hits, axis=1)
    out[f"mrr@{MRR_CUTOFF}"] = np.where(hits.any(axis=1), 1.0 / (first + 1), 0.0)
    return out


def run_ours(vectors, codes, queries):
    start = time.perf_counter()
    run = attribution_per_query(vectors, codes, ks=KS, mrr_cutoff=MRR_CUTOFF, queries=queries)
    return {"total_s": time.perf_counter() - start, "search_s": run.search_s, "metrics_s": run.metrics_s,
            "re_searched": run.re_searched}, run.values, run.queries


def run_faiss(index, vectors, codes, queries):
    start = time.perf_counter()
    _, indices = index.search(vectors[queries], MRR_CUTOFF + 2)
    search_s = time.perf_counter() - start
    start = time.perf_counter()
    values = numpy_metrics(indices, queries, codes)
    metrics_s = time.perf_counter() - start
    return {"total_s": search_s + metrics_s, "search_s": search_s, "metrics_s": metrics_s}, values


def synthetic_part(args) -> dict:
    import faiss

    t = time.perf_counter()
    vectors, codes = synthetic_pool(args.n, args.dim, args.alpha, args.max_docs, args.noise, args.seed)
    generate_s = time.perf_counter() - t
    per_author = np.bincount(codes)
    rng = np.random.default_rng(args.seed + 1)
    eligible = np.flatnonzero(per_author[codes] >= 2)
    queries = np.sort(rng.choice(eligible, size=min(args.queries, eligible.size), replace=False))
    index = faiss.IndexFlatIP(args.dim)
    index.add(vectors)
    row = {"n": args.n, "dim": args.dim, "queries": int(queries.size), "authors": int(per_author.size),
           "docs_per_author": {"median": float(np.median(per_author)), "mean": float(per_author.mean()),
                               "max": int(per_author.max()),
                               "share_singletons": float(np.mean(per_author == 1))},
           "generate_s": generate_s, "faiss_threads": faiss.omp_get_max_threads()}
    cold, _, _ = run_ours(vectors, codes, queries)
    ours, ours_values, scored = run_ours(vectors, codes, queries)
    faiss_cold, _ = run_faiss(index, vectors, codes, queries)
    peer, peer_values = run_faiss(index, vectors, codes, queries)
    assert np.array_equal(scored, queries)
    diffs = {name: float(np.max(np.abs(ours_values[name] - peer_values[name]))) for name in peer_values}
    row.update(ours=ours, ours_cold_s=cold["total_s"], faiss=peer, faiss_cold_s=faiss_cold["total_s"],
               max_abs_diff=diffs, identical=all(d <= 1e-12 for d in diffs.values()),
               metrics={name: float(v.mean()) for name, v in ours_values.items()},
               speedup_end_to_end=peer["total_s"] / ours["total_s"])
    return row


def real_part(directory: Path) -> dict:
    from stylebench_jax.cache import EmbeddingCache
    from stylebench_jax.data.authbench import load_built_split
    from stylebench_jax.encoders.registry import resolve_embedder

    payload = load_built_split(directory, "test")
    texts = list(payload.texts)
    embedder = resolve_embedder("minilm")
    with tempfile.TemporaryDirectory() as cache_dir:
        cache = EmbeddingCache(cache_dir)
        start = time.perf_counter()
        vectors = cache.embed(embedder, texts)
        cold_s = time.perf_counter() - start
        start = time.perf_counter()
        cached = cache.embed(embedder, texts)
        cached_s = time.perf_counter() - start
    assert np.array_equal(vectors, cached)
    vectors = np.ascontiguousarray(vectors / np.linalg.norm(vectors, axis=1, keepdims=True), dtype=np.float32)
    codes = author_codes(payload.authors)
    attribution_per_query(vectors, codes, ks=KS, mrr_cutoff=MRR_CUTOFF)  # warm-up (compilation)
    run = attribution_per_query(vectors, codes, ks=KS, mrr_cutoff=MRR_CUTOFF)
    return {"benchmark": str(directory), "documents": len(texts), "queries": int(run.queries.size),
            "characters": sum(map(len, texts)), "embed_cold_s": cold_s, "embed_cached_s": cached_s,
            "search_s": run.search_s, "metrics_s": run.metrics_s,
            "metrics": {name: float(v.mean()) for name, v in run.values.items()}}


def print_table(result: dict) -> None:
    s = result.get("synthetic")
    if s:
        print(f"synthetic pool N={s['n']:,} D={s['dim']} Q={s['queries']:,} authors={s['authors']:,} "
              f"(docs/author median {s['docs_per_author']['median']:.0f}, max {s['docs_per_author']['max']}, "
              f"{100 * s['docs_per_author']['share_singletons']:.0f}% single-document)")
        print(f"{'method':<22}{'search s':>10}{'metrics s':>11}{'total s':>9}{'cold s':>9}")
        for key, label, cold in (("ours", "ours (topk + metrics)", "ours_cold_s"),
                                 ("faiss", "faiss FlatIP + NumPy", "faiss_cold_s")):
            r = s[key]
            print(f"{label:<22}{r['search_s']:>10.2f}{r['metrics_s']:>11.3f}{r['total_s']:>9.2f}{s[cold]:>9.2f}")
        print(f"speed-up end to end: {s['speedup_end_to_end']:.2f}x; "
              f"metrics identical (1e-12): {s['identical']} "
              f"(max |diff| {max(s['max_abs_diff'].values()):.2g}); S@5 {s['metrics']['success@5']:.4f}")
    r = result.get("real")
    if r:
        print(f"real benchmark {r['benchmark']}: {r['documents']:,} documents ({r['characters']:,} chars), "
              f"{r['queries']:,} queries")
        print(f"  MiniLM embedding cold {r['embed_cold_s']:.1f} s, cached {r['embed_cached_s']:.2f} s; "
              f"search {r['search_s']:.2f} s; metrics {r['metrics_s']:.3f} s")
        m = r["metrics"]
        print(f"  S@5 {m['success@5']:.4f}  R@5 {m['recall@5']:.4f}  nDCG@5 {m['ndcg@5']:.4f}  "
              f"MRR@100 {m['mrr@100']:.4f}")
    print(f"load average at the end: {result['load_average']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000, help="pool size")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=1000, help="query documents sampled from the pool")
    parser.add_argument("--alpha", type=float, default=2.0, help="power-law exponent of docs per author")
    parser.add_argument("--max-docs", type=int, default=1000, help="largest author")
    parser.add_argument("--noise", type=float, default=2.0,
                        help="per-coordinate noise sigma around the author centroid "
                             "(centroid coordinates ~ N(0, 1))")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--benchmark", type=Path, default=None, help="built benchmark directory (part 2)")
    parser.add_argument("--skip-synthetic", action="store_true")
    parser.add_argument("--json", type=Path, default=REPO / "benchmarks" / "results" / "attribution.json")
    args = parser.parse_args()
    if args.benchmark is not None:  # before the synthetic part, not after it
        from stylebench_jax.data.authbench import load_built_split

        load_built_split(args.benchmark, "test")  # a missing or malformed build: its error, now
    result = {"machine": {"platform": platform.platform(), "cpus": os.cpu_count()}}
    if not args.skip_synthetic:
        result["synthetic"] = synthetic_part(args)
    if args.benchmark is not None:
        result["real"] = real_part(args.benchmark)
    result["load_average"] = [round(x, 2) for x in os.getloadavg()]
    print_table(result)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
