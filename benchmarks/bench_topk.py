"""Exact top-k cosine search at scale: ours (float32 and certified bfloat16) vs NumPy and faiss.

    python benchmarks/bench_topk.py --n 1000000 --q 1000,10 --dim 384 --k 10 \\
        --memmap-gib 4 --pairs-n 50000 --json benchmarks/results/topk.json

One run, one seeded data set for every method and query count: unit-norm Gaussian rows, or
with ``--clusters C`` clustered rows (centre + noise, queries are perturbed pool rows), closer to
author-grouped style embeddings, where the bfloat16 certificate fails far more often; or with
``--real EMB.npy`` real embeddings (e.g. ``stylebench embed`` of a style corpus) tiled to ``--n``
rows: a seeded shuffle holds out the queries, every other row is copied ``n / M`` times, each copy
with its own noise of norm ``--tile-noise`` (cosine ~0.98 with its source at 0.2) and renormalised,
so the pool keeps the real geometry (style groups, anisotropy) without exact ties. Every
method is warmed once (compilation, BLAS threads, faiss's index) and timed best of ``--repeats``:

* ours: ``topk_cosine`` float32 (its default scan: the C++ kernel of ``kernels.cpu_topk`` on a
  CPU where it builds; ``ours f32 x``: XLA's blocked scan, ``kernel="xla"``) and certified bfloat16 (XLA)
  on an ordinary NumPy array (16-byte
  aligned, what ``np.load`` returns; used in place all the same), ``--aligned`` for a 64-byte
  aligned one. ``compile`` = first call minus best call. The default precision (``topk_cosine``'s
  ``"auto"`` on a host array) is whichever of the two it resolves to on this machine; ``stylebench
  search`` runs float32 unless ``--bf16``. Ours (float32)
  and faiss are each timed in two rounds, ours, faiss, ours, faiss, and keep their best (the
  shared machine's load drifts).
* numpy: ``[1024, 65536]`` score blocks (BLAS sgemm) + ``argpartition`` into a running top-k list.
* faiss: ``IndexFlatIP`` (exact; BLAS sgemm + heaps), when faiss-cpu is installed.

On a GPU (JAX with CUDA and torch seeing the card) NumPy is skipped (a CPU peer) and the peer is
PyTorch on the same card (:func:`torch_topk`: cuBLAS matmul + ``torch.topk`` per block), from the host
array and with the pool resident on the card, float32 and (not exact) bfloat16; ours also runs on a
resident pool (:func:`gpu_rows`; uploads timed apart), and ``%peak`` compares with the better of JAX's
and cuBLAS's products on the search's shape.

``recall_vs_exact`` = |returned ∩ exact top-k| / k averaged over queries, where the exact top-k
comes from float64 scores (NumPy dgemm, untimed). Every float32 method rounds, so two candidates
whose true scores differ by less than ~1e-7 can come out in either order; a float32 reference
would charge the method that happens to round differently from it (seen at Q = 1000: one query's
10th and 11th candidates differ by 7e-8). ``peak_rss_mb`` is the peak resident memory sampled
(5 ms) while the method runs, the candidate matrix included; ``working_set_mb`` subtracts the
resident memory just before. GFLOP/s counts 2 Q N D flops; ``%peak`` compares it with this
machine's matmul peak for the same precision, measured here: float32 methods against the better
of NumPy sgemm and XLA's float32 dot, ``ours bf16`` against XLA's bfloat16 dot (float32
accumulation), each on the search's own shape (``[1024, D] x [D, 32768]`` blocks) in one call over
8 blocks (:func:`matmul_peak`); with torch installed, PyTorch's float32 and bfloat16 matmul on
the same blocks are printed beside them (its bfloat16 runs oneDNN's AMX / AVX512-BF16 kernels
where the CPU has them: how far XLA's bfloat16 dot is from what the hardware gives). That peak is
the best library product writing its ``[1024, 32768]`` output; ours float32 on CPU (the C++ scan)
writes no output tile and can run above it (above 100%), as a product that skips the store would.

``--memmap-gib G`` writes a G GiB pool to /tmp and searches it through the ``.npy`` path (block
reads, bounded memory) in a child process, so its RSS is its own. ``--pairs-n M`` times the exact
all-pairs AUROC/EER over M(M-1)/2 pairs, each method of ``--pairs-methods`` (default: the
default ``auto``, then ``radix``) in its own child process (``--pairs-dim 16 --pairs-spread 0.3``:
hard data, heavily overlapping classes whose scores crowd into few float32 values; or
``--pairs-real EMB.npy --pairs-labels LABELS.npy``: real embeddings and their labels tiled to
``--pairs-n`` rows like ``--real``, each copy keeping its source's label). The
load average is stored: the 2 cores may be shared with other jobs, which slows every method alike
only roughly.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from stylebench_jax.kernels import all_pairs_auroc_eer, topk_cosine  # noqa: E402
from stylebench_jax.kernels.npy_rows import aligned_empty  # noqa: E402
from stylebench_jax.kernels.scan import DEFAULT_BLOCK  # noqa: E402


class PeakRss:
    """Sample this process's RSS every ``interval`` seconds inside a ``with`` block."""

    def __init__(self, interval: float = 0.005):
        self.interval, self.proc = interval, psutil.Process()

    def __enter__(self):
        self.before = self.peak = self.proc.memory_info().rss
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def _run(self):
        while not self.stop.is_set():
            self.peak = max(self.peak, self.proc.memory_info().rss)
            time.sleep(self.interval)

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        self.peak = max(self.peak, self.proc.memory_info().rss)

    @property
    def peak_mb(self) -> float:
        return self.peak / 2**20

    @property
    def working_mb(self) -> float:
        return (self.peak - self.before) / 2**20


def unit_rows(rng, n: int, dim: int, chunk: int = 1 << 16, *, aligned: bool = False,
              clusters: int = 0, spread: float = 0.5) -> np.ndarray:
    """Seeded unit-norm rows: Gaussian, or with ``clusters > 0`` clustered (row = centre + noise,
    ``spread`` = noise / centre scale, centres drawn first), as an ordinary NumPy array (16-byte
    aligned, what ``np.load`` and random generators give) or, ``aligned``, a 64-byte aligned one."""
    out = aligned_empty((n, dim)) if aligned else np.empty((n, dim), np.float32)
    centres = rng.standard_normal((clusters, dim), dtype=np.float32) if clusters else None
    for start in range(0, n, chunk):
        block = rng.standard_normal((min(chunk, n - start), dim), dtype=np.float32)
        if centres is not None:
            block *= spread
            block += centres[rng.integers(0, clusters, block.shape[0])]
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[start:start + block.shape[0]] = block
    return out


def tiled_rows(rng, real: np.ndarray, n: int, q_rows: int, noise: float,
               chunk: int = 1 << 16, *, aligned: bool = False,
               order: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(candidates [n, D], queries [q_rows, D])`` from real unit-norm-able rows ``real [M, D]``: a
    seeded permutation (``order``, else drawn from ``rng``) puts ``q_rows`` rows aside as queries
    (never in the pool); pool row ``i`` is source row ``order[q_rows + i mod (M - q_rows)]`` plus
    Gaussian noise of expected norm ``noise``, renormalised."""
    real = np.asarray(real, np.float32)
    if real.ndim != 2 or real.shape[0] < 2 * q_rows:
        raise SystemExit(f"--real: expected a [M, D] array with M >= 2 x queries ({2 * q_rows}), got "
                         f"shape {real.shape}")
    real = real / np.linalg.norm(real, axis=1, keepdims=True)
    order = rng.permutation(real.shape[0]) if order is None else order
    queries, sources = real[order[:q_rows]], real[order[q_rows:]]
    dim = real.shape[1]
    out = aligned_empty((n, dim)) if aligned else np.empty((n, dim), np.float32)
    for start in range(0, n, chunk):
        rows = np.arange(start, min(n, start + chunk)) % sources.shape[0]
        block = rng.standard_normal((rows.size, dim), dtype=np.float32)
        block *= noise / dim ** 0.5
        block += sources[rows]
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[start:start + rows.size] = block
    return out, queries


def best_time(fn, repeats: int):
    """(best seconds, last result) over ``repeats`` calls."""
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def matmul_peak(dim: int, q: int = 1024, block: int = 32768, blocks: int = 8) -> dict:
    """GFLOP/s of the product a search runs, ``[q, dim] x [dim, block]`` over ``blocks`` candidate
    blocks, with no giant output and no casts in the timed work: NumPy sgemm into one reused
    ``[q, block]`` buffer; XLA float32 (and bfloat16 operands cast beforehand, float32 accumulation)
    as one jitted loop over the blocks whose carry is the block's product (the loop's output is the
    last one). One call per measurement: a call per block would also time each call's fresh
    ``[q, block]`` output. Reducing each product instead (a row max) lets XLA:CPU fuse the reduction
    into the dot, which then runs a slower kernel (measured 107 vs 167 GFLOP/s on the 2-core AVX2
    CPU), so that is not the dot's peak."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((q, dim), dtype=np.float32)
    b = rng.standard_normal((blocks * block, dim), dtype=np.float32)
    flops = 2 * q * b.shape[0] * dim
    buf = np.empty((q, block), np.float32)

    def numpy_loop():
        for i in range(blocks):
            np.matmul(a, b[i * block:(i + 1) * block].T, out=buf)

    out = {} if on_gpu() else {"numpy_sgemm": flops / best_time(numpy_loop, 3)[0] / 1e9}

    def loop(x, y, **dot_args):
        def body(i, last):
            return jax.lax.dot_general(x, jax.lax.dynamic_slice_in_dim(y, i * block, block),
                                       (((1,), (1,)), ((), ())), **dot_args)
        return jax.lax.fori_loop(0, blocks, body, jnp.zeros((q, block), jnp.float32))

    runs = {"xla_f32": (jax.jit(functools.partial(loop, precision=jax.lax.Precision.HIGHEST)),
                        jnp.asarray(a), jnp.asarray(b)),
            "xla_bf16": (jax.jit(functools.partial(loop, preferred_element_type=jnp.float32)),
                         jnp.asarray(a, jnp.bfloat16), jnp.asarray(b, jnp.bfloat16))}
    for name, (fn, x, y) in runs.items():
        fn(x, y).block_until_ready()
        out[name] = flops / best_time(lambda fn=fn, x=x, y=y: fn(x, y).block_until_ready(), 3)[0] / 1e9
    out.update(torch_peaks(a, b, block, blocks, flops))
    f32 = [out[key] for key in ("numpy_sgemm", "xla_f32") if key in out]
    bf16 = [out["xla_bf16"]]
    if torch_cuda() is not None:  # the card's own peak: the better of JAX's and PyTorch's (cuBLAS) products
        f32 += [out[key] for key in ("torch_f32",) if key in out]
        bf16 += [out[key] for key in ("torch_bf16",) if key in out]
    out.update(f32_peak=max(f32), bf16_peak=max(bf16))
    return out


PEER_DEVICE = "cuda"  # the PyTorch peer's device on GPU runs


def on_gpu() -> bool:
    return jax.default_backend() == "gpu"


def torch_cuda():
    """``torch`` when this run is on a GPU and torch sees it (the PyTorch peer's card), else ``None``."""
    if not on_gpu():
        return None
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def torch_peaks(a: np.ndarray, b: np.ndarray, block: int, blocks: int, flops: int) -> dict:
    """PyTorch's float32 and bfloat16 matmul on the same blocks (``torch.matmul(..., out=)`` into
    one reused buffer, operands cast beforehand), when torch is installed: its bfloat16 path is
    oneDNN's, which uses AMX / AVX512-BF16 where the CPU has them, so ``torch_bf16`` shows what
    the hardware gives bfloat16 next to XLA's ``xla_bf16``. On a GPU run the operands live on the
    card (cuBLAS; float32 without TF32, torch's default) and each timing waits for it. Empty
    without torch."""
    try:
        import torch
    except ImportError:
        return {}
    device = PEER_DEVICE if torch_cuda() is not None else "cpu"
    out = {}
    for name, dtype in (("torch_f32", torch.float32), ("torch_bf16", torch.bfloat16)):
        x, y = (torch.from_numpy(v).to(device=device, dtype=dtype) for v in (a, b))
        buf = torch.empty((a.shape[0], block), dtype=dtype, device=device)

        def loop(x=x, y=y, buf=buf):
            for i in range(blocks):
                torch.matmul(x, y[i * block:(i + 1) * block].T, out=buf)
            if device == "cuda":
                torch.cuda.synchronize()

        loop()
        out[name] = flops / best_time(loop, 3)[0] / 1e9
    return out


def torch_topk(torch, q: np.ndarray, pool, k: int, chunk: int = 65536, dtype=None) -> np.ndarray:
    """The PyTorch peer on the GPU: ``[Q, chunk]`` score blocks (``q @ block.T``, cuBLAS) and
    ``torch.topk`` per block, merged into a running ``[Q, k]`` list by one more ``topk``; ``pool``
    a host array (copied to the card whole first, as a user moves a pool there once per search)
    or a CUDA tensor (resident). ``dtype`` bfloat16: operands cast to it (not exact: no
    certificate, unlike ours). Ties by lower index are not guaranteed (``torch.topk`` order)."""
    device = PEER_DEVICE
    c = pool if torch.is_tensor(pool) else torch.from_numpy(pool).to(device)
    x = torch.from_numpy(q).to(device)
    if dtype is not None:
        x, c = x.to(dtype), c.to(dtype)
    best_v = torch.full((q.shape[0], 0), -torch.inf, device=device)
    best_i = torch.zeros((q.shape[0], 0), dtype=torch.int64, device=device)
    for start in range(0, c.shape[0], chunk):
        s = (x @ c[start:start + chunk].T).float()
        v, i = torch.topk(s, min(k, s.shape[1]), dim=1)
        v, i = torch.cat([best_v, v], 1), torch.cat([best_i, i + start], 1)
        best_v, pos = torch.topk(v, min(k, v.shape[1]), dim=1)
        best_i = torch.gather(i, 1, pos)
    return best_i.cpu().numpy()


def numpy_topk(q: np.ndarray, c: np.ndarray, k: int, q_chunk: int = 1024, c_chunk: int = 65536) -> np.ndarray:
    """Exact top-k the way one would write it in NumPy: ``[q_chunk, c_chunk]`` score blocks (BLAS
    sgemm, bounded memory), ``argpartition`` per block into a running ``[q_chunk, k]`` list;
    ties by lower index."""
    out = np.empty((q.shape[0], k), np.int64)
    for lo in range(0, q.shape[0], q_chunk):
        qq = q[lo:lo + q_chunk]
        vals, idx = np.empty((qq.shape[0], 0), np.float32), np.empty((qq.shape[0], 0), np.int64)
        for start in range(0, c.shape[0], c_chunk):
            s = qq @ c[start:start + c_chunk].T
            kk = min(k, s.shape[1])
            part = np.argpartition(-s, kk - 1, axis=1)[:, :kk]
            vals = np.concatenate([vals, np.take_along_axis(s, part, 1)], axis=1)
            idx = np.concatenate([idx, part + start], axis=1)
            if vals.shape[1] > k:
                keep = np.argpartition(-vals, k - 1, axis=1)[:, :k]
                vals, idx = np.take_along_axis(vals, keep, 1), np.take_along_axis(idx, keep, 1)
        order = np.lexsort((idx, -vals), axis=1)
        out[lo:lo + q_chunk] = np.take_along_axis(idx, order, 1)
    return out


def float64_topk(q: np.ndarray, c: np.ndarray, k: int, chunk: int = 32768) -> np.ndarray:
    """The exact top-k from float64 scores (candidate chunks, running merge); exact float64 ties,
    which the seeded Gaussian data does not have, would be broken arbitrarily."""
    q64 = q.astype(np.float64)
    best_idx = np.empty((q.shape[0], 0), np.int64)
    best_val = np.empty((q.shape[0], 0))
    for start in range(0, c.shape[0], chunk):
        s = q64 @ c[start:start + chunk].astype(np.float64).T
        vals = np.concatenate([best_val, s], axis=1)
        ids = np.broadcast_to(np.arange(start, start + s.shape[1]), s.shape)
        idx = np.concatenate([best_idx, ids], axis=1)
        part = np.argpartition(-vals, min(k, vals.shape[1]) - 1, axis=1)[:, :k]
        best_val, best_idx = np.take_along_axis(vals, part, 1), np.take_along_axis(idx, part, 1)
    order = np.lexsort((best_idx, -best_val), axis=1)
    return np.take_along_axis(best_idx, order, 1)


def recall(found: np.ndarray, exact: np.ndarray) -> float:
    return float(np.mean([len(set(f) & set(e)) / len(e) for f, e in zip(found.tolist(), exact.tolist())]))


def peak_for(peaks: dict, key: str) -> float:
    """This machine's measured matmul peak for the precision method ``key`` computes in."""
    return peaks["bf16_peak"] if "bf16" in key else peaks["f32_peak"]


def run_regime(c, q, k, args, peaks) -> dict:
    n, dim = c.shape
    flops = 2.0 * q.shape[0] * n * dim
    row = {"n": n, "q": q.shape[0], "dim": dim, "k": k, "candidates_mb": c.nbytes / 2**20}
    start = time.perf_counter()
    exact = float64_topk(q, c, k)
    row["reference_float64_s"] = time.perf_counter() - start
    if on_gpu():  # NumPy is a CPU peer; on a GPU run the peer is PyTorch on the same card
        row["numpy_s"] = None
    else:
        numpy_topk(q[:8], c[:65536], k)  # warm BLAS threads
        with PeakRss() as rss:
            numpy_s, found = best_time(lambda: numpy_topk(q, c, k), args.repeats)
        row.update(numpy_s=numpy_s, numpy_recall_vs_exact=recall(found, exact),
                   numpy_peak_rss_mb=rss.peak_mb, numpy_working_set_mb=rss.working_mb)
    # ours: the default float32 scan (the C++ kernel on a CPU where it builds); ours_xla: XLA's
    methods = [("float32", "auto", "ours"), ("float32", "xla", "ours_xla"), ("bfloat16", "auto", "ours_bf16")]
    for precision, kernel, key in methods:
        def search(precision=precision, kernel=kernel):
            return topk_cosine(q, c, k, precision=precision, block_size=args.block_size,
                               chunk_rows=args.chunk_rows, kernel=kernel)
        start = time.perf_counter()
        search()  # compile for these shapes
        first = time.perf_counter() - start
        with PeakRss() as rss:
            seconds, result = best_time(search, args.repeats)
        gflops = flops / seconds / 1e9
        row.update({f"{key}_s": seconds, f"{key}_compile_s": max(0.0, first - seconds),
                    f"{key}_recall_vs_exact": recall(result.indices, exact),
                    f"{key}_peak_rss_mb": rss.peak_mb, f"{key}_working_set_mb": rss.working_mb,
                    f"{key}_gflops": gflops, f"{key}_fraction_of_peak": gflops / peak_for(peaks, key)})
        row[f"{key}_kernel"] = result.kernel
        if precision == "bfloat16":
            row.update(ours_bf16_recomputed_queries=result.n_recomputed,
                       ours_bf16_grown_queries=result.n_grown)
    # what `topk_cosine` / `stylebench search` do without flags: precision="auto"
    row["default_precision"] = topk_cosine(q[:8], c[:4096], k, precision="auto").precision
    row["recall_vs_exact"] = row["ours_recall_vs_exact"]
    row["peak_rss_mb"] = row["ours_peak_rss_mb"]
    torch = torch_cuda()
    if torch is not None:
        gpu_rows(row, torch, q, c, k, args, peaks, exact)
    try:
        import faiss
    except ImportError:
        row["faiss_s"] = None
        if torch is not None:  # the peer got two rounds (gpu_rows): ours from the host a second one too
            seconds = best_time(lambda: topk_cosine(q, c, k, precision="float32", block_size=args.block_size,
                                                    chunk_rows=args.chunk_rows), args.repeats)[0]
            row["ours_s"] = min(row["ours_s"], seconds)
            row["ours_gflops"] = flops / row["ours_s"] / 1e9
            row["ours_fraction_of_peak"] = row["ours_gflops"] / peak_for(peaks, "ours")
        row["default_s"] = row["ours_s" if row["default_precision"] == "float32" else "ours_bf16_s"]
        return row
    with PeakRss() as rss:
        start = time.perf_counter()
        index = faiss.IndexFlatIP(dim)
        index.add(c)
        row["faiss_add_s"] = time.perf_counter() - start
        index.search(q, k)  # warm, like ours
        seconds, (_, found) = best_time(lambda index=index: index.search(q, k), args.repeats)
    row.update(faiss_s=seconds, faiss_recall_vs_exact=recall(found, exact), faiss_peak_rss_mb=rss.peak_mb,
               faiss_working_set_mb=rss.working_mb, faiss_gflops=flops / seconds / 1e9)
    # a second round of both, ours then faiss: the load of other jobs drifts, so each side keeps the
    # best of its two rounds (the same number of timed runs for both)
    seconds = best_time(lambda: topk_cosine(q, c, k, precision="float32", block_size=args.block_size,
                                            chunk_rows=args.chunk_rows), args.repeats)[0]
    row["ours_s"] = min(row["ours_s"], seconds)
    row["ours_gflops"] = flops / row["ours_s"] / 1e9
    row["ours_fraction_of_peak"] = row["ours_gflops"] / peak_for(peaks, "ours")
    row["faiss_s"] = min(row["faiss_s"], best_time(lambda index=index: index.search(q, k), args.repeats)[0])
    row["faiss_gflops"] = flops / row["faiss_s"] / 1e9
    row["default_s"] = row["ours_s" if row["default_precision"] == "float32" else "ours_bf16_s"]
    del index
    return row


def gpu_rows(row: dict, torch, q, c, k, args, peaks, exact) -> None:
    """GPU runs: the pool resident on the card for ours (``shard_pool`` once, upload timed apart)
    in float32 and certified bfloat16, and the PyTorch peer (:func:`torch_topk`) from the host
    array and resident, float32 and bfloat16 (uncertified), timed in two interleaved rounds like
    ours; every method warmed once. Keys ``<method>_s``, ``_recall_vs_exact``, ``_gflops``,
    ``_fraction_of_peak``; ``ours_upload_s`` / ``torch_upload_s``: placing the pool on the card."""
    from stylebench_jax.kernels import shard_pool

    flops = 2.0 * q.shape[0] * c.shape[0] * c.shape[1]
    start = time.perf_counter()
    pool = shard_pool(c, block_size=args.block_size)
    jax.block_until_ready(pool.rows)
    row["ours_upload_s"] = time.perf_counter() - start
    start = time.perf_counter()
    resident = torch.from_numpy(c).to(PEER_DEVICE)
    if PEER_DEVICE == "cuda":
        torch.cuda.synchronize()
    row["torch_upload_s"] = time.perf_counter() - start
    runs = {
        "ours_resident": lambda: topk_cosine(q, pool, k, precision="float32").indices,
        "ours_bf16_resident": lambda: topk_cosine(q, pool, k, precision="bfloat16").indices,
        "torch": lambda: torch_topk(torch, q, c, k),
        "torch_resident": lambda: torch_topk(torch, q, resident, k),
        "torch_bf16_resident": lambda: torch_topk(torch, q, resident, k, dtype=torch.bfloat16),
    }
    found = {name: fn() for name, fn in runs.items()}  # warm (compiles, cuBLAS handles)
    times = {name: [] for name in runs}
    for _ in range(2):
        for name, fn in runs.items():
            times[name].append(best_time(fn, args.repeats)[0])
    for name in runs:
        seconds = min(times[name])
        row.update({f"{name}_s": seconds, f"{name}_recall_vs_exact": recall(found[name], exact),
                    f"{name}_gflops": flops / seconds / 1e9,
                    f"{name}_fraction_of_peak": flops / seconds / 1e9 / peak_for(peaks, name)})


def write_pool(path: Path, n: int, dim: int, seed: int) -> None:
    """A float32 unit-row ``.npy`` of ``n x dim`` written block by block (never whole in memory)."""
    rng = np.random.default_rng(seed)
    header = {"descr": "<f4", "fortran_order": False, "shape": (n, dim)}
    with open(path, "wb") as handle:
        np.lib.format.write_array_header_2_0(handle, header)
        for start in range(0, n, 1 << 16):
            handle.write(unit_rows(rng, min(1 << 16, n - start), dim).tobytes())


def memmap_part(args) -> dict:
    dim, q_rows = args.dim, int(args.q.split(",")[0])
    n = int(args.memmap_gib * 2**30 // (4 * dim))
    path = Path(args.memmap_dir) / f"stylebench_bench_pool_{n}x{dim}.npy"
    if not path.exists() or path.stat().st_size < n * dim * 4:
        write_pool(path, n, dim, args.seed + 1)
    q = unit_rows(np.random.default_rng(args.seed + 2), q_rows, dim)
    for precision in ("float32", "bfloat16"):  # compile both paths before timing either
        topk_cosine(q, np.load(path, mmap_mode="r")[: args.chunk_rows], args.k, block_size=args.block_size,
                    chunk_rows=args.chunk_rows, precision=precision)
    out = {"n": n, "q": q_rows, "dim": dim, "k": args.k, "file_gib": path.stat().st_size / 2**30}
    for precision, key in (("float32", "memmap"), ("bfloat16", "memmap_bf16")):
        with PeakRss() as rss:
            start = time.perf_counter()
            topk_cosine(q, path, args.k, precision=precision, block_size=args.block_size,
                        chunk_rows=args.chunk_rows)
            seconds = time.perf_counter() - start
        out.update({f"{key}_s": seconds, f"{key}_gflops": 2.0 * q_rows * n * dim / seconds / 1e9,
                    f"{key}_peak_rss_mb": rss.peak_mb, f"{key}_working_set_mb": rss.working_mb})
    if not args.keep_pool:
        path.unlink()
    return out


def pairs_part(args) -> dict:
    rng = np.random.default_rng(args.seed + 3)
    n, dim = args.pairs_n, args.pairs_dim or args.dim
    if args.pairs_real:  # real embeddings and labels, tiled to n rows as --real tiles the pool
        real, source_labels = np.load(args.pairs_real), np.load(args.pairs_labels)
        if source_labels.shape != (real.shape[0],):
            raise SystemExit(f"--pairs-labels: expected {real.shape[0]} labels (one per row of "
                             f"--pairs-real), found shape {source_labels.shape}")
        order = rng.permutation(real.shape[0])  # pool row i is source row order[i mod M]
        x, _ = tiled_rows(rng, real, n, 0, args.tile_noise, order=order)
        labels, dim = source_labels[order][np.arange(n) % real.shape[0]], real.shape[1]
    else:
        labels = rng.integers(0, max(2, n // 50), n)
        centres = rng.standard_normal((labels.max() + 1, dim)).astype(np.float32)
        x = rng.standard_normal((n, dim)).astype(np.float32) + args.pairs_spread * centres[labels]
        x /= np.linalg.norm(x, axis=1, keepdims=True)
    jnp.zeros(1).block_until_ready()  # the XLA client's own start-up is not the kernel's working set
    with PeakRss() as rss:
        start = time.perf_counter()
        result = all_pairs_auroc_eer(x, labels, block_size=args.pairs_block, method=args.pairs_method)
        seconds = time.perf_counter() - start
    return {"n": n, "dim": dim, "spread": args.pairs_spread, "real": str(args.pairs_real or ""),
            "labels": int(np.unique(labels).size), "pairs": result.n_pairs, "seconds": seconds,
            "pairs_per_s": result.n_pairs / seconds, "auroc": result.auroc, "eer": result.eer,
            "method": result.method, "level_bits": list(result.level_bits),
            "passes": result.passes, "refined_bins": result.refined_bins,
            "tiles": result.tiles, "tile_evaluations": result.tile_evaluations,
            "peak_rss_mb": rss.peak_mb, "working_set_mb": rss.working_mb,
            "embeddings_mb": x.nbytes / 2**20}


def child(part: str, argv: list[str]) -> dict:
    command = [sys.executable, __file__, *argv, "--part", part]
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"{part} part failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def print_table(results: dict) -> None:
    peaks = results["peak_gflops"]
    where = results["machine"].get("accelerator") or "this CPU"
    print(f"\nmatmul peak on {where} (GFLOP/s): " + ", ".join(f"{k} {v:.0f}" for k, v in peaks.items()))
    print(f"load average at start: {results['loadavg']}, at end: {results.get('loadavg_end')}")
    head = (f"{'N':>9} {'Q':>5} {'D':>4} {'k':>3} | {'method':<10} {'seconds':>8} {'GFLOP/s':>8} "
            f"{'%peak':>6} {'recall':>7} {'peak RSS MB':>11} {'working MB':>10}")
    print(head)
    print("-" * len(head))
    methods = (("ours", "ours f32"), ("ours_xla", "ours f32 x"), ("ours_bf16", "ours bf16"),
               ("numpy", "numpy"), ("faiss", "faiss"),
               ("ours_resident", "ours f32 r"), ("ours_bf16_resident", "ours bf16 r"), ("torch", "torch f32"),
               ("torch_resident", "torch f32 r"), ("torch_bf16_resident", "torch bf16 r"))
    for row in results["regimes"]:
        flops = 2.0 * row["q"] * row["n"] * row["dim"]
        for key, name in methods:
            seconds = row.get(f"{key}_s")
            if seconds is None:
                continue
            gflops = flops / seconds / 1e9
            print(f"{row['n']:>9} {row['q']:>5} {row['dim']:>4} {row['k']:>3} | {name:<10} {seconds:>8.3f} "
                  f"{gflops:>8.1f} {100 * gflops / peak_for(peaks, key):>5.0f}% "
                  f"{row.get(f'{key}_recall_vs_exact', 1.0):>7.4f} "
                  f"{row.get(f'{key}_peak_rss_mb', float('nan')):>11.0f} "
                  f"{row.get(f'{key}_working_set_mb', float('nan')):>10.0f}")
        print(f"{'':>26} ours f32: the {row.get('ours_kernel', 'xla')} scan; f32 x: XLA's scan")
        print(f"{'':>26} compile (first call - best): f32 {row['ours_compile_s']:.2f} s, "
              f"bf16 {row['ours_bf16_compile_s']:.2f} s; "
              f"bf16 queries grown {row['ours_bf16_grown_queries']}, "
              f"re-searched in f32 {row['ours_bf16_recomputed_queries']}")
        if row.get("torch_s"):
            print(f"{'':>26} ours/torch time (GPU; r = pool resident on the card, uploads apart: ours "
                  f"{row['ours_upload_s']:.3f} s, torch {row['torch_upload_s']:.3f} s): from host f32 "
                  f"{row['ours_s'] / row['torch_s']:.2f}, default ({row['default_precision']}) "
                  f"{row['default_s'] / row['torch_s']:.2f}; resident f32 "
                  f"{row['ours_resident_s'] / row['torch_resident_s']:.2f}, ours bf16 (certified) / "
                  f"torch bf16 (not exact) {row['ours_bf16_resident_s'] / row['torch_bf16_resident_s']:.2f}")
        if row.get("faiss_s"):
            print(f"{'':>26} ours/faiss time: f32 {row['ours_s'] / row['faiss_s']:.2f}, "
                  f"bf16 {row['ours_bf16_s'] / row['faiss_s']:.2f}, default ({row['default_precision']}) "
                  f"{row['default_s'] / row['faiss_s']:.2f}; candidates {row['candidates_mb']:.0f} MB")
    if "memmap" in results:
        m = results["memmap"]
        print(f"\nmemmap .npy pool {m['n']} x {m['dim']} ({m['file_gib']:.2f} GiB), Q={m['q']}, k={m['k']}:")
        for key, name in (("memmap", "f32"), ("memmap_bf16", "bf16")):
            print(f"  {name}: {m[key + '_s']:.2f} s, {m[key + '_gflops']:.0f} GFLOP/s, "
                  f"peak RSS {m[key + '_peak_rss_mb']:.0f} MB "
                  f"(working set {m[key + '_working_set_mb']:.0f} MB)")
    for p in results.get("all_pairs", []):
        real = " (real, tiled)" if p["real"] else ""
        print(f"all-pairs AUROC/EER N={p['n']} D={p['dim']} {p['labels']} labels{real} "
              f"({p['pairs']:.3g} pairs), {p['method']} "
              f"{p['level_bits']}: {p['seconds']:.1f} s, {p['pairs_per_s'] / 1e6:.0f} M pairs/s, "
              f"{p['passes']} passes, {p['refined_bins']} refined bins, {p['tile_evaluations']} tile "
              f"evaluations for {p['tiles']} tiles, peak RSS {p['peak_rss_mb']:.0f} MB, working set "
              f"{p['working_set_mb']:.0f} MB (embeddings {p['embeddings_mb']:.0f} MB), "
              f"AUROC {p['auroc']:.6f}, EER {p['eer']:.6f}")
    pairs = results.get("all_pairs", [])
    if len(pairs) > 1:
        print("  same AUROC/EER bits: " + str(len({(p["auroc"], p["eer"]) for p in pairs}) == 1)
              + ", seconds ratio " + " / ".join(f"{p['seconds'] / pairs[0]['seconds']:.2f}" for p in pairs))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000, help="candidates")
    parser.add_argument("--q", default="1000,10", help="query counts, comma-separated (same candidates)")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--block-size", type=int, default=DEFAULT_BLOCK)
    parser.add_argument("--chunk-rows", type=int, default=65536)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--aligned", action="store_true",
                        help="candidates in a 64-byte aligned array (default: an ordinary NumPy array)")
    parser.add_argument("--clusters", type=int, default=0,
                        help="clustered candidates and queries (centre + noise) instead of Gaussian")
    parser.add_argument("--spread", type=float, default=0.5, help="noise / centre scale of --clusters")
    parser.add_argument("--real", type=Path, default=None,
                        help="real [M, D] embeddings (.npy, e.g. from `stylebench embed`) tiled to --n rows")
    parser.add_argument("--tile-noise", type=float, default=0.2, help="noise norm of each --real copy")
    parser.add_argument("--memmap-gib", type=float, default=0.0,
                        help="also search a pool of this size on disk")
    parser.add_argument("--memmap-dir", default="/tmp")
    parser.add_argument("--keep-pool", action="store_true", help="keep the generated pool file")
    parser.add_argument("--pairs-n", type=int, default=0,
                        help="also time all-pairs AUROC/EER on this many items")
    parser.add_argument("--pairs-block", type=int, default=2048)
    parser.add_argument("--pairs-dim", type=int, default=0,
                        help="dimension of the all-pairs items (default: --dim); low dimensions crowd the "
                             "scores into few float32 values (hard data: the radix method needs more "
                             "refinement passes, the minority method larger tables)")
    parser.add_argument("--pairs-spread", type=float, default=0.5,
                        help="label centre scale of the all-pairs items (0: labels carry no signal)")
    parser.add_argument("--pairs-real", type=Path, default=None,
                        help="all-pairs items from real [M, D] embeddings (.npy), tiled to --pairs-n rows "
                             "with --tile-noise per copy (each copy keeps its source's label)")
    parser.add_argument("--pairs-labels", type=Path, default=None,
                        help="labels [M] (.npy) of --pairs-real, e.g. author ids")
    parser.add_argument("--pairs-methods", default="auto,radix",
                        help="all-pairs methods to time, each in its own child process (auto, minority, "
                             "radix; see kernels.pair_scores)")
    parser.add_argument("--pairs-method", default="auto", help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--part", choices=("memmap", "pairs"), default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if (args.pairs_real is None) != (args.pairs_labels is None):
        parser.error("--pairs-real and --pairs-labels go together")
    unknown = set(args.pairs_methods.split(",")) - {"auto", "minority", "radix"}
    if unknown:
        parser.error(f"--pairs-methods: expected auto, minority or radix, found {', '.join(sorted(unknown))}")
    if args.part:
        print(json.dumps(memmap_part(args) if args.part == "memmap" else pairs_part(args)))
        return 0

    results = {"machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                           "jax": jax.__version__, "devices": str(jax.devices()),
                           "accelerator": None if jax.default_backend() == "cpu"
                           else jax.devices()[0].device_kind},
               "loadavg": os.getloadavg(), "args": {k: str(v) for k, v in vars(args).items()}}
    results["peak_gflops"] = matmul_peak(args.dim)
    rng = np.random.default_rng(args.seed)
    q_counts = [int(x) for x in args.q.split(",")]
    if args.real:
        c, real_queries = tiled_rows(rng, np.load(args.real), args.n, max(q_counts), args.tile_noise,
                                     aligned=args.aligned)
    else:
        c = unit_rows(rng, args.n, args.dim, aligned=args.aligned, clusters=args.clusters, spread=args.spread)
    results["regimes"] = []
    for q_rows in q_counts:
        if args.real:
            q = real_queries[:q_rows]
        elif args.clusters:  # queries from the same clusters: the candidates' first rows, perturbed
            noise = rng.standard_normal((q_rows, args.dim), dtype=np.float32)
            q = c[:q_rows] + 0.05 * noise / args.dim ** 0.5
            q /= np.linalg.norm(q, axis=1, keepdims=True)
        else:
            q = unit_rows(rng, q_rows, args.dim)
        results["regimes"].append(run_regime(c, q, args.k, args, results["peak_gflops"]))
    del c
    argv = sys.argv[1:]
    if args.memmap_gib > 0:
        results["memmap"] = child("memmap", argv)
    if args.pairs_n > 0:
        results["all_pairs"] = [child("pairs", [*argv, "--pairs-method", method])
                                for method in args.pairs_methods.split(",")]
    results["loadavg_end"] = os.getloadavg()
    print_table(results)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
