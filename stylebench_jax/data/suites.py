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
from typing import Any

import yaml

from stylebench_jax.data.registry import DATASETS, load_units
from stylebench_jax.data.units import SIZES, EvalUnit
from stylebench_jax.errors import UserInputError, located

_CHECKOUT_SUITES = Path(__file__).resolve().parents[2] / "configs" / "suites"
_INSTALLED_SUITES = Path(__file__).resolve().parents[1] / "bundled_suites"  # setup.py: package_dir
SUITES_DIR = _CHECKOUT_SUITES if _CHECKOUT_SUITES.is_dir() else _INSTALLED_SUITES
SUITE_KEYS = ("name", "description", "size", "datasets")
ENTRY_KEYS = ("dataset", "size", "tasks", "subsets")


@dataclasses.dataclass(frozen=True)
class SuiteEntry:
    """One dataset of a suite: which size to load and which of its units to keep."""

    name: str  # dataset name (key of data.registry.DATASETS)
    size: str  # "quick" | "full"
    tasks: tuple[str, ...]
    subsets: tuple[str, ...] | None = None  # None = every subset

    def keep(self, unit: EvalUnit) -> bool:
        """True if ``unit`` (of this dataset) is selected by the entry's tasks and subsets."""
        return (unit.dataset == self.name and unit.task in self.tasks
                and (self.subsets is None or unit.subset in self.subsets))


@dataclasses.dataclass(frozen=True)
class Suite:
    name: str
    description: str
    path: Path
    datasets: tuple[SuiteEntry, ...]

    def load(self, data_root: str | Path, *, seed: int = 0,
             only: Sequence[str] | None = None) -> list[EvalUnit]:
        """The suite's units (entries in order, restricted to dataset names ``only`` if given).

        A listed subset that the dataset does not produce is a ``UserInputError``.
        """
        units = []
        for entry in self.datasets:
            if only is not None and entry.name not in only:
                continue
            loaded = load_units(entry.name, data_root, size=entry.size, seed=seed)
            if entry.subsets is not None:
                missing = sorted(set(entry.subsets) - {u.subset for u in loaded})
                if missing:
                    raise UserInputError(
                        f"{self.path}: dataset {entry.name!r} has no subset(s) {', '.join(missing)}; it has "
                        f"{', '.join(sorted({u.subset for u in loaded}))}")
            units += [unit for unit in loaded if entry.keep(unit)]
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


def load_suite(name_or_path: str | Path) -> Suite:
    """Read and validate a suite (see module docstring)."""
    path = suite_path(name_or_path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise located(path, f"invalid UTF-8 ({error.reason}); expected a UTF-8 YAML file") from None
    except OSError as error:
        raise UserInputError(f"{path}: cannot read suite file ({error.strerror or error})") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise located(path, f"invalid YAML ({problem})", line=mark.line + 1 if mark else None,
                      column=mark.column + 1 if mark else None) from None
    return _validate(path, node, data)


class _Where:
    """Turns a key path into ``file:line: path: message`` errors using the composed YAML nodes."""

    def __init__(self, path: Path, root: yaml.Node | None):
        self.path, self.root = path, root

    def error(self, keys: Sequence[str | int], message: str) -> UserInputError:
        node, line = self.root, 1
        for key in keys:
            line = node.start_mark.line + 1 if node is not None else line
            node = _child(node, key)
        if node is not None:
            line = node.start_mark.line + 1
        label = "".join(f"[{k}]" if isinstance(k, int) else (f".{k}" if i else k) for i, k in enumerate(keys))
        return located(self.path, f"{label}: {message}" if label else message, line=line)


def _child(node: yaml.Node | None, key: str | int) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode) and isinstance(key, str):
        for key_node, value_node in node.value:
            if key_node.value == key:
                return value_node
    if isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
        return node.value[key]
    return None


def _string_list(where: _Where, keys: list, value: Any, allowed: Sequence[str] | None,
                 what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise where.error(keys, f"expected a non-empty list of {what}s, found {value!r}")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise where.error(keys + [index], f"expected a {what} name, found {item!r}")
        if allowed is not None and item not in allowed:
            raise where.error(keys + [index],
                              f"unknown {what} {item!r}; expected some of {', '.join(allowed)}")
    if len(set(value)) != len(value):
        raise where.error(keys, f"a {what} is listed twice")
    return tuple(value)


def _check_keys(where: _Where, keys: list, value: Any, allowed: Sequence[str], what: str) -> None:
    if not isinstance(value, dict):
        raise where.error(keys, f"expected a mapping ({what}) with keys {', '.join(allowed)}, "
                                f"found {value!r}")
    for key in value:
        if key not in allowed:
            raise where.error(keys + [key], f"unknown key {key!r}; expected one of {', '.join(allowed)}")


def _size(where: _Where, keys: list, value: Any) -> str:
    if value not in SIZES:
        raise where.error(keys, f"expected a size ({', '.join(SIZES)}), found {value!r}")
    return value


def _validate(path: Path, node: yaml.Node | None, data: Any) -> Suite:
    where = _Where(path, node)
    _check_keys(where, [], data, SUITE_KEYS, "a suite")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise where.error(["name"], f"expected the suite's name (a non-empty string), found {name!r}")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise where.error(["description"], f"expected a string, found {description!r}")
    default_size = _size(where, ["size"], data["size"]) if "size" in data else "quick"
    raw = data.get("datasets")
    if not isinstance(raw, list) or not raw:
        raise where.error(["datasets"], f"expected a non-empty list of dataset entries, found {raw!r}")
    entries, seen = [], set()
    for index, item in enumerate(raw):
        keys = ["datasets", index]
        _check_keys(where, keys, item, ENTRY_KEYS, "a dataset entry")
        dataset = item.get("dataset")
        if dataset not in DATASETS:
            raise where.error(keys + ["dataset"],
                              f"unknown dataset {dataset!r}; known: {', '.join(DATASETS)}")
        if dataset in seen:
            raise where.error(keys + ["dataset"], f"dataset {dataset!r} is listed twice")
        seen.add(dataset)
        spec = DATASETS[dataset]
        size = _size(where, keys + ["size"], item["size"]) if "size" in item else default_size
        tasks = (_string_list(where, keys + ["tasks"], item["tasks"], spec.tasks, "task")
                 if "tasks" in item else spec.tasks)
        subsets = (_string_list(where, keys + ["subsets"], item["subsets"], None, "subset")
                   if "subsets" in item else None)
        entries.append(SuiteEntry(dataset, size, tasks, subsets))
    return Suite(name=name, description=description.strip(), path=path, datasets=tuple(entries))
