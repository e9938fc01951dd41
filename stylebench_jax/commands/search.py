"""`stylebench search`: exact top-k cosine neighbours of query rows in a candidate pool.

Reads float ``.npy`` matrices (the candidate pool block by block, never whole), writes one JSON
line per query: ``{"query": i, "indices": [...], "scores": [...]}``, best first, ties by lower
candidate index. Queries with fewer than k admissible candidates get shorter lists.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from stylebench_jax.commands.common import add_mesh_argument, build_mesh, check_output_file, check_positive
from stylebench_jax.errors import UserInputError, located
from stylebench_jax.fileio import input_file_problem

NORM_TOLERANCE = 1e-3
HEAD_ROWS = 8192  # candidate rows whose norms are checked before the search (12 MiB at D = 384)

EPILOG = """\
examples:
  stylebench search --queries q.npy --candidates c.npy --k 100 --output hits.jsonl
  stylebench search --queries c.npy --candidates c.npy --k 10 --exclude-self --output nn.jsonl
  stylebench search --queries q.npy --candidates pool.npy --k 50 --output hard.jsonl \\
      --query-groups q_books.npy --candidate-groups pool_books.npy --mesh data=8 --bf16

Rows must be L2-normalised (scores are cosines) unless --normalize is given. The candidate file is
read in blocks with a bounded working set, so pools larger than memory work. --bf16 scores with a
bfloat16 matmul and re-scores a shortlist in float32; the top k stays exact (certified per query;
an uncertified query first gets a longer shortlist from a second bfloat16 pass, and is searched again
in float32 only when that would be too long). Without --bf16 the search runs in float32: on a CPU
in the C++ scan (kernels/cpu_topk.cc: no score matrix; 0.64-0.71x faiss IndexFlatIP's time on a
2-core AVX2 EPYC, below faiss on a 2-core AVX-512 one too, README's Benchmarks), else (accelerators,
no compiler or AVX2) in XLA's blocked scan (the summary line names the scan). On CPUs with bfloat16
dot instructions --bf16 can be ~8% faster on well-separated pools but was 1.5-2.4x slower on real
and clustered ones (their close scores fail the certificate), so float32 stays the default.
"""


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "search", help="exact top-k cosine search of query rows in a candidate .npy pool",
        description="Exact blocked top-k cosine search, sharded over the device mesh.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", required=True, type=Path, help="float .npy [Q, D]")
    parser.add_argument("--candidates", required=True, type=Path, help="float .npy [N, D] (read by blocks)")
    parser.add_argument("--k", required=True, type=int,
                        help="neighbours per query (a line lists fewer when the pool, less "
                             "--exclude-self and the group exclusions, holds fewer; a large --k lists all)")
    parser.add_argument("--output", required=True, type=Path, help="output .jsonl, one line per query")
    parser.add_argument("--exclude-self", action="store_true",
                        help="never return candidate i for query i (queries are the pool's first rows)")
    parser.add_argument("--query-groups", type=Path, default=None,
                        help="int .npy [Q]: group (author/book) of each query")
    parser.add_argument("--candidate-groups", type=Path, default=None,
                        help="int .npy [N]: group of each candidate; same-group candidates are skipped")
    parser.add_argument("--block-size", type=int, default=None,
                        help="candidate rows per device per matmul of XLA's scan, and the unit of "
                             "each device call's rows (default: 32768)")
    parser.add_argument("--query-batch", type=int, default=1024,
                        help="queries scored together (default: 1024)")
    parser.add_argument("--bf16", action="store_true", help="bfloat16 matmul + certified float32 re-scoring")
    parser.add_argument("--normalize", action="store_true", help="L2-normalise rows before scoring")
    add_mesh_argument(parser)
    parser.add_argument("--quiet", action="store_true", help="no summary on stderr")
    parser.set_defaults(func=run)


def _load_queries(path: Path, normalize: bool) -> np.ndarray:
    from stylebench_jax.kernels.npy_rows import read_npy_header
    from stylebench_jax.kernels.topk import row_blocks_f64

    _, shape, _ = read_npy_header(path, fortran_ok=True)  # loaded whole: any order
    if shape[0] == 0:
        raise located(path, "no query rows; expected a float .npy [Q, D] with Q >= 1")
    raw = np.load(path, allow_pickle=False)
    q = np.empty(raw.shape, np.float32)
    for start, wide, norms in row_blocks_f64(raw):  # checked and normalised in float64
        bad = np.flatnonzero(~np.isfinite(wide).all(axis=1))
        if bad.size:
            raise located(path, f"row {start + bad[0]}: NaN or infinity in the embedding")
        if normalize:
            zero = np.flatnonzero(norms == 0)
            if zero.size:
                raise located(path, f"row {start + zero[0]}: all zeros, so it has no direction to "
                                    "normalise (a cosine with it is undefined)")
            wide /= norms[:, None]
        else:
            off = np.flatnonzero(np.abs(norms - 1.0) > NORM_TOLERANCE)
            if off.size:
                raise located(path, f"row {start + off[0]}: L2 norm {norms[off[0]]:.4g}, expected 1 "
                                    "(normalise the rows or pass --normalize)")
        q[start:start + len(wide)] = wide
    return q


def _first_off_norm(pool, block: int, normalize: bool, stop: int | None = None) -> tuple[int, float]:
    """``(row, norm)`` of the first candidate row (of the first ``stop``) the scan could not score as a
    unit row: with ``normalize`` one whose float32 squared norm is 0 (the scan's rule,
    ``scan.row_scale``) or subnormal (which the scan's threads flush to 0), else one whose L2 norm is
    off 1 by more than ``NORM_TOLERANCE``; ``(-1, nan)`` if none."""
    end = len(pool) if stop is None else min(stop, len(pool))
    for start in range(0, end, block):
        rows = pool.read(start, min(start + block, end))
        sq = np.einsum("ij,ij->i", rows, rows)
        if normalize:
            off = sq < np.finfo(np.float32).tiny
        else:
            off = np.abs(np.sqrt(sq.astype(np.float64)) - 1.0) > NORM_TOLERANCE
        if off.any():
            i = int(np.flatnonzero(off)[0])
            return start + i, float(np.sqrt(sq[i]))
    return -1, float("nan")


def _off_norm_error(path, normalize: bool, row: int, norm: float, span: str = "") -> UserInputError:
    """The error for a candidate row the search cannot score (``_first_off_norm``); ``span``: what the
    whole scan saw of the norms, when it ran."""
    if normalize:
        return located(path, f"row {row}: all zeros or too small to normalise in float32 (a cosine with "
                             "it is undefined)")
    # -1: the row sits at the tolerance's edge, where the scan's float32 sum and NumPy's differ
    where = f"row {row}: L2 norm {norm:.4g}, expected 1" if row >= 0 else "a row's L2 norm is off 1"
    return located(path, f"{where}{span}; normalise the rows or pass --normalize")


def _load_groups(path: Path | None, n: int, what: str) -> np.ndarray | None:
    if path is None:
        return None
    problem = input_file_problem(path)
    if problem is not None:
        raise located(path, problem)
    with open(path, "rb") as handle:
        if handle.read(6) != b"\x93NUMPY":
            raise located(path, f"not a .npy file (no NumPy header); expected int {what} labels [{n}]")
    try:
        groups = np.load(path, allow_pickle=False)
    except ValueError as error:
        raise located(path, f"not a readable .npy file ({error})") from None
    if groups.shape != (n,):
        raise located(path, f"expected {what} labels of shape ({n},), found {groups.shape}")
    if groups.dtype.kind not in "iu":
        raise located(path, f"expected integer {what} labels, found dtype {groups.dtype}")
    if n and (groups.min() < np.iinfo(np.int32).min or groups.max() > np.iinfo(np.int32).max):
        raise located(path, f"{what} labels must fit in int32")
    return groups


def _hits(result):
    for i, (idx, scores) in enumerate(zip(result.indices, result.scores)):
        keep = idx >= 0
        yield {"query": i, "indices": idx[keep].tolist(),
               "scores": [float(f"{s:.9g}") for s in scores[keep].tolist()]}


def run(args: argparse.Namespace) -> int:
    from stylebench_jax.fileio import write_jsonl_atomic
    from stylebench_jax.kernels.npy_rows import NpyRows
    from stylebench_jax.kernels.scan import DEFAULT_BLOCK
    from stylebench_jax.kernels.topk import NonFiniteRowError, topk_cosine
    from stylebench_jax.parallel.distributed import is_primary
    from stylebench_jax.progress import progress_bar

    check_positive(args.k, "--k")
    check_positive(args.block_size, "--block-size")
    check_positive(args.query_batch, "--query-batch")
    if (args.query_groups is None) != (args.candidate_groups is None):
        raise UserInputError("--query-groups and --candidate-groups must be given together")
    check_output_file(args.output, "--output", suffix=".jsonl",
                      inputs=[args.queries, args.candidates, args.query_groups, args.candidate_groups])
    mesh = build_mesh(args.mesh)
    queries = _load_queries(args.queries, args.normalize)
    pool = NpyRows(args.candidates)
    if pool.shape[1] != queries.shape[1]:
        raise located(args.candidates, f"rows have dimension {pool.shape[1]}, the queries in "
                                       f"{args.queries} have {queries.shape[1]}")
    if pool.shape[0] == 0:
        raise located(args.candidates, "the candidate pool is empty")
    if args.exclude_self and queries.shape[0] > pool.shape[0]:
        raise UserInputError(f"--exclude-self: query i is candidate i, so the {queries.shape[0]} queries in "
                             f"{args.queries} cannot outnumber the {pool.shape[0]} candidates in "
                             f"{args.candidates}")
    query_groups = _load_groups(args.query_groups, queries.shape[0], "query group")
    candidate_groups = _load_groups(args.candidate_groups, pool.shape[0], "candidate group")
    # the scan checks every row's norm as it goes (no second pass over the pool): the head is looked
    # at now, so a pool that is not normalised at all is refused before the search, not after it
    row, norm = _first_off_norm(pool, HEAD_ROWS, args.normalize, stop=HEAD_ROWS)
    if row >= 0:
        raise _off_norm_error(args.candidates, args.normalize, row, norm)
    start = time.perf_counter()
    batches = -(-queries.shape[0] // args.query_batch)
    # delay: searches under a second (and bad input found early) print no bar at all
    bar = progress_bar(total=pool.shape[0] * batches, desc="search", unit="row", unit_scale=True,
                       enabled=not args.quiet, delay=1.0)

    def advance(rows: int) -> None:
        if bar.n + rows > bar.total:  # queries searched again in float32 (--bf16)
            bar.total = bar.n + rows
        bar.update(rows)

    finished = False
    try:
        result = topk_cosine(
            queries, pool, args.k, mesh=mesh, block_size=args.block_size or DEFAULT_BLOCK,
            exclude_self=args.exclude_self, query_groups=query_groups, candidate_groups=candidate_groups,
            precision="bfloat16" if args.bf16 else "float32", normalize=args.normalize,
            query_batch=args.query_batch, progress=advance)
        finished = True
    except NonFiniteRowError as error:
        raise located(args.candidates, f"row {error.row}: NaN or infinity in the embedding, or values "
                                       "too large to square in float32 (|x| above ~1e18; rescale the "
                                       "rows)") from None
    finally:
        bar.leave = finished  # on failure the error line alone, not a half-full bar above it
        bar.close()
    # the scan keeps only the norms' range; the first offending row is looked up now (an error path)
    low, high = result.norm_range
    if args.normalize and low < 0.5:  # a row normalised to norm 0: all zeros, or too small for float32
        row, _ = _first_off_norm(pool, args.block_size or DEFAULT_BLOCK, True)
        raise _off_norm_error(args.candidates, True, row, 0.0)
    if not args.normalize and not (abs(low - 1) <= NORM_TOLERANCE and abs(high - 1) <= NORM_TOLERANCE):
        row, norm = _first_off_norm(pool, args.block_size or DEFAULT_BLOCK, False)
        raise _off_norm_error(args.candidates, False, row, norm,
                              f" (norms range from {low:.4g} to {high:.4g})")
    write_jsonl_atomic(args.output, _hits(result))  # the primary process only (fileio)
    if not args.quiet and is_primary():
        seconds = time.perf_counter() - start
        extra = (f", {result.n_grown} certified by a grown shortlist, {result.n_recomputed} re-searched in "
                 "float32" if args.bf16 else "")
        print(f"stylebench search: {queries.shape[0]} queries x {pool.shape[0]} candidates, k={args.k}, "
              f"{seconds:.2f} s on mesh {dict(mesh.shape)} ({result.precision}, {_scan_name(result.kernel)})"
              f"{extra} -> {args.output}", file=sys.stderr)
    return 0


def _scan_name(kernel: str) -> str:
    """What the summary line says about the scan that ran (``TopK.kernel``)."""
    return "C++ scan" if kernel == "native" else "XLA scan"
