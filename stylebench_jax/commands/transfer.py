"""`stylebench transfer`: the Writing7 LLM style-transfer benchmark (seed 003 §7)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from stylebench_jax.commands.common import (
    add_cache_arguments,
    add_mesh_argument,
    build_mesh,
    check_cache_dir,
    check_output_dir,
    default_data_root,
)

DESCRIPTION = """\
Ask generator backends to write a story on a science-fiction topic in the style of a reference
excerpt (15 consecutive sentences of a classic novel), and score every story against its excerpt
with the calibrated style similarity of `stylebench calibrate`.

CONFIG (configs/transfer/*.yaml, schema in stylebench_jax/transfer/config.py) names the books,
excerpts, prompt files, backends and scorer. HTTP backends read their API key from the environment
variable the config names (api_key_env); keys are never written anywhere.

DIR receives config.json, excerpts.jsonl, generations.jsonl and trace.jsonl (written as the run
goes), results.json (aggregates per run, excerpt, book, author, topic; x100 too),
transfer.md/.html with figures, and run_info.json (wall-clock timings of every invocation, per
stage and per story; the only file that differs when the same command runs twice). Run the same
command again to resume an interrupted run: nothing already generated is generated again; items
skipped because a quota ran out are generated then. A config or data the run cannot use is
refused before DIR is created or written to.
"""

EPILOG = """\
examples:
  stylebench calibrate --model minilm --pairs runs/pairs/novels --output runs/calib/minilm
  stylebench transfer --config configs/transfer/writing7_local.yaml --output runs/transfer/local
  OPENAI_API_KEY=... ANTHROPIC_API_KEY=... stylebench transfer \\
      --config configs/transfer/writing7_llms.yaml --output runs/transfer/llms
"""


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "transfer", help="LLM style-transfer benchmark with calibrated style similarity (Writing7)",
        description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", required=True, type=Path, help="transfer config YAML")
    parser.add_argument("overrides", nargs="*", default=[], metavar="key=value", help="config overrides")
    parser.add_argument("--output", required=True, type=Path, metavar="DIR",
                        help="run directory (created; the same command on it resumes an interrupted run)")
    parser.add_argument("--data-root", default=None, type=Path,
                        help="datasets folder (default: the config's data_root, $STYLEBENCH_DATA, "
                             "../shared/data)")
    add_mesh_argument(parser)
    add_cache_arguments(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import dataclasses

    from stylebench_jax.cache import EmbeddingCache
    from stylebench_jax.config import InvalidField, load_config, locate_field
    from stylebench_jax.transfer.config import TransferConfig
    from stylebench_jax.transfer.pipeline import run_transfer

    config = load_config(args.config, TransferConfig, args.overrides)
    data_root = args.data_root or config.data_root or default_data_root()
    config = dataclasses.replace(config, data_root=data_root)
    check_output_dir(args.output, "--output")
    if not args.no_cache:
        check_cache_dir(args.cache_dir)
    mesh = build_mesh(args.mesh)
    cache = EmbeddingCache(args.cache_dir, enabled=not args.no_cache)
    try:
        results = run_transfer(config, args.output, mesh=mesh, cache=cache, progress=not args.quiet)
    except InvalidField as error:  # a value the data cannot satisfy (a book too short for the excerpts)
        raise locate_field(args.config, TransferConfig, list(args.overrides), error) from None
    if not args.quiet:
        parts = []
        for backend, run_ in results["runs"].items():
            s = run_["score_calibrated"] if run_["score_calibrated"].get("n") else run_["cosine"]
            mean = s.get("mean_x100")
            parts.append(f"{backend} {mean:.1f}" if mean is not None else f"{backend} -")
        calibrated = any(run_["score_calibrated"].get("n") for run_ in results["runs"].values())
        label = "calibrated score" if calibrated else "cosine (no calibration)"
        print(f"stylebench transfer: {label} x100: {'; '.join(parts)}; wrote {args.output}", file=sys.stderr)
    return 0
