"""Built authorship benchmarks (``stylebench data build``) as evaluation units.

``AuthorshipSet`` is the payload of the ``attribution`` and ``verification`` tasks: one split's
documents with their hashed authors and the metadata the mandatory breakdowns need (language,
genre, subgenre, token length) plus an optional topic (F.5's topic-selected pool diagnostic).
Every document is a query and a candidate of the same within-split pool (AuthBench A.8).

``load_built_split(directory, split)`` reads ``<directory>/splits/<split>.jsonl`` as written by
``data.construct.export``; without ``split`` it reads the split the build config's
``evaluation.split`` names (recorded in ``manifest.json``; ``test`` by default).

Two ways to evaluate a built benchmark:

* any build output directory, by path: :func:`load_built_units` (a suite entry ``- built: DIR`` or
  ``stylebench eval --built DIR``); the dataset is named by the manifest's ``name``;
* the ready benchmark ``authbench_en`` (``configs/data/authbench_en.yaml``) by name, :data:`SPEC`,
  looked up as ``<data root>/authbench_en`` first, then ``runs/data/authbench_en`` (the ready
  config's output, relative to the working directory).

Units are the evaluation split (``size: full``) or a seeded sample of ``QUICK_AUTHORS`` of its
authors with all their documents (``size: quick``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np

from stylebench_jax.data.sampling import unit_rng
from stylebench_jax.data.units import DatasetSpec, EvalUnit, Payload, check_size
from stylebench_jax.errors import UserInputError, located

NAME = "authbench_en"
SPLIT = "test"
QUICK_AUTHORS = 20
BUILD_COMMAND = "stylebench data build configs/data/authbench_en.yaml"


def _require(condition: bool, where: str, message: str) -> None:
    if not condition:
        raise ValueError(f"{where}: {message}")


@dataclasses.dataclass(frozen=True)
class AuthorshipSet(Payload):
    """One within-split pool: ``texts [N]``, ``authors [N]`` (hashed ids) and per-document
    ``languages``, ``genres``, ``subgenres`` (``""`` when none), ``token_lengths`` (under the build
    tokenizer) and ``topics`` (``None`` entries, or all ``None`` when the source has no topic)."""

    texts: Sequence[str]
    authors: Sequence[str]
    languages: Sequence[str]
    genres: Sequence[str]
    subgenres: Sequence[str]
    token_lengths: Sequence[int]
    topics: Sequence[str | None] | None = None
    ks: tuple[int, ...] = (1, 5, 10)
    mrr_cutoff: int = 100
    negatives_per_query: int = 50
    kind: ClassVar[str] = "authorship_set"

    def check(self, where: str) -> None:
        n = len(self.texts)
        for name in ("texts", "authors", "languages", "genres", "subgenres"):
            value = getattr(self, name)
            _require(isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value), where,
                     f"{name} must be a list of str")
            _require(len(value) == n, where, f"{name} has {len(value)} entries for {n} texts")
        _require(len(self.token_lengths) == n
                 and all(isinstance(v, int) and v >= 0 for v in self.token_lengths), where,
                 "token_lengths must be one non-negative int per text")
        if self.topics is not None:
            _require(len(self.topics) == n, where, f"topics has {len(self.topics)} entries for {n} texts")
        _require(len(self.ks) > 0 and min(self.ks) >= 1 and self.mrr_cutoff >= 1
                 and self.negatives_per_query >= 1,
                 where, "ks, mrr_cutoff and negatives_per_query must be positive")
        counts: dict[str, int] = {}
        for author in self.authors:
            counts[author] = counts.get(author, 0) + 1
        _require(any(c >= 2 for c in counts.values()), where,
                 "no author has two documents: nothing to retrieve")

    def all_texts(self) -> list[str]:
        return list(self.texts)


def read_manifest(directory: str | Path) -> dict:
    """``<directory>/manifest.json`` ({} when absent); ``UserInputError`` naming the line if invalid."""
    path = Path(directory) / "manifest.json"
    if not path.is_file():
        return {}
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise located(path, f"invalid JSON ({error.msg})", line=error.lineno) from None
    if not isinstance(manifest, dict):
        raise located(path, "expected a JSON object (the manifest of stylebench data build)")
    return manifest


def evaluation_protocol(directory: str | Path) -> dict:
    """The build config's ``evaluation`` section from ``<directory>/manifest.json`` (defaults when
    the manifest or the section is absent): ``ks``, ``mrr_cutoff``, ``negatives_per_query`` and
    ``split``."""
    path = Path(directory) / "manifest.json"
    config = read_manifest(directory).get("config", {})
    if not isinstance(config, dict):
        raise located(path, f"'config': expected an object (the build config), found {type(config).__name__}")
    section = config.get("evaluation", {})
    if not isinstance(section, dict):
        raise located(path, f"'config.evaluation': expected an object, found {type(section).__name__}")
    expected = {"ks": "a list of positive integers", "mrr_cutoff": "a positive integer",
                "negatives_per_query": "a positive integer", "split": "a split name"}
    out = {}
    for key, value in section.items():
        if key not in expected:
            continue
        if key == "ks":
            valid = isinstance(value, list) and bool(value) and all(_positive_int(k) for k in value)
            value = tuple(value) if valid else value
        else:
            valid = isinstance(value, str) and bool(value) if key == "split" else _positive_int(value)
        if not valid:
            raise located(path, f"'config.evaluation.{key}': expected {expected[key]}, found {value!r}")
        out[key] = value
    return out


def _positive_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def evaluation_split(directory: str | Path) -> str:
    """The split a build is evaluated on: its config's ``evaluation.split`` (default ``test``)."""
    return evaluation_protocol(directory).get("split", SPLIT)


def built_name(directory: str | Path) -> str:
    """The dataset name of a build output directory: its manifest's ``name``. ``UserInputError``
    when the directory, its manifest, the name or the evaluation split's file is missing."""
    directory = Path(directory)
    if not directory.is_dir():
        raise UserInputError(f"{directory}: not a directory; expected the output folder of "
                             "stylebench data build (manifest.json, splits/)")
    manifest = read_manifest(directory)
    if not (directory / "manifest.json").is_file():
        raise UserInputError(f"{directory}: no manifest.json; expected the output folder of "
                             "stylebench data build")
    name = manifest.get("name")
    if not isinstance(name, str) or not name:
        raise located(directory / "manifest.json", f"expected a non-empty string 'name', found {name!r}")
    split = evaluation_split(directory)
    if not (directory / "splits" / f"{split}.jsonl").is_file():
        raise UserInputError(f"{directory}: splits/{split}.jsonl not found (the manifest's evaluation "
                             f"split is {split!r})")
    return name


def load_built_split(directory: str | Path, split: str | None = None) -> AuthorshipSet:
    """The documents of ``<directory>/splits/<split>.jsonl`` (file order) as an AuthorshipSet, with
    the evaluation protocol of the build's manifest; ``split=None``: the manifest's evaluation split."""
    split = evaluation_split(directory) if split is None else split
    path = Path(directory) / "splits" / f"{split}.jsonl"
    if not path.is_file():
        raise UserInputError(f"{path}: built benchmark split not found; build it first "
                             f"(e.g. {BUILD_COMMAND})")
    rows = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise located(path, f"invalid JSON ({error.msg})", line=number) from None
            for key in ("text", "author_id", "language", "genre", "token_length"):
                if key not in row:
                    raise located(path, f"missing key {key!r}; expected a record of stylebench data build",
                                  line=number)
            rows.append(row)
    topics = [row.get("topic") for row in rows]
    return AuthorshipSet(
        texts=[r["text"] for r in rows], authors=[r["author_id"] for r in rows],
        languages=[r["language"] for r in rows], genres=[r["genre"] for r in rows],
        subgenres=[r.get("subgenre") or "" for r in rows],
        token_lengths=[int(r["token_length"]) for r in rows],
        topics=topics if any(t is not None for t in topics) else None,
        **{k: v for k, v in evaluation_protocol(directory).items() if k != "split"})


def subsample_authors(payload: AuthorshipSet, n_authors: int, rng: np.random.Generator) -> AuthorshipSet:
    """All documents of ``n_authors`` authors drawn among those with two or more documents."""
    counts: dict[str, int] = {}
    for author in payload.authors:
        counts[author] = counts.get(author, 0) + 1
    eligible = sorted(a for a, c in counts.items() if c >= 2)
    if len(eligible) <= n_authors:
        return payload
    chosen = set(np.asarray(eligible)[rng.choice(len(eligible), size=n_authors, replace=False)].tolist())
    keep = [i for i, a in enumerate(payload.authors) if a in chosen]

    def pick(values):
        return None if values is None else [values[i] for i in keep]

    return dataclasses.replace(payload, **{name: pick(getattr(payload, name)) for name in (
        "texts", "authors", "languages", "genres", "subgenres", "token_lengths", "topics")})


def built_directory(data_root: str | Path) -> Path:
    for candidate in (Path(data_root) / NAME, Path("runs") / "data" / NAME):
        if (candidate / "manifest.json").is_file() and (candidate / "splits").is_dir():
            return candidate
    raise UserInputError(f"dataset {NAME!r}: no built benchmark in {Path(data_root) / NAME} or "
                         f"runs/data/{NAME}; build it first with: {BUILD_COMMAND}")


def load_built_units(directory: str | Path, *, size: str = "quick", seed: int = 0,
                     name: str | None = None) -> list[EvalUnit]:
    """Attribution and verification units over the evaluation split of the build in ``directory``
    (dataset name: ``name``, default the manifest's; subset: the split's name)."""
    check_size(size)
    name = built_name(directory) if name is None else name
    split = evaluation_split(directory)
    payload = load_built_split(directory, split)
    if size == "quick":
        payload = subsample_authors(payload, QUICK_AUTHORS, unit_rng(seed, name, split))
    return [EvalUnit(name, split, "attribution", payload), EvalUnit(name, split, "verification", payload)]


def build_units(data_root: str | Path, *, size: str = "quick", seed: int = 0) -> list[EvalUnit]:
    """The units of the ready benchmark ``authbench_en`` (module docstring)."""
    return load_built_units(built_directory(data_root), size=size, seed=seed, name=NAME)


SPEC = DatasetSpec(
    name=NAME, tasks=("attribution", "verification"),
    description="English multi-genre authorship benchmark built by AuthBench's pipeline "
                "(news, novels, essays)",
    source=f"built from the shared corpora by `{BUILD_COMMAND}`", licence="as its sources (see the config)",
    load=build_units)
