"""`stylebench calibrate`: calibrated style similarity for any embedder, and temperature scaling of a
trained bi-encoder's classifier head (Writing7, seed 003 §5)."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from stylebench_jax.commands.common import build_mesh, check_output_dir, check_positive
from stylebench_jax.commands.style_args import (
    add_embedder_arguments,
    add_style_arguments,
    build_embedder,
    check_embedder_arguments,
    embedding_cache,
    style_settings,
)
from stylebench_jax.errors import UserInputError

DESCRIPTION = """\
Fit a monotone map from an embedder's style cosine to P(same style) on labelled pairs (Platt or
isotonic, chosen by 5-fold GroupKFold on Brier or ECE) and evaluate it on held-out pairs; for a
`stylebench train` run also fit temperature scaling and a decision threshold for its classifier.

Pairs: --pairs names a `stylebench prepare-pairs` directory (fit on --split, default validation;
evaluate on --eval-split, default test) or a .jsonl file of {text1, text2, label[, book1, book2,
author1, author2, topic1, topic2]}. Without --pairs a training run's own prepare-pairs directory is
used. Cosines are computed under the inference settings given (the same ones `stylebench score`
must use: the calibration file refuses others).

DIR receives style_calibration.json (the seed's schema + the embedder identity), calibration.json
(classifier: temperature, threshold; training runs only), calibration_report.json,
calibration.md/.html and reliability diagrams (reliability_similarity_<split>.png,
reliability_classifier_<split>.png). DIR may hold an earlier calibration: its files are replaced,
and those of this command the new run does not produce (a calibration.json when the classifier is
not calibrated this time, the figure of a split no longer evaluated) are removed, so that nothing
stale is left beside the new results; other files in DIR are left alone. Nothing is written
before every result is computed, so a run that fails on its inputs or models leaves DIR as it was.
"""

EPILOG = """\
examples:
  stylebench calibrate --model minilm --pairs runs/pairs/novels --output runs/calib/minilm
  stylebench calibrate --model runs/train/minilm_writing7 --output runs/calib/trained --min-recall 0.8
  stylebench calibrate --model minilm --pairs dev_pairs.jsonl --method logistic --aggregate topk_mean \\
      --output runs/calib/minilm_topk
"""


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "calibrate", help="calibrate style similarity (any embedder) and a trained classifier head",
        description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_embedder_arguments(parser)
    parser.add_argument("--pairs", type=Path, default=None,
                        help="prepare-pairs directory or .jsonl of labelled pairs (default: a training "
                             "run's own pairs)")
    parser.add_argument("--split", default=None,
                        help="split of a prepare-pairs directory to fit on (default: validation)")
    parser.add_argument("--eval-split", default=None,
                        help="held-out split to evaluate on, '' for none (default: test when present)")
    parser.add_argument("--max-pairs", type=int, default=None,
                        help="use at most this many pairs of each pair set of the similarity "
                             "calibration, a uniform draw seeded by --seed (default: all); a training "
                             "run's classifier head is always calibrated on its whole split")
    parser.add_argument("--method", choices=("auto", "logistic", "isotonic"), default="auto",
                        help="cosine -> probability map: logistic (Platt scaling), isotonic (needs more "
                             "than 1000 fitting pairs), or auto: the one with the better cross-validated "
                             "--cv-metric (logistic only at 1000 pairs or fewer) (default: auto)")
    parser.add_argument("--cv-metric", choices=("brier", "ece"), default="brier",
                        help="score that auto uses to choose the map over the --n-splits folds, lower is "
                             "better: brier (mean squared error of the probabilities) or ece (expected "
                             "calibration error, 15 bins) (default: brier)")
    parser.add_argument("--n-splits", type=int, default=5,
                        help="cross-validation folds, at least 2 (default: 5): GroupKFold needs at least "
                             "this many distinct --group-by groups among the fitting pairs; with fewer it "
                             "falls back to StratifiedKFold, which needs at least this many pairs of each "
                             "label")
    parser.add_argument("--group-by", choices=("book", "author"), default="book",
                        help="GroupKFold groups: each pair's first book or author (default: book)")
    parser.add_argument("--no-classifier", action="store_true",
                        help="training runs: skip the classifier's temperature scaling (no calibration.json)")
    parser.add_argument("--threshold-metric", choices=("balanced_accuracy", "accuracy", "f1"),
                        default="balanced_accuracy",
                        help="training runs: the classifier's decision threshold (0.01..0.99) is the one "
                             "maximising this metric on the fitting split, within --min-accuracy and "
                             "--min-recall (default: balanced_accuracy)")
    parser.add_argument("--min-accuracy", type=float, nargs="?", const=0.85, default=None,
                        help="training runs: only thresholds with at least this accuracy, a number in "
                             "[0, 1] (0.85 when given without a value; default: no constraint)")
    parser.add_argument("--min-recall", type=float, nargs="?", const=0.80, default=None,
                        help="training runs: only thresholds with at least this recall of same-style "
                             "pairs, a number in [0, 1] (0.80 when given without a value; default: no "
                             "constraint)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the --max-pairs draw and of StratifiedKFold's shuffle (default: 0)")
    parser.add_argument("--output", required=True, type=Path, metavar="DIR",
                        help="directory for the calibration files (created, with missing parents, if absent; "
                             "this command's stale files in it are replaced or removed, see above)")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress bars, warnings or summary line on stderr (errors still print)")
    add_style_arguments(parser)
    parser.set_defaults(func=run)


def split_run(model: str) -> tuple[str, Path | None]:
    """``(embedder name, training run or None)``: a `stylebench train` run directory (or its
    ``export/``) scores with ``RUN/export`` and calibrates ``RUN``'s classifier."""
    from stylebench_jax.encoders.registry import train_run_export

    path = Path(model)
    if path.is_dir() and (export := train_run_export(path)) is not None:
        return str(export), path
    if path.name == "export" and path.is_dir() and train_run_export(path.parent) is not None:
        return str(path), path.parent
    return model, None


def _run_pairs_dir(run: Path) -> Path:
    from stylebench_jax.fileio import read_json_file

    pairs = ((read_json_file(run / "config.json") or {}).get("data") or {}).get("pairs")
    if not pairs:
        raise UserInputError(f"--model {run}: the run was not trained on prepare-pairs pairs; pass --pairs")
    return Path(pairs)


def run(args: argparse.Namespace) -> int:
    from stylebench_jax.calibration.files import write_json
    from stylebench_jax.calibration.pairs import load_calibration_pairs
    from stylebench_jax.calibration.run import CalibrateOptions, calibrate_similarity
    from stylebench_jax.fileio import json_ready, write_text_atomic
    from stylebench_jax.report.calibration import write_calibration_report

    check_output_dir(args.output, "--output")
    check_embedder_arguments(args)
    check_positive(args.max_pairs, "--max-pairs")
    if not 0 <= args.seed < 2**32:
        raise UserInputError(f"--seed {args.seed}: expected an integer in [0, 2**32) (scikit-learn's "
                             "random_state range)")
    check_positive(args.n_splits, "--n-splits")
    if args.n_splits < 2:
        raise UserInputError(f"--n-splits: expected at least 2 folds, got {args.n_splits}")
    _check_unit(args.min_accuracy, "--min-accuracy")
    _check_unit(args.min_recall, "--min-recall")
    settings = style_settings(args)
    name, run_dir = split_run(args.model)
    _check_classifier_flags(args, run_dir)
    source = args.pairs or (_run_pairs_dir(run_dir) if run_dir else None)
    if source is None:
        raise UserInputError("--pairs: give a prepare-pairs directory or a .jsonl of labelled pairs (only a "
                             "training run brings its own)")
    if args.split is not None and not Path(source).is_dir():
        raise UserInputError(f"--split {args.split}: needs --pairs to be a prepare-pairs directory (a .jsonl "
                             "of pairs has no splits)")
    args.split = args.split or "validation"
    fit = _draw(load_calibration_pairs(source, args.split), args, args.split, "calibration")
    _check_folds(fit, args)
    eval_split = _eval_split(args, Path(source))
    evaluations = {}
    if eval_split:
        evaluations[eval_split] = _draw(load_calibration_pairs(source, eval_split), args, eval_split,
                                        "evaluation")
    options = CalibrateOptions(method=args.method, cv_metric=args.cv_metric, n_splits=args.n_splits,
                               group_by=args.group_by, seed=args.seed, threshold_metric=args.threshold_metric,
                               min_accuracy=args.min_accuracy, min_recall=args.min_recall)
    mesh = build_mesh(args.mesh)
    embedder = build_embedder(name, args, mesh, progress=not args.quiet)
    cache = embedding_cache(args)
    try:
        payload, sim_report, curves = calibrate_similarity(embedder, fit, evaluations, settings, options,
                                                           embed_fn=cache.embed, mesh=mesh)
    except ValueError as error:
        raise UserInputError(f"calibration: {error}") from None
    report = {"model": args.model, "n_bins": options.n_bins, "similarity": sim_report}
    figures = {"similarity": {split: (cos, payload_probs(payload, cos), labels)
                              for split, (cos, labels) in curves.items()}}
    clf_payload = None
    if run_dir is not None and not args.no_classifier:  # computed before anything is written
        clf_payload, report["classifier"], figures["classifier"] = _classifier(run_dir, args, options, mesh)
    args.output.mkdir(parents=True, exist_ok=True)
    written = {write_json(args.output / "style_calibration.json", json_ready(payload)).name}
    if clf_payload is not None:
        written.add(write_json(args.output / "calibration.json", json_ready(clf_payload)).name)
    write_text_atomic(args.output / "calibration_report.json",
                      json.dumps(json_ready(report), indent=1) + "\n")
    written.add("calibration_report.json")
    written |= {Path(path).name for path in write_calibration_report(args.output, report, figures).values()}
    removed = remove_stale_outputs(args.output, written)
    if not args.quiet:
        _summary(args.output, sim_report, report.get("classifier"), cache, removed)
    return 0


# Every file this command writes into DIR (the PNGs: one per split and calibrator).
OUTPUT_FILES = ("style_calibration.json", "calibration.json", "calibration_report.json", "calibration.md",
                "calibration.html")
OUTPUT_PATTERNS = ("reliability_similarity_*.png", "reliability_classifier_*.png")


def remove_stale_outputs(output: Path, written: set[str]) -> list[str]:
    """Remove this command's own files in ``output`` that this run did not write (an earlier run's
    calibration.json or figure of another split), so DIR describes this run only; the names removed,
    sorted. Other files are never touched."""
    candidates = {output / name for name in OUTPUT_FILES}
    candidates |= {path for pattern in OUTPUT_PATTERNS for path in output.glob(pattern)}
    removed = []
    for path in sorted(candidates):
        if path.name not in written and path.is_file():
            path.unlink()
            removed.append(path.name)
    return removed


CLASSIFIER_FLAGS = (("--threshold-metric", "threshold_metric", "balanced_accuracy"),
                    ("--min-accuracy", "min_accuracy", None), ("--min-recall", "min_recall", None))


def _check_classifier_flags(args, run_dir: Path | None) -> None:
    """The classifier's threshold options are refused where no classifier is calibrated (they would
    change nothing)."""
    given = [flag for flag, name, default in CLASSIFIER_FLAGS if getattr(args, name) != default]
    if not given or (run_dir is not None and not args.no_classifier):
        return
    why = ("--no-classifier skips it" if run_dir is not None
           else f"--model {args.model} is not a stylebench train run (only a run has one)")
    raise UserInputError(f"{', '.join(given)}: options of a training run's classifier threshold; {why}")


def _check_unit(value: float | None, flag: str) -> None:
    """A threshold constraint: None, or a number in [0, 1]."""
    if value is not None and not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise UserInputError(f"{flag}: expected a number in [0, 1], found {value:g}")


def _draw(pairs, args, split: str, use: str):
    """The ``--max-pairs`` draw of ``pairs`` (before any embedding); a draw of one label only is
    refused (``use`` needs both; the pairs themselves hold both: ``load_calibration_pairs``)."""
    drawn = pairs.subsample(args.max_pairs, args.seed)
    if drawn is not pairs and int(drawn.labels.sum()) in (0, len(drawn)):
        raise UserInputError(f"--max-pairs {args.max_pairs}: the seeded draw (--seed {args.seed}) of "
                             f"{pairs.source}'s {split!r} pairs has one label only; {use} needs both: "
                             "raise --max-pairs or change --seed")
    return drawn


def _check_folds(fit, args) -> None:
    """Before any embedding: enough fitting pairs for --n-splits folds
    (``calibration.similarity.fold_problem``) and, for ``--method isotonic``, for isotonic at all."""
    from stylebench_jax.calibration.similarity import ISOTONIC_MIN_PAIRS, fold_problem

    if args.method == "isotonic" and len(fit) <= ISOTONIC_MIN_PAIRS:
        raise UserInputError(f"--method isotonic: needs more than {ISOTONIC_MIN_PAIRS} fitting pairs (seed "
                             f"§5.2), {fit.source} gives {len(fit)}; use --method logistic or auto")
    groups = fit.groups(args.group_by)
    problem = fold_problem(fit.labels, groups, args.n_splits, group_word=f"{args.group_by}s")
    if problem:
        raise UserInputError(f"--n-splits {args.n_splits}: {problem} in {fit.source}; lower --n-splits "
                             "or give more pairs")


def _eval_split(args, source: Path) -> str | None:
    """``--eval-split`` when given (it must exist), else ``test`` when the source has it."""
    if args.eval_split is not None:
        if args.eval_split and not source.is_dir():
            raise UserInputError("--eval-split: needs --pairs to be a prepare-pairs directory")
        if args.eval_split and args.eval_split == args.split:  # reported as held out, it was in-sample
            raise UserInputError(f"--eval-split {args.eval_split}: the calibration is fitted on that split "
                                 "(--split); name another split, or '' for no evaluation")
        return args.eval_split or None
    if not source.is_dir() or args.split == "test":
        return None
    from stylebench_jax.data.pairs.output import load_pairs

    return "test" if load_pairs(source, "test").get("label") else None


def payload_probs(payload: dict, cosines):
    from stylebench_jax.calibration.similarity import SimilarityMap

    return SimilarityMap.from_dict(payload["style_calibration"])(cosines)


def _classifier(run_dir: Path, args, options, mesh):
    from stylebench_jax.calibration.run import calibrate_classifier
    from stylebench_jax.calibration.temperature import probabilities
    from stylebench_jax.training.predict import load_run_model, pair_predictions

    run = load_run_model(run_dir, mesh)
    fit_pred = pair_predictions(run, args.split, mesh=mesh)
    evals = {}
    eval_split = _eval_split(args, Path(run.config.data.pairs))
    if eval_split and eval_split != args.split:
        evals[eval_split] = pair_predictions(run, eval_split, mesh=mesh)
    payload, report = calibrate_classifier(fit_pred, evals, options,
                                           run_info={"run": str(run_dir), "step": run.step,
                                                     "split": args.split})
    t = payload["temperature"]
    curves = {name: (probabilities(p["logits"], 1.0), probabilities(p["logits"], t), p["labels"])
              for name, p in [("fit", fit_pred), *evals.items()]}
    return payload, report, curves


def _summary(output: Path, sim: dict, clf: dict | None, cache, removed: list[str] = ()) -> None:
    chosen = sim["selection"]["chosen"]
    cv_brier = sim["selection"]["scores"][chosen]["brier"]
    parts = [f"stylebench calibrate: {chosen} map (CV brier {cv_brier:.4f})"]
    for name, result in sim["evaluation"].items():
        parts.append(f"{name}: ECE {result['naive']['ece']:.4f} -> {result['calibrated']['ece']:.4f}, Brier "
                     f"{result['naive']['brier']:.4f} -> {result['calibrated']['brier']:.4f}")
    if clf is not None:
        c = clf["calibration"]
        parts.append(f"classifier T={c['temperature']:.3f} threshold={c['threshold']:.2f}")
    # the classifier's (no threshold met --min-accuracy / --min-recall) were only in calibration.json
    for warning in [*sim["warnings"], *(clf["calibration"]["warnings"] if clf is not None else ())]:
        print(f"stylebench calibrate: warning: {warning}", file=sys.stderr)
    if removed:
        parts.append(f"removed stale {', '.join(removed)}")
    print("; ".join(parts) + f"; wrote {output} ({cache.hits} cached, {cache.misses} embedded)",
          file=sys.stderr)
