"""``raven.md`` and ``raven.html`` (plots inline) from the content of ``raven.json``.

Tables follow RAVEN's numbering: 1 (dataset sizes), 2 (scores, HITS vs random), 4 (ranking
stability), 5 (mean ranks), 6 (most similar train/test topics), 7 (train/test topic similarity)
and 11 (topic-shortcut test). PNGs are drawn by ``report.plots``' deterministic helpers.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from stylebench_jax.fileio import atomic_open, write_text_atomic
from stylebench_jax.metrics.pan import OVERALL_PARTS
from stylebench_jax.report.markdown import markdown_cell, markdown_text
from stylebench_jax.report.plots import _colours, _png, _pyplot

METRIC_TITLES = {"auc": "AUC", "c_at_1": "c@1", "f05u": "F0.5u", "f1": "F1", "brier": "1 - Brier",
                 "overall": "Overall"}
TTEST = "one-sided unpaired Student t-test (equal variances, as RAVEN)"


def _f(value, digits: int = 3) -> str:
    return "–" if value is None or value != value else f"{value:.{digits}f}"


def _number(value) -> float:
    """A bar's height: NaN (no bar) for None."""
    return float("nan") if value is None else float(value)


def _significant(test: dict | None) -> bool:
    p = (test or {}).get("p")
    return p is not None and p == p and p < 0.05


def _pm(cell: dict) -> str:
    return f"{_f(cell['mean'])} ± {_f(cell['std'])}" if cell.get("std") is not None else _f(cell["mean"])


def _p(test: dict) -> str:
    return _f(test.get("p")) + ("*" if _significant(test) else "")


def _yes(flag) -> str:
    return "–" if flag is None else ("yes" if flag else "no")


# --------------------------------------------------------------------------- tables (rows of strings)


def tables(report: dict[str, Any]) -> list[tuple[str, str, list[str], list[list[str]]]]:
    """``[(title, note, header, rows)]`` shared by the Markdown and HTML renderings."""
    metrics = report["metrics_reported"]
    models = report["models"]
    out = []
    sim = report["topic_similarity"]
    rows = [[str(e["n_topics"]), _f(e["random"]["mean"]), _f(e["hits"]["mean"]), _f(e["random"]["max"]),
             _f(e["hits"]["max"])] for e in report["topic_similarity_sweep"]]
    main_m = report["config"]["sampling"]["n_topics"]
    rows = [[f"{row[0]} (main)" if int(row[0]) == main_m else row[0], *row[1:]] for row in rows]
    out.append(("Table 7: train/test topic similarity",
                "Cosine similarity of topic vectors between the train and test topics of each split, mean "
                f"over the {len(sim['per_fold']['hits'])} folds (random: over folds and seeds). At the main "
                f"m = {main_m}, HITS lower than random: mean {_yes(sim['hits_lower']['mean'])}, max "
                f"{_yes(sim['hits_lower']['max'])}.",
                ["topics", "random mean", "HITS mean", "random max", "HITS max"], rows))
    pairs = report["most_similar_pairs"]
    rows = [[kind, p["train_topic"], p["test_topic"], _f(p["similarity"])]
            for kind in ("hits", "random") for p in pairs[kind]]
    out.append(("Table 6: most similar train/test topic pairs", "Over all folds (random: all seeds).",
                ["setup", "train topic", "test topic", "similarity"], rows))
    rows = []
    for name, data in report["datasets"].items():
        folds = data["folds"]
        rows.append([name, str(len(data["topics"])), str(data["documents"])]
                    + [f"{np.mean([f[key] for f in folds]):.0f}" for key in
                       ("train_pairs", "test_pairs", "train_authors", "test_authors")])
    out.append(("Table 1: dataset sizes", "Means over folds.",
                ["dataset", "topics", "documents", "train pairs", "test pairs", "train authors",
                 "test authors"], rows))
    for metric in metrics:
        cells = {model: report["scores"][model][metric] for model in models}
        rows = [[m, _pm(cells[m]["hits"]), _pm(cells[m]["random"]), _p(cells[m]["hits_lower"])]
                for m in models]
        n_hits = len(report["datasets"].get("hits", {}).get("folds", [])) or sampling_k(report)
        n_random = n_hits * len(report["config"]["sampling"]["random_seeds"])
        out.append((f"Table 2: {METRIC_TITLES[metric]}",
                    f"Mean ± std over folds (HITS: {n_hits} folds; random: the {n_random} folds of all "
                    f"seeds, which share documents); p: {TTEST} 'HITS lower than random' over those folds "
                    "(* p < 0.05).",
                    ["model", "HITS", "random", "p"], rows))
    shortcut = report["shortcut"]
    rows = [[r["model"], _f(r["random"]), _f(r["hits"]), _f(r["avg"]), _f(r["diff"]),
             "–" if r["rank_avg"] is None else str(r["rank_avg"]),
             "–" if r["rank_diff"] is None else str(r["rank_diff"])] for r in shortcut["rows"]]
    out.append(("Table 11: topic-shortcut test (Overall)",
                "Random and HITS: mean Overall over folds (and seeds); Avg (higher is better) and "
                "Diff = |random - HITS| (lower is better: less reliance on topic).",
                ["model", "random", "HITS", "Avg", "Diff", "rank Avg", "rank Diff"], rows))
    rows = [[r["dataset"]] + [_f(r["metrics"][m]["mean"], 2)
                              + ("*" if _significant(r["metrics"][m].get("lower_than_hits")) else "")
                              for m in metrics] + [_f(r["average"], 2)]
            for r in report["stability"]]
    out.append(("Table 4: ranking stability",
                "Mean Spearman correlation of the model rankings between every pair of folds (-1 to 1; "
                "higher = more stable). * = significantly lower than HITS (" + TTEST + " over the fold "
                "pairs, treated as independent though they share folds; p < 0.05).",
                ["dataset", *[METRIC_TITLES[m] for m in metrics], "Average"], rows))
    rows = [[r["dataset"]] + [_pm(r["ranks"][m]) for m in models] for r in report["mean_rank"]["rows"]]
    out.append(("Table 5: mean rank (Overall)", "Rank of each model per fold (1 = best), mean ± std.",
                ["dataset", *models], rows))
    return sorted(out, key=lambda table: int(table[0].split(":")[0].split()[1]))  # RAVEN's numbering


def metrics_note(metrics_config: dict[str, str]) -> str:
    """What PAN's metrics (``metrics.pan``) are, for this run's ``overall`` and ``f05u`` variants."""
    parts = OVERALL_PARTS[metrics_config["overall"]]
    f05u = ("F0.5 with non-answers counted as false negatives" if metrics_config["f05u"] == "pan21" else
            "F0.5 as PAN 2020 computed it: a score of 0.5 counts as a positive answer")
    return ("PAN's verification metrics, each higher is better (1 = perfect): AUC (ROC area), c@1 "
            "(accuracy that credits a non-answer, a score of exactly 0.5, with the accuracy of the "
            f"answers), F0.5u ({f05u}), F1 (answered cases), 1 - Brier (one minus the mean squared "
            "error of the scores, as PAN reports it; not the Brier loss), Overall (the mean of "
            f"{', '.join(METRIC_TITLES[p] for p in parts)}).")


def sampling_k(report: dict[str, Any]) -> int:
    return int(report["config"]["sampling"]["k_folds"])


def intro(report: dict[str, Any]) -> list[str]:
    """The lines above the figures: protocol, corpus, set-up, seeds (both renderings)."""
    corpus, sampling = report["corpus"], report["config"]["sampling"]
    representation = sampling["representation"] + (
        f" of {sampling['topic_embedder']}" if sampling["representation"] == "embedding" else
        f", {sampling['n_components']} components")
    seeds = (f"Seeds: corpus {report['config']['corpus']['seed']}, folds {sampling['fold_seed']}, pairs "
             f"{sampling['pair_seed']}; topic strategy {sampling['strategy']}, topic vectors "
             f"{representation}.")
    return [report["protocol"] + ".",
            f"Corpus {corpus['name']}: {corpus['documents']} documents, {corpus['authors']} authors, "
            f"{corpus['topics']} topics (mean {corpus['mean_characters']} characters). "
            + " ".join(f"{n}." for n in corpus["notes"]),
            f"Models: {', '.join(report['models'])}. m = {sampling['n_topics']} topics, k = "
            f"{sampling['k_folds']} folds, random seeds {sampling['random_seeds']}, overall = "
            f"{report['config']['metrics']['overall']}. " + seeds,
            metrics_note(report["config"]["metrics"])]


def render_markdown(report: dict[str, Any], figures: Sequence[str] = ()) -> str:
    lines = ["# RAVEN / HITS topic-leakage test", ""]
    for line in intro(report):
        lines += [markdown_text(line), ""]
    lines += [f"![{name}]({name})" for name in figures] + [""]
    for title, note, header, rows in tables(report):
        lines += [f"## {title}", "", markdown_text(note), "",
                  "| " + " | ".join(markdown_cell(h) for h in header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(markdown_cell(cell) for cell in row) + " |" for row in rows]
        lines.append("")
    return "\n".join(lines)


def render_html(report: dict[str, Any], pngs: dict[str, bytes]) -> str:
    e = html.escape
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>RAVEN / HITS</title><style>",
             "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;"
             "color:#222}"
             "table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:.85em}"
             "th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}th{background:#f2f2f2}"
             "td:first-child,th:first-child{text-align:left}.note{color:#555;font-size:.9em}"
             "img{max-width:100%;height:auto}</style></head><body>",
             "<h1>RAVEN / HITS topic-leakage test</h1>"] + [f"<p>{e(line)}</p>" for line in intro(report)]
    for name, png in pngs.items():
        data = base64.b64encode(png).decode("ascii")
        parts.append(f"<img alt='{e(name)}' src='data:image/png;base64,{data}'>")
    for title, note, header, rows in tables(report):
        parts.append(f"<h2>{e(title)}</h2><p class='note'>{e(note)}</p><table><tr>"
                     + "".join(f"<th>{e(h)}</th>" for h in header) + "</tr>")
        parts += ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in rows]
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


# --------------------------------------------------------------------------- figures


def similarity_figure(report: dict[str, Any]) -> bytes:
    """Left: mean and max train/test topic similarity at m, HITS vs random (dots: seeds). Right: the
    same against m (sweep), when more than one m was measured."""
    plt = _pyplot()
    sweep = report["topic_similarity_sweep"]
    figure, axes = plt.subplots(1, 2 if len(sweep) > 1 else 1, figsize=(10 if len(sweep) > 1 else 5, 3.6),
                                squeeze=False)
    sim = report["topic_similarity"]
    hits_colour, random_colour = _colours(2)
    axis = axes[0, 0]
    for i, key in enumerate(("mean", "max")):
        axis.bar(i - 0.18, sim["random"][key], 0.34, color=random_colour, label="random" if i == 0 else None)
        axis.bar(i + 0.18, sim["hits"][key], 0.34, color=hits_colour, label="HITS" if i == 0 else None)
        seeds = [v[key] for v in sim["random"]["per_seed"].values()]
        axis.scatter([i - 0.18] * len(seeds), seeds, color="black", s=8, zorder=3,
                     label="random, each seed" if i == 0 else None)
    axis.set_xticks([0, 1], ["mean", "max"])
    axis.set_ylim(0.0, 1.0)  # from zero: bar lengths compare
    axis.set_ylabel("train/test topic cosine")
    axis.set_title(f"m = {report['config']['sampling']['n_topics']}", fontsize=10)
    axis.legend(fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.08), ncol=3, frameon=False)
    if len(sweep) > 1:
        axis = axes[0, 1]
        m = [e["n_topics"] for e in sweep]
        for kind, colour in (("random", random_colour), ("hits", hits_colour)):
            label = "HITS" if kind == "hits" else "random"
            axis.plot(m, [e[kind]["mean"] for e in sweep], "o-", color=colour, label=f"{label} mean")
            axis.plot(m, [e[kind]["max"] for e in sweep], "s--", color=colour, label=f"{label} max")
        axis.set_xlabel("topics sampled (m)")
        axis.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        axis.set_title("sweep over m", fontsize=10)
    for axis in axes.ravel():
        axis.grid(axis="y", alpha=0.3)
    return _png(figure)


def shortcut_figure(report: dict[str, Any]) -> bytes:
    """Overall on random vs HITS per model, with Diff written above."""
    plt = _pyplot()
    rows = report["shortcut"]["rows"]
    figure, axis = plt.subplots(figsize=(max(5.0, 1.2 * len(rows)), 3.6))
    x = np.arange(len(rows))
    hits_colour, random_colour = _colours(2)
    axis.bar(x - 0.2, [_number(r["random"]) for r in rows], 0.38, color=random_colour, label="random")
    axis.bar(x + 0.2, [_number(r["hits"]) for r in rows], 0.38, color=hits_colour, label="HITS")
    for i, row in enumerate(rows):  # a model without valid folds has no bar and no Δ
        if row["diff"] is not None:
            top = max(row["random"] or 0, row["hits"] or 0)
            axis.text(i, top + 0.01, f"Δ {row['diff']:.3f}", ha="center", fontsize=8)
    axis.set_xticks(x, [r["model"] for r in rows], rotation=20, ha="right", fontsize=8)
    axis.set_ylim(0, 1.08)
    axis.set_ylabel("Overall")
    axis.set_title("Topic-shortcut test: Overall on random vs HITS datasets", fontsize=10)
    axis.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    axis.grid(axis="y", alpha=0.3)
    return _png(figure)


def stability_figure(report: dict[str, Any]) -> bytes:
    """Mean pairwise Spearman across folds per metric: HITS and R_avg bars, each seed a dot."""
    plt = _pyplot()
    metrics = report["metrics_reported"]
    rows = {r["dataset"]: r for r in report["stability"]}
    figure, axis = plt.subplots(figsize=(max(5.0, 1.1 * len(metrics)), 3.6))
    x = np.arange(len(metrics))
    hits_colour, random_colour = _colours(2)

    def values(label):
        return [_number(rows[label]["metrics"][m]["mean"]) for m in metrics]

    axis.bar(x - 0.2, values("R_avg"), 0.38, color=random_colour, label="random (mean of seeds)")
    axis.bar(x + 0.2, values("HITS"), 0.38, color=hits_colour, label="HITS")
    seeds = [label for label in rows if label.startswith("R_") and label != "R_avg"]
    for j, label in enumerate(seeds):
        axis.scatter(x - 0.2, values(label), color="black", s=8, zorder=3,
                     label="random, each seed" if j == 0 else None)
    axis.set_xticks(x, [METRIC_TITLES[m] for m in metrics])
    axis.axhline(0.0, color="#555555", linewidth=0.8)
    axis.set_ylim(-1.05, 1.05)  # Spearman's range: negative correlations are drawn, not cut off
    axis.set_ylabel("mean Spearman between folds")
    axis.set_title("Ranking stability of the models across folds", fontsize=10)
    axis.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    axis.grid(axis="y", alpha=0.3)
    return _png(figure)


def write_raven_report(output_dir: Path, report: dict[str, Any]) -> dict[str, Path]:
    """Write ``raven.md``, ``raven.html`` and the PNG figures into ``output_dir`` (atomically)."""
    output_dir = Path(output_dir)
    pngs = {"raven_topic_similarity.png": similarity_figure(report),
            "raven_shortcut.png": shortcut_figure(report), "raven_stability.png": stability_figure(report)}
    paths = {}
    for name, png in pngs.items():
        with atomic_open(output_dir / name, "wb") as handle:
            handle.write(png)
        paths[name] = output_dir / name
    paths["markdown"] = output_dir / "raven.md"
    write_text_atomic(paths["markdown"], render_markdown(report, list(pngs)))
    paths["html"] = output_dir / "raven.html"
    write_text_atomic(paths["html"], render_html(report, pngs))
    return paths
