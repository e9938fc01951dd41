"""Figures say what the numbers say: zero bars visible, undefined values marked, one colour per model,
lower-is-better rows of the heatmap coloured so that brighter is better."""

from __future__ import annotations

import io
import math

import matplotlib.image
import numpy as np

from stylebench_jax.report import plots
from stylebench_jax.report.tables import Cell, TaskTable


def pixels(png: bytes) -> np.ndarray:
    """``[H, W, 3]`` uint8 RGB of a PNG."""
    image = matplotlib.image.imread(io.BytesIO(png), format="png")
    return np.round(np.asarray(image)[..., :3] * 255).astype(np.int16)


def count(png: bytes, colour) -> int:
    """Pixels within 3 levels of ``colour`` (RGB floats in [0, 1])."""
    target = np.round(np.asarray(colour[:3]) * 255)
    return int((np.abs(pixels(png) - target).max(axis=-1) <= 3).sum())


def table(cells: dict) -> TaskTable:
    models = tuple(sorted({m for m, _ in cells}))
    columns = tuple(dict.fromkeys(c for _, c in cells))
    return TaskTable("pair_all", "auroc", models, columns,
                     {key: Cell(v, v, v, 10) for key, v in cells.items()})


def test_a_zero_is_drawn_and_an_undefined_value_is_marked():
    colour = plots.model_colours(["a", "b"])["a"]
    zero = plots.bar_chart(table({("a", "x"): 0.0, ("b", "x"): 0.5}))
    undefined = plots.bar_chart(table({("a", "x"): math.nan, ("b", "x"): 0.5}))
    absent = plots.bar_chart(table({("b", "x"): 0.5, ("a", "y"): 0.5}), columns=["x"])
    # a 0.000 shows as a line in the model's colour (the legend swatch is in all three charts)
    assert count(zero, colour) > count(undefined, colour) + 20
    grey = (0x77 / 255,) * 3
    # n/a gets a cross, not run nothing (the text's anti-aliasing has some of that grey in both)
    assert count(undefined, grey) > count(absent, grey) + 15


def test_a_model_keeps_its_colour_in_every_chart():
    colours = plots.model_colours(["a", "b", "c"])
    assert colours == plots.model_colours(["c", "a", "b", "a"])
    only_c = table({("c", "x"): 0.5})
    png = plots.bar_chart(only_c, colours=colours)
    assert count(png, colours["c"]) > 50 and count(png, colours["a"]) == 0


def test_heatmap_colours_lower_is_better_rows_reversed():
    viridis = plots._pyplot().get_cmap("viridis")
    values = np.full((4, 3), 0.1)
    plain = plots.heatmap(list("abcd"), list("xyz"), values, "t")
    flipped = plots.heatmap(list("abcd"), list("xyz"), values, "t", reversed_rows=[True] * 4)
    assert count(flipped, viridis(0.9)) > 10 * max(count(plain, viridis(0.9)), 1)
    assert count(plain, viridis(0.1)) > 10 * max(count(flipped, viridis(0.1)), 1)
