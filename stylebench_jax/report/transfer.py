"""``transfer.md``/``transfer.html``: the style-transfer benchmark report (Writing7 design document §7).

Sections: the reference books (Writing7 book -> book used, and why), one row per backend (scores x100,
failures, originality flags), the ordering check of the local anchors with its explanation, paired
differences, per author, per topic, per book and per excerpt tables, a score distribution figure and
the reliability diagrams of the calibration in use (read from the ``calibration_report.json`` that
``stylebench calibrate`` wrote beside the ``style_calibration.json``).
"""

from __future__ import annotations

import json
from pathlib import Path

from stylebench_jax.report.calibration import WRITING7, reliability_figure_from_bins
from stylebench_jax.report.document import Table, fmt, write_document
from stylebench_jax.report.plots import _colours, _png, _pyplot

WHY_NOT = {
    ("shuffle", "markov"): (
        "The shuffled control scores above the Markov text. The shuffled text keeps every word, name and "
        "sentence of the excerpt and loses only their order; the Markov text (a chain trained on the "
        "author's other books) keeps the author's local word statistics, not the excerpt's own scene, "
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
        parts.append(f"Measured here: shuffling the excerpt's sentences costs {_points(gap['mean'])} "
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


def _points(value: float) -> str:
    """``value`` (a score in [0, 1]) as points x100 with one decimal, never ``-0.0``."""
    return fmt(100 * value, 1) if value == value else "-"


# Below this many items a percentile bootstrap interval is too narrow to decide (with 2 items it is
# their min and max), so no pair is called holding or reversed
MIN_VERDICT_ITEMS = 10


def _verdict(diff: dict, n_items: int) -> str:
    low, high = diff.get("ci_low", float("nan")), diff.get("ci_high", float("nan"))
    if not (low == low and high == high):
        return "no interval (too few items)"
    if n_items < MIN_VERDICT_ITEMS:
        return f"no verdict ({n_items} items; at least {MIN_VERDICT_ITEMS} needed)"
    if low > 0:
        return "holds"
    if high < 0:
        return "reversed"
    return "within noise (the 95% interval covers 0)"


def ordering_text(results: dict) -> str:
    """The anchors' expected order copy > markov > shuffle, judged pair by pair on the items all
    three produced: a pair holds (or is reversed) only when its paired bootstrap interval excludes
    0; a significantly reversed pair gets its explanation (``WHY_NOT``) with this run's evidence."""
    order = results.get("ordering")
    if order is None:
        return "The ordering check needs exactly one copy, one markov and one shuffle backend."
    names, expected = order["backends"], order["expected"]
    means = ", ".join(f"{k} ({names[k]}) {_points(v)}" for k, v in order["means"].items())
    text = (f"Expected copy > markov > shuffle; observed {' > '.join(order['observed'])} by mean on "
            f"{order['n_items']} items all three produced ({order['score']} x100: {means}).")
    verdicts, lines, reversed_pairs = [], [], []
    for i, a in enumerate(expected):
        for b in expected[i + 1:]:
            diff = order["differences"].get(f"{names[a]} - {names[b]}")
            if diff is None:
                continue
            verdicts.append(_verdict(diff, diff.get("n_items", order["n_items"])))
            interval = (f" [{_points(diff['ci_low'])}, {_points(diff['ci_high'])}]"
                        if "ci_low" in diff else "")
            lines.append(f"{a} - {b} {_points(diff['mean'])}{interval}: {verdicts[-1]}")
            if verdicts[-1] == "reversed":
                reversed_pairs.append((b, a))
    if lines:
        text += " Paired differences (points): " + "; ".join(lines) + "."
    if order["holds"] and all(verdict == "holds" for verdict in verdicts):
        return text + " The ordering holds."
    if reversed_pairs or (not verdicts and not order["holds"]):
        evidence = _evidence(results, order)
        observed = order["observed"]
        pairs = reversed_pairs or [(a, b) for i, a in enumerate(observed) for b in observed[i + 1:]]
        reasons = [WHY_NOT[pair].format(evidence=evidence) for pair in pairs if pair in WHY_NOT]
        return text + " The ordering does not hold. " + " ".join(reasons)
    return text + (" The ordering is not established: the differences above are within noise or "
                   "rest on too few items.")


def distribution_figure(rows: list[dict], score: str) -> bytes:
    plt = _pyplot()
    backends = list(dict.fromkeys(r["backend"] for r in rows))
    # x100, as every table of the report
    data = [[100 * r["scores"][score] for r in rows if r["backend"] == b and r["status"] == "ok"]
            for b in backends]
    keep = [(b, d) for b, d in zip(backends, data) if d]
    figure, axis = plt.subplots(figsize=(max(4.5, 1.3 * len(keep) + 2), 3.6))
    if keep:
        parts = axis.boxplot([d for _, d in keep], patch_artist=True, widths=0.5)
        for patch, colour in zip(parts["boxes"], _colours(len(keep))):
            patch.set_facecolor(colour)
        axis.set_xticks(range(1, len(keep) + 1), [b for b, _ in keep], rotation=15)
    axis.set_ylabel(f"{score} x100")
    axis.ticklabel_format(axis="y", useOffset=False)  # plain values, not "1e-8 + 8.80797e-1"
    axis.set_title(f"{score} x100 of every story against its excerpt", fontsize=10)
    axis.grid(axis="y", alpha=0.3)
    return _png(figure)


def _describes(similarity: dict, calibration_path: Path) -> bool:
    """Whether a ``calibration_report.json``'s similarity section is the report of the calibration
    file at ``calibration_path`` (same embedder, same method selection); a report left beside another
    calibration would show diagrams of a map the scores never used."""
    try:
        written = json.loads(calibration_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (similarity.get("embedder") == written.get("embedder")
            and similarity.get("selection") == written.get("selection"))


def _calibration_figures(results: dict) -> dict[str, bytes]:
    calibration = results["description"]["scoring"]["calibration"]
    if calibration is None:
        return {}
    report_path = Path(calibration["path"]).with_name("calibration_report.json")
    if not report_path.is_file():
        return {}
    report = json.loads(report_path.read_text(encoding="utf-8"))
    similarity = report.get("similarity") or {}
    if not _describes(similarity, Path(calibration["path"])):
        return {}
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
        Table("Reference books", "Writing7's benchmark books (its design document §7.3) and the novels of "
              "the shared data used for them.", ["Writing7 book", "book used", "author", "status", "note"],
              books),
        Table("Runs", f"Per backend, {score} x100 (mean, median, sample std), raw cosine, the naive "
              "(cos + 1) / 2 x100, originality flags (copied_phrase: >= "
              f"{d['originality']['max_common_words']} shared words in a row; reused_names: a capitalised "
              "name of the excerpt) and why units did not produce a story.",
              ["backend", "ok", "failed", "skipped", "mean", "median", "std", "cosine", "cos std", "0-1 mean",
               "copied", "names", "not ok"], _score_table_rows(results, score)),
        Table("Ordering of the local anchors", ordering_text(results),
              ["pair", "n", "mean diff x100", "95% CI", "first higher"],
              [[k, str((results.get("ordering") or {}).get("n_items", "")), _points(v["mean"]),
                f"[{_points(v['ci_low'])}, {_points(v['ci_high'])}]", fmt(v["share_first_higher"], 2)]
               for k, v in (results.get("ordering") or {}).get("differences", {}).items()]),
    ]
    pair = results["paired"]
    if pair.get("differences"):
        tables.append(Table("Paired differences (all backends)",
                            f"Each pair on the items both backends produced (n stories); {pair['score']} "
                            "x100; percentile bootstrap 95% CI resampling excerpts, each with all its "
                            "samples' stories (1,000 resamples, seed 0).",
                            ["pair", "n", "mean diff x100", "95% CI", "first higher"],
                            [[k, str(v.get("n_items", pair["n_items"])), _points(v["mean"]),
                              f"[{_points(v['ci_low'])}, {_points(v['ci_high'])}]",
                              fmt(v["share_first_higher"], 2)] for k, v in pair["differences"].items()]))
    for key, title in (("by_author", "author"), ("by_topic", "topic"), ("by_book", "book"),
                       ("by_excerpt", "excerpt")):
        backends, matrix = _matrix(results, key, score)
        tables.append(Table(f"Per {title}", f"{score} x100 mean (n stories).", [title, *backends], matrix))
    s = d["scoring"]
    cal = s["calibration"]
    e = d["excerpts"]
    intro = [f"{WRITING7}, §7 (the style-transfer benchmark): {len(d['books'])} books x {e['per_book']} "
             f"excerpts of {e['sentences']} sentences x {e['samples']} sample(s), {len(d['topics'])} topics"
             + (f", seed {d['seed']}" if "seed" in d else "") + ". "
             f"Scorer: {s['embedder']['name']} ({s['settings']['aggregate']} over windows "
             f"of {s['settings']['chunk_size']} sentences, overlap {s['settings']['overlap']}); "
             + (f"calibration {cal['method']} from {cal['path']}." if cal else
                "no calibration file: score_calibrated is empty and the cosine is the primary score.")]
    markov = [b for b in d.get("backends", []) if b.get("kind") == "markov"]
    if markov:
        intro.append("Markov backends: " + "; ".join(
            f"{b['name']}: order-{b.get('order')} word chain on the author's other books"
            for b in markov) + ".")
    pngs = {"transfer_scores.png": distribution_figure(rows, score), **_calibration_figures(results)}
    return write_document(output_dir, "transfer", "Style-transfer benchmark", intro, tables, pngs)

