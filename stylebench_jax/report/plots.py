"""Matplotlib figures for the HTML report, returned as PNG bytes (Agg backend, no display needed).

Figures are drawn with fixed sizes, fonts and colours, and PNG metadata (software version, date)
is stripped, so the same numbers give the same image bytes. Every figure is at most
``MAX_WIDTH_IN`` inches wide at ``DPI`` (1,150 px): the page shows it at 100% without shrinking,
so wide tasks are split over several charts (``chart_groups``) instead of drawn ever wider.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

import numpy as np

from stylebench_jax.report.tables import TaskTable, task_title

_PNG_METADATA = {"Software": None}
_PAD_IN = 0.1  # savefig's margin around the tight box
DPI = 100
MAX_WIDTH_IN = 11.5  # the page's content is 1,200 px wide; leave a margin
MAX_BARS = 100  # bars per chart (columns x models) that stay at least ~6 px wide
MAX_COLUMNS = 12  # dataset columns per chart
# Metrics whose chance level does not depend on the data: a dashed line on their bar charts (a
# random scorer's AUROC, and its EER, is 0.5 whatever the class balance)
CHANCE_LEVELS = {"auroc": 0.5, "eer": 0.5, "eer_roc": 0.5}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _png(figure) -> bytes:
    """PNG of ``figure`` cropped to its content, first narrowed until that fits ``MAX_WIDTH_IN`` (rotated
    labels and legends make the content wider than the figure; the axes give up the difference)."""
    for _ in range(4):
        excess = figure.get_tightbbox(figure.canvas.get_renderer()).width + 2 * _PAD_IN - MAX_WIDTH_IN
        if excess <= 0:
            break
        width, height = figure.get_size_inches()
        figure.set_size_inches(max(1.0, width - excess - 0.02), height)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight", pad_inches=_PAD_IN,
                   metadata=_PNG_METADATA)
    _pyplot().close(figure)
    return buffer.getvalue()


def png_size(png: bytes) -> tuple[int, int]:
    """``(width, height)`` in pixels, read from a PNG's IHDR chunk."""
    if png[:8] != b"\x89PNG\r\n\x1a\n" or png[12:16] != b"IHDR":
        raise ValueError("not a PNG image")
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def _colours(count: int) -> list:
    cmap = _pyplot().get_cmap("tab10" if count <= 10 else "tab20")
    return [cmap(i % cmap.N) for i in range(count)]


def model_colours(models: Sequence[str]) -> dict[str, tuple]:
    """One colour per model of the whole run (sorted names), so a model keeps its colour in every
    chart, whichever models a chart shows."""
    models = sorted(set(models))
    return dict(zip(models, _colours(len(models))))


def _dataset(column: str) -> str:
    return column.split("/", 1)[0]


def chart_groups(columns: Sequence[str], n_models: int) -> list[list[str]]:
    """Split a task's dataset columns, in order, over as few charts as possible of at most
    ``min(MAX_COLUMNS, MAX_BARS // n_models)`` columns each, as evenly as possible. A dataset's
    subsets stay on one chart where they fit; one with more is split into near-equal parts."""
    limit = max(1, min(MAX_COLUMNS, MAX_BARS // max(n_models, 1)))
    blocks: list[list[str]] = []
    for column in columns:
        if blocks and _dataset(blocks[-1][0]) == _dataset(column):
            blocks[-1].append(column)
        else:
            blocks.append([column])
    parts: list[list[str]] = []
    for block in blocks:
        pieces = -(-len(block) // limit)
        size = -(-len(block) // pieces)
        parts += [block[i:i + size] for i in range(0, len(block), size)]
    # best[i] = (charts, largest chart, start of the last chart) for parts[:i]: fewest charts, then
    # the smallest largest chart (exact: the cost of a prefix does not depend on what follows)
    best: list[tuple[int, int, int]] = [(0, 0, 0)]
    for end in range(1, len(parts) + 1):
        options, size = [], 0
        for start in range(end - 1, -1, -1):
            size += len(parts[start])
            if size > limit:
                break
            options.append((best[start][0] + 1, max(best[start][1], size), start))
        best.append(min(options))
    charts, end = [], len(parts)
    while end:
        start = best[end][2]
        charts.append([c for part in parts[start:end] for c in part])
        end = start
    return charts[::-1]


def _runs(columns: Sequence[str]) -> list[tuple[str, int, int]]:
    """``(dataset, first, last)`` index runs of consecutive columns of one multi-subset dataset."""
    runs: list[tuple[str, int, int]] = []
    for i, column in enumerate(columns):
        if "/" not in column:
            continue
        if runs and runs[-1][0] == _dataset(column) and runs[-1][2] == i - 1:
            runs[-1] = (runs[-1][0], runs[-1][1], i)
        else:
            runs.append((_dataset(column), i, i))
    return runs


def value_limits(table: TaskTable) -> tuple[float, float | None]:
    """Shared y range of a task's charts: ``(0, 1.05)`` when every value and CI bound is in [0, 1]."""
    values = [v for c in table.cells.values() for v in (c.value, c.ci_low, c.ci_high) if math.isfinite(v)]
    if values and min(values) >= 0.0 and max(values) <= 1.0:
        return 0.0, 1.05
    top = max(values, default=1.0)
    return min(0.0, min(values, default=0.0)), top * 1.05 if top > 0 else None


def bar_chart(table: TaskTable, columns: Sequence[str] | None = None, part: str = "",
              colours: dict[str, tuple] | None = None) -> bytes:
    """Grouped bars: x = dataset column (``columns``, default all), one bar per model, whiskers = 95%
    bootstrap CI. ``colours``: ``{model: colour}`` (default ``model_colours(table.models)``); pass the
    run's map so a model has one colour in every chart. A bar's top is drawn as a line over the
    axes' frame, so a 0.000 stays visible; an undefined value (n/a) gets a grey cross at 0 and a model
    that did not run the column gets nothing; a dashed line marks chance for ``CHANCE_LEVELS``'
    metrics. Subsets are labelled by subset name under their
    dataset's name, which stands above the axes; the legend sits right of the axes, where it cannot
    cover the x labels."""
    plt = _pyplot()
    models, columns = table.models, list(table.columns if columns is None else columns)
    colours = model_colours(models) if colours is None else colours
    labels = [c.split("/", 1)[1] if "/" in c else c for c in columns]
    width = 0.8 / max(len(models), 1)
    legend_in = 0.5 + 0.07 * max((len(m) for m in models), default=0)
    axes_in = max(3.5, min(MAX_WIDTH_IN - legend_in - 0.8, 0.5 + len(columns) * (0.45 + 0.1 * len(models))))
    figure = plt.figure(figsize=(axes_in, 3.2))
    axis = figure.add_axes((0.0, 0.0, 1.0, 1.0))  # the axes fill the figure; savefig's tight box adds labels
    x = np.arange(len(columns))
    undefined: list[float] = []
    for i, model in enumerate(models):
        values, lows, highs = [], [], []
        slot = x + (i - (len(models) - 1) / 2) * width
        for position, column in zip(slot, columns):
            cell = table.cells.get((model, column))
            value = cell.value if cell is not None and math.isfinite(cell.value) else math.nan
            if cell is not None and not math.isfinite(cell.value):
                undefined.append(position)
            values.append(value)
            low = cell.ci_low if cell is not None and math.isfinite(cell.ci_low) else value
            high = cell.ci_high if cell is not None and math.isfinite(cell.ci_high) else value
            lows.append(max(value - low, 0.0) if math.isfinite(value) else 0.0)
            highs.append(max(high - value, 0.0) if math.isfinite(value) else 0.0)
        shown = [j for j, value in enumerate(values) if math.isfinite(value)]
        axis.bar(slot[shown], [values[j] for j in shown], width, label=model, color=colours[model],
                 yerr=[[lows[j] for j in shown], [highs[j] for j in shown]], capsize=min(2.0, 40 * width),
                 error_kw={"elinewidth": 0.8})
        # each bar's top as a line above the axes' frame: a 0.000 on a [0, 1] axis stays visible
        axis.hlines([values[j] for j in shown], slot[shown] - width / 2, slot[shown] + width / 2,
                    colors=[colours[model]], linewidth=1.5, zorder=3, clip_on=False)
    if table.metric in CHANCE_LEVELS:
        axis.axhline(CHANCE_LEVELS[table.metric], color="#555555", linestyle="--", linewidth=0.9, zorder=2.5,
                     label=f"chance ({CHANCE_LEVELS[table.metric]:g})")
    if undefined:
        axis.scatter(undefined, [0.0] * len(undefined), marker="x", s=14, color="#777777", linewidths=0.9,
                     zorder=3, clip_on=False, label="n/a (undefined)")
    slot_in = axes_in / max(len(columns), 1)
    rotate = max((len(label) for label in labels), default=0) * 0.07 > slot_in  # 8 pt: ~0.07 in a character
    axis.set_xticks(x, labels, fontsize=8, rotation=30 if rotate else 0, ha="right" if rotate else "center",
                    rotation_mode="anchor" if rotate else "default")
    axis.set_xlim(-0.5, len(columns) - 0.5)
    axis.set_ylabel(table.metric)
    axis.set_ylim(*value_limits(table))
    axis.grid(axis="y", alpha=0.3)
    runs = _runs(columns)
    for dataset, first, last in runs:
        axis.annotate(dataset, ((first + last) / 2, 1.0), xycoords=("data", "axes fraction"), xytext=(0, 3),
                      textcoords="offset points", ha="center", va="bottom", fontsize=8, color="#444444")
        for edge in (first - 0.5, last + 0.5):
            if -0.5 < edge < len(columns) - 0.5:
                axis.axvline(edge, color="#999999", linewidth=0.8)
    axis.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, frameon=False)
    axis.set_title(f"{task_title(table.task)}: {table.metric} (95% bootstrap CI){part}", fontsize=10,
                   pad=16 if runs else 6)
    return _png(figure)


def heatmap(rows: Sequence[str], columns: Sequence[str], values: np.ndarray, title: str,
            groups: Sequence[tuple[str, int]] = (), *, not_run: np.ndarray | None = None,
            reversed_rows: Sequence[bool] = (), colour_label: str = "") -> bytes:
    """``values``: ``[len(rows), len(columns)]`` float, coloured on a fixed [0, 1] scale (values
    outside it take the end colours), every cell annotated with its value; NaN cells are grey, "—"
    where ``not_run`` (same shape, bool) is set and "n/a" (undefined) otherwise. ``reversed_rows``:
    per row, True where lower is better (EER): the colour is that of ``1 - value``, so bright means
    better in every row. ``groups``: ``(label, row_count)`` runs of consecutive rows (e.g. one per
    task), each drawn under a bold header row; their counts must sum to ``len(rows)``.
    ``colour_label``: the colour bar's caption."""
    plt = _pyplot()
    values = np.asarray(values, dtype=np.float64)
    if values.shape != (len(rows), len(columns)):
        raise ValueError(f"values: expected shape {(len(rows), len(columns))}, found {values.shape}")
    not_run = np.isnan(values) if not_run is None else np.asarray(not_run, dtype=bool)
    if not_run.shape != values.shape:
        raise ValueError(f"not_run: expected shape {values.shape}, found {not_run.shape}")
    reversed_rows = np.asarray(reversed_rows or [False] * len(rows), dtype=bool)
    if reversed_rows.shape != (len(rows),):
        raise ValueError(f"reversed_rows: expected {len(rows)} flags, found {reversed_rows.shape[0]}")
    if groups and sum(count for _, count in groups) != len(rows):
        raise ValueError(f"groups: row counts sum to {sum(c for _, c in groups)}, expected {len(rows)}")
    labels, grid, absent, flip, headers = [], [], [], [], []
    start = 0
    for label, count in groups or [("", len(rows))]:
        if label:
            headers.append(len(labels))
            labels.append(label)
            grid.append(np.full(len(columns), np.nan))
            absent.append(np.ones(len(columns), dtype=bool))
            flip.append(False)
        labels += rows[start:start + count]
        grid += list(values[start:start + count])
        absent += list(not_run[start:start + count])
        flip += list(reversed_rows[start:start + count])
        start += count
    grid = np.asarray(grid).reshape(len(labels), len(columns))
    absent = np.asarray(absent).reshape(grid.shape)
    shade = np.where(np.asarray(flip)[:, None], 1.0 - grid, grid)
    cell_in = min(0.75, max(0.4, (MAX_WIDTH_IN - 4.5) / max(len(columns), 1)))
    figure, axis = plt.subplots(figsize=(1.0 + cell_in * len(columns), 0.9 + 0.24 * len(labels)))
    cmap = plt.get_cmap("viridis").with_extremes(bad="#eeeeee")
    image = axis.imshow(np.ma.masked_invalid(shade), cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto",
                        interpolation="nearest")
    axis.xaxis.tick_top()
    axis.set_xticks(range(len(columns)), columns, rotation=35, ha="left", rotation_mode="anchor", fontsize=8)
    axis.set_yticks(range(len(labels)), labels, fontsize=8)
    for i in headers:
        axis.axhspan(i - 0.5, i + 0.5, color="white", zorder=2)
        axis.get_yticklabels()[i].set_fontweight("bold")
    font = 7 if cell_in >= 0.55 else 6
    for i in range(grid.shape[0]):
        if i in headers:
            continue
        for j in range(grid.shape[1]):
            value = grid[i, j]
            if math.isfinite(value):
                # three decimals as in the tables: 0.995 is not 1.00
                text, colour = f"{value:.3f}", "white" if shade[i, j] < 0.6 else "black"
            else:
                text, colour = "—" if absent[i, j] else "n/a", "#888888"
            axis.text(j, i, text, ha="center", va="center", fontsize=font, color=colour, zorder=3)
    axis.tick_params(axis="y", length=0)
    bar = figure.colorbar(image, ax=axis, orientation="horizontal", location="bottom",
                          fraction=0.6 / len(labels), pad=0.4 / len(labels), aspect=40, shrink=0.6)
    bar.ax.tick_params(labelsize=8)
    if colour_label:
        bar.set_label(colour_label, fontsize=8)
    axis.set_title(title, fontsize=10, pad=10)
    return _png(figure)
