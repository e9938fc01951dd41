"""`stylebench raven`: RAVEN/HITS topic-leakage test of authorship-verification methods on a corpus."""

from __future__ import annotations

import argparse
from pathlib import Path

from stylebench_jax.commands.common import (
    add_cache_arguments,
    add_data_root_argument,
    check_output_dir,
    data_root_argument,
)
from stylebench_jax.errors import UserInputError

DESCRIPTION = """\
RAVEN/HITS (Sawatphol et al.): is a verification model right for the wrong reason (topic)?

HITS samples m topics that are as dissimilar as possible (greedy: lowest leakage mean(S) * max(S)
against the topics already chosen, topic vectors = mean document embedding); random samples of m
topics (one per seed) are the control. Each dataset is split into k folds whose test topics are
disjoint from their training topics; every document gets one same-author pair (where its author has
another document on that side) and one different-author pair. The AV methods are trained per fold
on the training pairs and scored on the test pairs with PAN's metrics (AUC, c@1, F0.5u, F1, Brier;
0.5 = non-answer):
  char_ngram  TF-IDF character 4-grams, cosine, p1/p2 calibration (PAN 2021 baseline)
  ppm         PAN's compression baseline (order-5 cross-entropies -> logistic regression)
  topic_fit   frequent words masked, word unigrams, p1/p2 (RAVEN's topic-fit model)
  <embedder>  any embedder's cosine with p1/p2 ('minilm', 'baseline:function_words', a model dir)

Outputs in DIR:
  raven.json     topic_similarity.{hits,random}.{mean,max} (Table 7, and a sweep over m), the
                 most similar train/test topics (Table 6), per-model metrics on HITS and random with
                 t-tests (Table 2), the topic-shortcut table (Table 11), ranking stability (Table 4),
                 mean ranks (Table 5), dataset sizes and every fold's scores. Same config, same bytes.
  raven.md, raven.html   the tables and plots (raven_*.png)
  run_info.json  timings, reused/computed fold results, cache use
  folds/         one file per dataset x fold x method (test probabilities): resume. A re-run reuses
                 every result whose fingerprint (method, data, pairs, code) matches; --force recomputes.
Embeddings go through the embedding cache, so a second run does no encoder work.

The config (configs/raven/*.yaml) is validated before any work: a bad key or value is reported
as FILE:LINE: key.path: problem. key=value arguments override config keys, e.g.
sampling.n_topics=40 methods.embedders=[minilm].
"""

EPILOG = """\
examples:
  stylebench raven --config configs/raven/bible.yaml --output runs/raven-bible
  stylebench raven --config configs/raven/reuters.yaml --output runs/raven-reuters sampling.n_topics=20
"""


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "raven", help="RAVEN/HITS topic-shortcut test and ranking stability of AV methods",
        description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", required=True, metavar="YAML", help="a configs/raven/*.yaml file")
    parser.add_argument("--output", required=True, metavar="DIR", help="output directory (created)")
    parser.add_argument("overrides", nargs="*", default=[], metavar="key=value", help="config overrides")
    add_data_root_argument(parser)
    add_cache_arguments(parser)
    parser.add_argument("--force", action="store_true", help="recompute fold results already in DIR")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from stylebench_jax.config import InvalidField, load_config, locate_field
    from stylebench_jax.raven.config import RavenConfig

    output = Path(args.output)
    check_output_dir(output, "--output")
    config_path = Path(args.config)
    config = load_config(config_path, RavenConfig, args.overrides)
    data_root = data_root_argument(args)
    try:
        import matplotlib  # noqa: F401  (the report needs it; fail before the work, not after)
    except ImportError:
        raise UserInputError("the RAVEN report needs matplotlib: "
                             "pip install 'stylebench_jax[raven]'") from None

    from stylebench_jax.raven.pipeline import RavenRequest, run_raven, write_json
    from stylebench_jax.report.raven import write_raven_report

    request = RavenRequest(config=config, output_dir=output, data_root=data_root,
                           cache_dir=Path(args.cache_dir) if args.cache_dir else None,
                           use_cache=not args.no_cache, force=args.force, progress=not args.quiet)
    try:
        outcome = run_raven(request)
    except InvalidField as error:
        raise locate_field(config_path, RavenConfig, list(args.overrides), error) from None
    write_json(output / "raven.json", outcome.report)
    paths = write_raven_report(output, outcome.report)
    outcome.run_info["command"] = {"config": str(config_path), "overrides": list(args.overrides),
                                   "data_root": str(data_root), "force": args.force}
    write_json(output / "run_info.json", outcome.run_info)
    print(_summary(outcome, output, paths))
    return 0


def _summary(outcome, output: Path, paths: dict) -> str:
    report = outcome.report
    sim = report["topic_similarity"]
    lines = [f"raven: {outcome.computed} fold results computed, {outcome.reused} reused, "
             f"{outcome.run_info['timing']['wall_seconds']:.1f} s",
             f"  topic similarity mean/max: HITS {sim['hits']['mean']:.3f}/{sim['hits']['max']:.3f}, "
             f"random {sim['random']['mean']:.3f}/{sim['random']['max']:.3f}"]
    for row in report["shortcut"]["rows"]:
        lines.append(f"  {row['model']:<26} overall random {row['random']:.3f}  HITS {row['hits']:.3f}  "
                     f"diff {row['diff']:.3f}")
    files = (("raven.json", output / "raven.json"), ("report", paths["html"]),
             ("markdown", paths["markdown"]))
    lines += [f"  {name:<12} {path}" for name, path in files]
    return "\n".join(lines)
