"""Binary classification and calibration metrics for same-style decisions (Writing7, seed 003 §8).

Conventions: ``labels [N]`` are 0/1 (1 = same book / author / style); ``probs [N]`` are predicted
probabilities of label 1 in [0, 1]; ``predicted [N]`` are 0/1 decisions. Seed 003 §8.1 reports every
classification metric in two modes, which differ only in how ``predicted`` is made:

- ``argmax``: the class with the larger raw logit (``logits.argmax(-1)``, ties -> class 0);
- ``calibrated``: ``probs >= threshold`` after temperature scaling, with the threshold searched on
  validation data (``stylebench_jax.calibration.temperature``; the authors' ``probs >= thr``).

Threshold metrics wrap scikit-learn (accuracy, balanced accuracy = mean of the two per-class recalls,
precision/recall/F1 of class 1 with ``zero_division=0``, confusion matrix ``[[TN, FP], [FN, TP]]``);
ROC-AUC is :func:`stylebench_jax.metrics.classification.auroc`; PR-AUC is scikit-learn's average
precision ``sum_n (R_n - R_{n-1}) P_n`` (the step-wise area, not the trapezoid rule, which
overestimates it; Davis & Goadrich 2006).

Calibration (seed 003 §8.2): :func:`brier` and :func:`ece` with :func:`reliability_bins` (also the
data of a reliability diagram, drawn by ``stylebench_jax.report.calibration``). Topic checks (§8.3):
:func:`topic_sliced_negatives`, :func:`adversary_accuracy` and :func:`cross_topic_consistency`.
Imports nothing of ours but ``metrics``.
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import (
    accuracy_score,
    average_precision_score,
    balanced_accuracy_score,
    confusion_matrix,
    precision_recall_fscore_support,
)

from stylebench_jax.metrics.classification import auroc

ECE_BINS = 15


def _labels(labels, n: int | None = None) -> np.ndarray:
    as_float = np.asarray(labels, dtype=np.float64)
    if as_float.ndim != 1 or as_float.size == 0 or (n is not None and as_float.size != n):
        raise ValueError(f"labels: expected a non-empty 1-D array{'' if n is None else f' of {n} values'}, "
                         f"found shape {as_float.shape}")
    bad = ~((as_float == 0.0) | (as_float == 1.0))
    if bad.any():
        raise ValueError(f"labels: expected 0 or 1, found {as_float[bad][:3].tolist()}")
    return as_float.astype(np.int64)


def _probs(probs) -> np.ndarray:
    probs = np.asarray(probs, dtype=np.float64)
    if probs.ndim != 1 or probs.size == 0:
        raise ValueError(f"probs: expected a non-empty 1-D array, found shape {probs.shape}")
    if not np.all(np.isfinite(probs)) or probs.min() < 0.0 or probs.max() > 1.0:
        raise ValueError("probs: expected finite probabilities in [0, 1]")
    return probs


def brier(probs, labels) -> float:
    """Brier score ``mean_i (p_i - y_i)^2`` (Brier 1950): 0 is perfect, 0.25 is a constant 0.5; lower
    is better. (PAN reports its complement ``1 - brier``: ``metrics.pan``.)"""
    probs = _probs(probs)
    labels = _labels(labels, probs.size)
    return float(np.mean((probs - labels) ** 2))


def reliability_bins(probs, labels, n_bins: int = ECE_BINS) -> dict[str, np.ndarray]:
    """Equal-width bins of ``probs``: bin ``b`` holds ``b / n_bins <= p < (b + 1) / n_bins`` (the last
    bin also holds ``p = 1``). Returns ``{"edges" [n_bins + 1], "count" [n_bins] int64, "confidence"
    [n_bins] (mean p in the bin), "frequency" [n_bins] (mean label in the bin)}``; empty bins have
    NaN confidence and frequency."""
    probs = _probs(probs)
    labels = _labels(labels, probs.size)
    if n_bins < 1:
        raise ValueError(f"n_bins: expected >= 1, found {n_bins}")
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    index = np.minimum((probs * n_bins).astype(np.int64), n_bins - 1)
    count = np.bincount(index, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        confidence = np.bincount(index, weights=probs, minlength=n_bins) / count
        frequency = np.bincount(index, weights=labels.astype(np.float64), minlength=n_bins) / count
    return {"edges": edges, "count": count, "confidence": confidence, "frequency": frequency}


def ece(probs, labels, n_bins: int = ECE_BINS) -> float:
    """Expected calibration error of the probability of class 1 over equal-width bins::

        ECE = sum_b (n_b / N) |freq_b - conf_b|

    with ``n_b`` predictions in bin ``b`` (:func:`reliability_bins`), ``conf_b`` their mean predicted
    probability and ``freq_b`` the fraction of them labelled 1 (Naeini et al. 2015; seed 003 §8.2:
    "mean absolute difference between predicted probability and empirical accuracy across bins").
    Empty bins add nothing. Range [0, 1], lower is better.

    Departures, both deliberate: the Writing7 authors' ``calibrate_style_similarity._ece`` bins by
    quantiles (equal mass); we use 15 equal-width bins, the usual definition, so values compare with
    other papers. Guo et al. (2017) score the top-label confidence ``max(p, 1 - p)`` against accuracy;
    for a binary same-style probability we score ``p`` itself, as the authors do.
    """
    bins = reliability_bins(probs, labels, n_bins)
    filled = bins["count"] > 0
    weights = bins["count"][filled] / bins["count"].sum()
    return float(np.sum(weights * np.abs(bins["frequency"][filled] - bins["confidence"][filled])))


def balanced_accuracy(predicted, labels) -> float:
    """Mean of the recall of class 1 and the recall of class 0 (scikit-learn's
    ``balanced_accuracy_score``); with one class present, that class's recall."""
    labels = _labels(labels)
    return float(balanced_accuracy_score(labels, _labels(predicted, labels.size)))


def pr_auc(probs, labels) -> float:
    """Area under the precision-recall curve as average precision ``sum_n (R_n - R_{n-1}) P_n`` over
    the thresholds (scikit-learn's ``average_precision_score``); a random scorer gets the positive
    rate. Needs at least one positive."""
    probs = np.asarray(probs, dtype=np.float64)
    labels = _labels(labels, probs.size)
    if not labels.any():
        raise ValueError("PR-AUC needs at least one positive pair")
    return float(average_precision_score(labels, probs))


def classification_metrics(predicted, labels, scores=None) -> dict:
    """Threshold metrics of ``predicted`` against ``labels`` and, with ``scores [N]`` (probabilities or
    any score where higher means class 1), ROC-AUC and PR-AUC. Returns ``{"n", "accuracy",
    "balanced_accuracy", "precision", "recall", "f1", "confusion": [[TN, FP], [FN, TP]]
    (, "roc_auc", "pr_auc")}``; AUCs are NaN when only one class is present."""
    labels = _labels(labels)
    predicted = _labels(predicted, labels.size)
    precision, recall, f1, _ = precision_recall_fscore_support(labels, predicted, average="binary",
                                                               labels=[0, 1], zero_division=0)
    result = {"n": int(labels.size), "accuracy": float(accuracy_score(labels, predicted)),
              "balanced_accuracy": float(balanced_accuracy_score(labels, predicted)),
              "precision": float(precision), "recall": float(recall), "f1": float(f1),
              "confusion": confusion_matrix(labels, predicted, labels=[0, 1]).tolist()}
    if scores is not None:
        two_classes = 0 < labels.sum() < labels.size
        result["roc_auc"] = auroc(scores, labels) if two_classes else float("nan")
        result["pr_auc"] = pr_auc(scores, labels) if two_classes else float("nan")
    return result


def calibration_metrics(probs, labels, n_bins: int = ECE_BINS) -> dict:
    """``{"ece", "brier", "n_bins"}`` of probabilities ``probs`` (:func:`ece`, :func:`brier`)."""
    return {"ece": ece(probs, labels, n_bins), "brier": brier(probs, labels), "n_bins": int(n_bins)}


def topic_sliced_negatives(predicted, labels, same_topic) -> dict:
    """Seed 003 §8.3.1: accuracy on the negative pairs whose two texts share a coarse topic and on
    those that do not. A style model should reject both alike; much lower accuracy on same-topic
    negatives means the decision leans on topic. Returns ``{"accuracy_same_topic_negatives",
    "n_same_topic_negatives", "accuracy_different_topic_negatives", "n_different_topic_negatives",
    "gap"}`` (gap = different - same; NaN where a slice is empty)."""
    labels = _labels(labels)
    predicted = _labels(predicted, labels.size)
    same_topic = np.asarray(same_topic, dtype=bool)
    if same_topic.shape != labels.shape:
        raise ValueError(f"same_topic: expected {labels.size} flags, found shape {same_topic.shape}")
    out = {}
    for name, select in (("same_topic", same_topic), ("different_topic", ~same_topic)):
        negatives = (labels == 0) & select
        out[f"accuracy_{name}_negatives"] = float((predicted[negatives] == 0).mean()) if negatives.any() \
            else float("nan")
        out[f"n_{name}_negatives"] = int(negatives.sum())
    out["gap"] = out["accuracy_different_topic_negatives"] - out["accuracy_same_topic_negatives"]
    return out


def adversary_accuracy(predicted_topics, true_topics) -> dict | None:
    """Seed 003 §8.3.2: how well the topic adversary recovers each text's coarse topic from its style
    embedding (lower is better: near the majority-topic rate means the embedding hides topic; the
    seed's target is < 40% for 5 topics). Texts with an unknown topic (< 0) are left out. Returns
    ``{"adversary_accuracy", "majority_topic_rate", "n_texts"}``, None when no topic is known."""
    guess = np.asarray(predicted_topics)
    known = np.asarray(true_topics)
    if guess.shape != known.shape:
        raise ValueError(f"predicted_topics/true_topics: expected one shape, found {guess.shape} and "
                         f"{known.shape}")
    mask = known >= 0
    if not mask.any():
        return None
    return {"adversary_accuracy": float((guess[mask] == known[mask]).mean()),
            "majority_topic_rate": float(np.bincount(known[mask].astype(np.int64)).max() / mask.sum()),
            "n_texts": int(mask.sum())}


def cross_topic_consistency(scores, labels, same_topic) -> dict:
    """Seed 003 §8.3.3: style similarity of same-author (label 1) pairs across different topics
    against within one topic. ``scores [N]`` are similarities (cosine or calibrated probability).
    Returns ``{"mean_cross_topic", "n_cross_topic", "mean_same_topic", "n_same_topic", "ratio"}``
    (ratio = cross / same: near 1 means the style signal survives a change of topic)."""
    scores = np.asarray(scores, dtype=np.float64)
    labels = _labels(labels, scores.size)
    same_topic = np.asarray(same_topic, dtype=bool)
    if same_topic.shape != scores.shape:
        raise ValueError(f"same_topic: expected {scores.size} flags, found shape {same_topic.shape}")
    out = {}
    for name, select in (("cross_topic", ~same_topic), ("same_topic", same_topic)):
        chosen = (labels == 1) & select
        out[f"mean_{name}"] = float(scores[chosen].mean()) if chosen.any() else float("nan")
        out[f"n_{name}"] = int(chosen.sum())
    same = out["mean_same_topic"]
    out["ratio"] = out["mean_cross_topic"] / same if np.isfinite(same) and same != 0 else float("nan")
    return out
