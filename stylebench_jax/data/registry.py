"""Dataset registry: dataset name -> ``DatasetSpec`` whose ``load`` builds the evaluation units.

``load_units(name, data_root, size=..., seed=...)`` is what the evaluation runner calls. Each
dataset's units, subsets and sampling are documented in its loader module
(``stylebench_jax.data.<module>``); ``size="quick"`` gives small deterministic seeded subsamples
(one 22M-parameter encoder embeds a whole quick suite in minutes on 2 CPU cores), ``"full"``
everything sensible (whole books, whole corpora or STEB-sized samples, see each module).

``EvalUnit`` and ``DatasetSpec`` are defined in ``stylebench_jax.data.units`` and re-exported here.
"""

from __future__ import annotations

from pathlib import Path

from stylebench_jax.data import (
    asset,
    authbench,
    bible,
    cds,
    federalist,
    m4,
    novels,
    onestopenglish,
    pastel,
    politeness,
    reuters,
    shakespeare,
    styleptb,
)
from stylebench_jax.data.stel import STEL_FILES, load_stel, steb_stel_lists
from stylebench_jax.data.units import SIZES, DatasetSpec, EvalUnit, OrderedLists, StelSet, check_size
from stylebench_jax.errors import UserInputError

__all__ = ["BUILT_DATASETS", "DATASETS", "SIZES", "DatasetSpec", "EvalUnit", "dataset_names", "load_units"]

STEL_SOURCE = "github.com/nlpsoc/STEL (commit e52f052, Data/STEL/; definite-abstract from dev c5135b3)"
STEL_LICENCE = "MIT; the formality sample falls under Yahoo's Terms of Use (limited waiver)"


def load_stel_units(data_root: str | Path, *, size: str = "quick", seed: int = 0) -> list[EvalUnit]:
    """One ``order_quad`` unit per STEL component (STEL's quadruples, all instances), then one
    ``order_list`` unit per style type STEB uses, built as STEB builds its STEL datasets
    (``data.stel.steb_stel_lists``: ordered pairs from the IDs, the first 100 per style type; every
    pair is aligned with every other). ``size`` and ``seed`` are unused: the public files are small
    and both constructions are defined on all of them."""
    check_size(size)
    root = Path(data_root)
    if not (root / "stel").is_dir():
        raise UserInputError(f"{root / 'stel'}: dataset folder not found; expected stel/ containing "
                             f"{', '.join(STEL_FILES.values())} (source: {STEL_SOURCE})")
    units = [EvalUnit("stel", component, "order_quad", StelSet(instances))
             for component, instances in load_stel(root).items()]
    every = [x for instances in load_stel(root, min_votes=0).values() for x in instances]  # STEB: no filter
    units += [EvalUnit("stel", style_type, "order_list", OrderedLists(lists))
              for style_type, lists in steb_stel_lists(every).items()]
    return units


_STEL = DatasetSpec(
    name="stel", tasks=("order_quad", "order_list"),
    description="STEL quadruples: formality, simplicity, contraction, nbr_substitution + 3 later components; "
                "STEB's ordered pairs of five of them",
    source=STEL_SOURCE, licence=STEL_LICENCE, load=load_stel_units)

DATASETS: dict[str, DatasetSpec] = {spec.name: spec for spec in (
    _STEL, bible.SPEC, cds.SPEC, onestopenglish.SPEC, asset.SPEC, shakespeare.SPEC, styleptb.SPEC,
    pastel.SPEC, politeness.SPEC, m4.SPEC, reuters.SPEC, *novels.SPECS.values(), federalist.SPEC,
    authbench.SPEC)}


# Datasets read from a benchmark built by `stylebench data build` (not from the shared raw data):
# their loaders need the build first, so the quick/full suites leave them out.
BUILT_DATASETS = ("authbench_en",)


def dataset_names() -> list[str]:
    return list(DATASETS)


def load_units(name: str, data_root: str | Path, *, size: str = "quick", seed: int = 0) -> list[EvalUnit]:
    """The evaluation units of dataset ``name`` (``UserInputError`` for unknown names or sizes)."""
    if name not in DATASETS:
        raise UserInputError(f"unknown dataset {name!r}; known datasets: {', '.join(DATASETS)}")
    check_size(size)
    try:
        units = DATASETS[name].load(Path(data_root), size=size, seed=seed)
    except ValueError as error:  # files parse but hold too little to build a unit (one class, ...)
        raise UserInputError(f"{Path(data_root) / name}: cannot build {name} units ({size}): "
                             f"{error}") from None
    tasks = DATASETS[name].tasks
    for unit in units:
        if unit.dataset != name or unit.task not in tasks:  # a registry bug, not user input
            raise AssertionError(f"{name}: loader produced unit {unit.key} outside its spec {tasks}")
    return units
