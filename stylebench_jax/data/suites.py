"""Evaluation suites: YAML files listing datasets, their size and the tasks to run.

A suite file (``configs/suites/<name>.yaml``) looks like::

    name: quick
    description: every dataset, small seeded subsamples
    size: quick                 # default size of the entries (quick | full); optional
    datasets:
      - dataset: stel           # a name from data.registry.DATASETS
        size: full              # optional, overrides the suite default
        tasks: [order_quad]     # optional, default: every task of the dataset
      - dataset: pastel
        subsets: [gender, politics]   # optional, default: every subset
      - built: runs/data/my_bench     # a `stylebench data build` output folder (relative to the
                                      # working directory): attribution + verification on its
                                      # evaluation split, named by its manifest's `name`

``load_suite(name_or_path)`` reads and validates it; every problem is a ``UserInputError``
naming the file, the line and the key (e.g. ``quick.yaml:14: datasets[3].tasks[1]: unknown task
'clusters' for dataset 'cds_samples'; expected some of clustering, pair_all, probing``).
A bare name is looked up in the repository's ``configs/suites/`` (installed from a wheel: the
copy in ``stylebench_jax/bundled_suites/``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from stylebench_jax.config import InvalidField, apply_overrides, build, read_yaml
from stylebench_jax.data import authbench
from stylebench_jax.data.registry import DATASETS, load_units
from stylebench_jax.data.units import EvalUnit
from stylebench_jax.errors import UserInputError

_CHECKOUT_SUITES = Path(__file__).resolve().parents[2] / "configs" / "suites"
_INSTALLED_SUITES = Path(__file__).resolve().parents[1] / "bundled_suites"  # setup.py: package_dir
SUITES_DIR = _CHECKOUT_SUITES if _CHECKOUT_SUITES.is_dir() else _INSTALLED_SUITES


Size = Literal["quick", "full"]


@dataclasses.dataclass(frozen=True)
class SuiteEntry:
    """One dataset of a suite: which size to load and which of its units to keep.

    The dataset is either ``dataset`` (a registry name) or ``built`` (the output folder of
    ``stylebench data build``, read with ``data.authbench.load_built_units``; its name is the
    manifest's ``name``, read when the entry is validated). In the file ``size`` and ``tasks`` may
    be left out; :class:`Suite` fills them in (the suite's size, every task of the dataset)."""

    dataset: str | None = None  # a name of data.registry.DATASETS
    size: Size | None = None
    tasks: tuple[str, ...] | None = None
    subsets: tuple[str, ...] | None = None  # None = every subset
    built: Path | None = None
    built_name: str | None = dataclasses.field(default=None, metadata={"config": False})

    def __post_init__(self):
        if (self.dataset is None) == (self.built is None):
            raise InvalidField("dataset", "give either dataset (a registered name) or built (a folder "
                                          "written by stylebench data build), not both or neither")
        if self.built is not None:
            try:
                object.__setattr__(self, "built_name", authbench.built_name(self.built))
            except UserInputError as error:
                raise InvalidField("built", str(error)) from None
        elif self.dataset not in DATASETS:
            raise InvalidField("dataset", f"unknown dataset {self.dataset!r}; known: {', '.join(DATASETS)}")
        allowed = self.all_tasks
        for field, values in (("tasks", self.tasks), ("subsets", self.subsets)):
            if values is None:
                continue
            if not values:
                raise InvalidField(field, f"expected a non-empty list of {field}, found []")
            if len(set(values)) != len(values):
                raise InvalidField(field, f"a {field[:-1]} is listed twice")
        for index, task in enumerate(self.tasks or ()):
            if task not in allowed:
                raise InvalidField(f"tasks[{index}]", f"unknown task {task!r} for dataset {self.dataset!r}; "
                                                      f"expected some of {', '.join(allowed)}")

    @property
    def name(self) -> str:
        """The dataset's name in results: the registry name, or the built benchmark's manifest name."""
        return self.built_name if self.built is not None else self.dataset

    @property
    def all_tasks(self) -> tuple[str, ...]:
        return authbench.SPEC.tasks if self.built is not None else DATASETS[self.dataset].tasks

    def load(self, data_root: str | Path, *, seed: int = 0) -> list[EvalUnit]:
        """Every unit of the entry's dataset at its size (before the tasks/subsets selection)."""
        if self.built is not None:
            try:
                return authbench.load_built_units(self.built, size=self.size, seed=seed, name=self.name)
            except ValueError as error:  # parses, but too little to build a unit (one author, ...)
                raise UserInputError(f"{self.built}: cannot build units of {self.name}: {error}") from None
        return load_units(self.dataset, data_root, size=self.size, seed=seed)

    def keep(self, unit: EvalUnit) -> bool:
        """True if ``unit`` (of this dataset) is selected by the entry's tasks and subsets."""
        return (unit.dataset == self.name and unit.task in (self.tasks or ())
                and (self.subsets is None or unit.subset in self.subsets))


@dataclasses.dataclass(frozen=True, kw_only=True)
class Suite:
    """A suite file's content (module docstring); ``path`` is where it was read from."""

    name: str = dataclasses.field(metadata={"non_empty": True})
    description: str = ""
    size: Size = "quick"
    datasets: tuple[SuiteEntry, ...] = dataclasses.field(metadata={"non_empty": True})
    path: Path = dataclasses.field(default=Path("<suite>"), metadata={"config": False})

    def __post_init__(self):
        seen = set()
        resolved = []
        for index, entry in enumerate(self.datasets):
            if entry.name in seen:
                key = "built" if entry.built is not None else "dataset"
                raise InvalidField(f"datasets[{index}].{key}", f"dataset {entry.name!r} is listed twice")
            seen.add(entry.name)
            resolved.append(dataclasses.replace(
                entry, size=entry.size or self.size, tasks=entry.tasks or entry.all_tasks))
        object.__setattr__(self, "datasets", tuple(resolved))
        object.__setattr__(self, "description", self.description.strip())

    def load(self, data_root: str | Path, *, seed: int = 0,
             only: Sequence[str] | None = None) -> list[EvalUnit]:
        """The suite's units (entries in order, restricted to dataset names ``only`` if given).

        A listed subset that the dataset does not produce, or subsets and tasks that together select
        none of its units, is a ``UserInputError``.
        """
        units = []
        for entry in self.datasets:
            if only is not None and entry.name not in only:
                continue
            loaded = entry.load(data_root, seed=seed)
            if entry.subsets is not None:
                missing = sorted(set(entry.subsets) - {u.subset for u in loaded})
                if missing:
                    raise UserInputError(
                        f"{self.path}: dataset {entry.name!r} has no subset(s) {', '.join(missing)}; it "
                        f"has {', '.join(sorted({u.subset for u in loaded}))}")
            kept = [unit for unit in loaded if entry.keep(unit)]
            if not kept:
                offered = ", ".join(sorted({f"{u.subset}/{u.task}" for u in loaded}))
                raise UserInputError(f"{self.path}: dataset {entry.name!r}: its subsets and tasks select no "
                                     f"unit; it has (subset/task) {offered}")
            units += kept
        return units


def available_suites() -> list[str]:
    return sorted(path.stem for path in SUITES_DIR.glob("*.yaml"))


def suite_path(name_or_path: str | Path) -> Path:
    """A suite file: an existing path as given, else ``configs/suites/<name>.yaml``."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    name = str(name_or_path)
    if re.fullmatch(r"[A-Za-z0-9_.-]+", name) and not name.endswith((".yaml", ".yml")):
        candidate = SUITES_DIR / f"{name}.yaml"
        if candidate.is_file():
            return candidate
        known = ", ".join(available_suites()) or "none"
        raise UserInputError(f"unknown suite {name!r}; known suites: {known} (in {SUITES_DIR}), "
                             "or pass a YAML file")
    raise UserInputError(f"{path}: suite file not found")


def load_suite(name_or_path: str | Path, overrides: Sequence[str] = ()) -> Suite:
    """Read and validate a suite (module docstring); ``overrides`` are ``key.path=value`` strings."""
    path = suite_path(name_or_path)
    data, locator = read_yaml(path)
    data = apply_overrides(data, overrides, Suite, locator)
    return dataclasses.replace(build(Suite, data, locator), path=path)


def with_built(suite: Suite | None, directories: Sequence[str | Path]) -> Suite:
    """``suite`` with one ``built`` entry (size full) per directory appended; without a suite, a suite
    named ``built`` of those entries only (``stylebench eval --built DIR``). ``InvalidOption("built")``
    for a folder that is not a build output or a dataset name already in the suite."""
    from stylebench_jax.errors import InvalidOption

    entries = list(suite.datasets) if suite is not None else []
    for directory in directories:
        try:
            entry = SuiteEntry(built=Path(directory), size="full")
        except InvalidField as error:
            raise InvalidOption("built", error.message) from None
        if entry.name in {e.name for e in entries}:
            raise InvalidOption("built", f"{directory}: dataset {entry.name!r} is already in the suite")
        entries.append(dataclasses.replace(entry, tasks=entry.all_tasks))
    if suite is None:
        return Suite(name="built", description="built benchmarks given by --built", size="full",
                     datasets=tuple(entries), path=Path("<--built>"))
    return dataclasses.replace(suite, datasets=tuple(entries))
