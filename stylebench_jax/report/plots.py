"""Matplotlib figures for the HTML report, returned as PNG bytes (Agg backend, no display needed).

Figures are drawn with fixed sizes, fonts and colours, and PNG metadata (software version, date)
is stripped, so the same numbers give the same image bytes.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

import numpy as np

from stylebench_jax.report.tables import TaskTable

_PNG_METADATA = {"Software": None}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _png(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight", metadata=_PNG_METADATA)
    _pyplot().close(figure)
    return buffer.getvalue()


def _colours(count: int) -> list:
    cmap = _pyplot().get_cmap("tab10" if count <= 10 else "tab20")
    return [cmap(i % cmap.N) for i in range(count)]


def bar_chart(table: TaskTable) -> bytes:
    """Grouped bars: x = dataset column, one bar per model, whiskers = 95% bootstrap CI."""
    plt = _pyplot()
    models, columns = table.models, table.columns
    width = 0.8 / max(len(models), 1)
    figure, axis = plt.subplots(figsize=(max(6.0, 0.9 + len(columns) * (0.35 + 0.18 * len(models))), 3.8))
    x = np.arange(len(columns))
    for i, (model, colour) in enumerate(zip(models, _colours(len(models)))):
        values, lows, highs = [], [], []
        for column in columns:
            cell = table.cells.get((model, column))
            value = cell.value if cell is not None and math.isfinite(cell.value) else math.nan
            values.append(value)
            low = cell.ci_low if cell is not None and math.isfinite(cell.ci_low) else value
            high = cell.ci_high if cell is not None and math.isfinite(cell.ci_high) else value
            lows.append(max(value - low, 0.0) if math.isfinite(value) else 0.0)
            highs.append(max(high - value, 0.0) if math.isfinite(value) else 0.0)
        axis.bar(x + (i - (len(models) - 1) / 2) * width, np.nan_to_num(values), width, label=model,
                 color=colour, yerr=[lows, highs], capsize=2, error_kw={"elinewidth": 0.8})
    crowded = len(columns) > 3
    axis.set_xticks(x, columns, rotation=30 if crowded else 0, ha="right" if crowded else "center",
                    fontsize=8)
    axis.set_ylabel(table.metric)
    axis.set_ylim(0, 1.05 if _all_in_unit(table) else None)
    axis.grid(axis="y", alpha=0.3)
    axis.legend(fontsize=7, ncol=min(len(models), 4), loc="upper center",
                bbox_to_anchor=(0.5, -0.25 if crowded else -0.12))
    axis.set_title(f"{table.task}: {table.metric} (95% bootstrap CI)", fontsize=10)
    return _png(figure)


def _all_in_unit(table: TaskTable) -> bool:
    values = [c.ci_high if math.isfinite(c.ci_high) else c.value for c in table.cells.values()]
    values = [v for v in values if math.isfinite(v)]
    return bool(values) and min(values) >= 0.0 and max(values) <= 1.0


def heatmap(rows: Sequence[str], columns: Sequence[str], values: np.ndarray, title: str) -> bytes:
    """``values``: ``[len(rows), len(columns)]`` float in [0, 1], NaN = not run (blank); every cell
    is annotated with its value."""
    plt = _pyplot()
    values = np.asarray(values, dtype=np.float64)
    size = (max(5.0, 2.0 + 0.75 * len(columns)), max(2.2, 1.2 + 0.26 * len(rows)))
    figure, axis = plt.subplots(figsize=size)
    masked = np.ma.masked_invalid(values)
    image = axis.imshow(masked, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    axis.xaxis.tick_top()
    axis.set_xticks(range(len(columns)), columns, rotation=35, ha="left", fontsize=8)
    axis.set_yticks(range(len(rows)), rows, fontsize=8)
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            if math.isfinite(values[i, j]):
                axis.text(j, i, f"{values[i, j]:.2f}", ha="center", va="center", fontsize=7,
                          color="white" if values[i, j] < 0.6 else "black")
    figure.colorbar(image, ax=axis, fraction=0.04, pad=0.02, shrink=min(1.0, 12 / max(len(rows), 1)))
    axis.set_title(title, fontsize=10)
    return _png(figure)
