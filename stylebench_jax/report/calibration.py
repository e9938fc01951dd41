"""Reliability diagrams and the ``stylebench calibrate`` report (``calibration.md``/``.html``).

A reliability diagram (Writing7 design document §8.2) plots, per equal-width probability bin, the
fraction of pairs labelled "same" against the mean predicted probability (``metrics.reliability_bins``); a
calibrated predictor lies on the diagonal. The lower panel shows how many predictions fall in each
bin, so a point resting on a handful of pairs is visible as such.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from stylebench_jax.metrics import ECE_BINS, ece, reliability_bins
from stylebench_jax.report.document import Table, fmt, write_document
from stylebench_jax.report.plots import _colours, _png, _pyplot

# How the reports cite the Writing7 design document (sections below are that document's).
WRITING7 = ("Writing7 (A Benchmark for Evaluating Style Transfer Capabilities in Large Language Models, "
            "design document)")

METRIC_COLUMNS = ("ece", "brier", "roc_auc", "pr_auc", "accuracy", "balanced_accuracy", "precision", "recall",
                  "f1")


def reliability_figure(curves: Sequence[tuple[str, np.ndarray, np.ndarray]], title: str,
                       n_bins: int = ECE_BINS) -> bytes:
    """PNG: one line per ``(label, probs [N], labels [N])`` (ECE in the legend), the diagonal, and a
    count histogram below."""
    return reliability_figure_from_bins(
        [(label, reliability_bins(probs, labels, n_bins), ece(probs, labels, n_bins))
         for label, probs, labels in curves], title)


def reliability_figure_from_bins(curves: Sequence[tuple[str, dict, float]], title: str) -> bytes:
    """:func:`reliability_figure` from precomputed ``metrics.reliability_bins`` (``confidence``,
    ``frequency``, ``count``; None or NaN for empty bins) and each curve's ECE."""
    plt = _pyplot()
    n_bins = len(curves[0][1]["count"])
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(5.6, 6.2), sharex=True,
                                         gridspec_kw={"height_ratios": [3, 1.1]})
    top.plot([0, 1], [0, 1], "--", color="grey", linewidth=1, label="perfect calibration")
    width = 1.0 / n_bins / (len(curves) + 0.5)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    for k, ((label, bins, error), colour) in enumerate(zip(curves, _colours(len(curves)))):
        count = np.asarray(bins["count"])
        filled = count > 0
        conf = np.array([np.nan if v is None else v for v in bins["confidence"]], np.float64)
        freq = np.array([np.nan if v is None else v for v in bins["frequency"]], np.float64)
        top.plot(conf[filled], freq[filled], "o-", color=colour, markersize=4,
                 label=f"{label} (ECE {error:.3f})")
        bottom.bar(edges[:-1] + k * width + 0.25 * width, count, width=width, align="edge", color=colour)
    top.set_xlim(0, 1)
    top.set_ylim(-0.03, 1.03)  # points at 0 and 1 drawn whole, not cut by the frame
    top.set_ylabel("fraction of same-style pairs")
    top.set_title(title, fontsize=10, pad=30)
    # above the axes: inside, it hid the curves where they reach 1 at low p
    top.legend(fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, frameon=False)
    top.grid(alpha=0.25)
    bottom.set_xlabel("predicted probability of same style")
    bottom.set_ylabel("pairs")
    bottom.grid(axis="y", alpha=0.25)
    figure.tight_layout()
    return _png(figure)


def _metric_rows(modes: dict[str, dict], labels: dict[str, str]) -> list[list[str]]:
    rows = []
    for key, label in labels.items():
        m = modes[key]
        (tn, fp), (fn, tp) = m["confusion"]
        # precision with no positive decision (and recall with no positive pair) is undefined: "-",
        # not scikit-learn's zero_division value
        undefined = {"precision": tp + fp == 0, "recall": tp + fn == 0}
        rows.append([label, *("-" if undefined.get(c) else fmt(m.get(c)) for c in METRIC_COLUMNS),
                     f"{tn}/{fp}/{fn}/{tp}"])
    return rows


def _topic_rows(modes: dict[str, dict], labels: dict[str, str]) -> list[list[str]]:
    rows = []
    for key, label in labels.items():
        s = modes[key].get("topic_sliced_negatives")
        if s:
            rows.append([label, fmt(s["accuracy_same_topic_negatives"]), str(s["n_same_topic_negatives"]),
                         fmt(s["accuracy_different_topic_negatives"]), str(s["n_different_topic_negatives"]),
                         fmt(s["gap"])])
    return rows


HEADER = ["mode", "ECE", "Brier", "ROC-AUC", "PR-AUC", "acc", "bal. acc", "precision", "recall", "F1",
          "TN/FP/FN/TP"]
TOPIC_HEADER = ["mode", "acc same-topic neg.", "n", "acc different-topic neg.", "n", "gap"]


def similarity_tables(report: dict) -> list[Table]:
    sel = report["selection"]
    scores = [[name, fmt(v["brier"], 4), fmt(v["ece"], 4), "chosen" if name == sel["chosen"] else ""]
              for name, v in sel["scores"].items()]
    tables = [Table("Similarity calibration: model selection",
                    f"{sel['n_splits']}-fold {sel['cv']} (groups: {sel['group_by']}) on the fitting pairs, "
                    f"selection by {sel['cv_metric']}; requested: {sel['method_requested']}."
                    + (" Warnings: " + " ".join(report["warnings"]) if report["warnings"] else ""),
                    ["method", "CV Brier", "CV ECE", ""], scores)]
    labels = {"naive": "before: (cos + 1) / 2", "calibrated": "after: calibrated"}
    for name, result in [("fit", report["fit"]), *report["evaluation"].items()]:
        c = result["pairs"]
        cos = result["cosine"]
        note = (f"{c['n']} pairs ({c['n_positive']} same, {c['n_negative']} different; {c['n_books']} books) "
                f"from {c['source']}. Decisions at p >= 0.5; ROC-AUC/PR-AUC of the score itself. Mean "
                f"cosine: same {cos['mean_positive']:.3f}, different {cos['mean_negative']:.3f}.")
        if name == "fit":
            note += " In-sample (the map was fitted on these pairs)."
        tables.append(Table(f"Similarity: {name} split", note, HEADER, _metric_rows(result, labels)))
        topic = _topic_rows(result, labels)
        if topic:
            tables.append(Table(f"Topic-sliced negatives: {name} split",
                                "Accuracy on negative pairs whose texts share a coarse topic vs not "
                                "(Writing7 §8.3.1); gap = different-topic minus same-topic accuracy: near "
                                "0 is best, a large positive gap means same-topic pairs are mistaken for "
                                "same style.",
                                TOPIC_HEADER, topic))
        if "cross_topic_consistency" in result:
            rows = [[kind, fmt(v["mean_cross_topic"]), str(v["n_cross_topic"]), fmt(v["mean_same_topic"]),
                     str(v["n_same_topic"]), fmt(v["ratio"])]
                    for kind, v in result["cross_topic_consistency"].items()]
            tables.append(Table(f"Cross-topic style consistency: {name} split",
                                "Mean similarity of same-book pairs across different topics vs within "
                                "one (Writing7 §8.3.3); ratio = cross-topic / same-topic mean: 1 = style "
                                "holds across topics, lower = the score leans on topic.",
                                ["score", "cross-topic mean", "n", "same-topic mean", "n", "ratio"], rows))
    return tables


def classifier_tables(report: dict) -> list[Table]:
    c = report["calibration"]
    tables = [Table("Classifier calibration (temperature scaling + threshold)",
                    f"Fitted on {c['n_pairs']} pairs of the run's {c.get('split', 'validation')} split (best "
                    f"checkpoint, step {c.get('step')}). Threshold: max {c['opt_metric']} over 0.01..0.99"
                    + (f" with constraints {c['constraints']}" if any(c["constraints"].values()) else "")
                    + ("" if c["constraints_met"] else " (constraints not met)") + ".",
                    ["temperature", "threshold", "NLL before", "NLL after",
                     c["opt_metric"] + " at threshold"],
                    [[fmt(c["temperature"], 4), fmt(c["threshold"], 2), fmt(c["nll"]["before"], 4),
                      fmt(c["nll"]["after"], 4), fmt(c["selection_metrics"][c["opt_metric"]])]])]
    labels = {"argmax": "argmax (raw logits)", "calibrated": "calibrated (T, threshold)"}
    for name, result in [("fit", report["fit"]), *report["evaluation"].items()]:
        nll = result["nll"]
        note = f"{result['n']} pairs. NLL argmax {nll['argmax']:.4f}, calibrated {nll['calibrated']:.4f}."
        if name == "fit":
            note += " In-sample (temperature and threshold were fitted on these pairs)."
        if "adversary" in result:
            a = result["adversary"]
            note += (f" Topic adversary accuracy {a['adversary_accuracy']:.3f} on {a['n_texts']} texts "
                     f"(majority-topic rate {a['majority_topic_rate']:.3f}; lower is better, "
                     "Writing7 §8.3.2).")
        tables.append(Table(f"Classifier: {name} split", note, HEADER, _metric_rows(result, labels)))
        topic = _topic_rows(result, labels)
        if topic:
            tables.append(Table(f"Classifier topic-sliced negatives: {name} split",
                                "gap = different-topic minus same-topic accuracy (near 0 is best).",
                                TOPIC_HEADER, topic))
    return tables


def write_calibration_report(output_dir: Path, report: dict, curves: dict) -> dict[str, Path]:
    """``calibration.md``, ``calibration.html`` and one reliability PNG per split and calibrator.
    ``curves["similarity"][split] = (cosines, calibrated probabilities, labels)``;
    ``curves["classifier"][split] = (softmax at T = 1, at the fitted T, labels)``."""
    pngs: dict[str, bytes] = {}
    tables: list[Table] = []
    sim = report.get("similarity")
    n_bins = report.get("n_bins", ECE_BINS)
    if sim is not None:
        for name, (cos, calibrated, labels) in curves["similarity"].items():
            naive = (np.asarray(cos) + 1.0) / 2.0
            pngs[f"reliability_similarity_{name}.png"] = reliability_figure(
                [("(cos + 1) / 2", naive, labels), ("calibrated", calibrated, labels)],
                f"{report['model']}: similarity, {name} pairs", n_bins)
        tables += similarity_tables(sim)
    clf = report.get("classifier")
    if clf is not None:
        for name, (raw, scaled, labels) in curves["classifier"].items():
            pngs[f"reliability_classifier_{name}.png"] = reliability_figure(
                [("softmax (T = 1)", raw, labels),
                 (f"T = {clf['calibration']['temperature']:.3f}", scaled, labels)],
                f"{report['model']}: classifier head, {name} pairs", n_bins)
        tables += classifier_tables(clf)
    intro = [f"Model: {report['model']}. ECE over {n_bins} equal-width bins; Brier = mean (p - y)^2; both "
             f"lower is better. {WRITING7}, §5 (training) and §8 (calibration)."]
    return write_document(output_dir, "calibration", "Calibration report", intro, tables, pngs)
