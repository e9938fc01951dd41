"""``transfer.md``/``transfer.html``: the style-transfer benchmark report (seed 003 §7).

Sections: the reference books (seed book -> book used, and why), one row per backend (scores x100,
failures, originality flags), the ordering check of the local anchors with its explanation, paired
differences, per author, per topic, per book and per excerpt tables, a score distribution figure and
the reliability diagrams of the calibration in use (read from the ``calibration_report.json`` that
``stylebench calibrate`` wrote beside the ``style_calibration.json``).
"""

from __future__ import annotations

import json
from pathlib import Path

from stylebench_jax.report.calibration import reliability_figure_from_bins
from stylebench_jax.report.document import Table, fmt, write_document
from stylebench_jax.report.plots import _colours, _png, _pyplot

WHY_NOT = {
    ("shuffle", "markov"): (
        "The shuffled control scores above the Markov text. The shuffled text keeps every word, name and "
        "sentence of the excerpt and loses only their order; the Markov text (a chain trained on the "
        "author's *other* books) keeps the author's local word statistics, not the excerpt's own scene, "
        "people and subject matter. {evidence} A scorer that embeds each window as a whole is close to "
        "blind to sentence order and rewards shared content, so here the shuffled score measures how much "
        "of the similarity comes from content and sentence-level features rather than from discourse; a "
        "scorer that rewarded the author's voice over the excerpt's content would move the Markov text "
        "toward the shuffled control, or above it."),
    ("markov", "copy"): (
        "The Markov text scores above the excerpt itself, which no sensible similarity should allow: look "
        "for a calibration or chunking mismatch."),
    ("shuffle", "copy"): (
        "The shuffled control scores above the copied excerpt: with the excerpt cut into windows, windows "
        "of the shuffled text can be closer to each other's mean than the excerpt's own windows; the gap "
        "is within noise when its interval covers 0."),
}


def _evidence(results: dict, order: dict) -> str:
    """What this run measured about the shuffled control and the Markov text (for ``WHY_NOT``)."""
    backends, parts = order["backends"], []
    gap = order["differences"].get(f"{backends['copy']} - {backends['shuffle']}")
    if gap is not None:
        parts.append(f"Measured here: shuffling the excerpt's sentences costs {100 * gap['mean']:.1f} "
                     f"points against the copy ({order['score']} x100)")
    names = []
    for kind in ("shuffle", "markov"):
        run, flags = results["runs"][backends[kind]], results["flags"].get(backends[kind], {})
        if run["n_ok"]:
            names.append(f"{kind} {flags.get('reused_names', 0)} of {run['n_ok']}")
    if names:
        parts.append("stories reusing a capitalised name of the excerpt: " + ", ".join(names))
    return ("; ".join(parts) + ".") if parts else ""


def _score_table_rows(results: dict, score: str) -> list[list[str]]:
    rows = []
    for backend, run in results["runs"].items():
        s, c = run[score], run["cosine"]
        flags = results["flags"].get(backend, {})
        rows.append([backend, str(run["n_ok"]), str(run["n_failed"]), str(run["n_skipped"]),
                     fmt(s.get("mean_x100"), 1), fmt(s.get("median_x100"), 1), fmt(s.get("std_x100"), 1),
                     fmt(c.get("mean"), 3), fmt(c.get("std"), 3), fmt(run["score_0_1"].get("mean_x100"), 1),
                     str(flags.get("copied_phrase", 0)), str(flags.get("reused_names", 0)),
                     "; ".join(f"{k}: {v}" for k, v in run["not_ok_reasons"].items())])
    return rows


def _matrix(results: dict, key: str, score: str) -> tuple[list[str], list[list[str]]]:
    backends = list(results["runs"])
    names = sorted({name for b in backends for name in results[key][b]})
    rows = []
    for name in names:
        cells = []
        for b in backends:
            s = results[key][b].get(name, {}).get(score, {})
            cells.append(f"{fmt(s.get('mean_x100'), 1)} (n={s.get('n', 0)})" if s.get("n") else "-")
        rows.append([name, *cells])
    return backends, rows


def ordering_text(results: dict) -> str:
    order = results.get("ordering")
    if order is None:
        return "The ordering check needs exactly one copy, one markov and one shuffle backend."
    means = ", ".join(f"{k} {100 * v:.1f}" for k, v in order["means"].items())
    text = (f"Expected copy > markov > shuffle; observed {' > '.join(order['observed'])} on "
            f"{order['n_items']} items all three produced ({order['score']} x100: {means}).")
    if order["holds"]:
        return text + " The ordering holds."
    observed = order["observed"]
    evidence = _evidence(results, order)
    reasons = [WHY_NOT[(a, b)].format(evidence=evidence)
               for i, a in enumerate(observed) for b in observed[i + 1:] if (a, b) in WHY_NOT]
    return text + " The ordering does not hold. " + " ".join(reasons)


def distribution_figure(rows: list[dict], score: str) -> bytes:
    plt = _pyplot()
    backends = list(dict.fromkeys(r["backend"] for r in rows))
    data = [[r["scores"][score] for r in rows if r["backend"] == b and r["status"] == "ok"] for b in backends]
    keep = [(b, d) for b, d in zip(backends, data) if d]
    figure, axis = plt.subplots(figsize=(max(4.5, 1.3 * len(keep) + 2), 3.6))
    if keep:
        parts = axis.boxplot([d for _, d in keep], patch_artist=True, widths=0.5)
        for patch, colour in zip(parts["boxes"], _colours(len(keep))):
            patch.set_facecolor(colour)
        axis.set_xticks(range(1, len(keep) + 1), [b for b, _ in keep], rotation=15)
    axis.set_ylabel(score)
    axis.set_title(f"{score} of every story against its excerpt", fontsize=10)
    axis.grid(axis="y", alpha=0.3)
    return _png(figure)


def _calibration_figures(results: dict) -> dict[str, bytes]:
    calibration = results["description"]["scoring"]["calibration"]
    if calibration is None:
        return {}
    report_path = Path(calibration["path"]).with_name("calibration_report.json")
    if not report_path.is_file():
        return {}
    report = json.loads(report_path.read_text(encoding="utf-8"))
    similarity = report.get("similarity") or {}
    pngs = {}
    for split, result in [("fit", similarity.get("fit")), *similarity.get("evaluation", {}).items()]:
        if not result:
            continue
        curves = [("(cos + 1) / 2", result["naive"]["reliability"], result["naive"]["ece"]),
                  ("calibrated", result["calibrated"]["reliability"], result["calibrated"]["ece"])]
        name = similarity["embedder"]["name"]
        pngs[f"calibration_reliability_{split}.png"] = reliability_figure_from_bins(
            curves, f"calibration in use ({name}): {split} pairs")
    return pngs


def write_transfer_report(output_dir: Path, results: dict, rows: list[dict]) -> dict[str, Path]:
    from stylebench_jax.transfer.aggregate import primary_score

    d = results["description"]
    score = primary_score(rows)
    books = [[b["seed_book"], b["book"], b["author"], b["status"], b["note"]] for b in d["books"]]
    tables = [
        Table("Reference books", "The seed's benchmark books (§7.3) and the novels of the shared data used "
              "for them.", ["seed book", "book used", "author", "status", "note"], books),
        Table("Runs", f"Per backend, {score} x100 (mean, median, sample std), raw cosine, the naive "
              "(cos + 1) / 2 x100, originality flags (copied_phrase: >= "
              f"{d['originality']['max_common_words']} shared words in a row; reused_names: a capitalised "
              "name of the excerpt) and why units did not produce a story.",
              ["backend", "ok", "failed", "skipped", "mean", "median", "std", "cosine", "cos std", "0-1 mean",
               "copied", "names", "not ok"], _score_table_rows(results, score)),
        Table("Ordering of the local anchors", ordering_text(results),
              ["pair", "mean diff", "95% CI", "first higher"],
              [[k, fmt(v["mean"], 4), f"[{fmt(v['ci_low'], 4)}, {fmt(v['ci_high'], 4)}]",
                fmt(v["share_first_higher"], 2)]
               for k, v in (results.get("ordering") or {}).get("differences", {}).items()]),
    ]
    pair = results["paired"]
    if pair.get("differences"):
        tables.append(Table("Paired differences (all backends)",
                            f"{pair['n_items']} items every backend produced; {pair['score']}; bootstrap 95% "
                            "CI over items.",
                            ["pair", "mean diff", "95% CI", "first higher"],
                            [[k, fmt(v["mean"], 4), f"[{fmt(v['ci_low'], 4)}, {fmt(v['ci_high'], 4)}]",
                              fmt(v["share_first_higher"], 2)] for k, v in pair["differences"].items()]))
    for key, title in (("by_author", "author"), ("by_topic", "topic"), ("by_book", "book"),
                       ("by_excerpt", "excerpt")):
        backends, matrix = _matrix(results, key, score)
        tables.append(Table(f"Per {title}", f"{score} x100 mean (n stories).", [title, *backends], matrix))
    s = d["scoring"]
    cal = s["calibration"]
    e = d["excerpts"]
    intro = [f"Writing7 style-transfer benchmark (seed 003 §7): {len(d['books'])} books x {e['per_book']} "
             f"excerpts of {e['sentences']} sentences x {e['samples']} sample(s), {len(d['topics'])} topics. "
             f"Scorer: {s['embedder']['name']} ({s['settings']['aggregate']} over windows "
             f"of {s['settings']['chunk_size']} sentences, overlap {s['settings']['overlap']}); "
             + (f"calibration {cal['method']} from {cal['path']}." if cal else
                "no calibration file: score_calibrated is empty and the cosine is the primary score."),
             ordering_text(results)]
    pngs = {"transfer_scores.png": distribution_figure(rows, score), **_calibration_figures(results)}
    return write_document(output_dir, "transfer", "Style-transfer benchmark", intro, tables, pngs)

