"""`stylebench calibrate`: calibrated style similarity for any embedder, and temperature scaling of a
trained bi-encoder's classifier head (Writing7, seed 003 §5)."""

from __future__ import annotations

import argparse
import json
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
calibration.md/.html and reliability diagrams (PNG).
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
    parser.add_argument("--split", default="validation", help="split to fit on (default: validation)")
    parser.add_argument("--eval-split", default=None,
                        help="held-out split to evaluate on, '' for none (default: test when present)")
    parser.add_argument("--max-pairs", type=int, default=None, help="seeded subsample of each pair set")
    parser.add_argument("--method", choices=("auto", "logistic", "isotonic"), default="auto")
    parser.add_argument("--cv-metric", choices=("brier", "ece"), default="brier")
    parser.add_argument("--n-splits", type=int, default=5, help="cross-validation folds (default: 5)")
    parser.add_argument("--group-by", choices=("book", "author"), default="book",
                        help="GroupKFold groups (default: book)")
    parser.add_argument("--no-classifier", action="store_true",
                        help="training runs: skip the classifier's temperature scaling")
    parser.add_argument("--threshold-metric", choices=("balanced_accuracy", "accuracy", "f1"),
                        default="balanced_accuracy")
    parser.add_argument("--min-accuracy", type=float, nargs="?", const=0.85, default=None,
                        help="threshold constraint (0.85 when given without a value)")
    parser.add_argument("--min-recall", type=float, nargs="?", const=0.80, default=None,
                        help="threshold constraint (0.80 when given without a value)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", required=True, type=Path, metavar="DIR")
    parser.add_argument("--quiet", action="store_true")
    add_style_arguments(parser)
    parser.set_defaults(func=run)


def split_run(model: str) -> tuple[str, Path | None]:
    """``(embedder name, training run or None)``: a `stylebench train` run directory (or its
    ``export/``) scores with ``RUN/export`` and calibrates ``RUN``'s classifier."""
    path = Path(model)
    if (path / "config.json").is_file() and (path / "best").is_dir():
        if not (path / "export").is_dir():
            raise UserInputError(f"--model {path}: training run without export/ (not finished?)")
        return str(path / "export"), path
    if path.name == "export" and (path.parent / "best").is_dir() and (path.parent / "config.json").is_file():
        return str(path), path.parent
    return model, None


def _run_pairs_dir(run: Path) -> Path:
    from stylebench_jax.fileio import read_json_file

    pairs = ((read_json_file(run / "config.json") or {}).get("data") or {}).get("pairs")
    if not pairs:
        raise UserInputError(f"--model {run}: the run was not trained on prepare-pairs pairs; pass --pairs")
    return Path(pairs)


def _json_ready(value):
    import numpy as np

    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    if isinstance(value, (np.floating, float)):
        return None if value != value else float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


def run(args: argparse.Namespace) -> int:
    from stylebench_jax.calibration.files import write_json
    from stylebench_jax.calibration.pairs import load_calibration_pairs
    from stylebench_jax.calibration.run import CalibrateOptions, calibrate_similarity
    from stylebench_jax.fileio import write_text_atomic
    from stylebench_jax.report.calibration import write_calibration_report

    check_output_dir(args.output, "--output")
    check_embedder_arguments(args)
    check_positive(args.max_pairs, "--max-pairs")
    check_positive(args.n_splits, "--n-splits")
    if args.n_splits < 2:
        raise UserInputError(f"--n-splits: expected at least 2 folds, got {args.n_splits}")
    settings = style_settings(args)
    name, run_dir = split_run(args.model)
    source = args.pairs or (_run_pairs_dir(run_dir) if run_dir else None)
    if source is None:
        raise UserInputError("--pairs: give a prepare-pairs directory or a .jsonl of labelled pairs (only a "
                             "training run brings its own)")
    fit = load_calibration_pairs(source, args.split).subsample(args.max_pairs, args.seed)
    eval_split = _eval_split(args, Path(source))
    evaluations = {}
    if eval_split:
        held_out = load_calibration_pairs(source, eval_split)
        evaluations[eval_split] = held_out.subsample(args.max_pairs, args.seed)
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
    args.output.mkdir(exist_ok=True)
    write_json(args.output / "style_calibration.json", _json_ready(payload))
    report = {"model": args.model, "n_bins": options.n_bins, "similarity": sim_report}
    figures = {"similarity": {split: (cos, payload_probs(payload, cos), labels)
                              for split, (cos, labels) in curves.items()}}
    if run_dir is not None and not args.no_classifier:
        clf_payload, clf_report, clf_curves = _classifier(run_dir, args, options, mesh)
        write_json(args.output / "calibration.json", _json_ready(clf_payload))
        report["classifier"] = clf_report
        figures["classifier"] = clf_curves
    write_text_atomic(args.output / "calibration_report.json",
                      json.dumps(_json_ready(report), indent=1) + "\n")
    write_calibration_report(args.output, report, figures)
    if not args.quiet:
        _summary(args.output, sim_report, report.get("classifier"), cache)
    return 0


def _eval_split(args, source: Path) -> str | None:
    """``--eval-split`` when given (it must exist), else ``test`` when the source has it."""
    if args.eval_split is not None:
        if args.eval_split and not source.is_dir():
            raise UserInputError("--eval-split: needs --pairs to be a prepare-pairs directory")
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


def _summary(output: Path, sim: dict, clf: dict | None, cache) -> None:
    chosen = sim["selection"]["chosen"]
    cv_brier = sim["selection"]["scores"][chosen]["brier"]
    parts = [f"stylebench calibrate: {chosen} map (CV brier {cv_brier:.4f})"]
    for name, result in sim["evaluation"].items():
        parts.append(f"{name}: ECE {result['naive']['ece']:.4f} -> {result['calibrated']['ece']:.4f}, Brier "
                     f"{result['naive']['brier']:.4f} -> {result['calibrated']['brier']:.4f}")
    if clf is not None:
        c = clf["calibration"]
        parts.append(f"classifier T={c['temperature']:.3f} threshold={c['threshold']:.2f}")
    for warning in sim["warnings"]:
        print(f"stylebench calibrate: warning: {warning}", file=sys.stderr)
    print("; ".join(parts) + f"; wrote {output} ({cache.hits} cached, {cache.misses} embedded)",
          file=sys.stderr)
