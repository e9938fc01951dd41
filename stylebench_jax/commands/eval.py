"""`stylebench eval`: run embedders through a suite's style tasks; write results, scores and a report."""

from __future__ import annotations

import argparse
from pathlib import Path

from stylebench_jax.commands.common import (
    add_cache_arguments,
    add_data_root_argument,
    add_long_text_arguments,
    add_mesh_argument,
    build_mesh,
    check_cache_dir,
    check_output_dir,
    check_positive,
    data_root_argument,
)
from stylebench_jax.errors import UserInputError

DESCRIPTION = """\
Evaluate one or more embedders on a suite of style datasets (STEB's five task types and STEL).

For every model x dataset x subset x task the primary metric and its secondary metrics are
computed with 95% bootstrap confidence intervals (instances resampled, seeded by --seed). Each
such cell is stored on its own under DIR/cells/ as soon as it finishes, so an interrupted run
continues where it stopped (resume): re-running skips cells already computed (same model
identity, data, seed, --n-boot and stylebench code) unless --force is given.

Outputs in DIR:
  results.jsonl   one line per model x dataset x subset x task x metric:
                  {"model","dataset","subset","task","metric","primary","value","ci_low","ci_high","n"}
                  in a canonical order; the same command twice gives the same bytes. It
                  covers this command's models and datasets only (cells of other runs into
                  the same DIR stay in DIR/cells)
  skipped.jsonl   model x task combinations that cannot run (e.g. a similarity-only baseline
                  on clustering), with the reason
  scores.json     STEB operational score (needs >= 3 models) and definitional grouping
  leaderboard.md  aggregate scores; per task: datasets x models, primary metric [95% CI]
  report.html     the same with plots, one self-contained file
  run_info.json   per-cell timings, cache hits, model identities, versions, the options
                  (kept out of results.jsonl so that file stays reproducible)

Long texts: --long-text and --max-length set how neural models embed texts over their token budget
(default: our chunk-and-pool; --long-text steb: STEB's exact settings, for results compared with
STEB's). They are part of each neural model's identity, so a cell computed with other settings is
recomputed, never reused; run_info.json records them.

Models: 'minilm', a local model directory, a `stylebench train` run (its export/), or
'baseline:<name>' (e.g. baseline:char3gram,
baseline:punctuation, baseline:word_length, baseline:uppercase, baseline:levenshtein,
baseline:function_words, baseline:tfidf, baseline:stylometric).

Benchmarks you built with `stylebench data build`: --built DIR (the build's output folder) runs
AuthBench's attribution and verification on the split its config's evaluation.split names, with
the protocol of its manifest (Ks, negatives); the dataset is named by the manifest's `name`.
With --suite as well, the built benchmarks are added to the suite. A suite file may list them
too: `- built: runs/data/my_bench`.
"""

EPILOG = """\
examples:
  stylebench eval --suite stel --output runs/stel \\
      --models baseline:char3gram,baseline:punctuation,baseline:word_length,\
baseline:uppercase,baseline:levenshtein
  stylebench eval --suite quick --models minilm,baseline:char3gram,baseline:tfidf --output runs/quick
  stylebench eval --suite full --models ./my-model --datasets stel,cds_samples --output runs/mine --force
  stylebench eval --suite quick --models minilm --long-text steb --output runs/quick_steb
  stylebench data build my_bench.yaml output=runs/data/my_bench
  stylebench eval --built runs/data/my_bench --models minilm,baseline:tfidf --output runs/my_bench
"""


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "eval", help="evaluate embedders on a style benchmark suite", description=DESCRIPTION,
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", required=True, metavar="A,B,...",
                        help="comma-separated model names (see above)")
    parser.add_argument("--suite", default=None, metavar="NAME|PATH",
                        help="suite name (stel, quick, full, authbench) or a suite YAML file "
                             "(required unless --built is given)")
    parser.add_argument("--built", default=None, metavar="DIR,DIR,...",
                        help="output folders of `stylebench data build` to evaluate (added to --suite)")
    parser.add_argument("--output", required=True, metavar="DIR", help="output directory (created)")
    add_data_root_argument(parser)
    parser.add_argument("--datasets", default=None, metavar="A,B,...",
                        help="run only these datasets of the suite")
    parser.add_argument("--seed", type=int, default=0,
                        help="one seed for sampling, clustering, probes and bootstrap (default 0)")
    parser.add_argument("--n-boot", type=int, default=1000, metavar="N",
                        help="bootstrap replicates for the confidence intervals (default 1000)")
    parser.add_argument("--force", action="store_true", help="recompute cells already in DIR")
    parser.add_argument("--batch-size", type=int, default=None, metavar="N",
                        help="texts per encoder forward pass (neural models; default: the model's)")
    add_long_text_arguments(parser)
    add_mesh_argument(parser)
    add_cache_arguments(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.set_defaults(func=run)


def split_names(text: str, flag: str) -> list[str]:
    """``"a, b,c"`` -> ``["a", "b", "c"]``; empty entries and duplicates are errors."""
    names = [part.strip() for part in text.split(",")]
    if not text.strip() or any(not name for name in names):
        raise UserInputError(f"{flag}: expected a comma-separated list of names, got {text!r}")
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise UserInputError(f"{flag}: {', '.join(duplicates)} given more than once")
    return names


def run(args: argparse.Namespace) -> int:
    from stylebench_jax.evaluation.pipeline import EvalRequest, run_evaluation
    from stylebench_jax.parallel.distributed import is_primary

    check_positive(args.n_boot, "--n-boot")
    check_positive(args.batch_size, "--batch-size")
    check_positive(args.max_length, "--max-length")
    check_positive(args.seed, "--seed", allow_zero=True)
    if args.suite is None and args.built is None:
        raise UserInputError("--suite: required unless --built is given")
    built = [Path(p) for p in split_names(args.built, "--built")] if args.built else []
    check_output_dir(Path(args.output), "--output")
    if not args.no_cache:
        check_cache_dir(args.cache_dir)
    data_root = data_root_argument(args)
    request = EvalRequest(
        models=split_names(args.models, "--models"), suite=args.suite, output_dir=Path(args.output),
        data_root=data_root, seed=args.seed, n_boot=args.n_boot, force=args.force,
        datasets=split_names(args.datasets, "--datasets") if args.datasets else None,
        mesh=build_mesh(args.mesh), batch_size=args.batch_size, long_text=args.long_text,
        max_length=args.max_length,
        cache_dir=Path(args.cache_dir) if args.cache_dir else None, use_cache=not args.no_cache,
        progress=not args.quiet, built=built,
        options={k: v for k, v in sorted(vars(args).items()) if k not in ("func", "command")})
    outcome = run_evaluation(request)
    if is_primary():
        print(outcome.summary())
    return 0
