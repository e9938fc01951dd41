"""Shakespeare original <-> modern English parallel lines (Xu et al., COLING 2012).

Source: github.com/cocoxu/Shakespeare (commit ced63d4, ``data/align/plays{,2}/merged/``), staged
as ``shakespeare_modern_parallel/shakespeare_original_modern.tsv`` (UTF-8 TSV, header ``source
play line_idx original modern``; 31,444 pairs: sparknotes 21,079 from 17 plays, enotes 10,365
from 8 plays). Licence: none stated (cite Xu et al. 2012); the modern paraphrases are
SparkNotes / eNotes text - research use only, do not redistribute.

Unit (STEB App. C.5 "Shakespeare", order alignment ``[original, modern]``): pairs from both
sources; pairs whose two sides are identical (ignoring case and whitespace: 3,518 in this
release, 3,342 of them identical as written) and repeated originals are dropped; a seeded sample
of lists. The task pairs every list with every other list; its distractor variant is built from
the lists (``tasks.order_alignment``), so ``distractors`` is ``None``.
"""

from __future__ import annotations

from pathlib import Path

from stylebench_jax.data.readers import dataset_dir, read_table, require_file
from stylebench_jax.data.records import ShakespearePair
from stylebench_jax.data.sampling import disjoint_lists, sample, unit_rng
from stylebench_jax.data.units import DatasetSpec, EvalUnit, OrderedLists, check_size
from stylebench_jax.errors import located

NAME = "shakespeare_modern_parallel"
FILE = "shakespeare_original_modern.tsv"
SOURCE = "github.com/cocoxu/Shakespeare (commit ced63d4, data/align/plays*/merged/)"
LICENCE = "none stated; modern side is SparkNotes/eNotes text (research use only)"
N_LISTS = {"quick": 100, "full": 400}


def load_shakespeare(data_root: str | Path) -> list[ShakespearePair]:
    """All 31,444 aligned pairs, validated (no duplicate (source, play, line_idx))."""
    folder = dataset_dir(data_root, NAME, expected=FILE, source=SOURCE)
    path = require_file(folder, FILE, source=SOURCE)
    pairs, seen = [], {}
    for row in read_table(path, columns=("source", "play", "line_idx", "original", "modern")):
        pair = ShakespearePair(row.choice("source", ("sparknotes", "enotes")), row.text("play"),
                               row.integer("line_idx", minimum=0), row.text("original"), row.text("modern"))
        key = (pair.source, pair.play, pair.line_idx)
        if key in seen:
            raise located(path, f"duplicate line {key} (first on line {seen[key]})", line=row.line, column=3)
        seen[key] = row.line
        pairs.append(pair)
    return pairs


def _normalise(text: str) -> str:
    return " ".join(text.lower().split())


def build_units(data_root: str | Path, *, size: str = "quick", seed: int = 0) -> list[EvalUnit]:
    """One order-list unit of ``[original, modern]`` pairs."""
    check_size(size)
    lists, seen = [], set()
    for pair in load_shakespeare(data_root):
        original = _normalise(pair.original)
        if original != _normalise(pair.modern) and original not in seen:
            seen.add(original)
            lists.append([pair.original, pair.modern])
    lists = sample(disjoint_lists(lists), N_LISTS[size], unit_rng(seed, NAME, "all"))
    return [EvalUnit(NAME, "all", "order_list", OrderedLists(lists))]


SPEC = DatasetSpec(
    name=NAME, tasks=("order_list",),
    description="Shakespeare lines and modern paraphrases, ordered [original, modern]",
    source=SOURCE, licence=LICENCE, load=build_units)
