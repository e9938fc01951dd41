"""What ``stylebench calibrate`` computes: similarity calibration of any embedder and, for a trained
bi-encoder, classifier calibration of its pair head, each with held-out evaluation (seed 003 §5, §8).

Similarity (:func:`calibrate_similarity`): cosines of the fitting pairs under the exact inference
settings (``similarity.score_pairs``), the map chosen and fitted (``calibration.similarity``), then
on every evaluation split (pairs of books never used for fitting) the naive probability
``(cosine + 1) / 2`` ("before") against the calibrated one ("after"): ECE, Brier, reliability bins,
and the classification metrics of deciding ``p >= 0.5`` (ROC-AUC/PR-AUC of the score itself),
topic-sliced negatives and cross-topic consistency of same-book pairs.

Classifier (:func:`calibrate_classifier`): the run's logits on the fitting split
(``training.predict``), temperature ``T`` and threshold ``tau`` (``calibration.temperature``); on every
evaluation split the metrics in the seed's two modes, ``argmax`` (raw logits, probabilities at
``T = 1``) and ``calibrated`` (``softmax(z / T)[1] >= tau``), plus the adversary's topic accuracy.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from stylebench_jax.calibration.files import style_calibration_payload
from stylebench_jax.calibration.pairs import CalibrationPairs
from stylebench_jax.calibration.similarity import N_SPLITS, fit_similarity_calibration
from stylebench_jax.calibration.temperature import fit_temperature, nll, probabilities, search_threshold
from stylebench_jax.metrics import (
    ECE_BINS,
    adversary_accuracy,
    calibration_metrics,
    classification_metrics,
    cross_topic_consistency,
    reliability_bins,
    topic_sliced_negatives,
)


@dataclasses.dataclass(frozen=True)
class CalibrateOptions:
    method: str = "auto"
    cv_metric: str = "brier"
    n_splits: int = N_SPLITS
    group_by: str = "book"
    seed: int = 0
    n_bins: int = ECE_BINS
    threshold_metric: str = "balanced_accuracy"
    min_accuracy: float | None = None
    min_recall: float | None = None


def _mode(probs, labels, predicted, scores, same_topic, n_bins) -> dict:
    out = {**calibration_metrics(probs, labels, n_bins), **classification_metrics(predicted, labels, scores)}
    if same_topic is not None:
        out["topic_sliced_negatives"] = topic_sliced_negatives(predicted, labels, same_topic)
    bins = reliability_bins(probs, labels, n_bins)
    out["reliability"] = {k: [None if not np.isfinite(v) else float(v) for v in bins[k]]
                          for k in ("confidence", "frequency")}
    out["reliability"]["count"] = bins["count"].tolist()
    return out


def evaluate_similarity(cosines, pairs: CalibrationPairs, mapping, n_bins: int = ECE_BINS) -> dict:
    """Before (naive ``(cos + 1) / 2``) and after (``mapping``) calibration on ``pairs`` (module
    docstring)."""
    cos = np.asarray(cosines, np.float64)
    naive, calibrated = (cos + 1.0) / 2.0, mapping(cos)
    out = {"pairs": pairs.counts(),
           "naive": _mode(naive, pairs.labels, (naive >= 0.5).astype(int), cos, pairs.same_topic, n_bins),
           "calibrated": _mode(calibrated, pairs.labels, (calibrated >= 0.5).astype(int), calibrated,
                               pairs.same_topic, n_bins),
           "cosine": {"mean_positive": float(cos[pairs.labels == 1].mean()),
                      "mean_negative": float(cos[pairs.labels == 0].mean())}}
    if pairs.same_topic is not None:
        out["cross_topic_consistency"] = {
            "cosine": cross_topic_consistency(cos, pairs.labels, pairs.same_topic),
            "calibrated": cross_topic_consistency(calibrated, pairs.labels, pairs.same_topic)}
    return out


def calibrate_similarity(embedder, fit: CalibrationPairs, evaluations: dict[str, CalibrationPairs], settings,
                         options: CalibrateOptions, *, embed_fn, mesh=None) -> tuple[dict, dict, dict]:
    """``(style_calibration.json payload, report, curves)``; ``curves[split] = (cosines, labels)`` for
    the figures. Every pair set is scored with ``settings`` (a ``similarity.StyleSettings``)."""
    from stylebench_jax.similarity import embedder_identity, score_pairs

    def cosines(pairs: CalibrationPairs) -> np.ndarray:
        rows = score_pairs(embedder, pairs.text1, pairs.text2, settings, embed_fn=embed_fn, mesh=mesh)
        return np.array([r["cosine"] for r in rows], np.float64)

    fit_cos = cosines(fit)
    fitted = fit_similarity_calibration(fit_cos, fit.labels, fit.groups(options.group_by),
                                        method=options.method, cv_metric=options.cv_metric,
                                        n_splits=options.n_splits, seed=options.seed)
    chosen = fitted.mapping.method
    selection = {"method_requested": options.method, "cv_metric": options.cv_metric,
                 "n_splits": options.n_splits,
                 "cv": fitted.cv_kind, "group_by": options.group_by, "candidates": list(fitted.candidates),
                 "scores": fitted.cv, "chosen": chosen}
    meta = {**settings.meta(), "n_samples": len(fit)}
    payload = style_calibration_payload(fitted.mapping, fitted.cv[chosen], meta,
                                        embedder_identity(embedder), selection=selection, pairs=fit.counts(),
                                        warnings=list(fitted.warnings))
    report = {"embedder": embedder_identity(embedder), "settings": settings.meta(), "selection": selection,
              "warnings": list(fitted.warnings), "evaluation": {}}
    report["fit"] = {**evaluate_similarity(fit_cos, fit, fitted.mapping, options.n_bins),
                     "note": "in-sample: the pairs the map was fitted on"}
    curves = {"fit": (fit_cos, fit.labels)}
    for name, pairs in evaluations.items():
        cos = cosines(pairs)
        report["evaluation"][name] = evaluate_similarity(cos, pairs, fitted.mapping, options.n_bins)
        curves[name] = (cos, pairs.labels)
    return payload, report, curves


def _classifier_modes(pred: dict, temperature: float, threshold: float, n_bins: int) -> dict:
    labels, logits = pred["labels"], pred["logits"]
    raw, scaled = probabilities(logits, 1.0), probabilities(logits, temperature)
    out = {"n": int(labels.size),
           "argmax": _mode(raw, labels, logits.argmax(-1), raw, pred["same_topic"], n_bins),
           "calibrated": _mode(scaled, labels, (scaled >= threshold).astype(int), scaled, pred["same_topic"],
                               n_bins),
           "nll": {"argmax": nll(logits, labels, 1.0), "calibrated": nll(logits, labels, temperature)},
           "cross_topic_consistency": {"cosine": cross_topic_consistency(pred["cosine"], labels,
                                                                         pred["same_topic"])}}
    if "adversary1" in pred:  # every text of the pairs (a text in two pairs counts twice, as in validate.py)
        adversary = adversary_accuracy(np.concatenate([pred["adversary1"], pred["adversary2"]]),
                                       np.concatenate([pred["topics1"], pred["topics2"]]))
        if adversary is not None:
            out["adversary"] = adversary
    return out


def calibrate_classifier(fit_pred: dict, eval_preds: dict[str, dict], options: CalibrateOptions, *,
                         run_info: dict) -> tuple[dict, dict]:
    """``(calibration.json payload, report)`` from the run's per-pair predictions (``fit_pred`` on the
    fitting split; ``eval_preds`` by split name)."""
    labels, logits = fit_pred["labels"], fit_pred["logits"]
    temperature = fit_temperature(logits, labels)
    choice = search_threshold(probabilities(logits, temperature), labels, metric=options.threshold_metric,
                              min_accuracy=options.min_accuracy, min_recall=options.min_recall)
    warnings = [] if choice.constraints_met else [
        f"no threshold meets accuracy >= {options.min_accuracy} and recall >= {options.min_recall}; the best "
        f"{options.threshold_metric} over all thresholds was kept (as the authors)"]
    payload = {"temperature": temperature, "threshold": choice.threshold, "opt_metric": choice.metric,
               "constraints": {"min_accuracy": options.min_accuracy, "min_recall": options.min_recall},
               "constraints_met": choice.constraints_met, "selection_metrics": choice.row,
               "nll": {"before": nll(logits, labels, 1.0), "after": nll(logits, labels, temperature)},
               "n_pairs": int(labels.size), **run_info, "warnings": warnings}
    report = {"calibration": payload, "fit": _classifier_modes(fit_pred, temperature, choice.threshold,
                                                               options.n_bins),
              "evaluation": {name: _classifier_modes(pred, temperature, choice.threshold, options.n_bins)
                             for name, pred in eval_preds.items()}}
    return payload, report
