"""`stylebench train CONFIG [key=value ...] --output RUN`: train a style encoder (Writing7 bi-encoder)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from stylebench_jax.commands.common import add_mesh_argument, build_mesh, check_output_dir

DESCRIPTION = """\
Train a contrastive style bi-encoder (Writing7, seed 003 §4) on pairs from `stylebench prepare-pairs`
(or on a JSONL of texts with group labels), data-parallel over the device mesh with in-batch
negatives from every device, and export the trained encoder for `stylebench embed/eval`.

CONFIG is a YAML file (configs/train/*.yaml) checked against the schema in
stylebench_jax/training/config.py before any work; key=value arguments override it
(e.g. trainer.batch_size=64 optim.learning_rate=3e-5 trainer.embed_chunk=32).

RUN receives config.json, metrics.jsonl (one line per logging step and per evaluation),
checkpoints/ and best/ (orbax), export/ (a model directory: stylebench eval --models RUN/export)
and summary.json. Re-running the same command on RUN resumes from its latest checkpoint;
SIGTERM or Ctrl-C saves a checkpoint and stops cleanly. trainer.batch_size is the global batch (all
devices, all processes; each device holds batch_size / devices pairs).
"""

EPILOG = """\
examples:
  stylebench prepare-pairs configs/pairs/novels.yaml
  stylebench train configs/train/minilm_writing7.yaml --output runs/train/minilm
  stylebench train configs/train/minilm_writing7.yaml trainer.steps=50 --output runs/train/smoke
  stylebench eval --models minilm,runs/train/minilm/export --suite quick --output runs/quick_trained
"""


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "train", help="train a style encoder (contrastive bi-encoder) and export it",
        description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", type=Path, help="training config YAML")
    parser.add_argument("overrides", nargs="*", default=[], metavar="key=value", help="config overrides")
    parser.add_argument("--output", required=True, type=Path, metavar="RUN",
                        help="run directory (resumed if it holds a checkpoint)")
    add_mesh_argument(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from stylebench_jax.config import load_config
    from stylebench_jax.parallel.distributed import check_shared_directory, is_primary
    from stylebench_jax.training.config import TrainConfig
    from stylebench_jax.training.run import train

    config = load_config(args.config, TrainConfig, args.overrides)
    check_output_dir(args.output, "--output")
    mesh = build_mesh(args.mesh)
    check_shared_directory(args.output, "--output")  # several processes: one run directory for all
    result = train(config, args.output, mesh=mesh, progress=not args.quiet)
    if not is_primary():  # one process speaks for a multi-process run
        return 0
    if result.stopped == "signal":
        print(f"stylebench train: stopped by a signal at step {result.steps}; checkpoint saved in "
              f"{args.output}; run the same command again to resume", file=sys.stderr)
        return 0
    best = result.best_metrics or {}
    print(f"stylebench train: {result.steps} steps ({result.stopped}); best step {result.best_step}: "
          f"validation balanced accuracy {best.get('balanced_accuracy', float('nan')):.4f}, "
          f"cosine ROC-AUC {best.get('auroc_cosine', float('nan')):.4f}; encoder exported to "
          f"{result.export_dir}", file=sys.stderr)
    return 0
