"""Evaluation units and dataset specs: what a loader hands to the evaluation runner.

An ``EvalUnit`` is one dataset subset prepared for one task. Its ``payload`` follows a fixed
schema per task (checked when the unit is created, so a malformed unit never reaches a task):

=================  ==========================================================================
task               payload
=================  ==========================================================================
clustering         ``texts: list[str]``, ``labels: list[str]`` (same length, >= 2 labels)
pair_all           same as clustering (every pair; same label = positive)
probing            ``texts: list[str]`` (labels are not used; linguistic features are the targets)
pair_predefined    ``a: list[str]``, ``b: list[str]``, ``labels: list[int]`` (1 = same author /
                   style, 0 = different; both classes present)
retrieval          ``query_texts``, ``query_labels``, ``target_texts``, ``target_labels`` (lists;
                   every query label occurs among the target labels)
order_quad         ``instances``: STEL quadruple records (``stylebench_jax.data.stel``)
order_list         ``lists: list[list[str]]`` (each inner list = one content ordered from one
                   style pole to the other, all of the same length >= 2), ``distractors:
                   list[str] | None`` (one extra text per list; ``None`` for all our datasets:
                   ``tasks.order_alignment`` builds STEB's distractor variant from the lists)
=================  ==========================================================================
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from stylebench_jax.errors import UserInputError

TASKS = ("clustering", "pair_all", "pair_predefined", "order_quad", "order_list", "retrieval", "probing")
SIZES = ("quick", "full")


@dataclasses.dataclass(frozen=True)
class EvalUnit:
    """One dataset subset prepared for one task; ``payload`` schema per task (module docstring)."""

    dataset: str  # e.g. "bible_8_versions"
    subset: str  # e.g. "all", "formality", "test"
    task: str  # one of TASKS
    payload: dict

    def __post_init__(self):
        if self.task not in TASKS:
            raise ValueError(f"unknown task {self.task!r}; expected one of {', '.join(TASKS)}")
        check_payload(self.task, self.payload, where=self.key)

    @property
    def key(self) -> str:
        return f"{self.dataset}/{self.subset}/{self.task}"

    def texts(self) -> list[str]:
        """Every text the unit asks an embedder to encode (with repeats), for sizing and caching."""
        return unit_texts(self.task, self.payload)


@dataclasses.dataclass(frozen=True)
class DatasetSpec:
    """A dataset in the registry: its tasks, provenance, and the function that builds its units.

    ``load(data_root, *, size="quick"|"full", seed=0) -> list[EvalUnit]``.
    """

    name: str
    tasks: tuple[str, ...]
    description: str
    source: str
    licence: str
    load: Callable[..., list[EvalUnit]]


def check_size(size: str) -> str:
    if size not in SIZES:
        raise UserInputError(f"unknown size {size!r}; expected one of {', '.join(SIZES)}")
    return size


def _require(condition: bool, where: str, message: str) -> None:
    if not condition:
        raise ValueError(f"{where}: {message}")


def _str_list(payload: dict, name: str, where: str) -> list:
    value = payload.get(name)
    _require(isinstance(value, list), where, f"payload[{name!r}] must be a list, got {type(value).__name__}")
    _require(all(isinstance(item, str) for item in value), where, f"payload[{name!r}] must hold str")
    return value


def check_payload(task: str, payload: Any, *, where: str = "unit") -> None:
    """Raise ``ValueError`` if ``payload`` does not follow the schema of ``task``."""
    _require(isinstance(payload, dict), where, "payload must be a dict")
    if task in ("clustering", "pair_all"):
        texts, labels = _str_list(payload, "texts", where), _str_list(payload, "labels", where)
        _require(len(texts) == len(labels), where, f"{len(texts)} texts but {len(labels)} labels")
        _require(len(set(labels)) >= 2, where, "needs at least two distinct labels")
    elif task == "probing":
        texts = _str_list(payload, "texts", where)
        _require(len(texts) > 0, where, "needs texts")
    elif task == "pair_predefined":
        a, b = _str_list(payload, "a", where), _str_list(payload, "b", where)
        labels = payload.get("labels")
        _require(isinstance(labels, list) and all(x in (0, 1) and not isinstance(x, bool) for x in labels),
                 where, "payload['labels'] must be a list of 0/1 ints")
        _require(len(a) == len(b) == len(labels), where, f"lengths differ: a {len(a)}, b {len(b)}, "
                                                         f"labels {len(labels)}")
        _require(set(labels) == {0, 1}, where, "needs both positive and negative pairs")
    elif task == "retrieval":
        queries = _str_list(payload, "query_texts", where)
        query_labels = _str_list(payload, "query_labels", where)
        targets = _str_list(payload, "target_texts", where)
        target_labels = _str_list(payload, "target_labels", where)
        _require(len(queries) == len(query_labels) > 0, where, "query texts and labels differ in length")
        _require(len(targets) == len(target_labels) > 0, where, "target texts and labels differ in length")
        missing = set(query_labels) - set(target_labels)
        _require(not missing, where, f"query labels without any relevant target: {sorted(missing)[:5]}")
    elif task == "order_quad":
        instances = payload.get("instances")
        _require(isinstance(instances, list) and len(instances) > 0, where,
                 "needs a non-empty 'instances' list")
    elif task == "order_list":
        lists = payload.get("lists")
        _require(isinstance(lists, list) and len(lists) >= 2, where, "needs at least two lists")
        length = len(lists[0])
        _require(length >= 2, where, "each list needs at least two texts")
        for item in lists:
            _require(isinstance(item, list) and len(item) == length and all(isinstance(t, str) for t in item),
                     where, f"every list must hold {length} str")
        distractors = payload.get("distractors")
        if distractors is not None:
            _require(isinstance(distractors, list) and len(distractors) == len(lists)
                     and all(isinstance(t, str) for t in distractors),
                     where, "distractors must be None or one str per list")
    else:
        raise ValueError(f"{where}: unknown task {task!r}")


def unit_texts(task: str, payload: dict) -> list[str]:
    """All texts a unit's task embeds (STEL records contribute their four texts)."""
    if task in ("clustering", "pair_all", "probing"):
        return list(payload["texts"])
    if task == "pair_predefined":
        return list(payload["a"]) + list(payload["b"])
    if task == "retrieval":
        return list(payload["query_texts"]) + list(payload["target_texts"])
    if task == "order_list":
        texts = [text for item in payload["lists"] for text in item]
        return texts + list(payload.get("distractors") or [])
    if task == "order_quad":
        texts = []
        for record in payload["instances"]:
            for name in ("anchor1", "anchor2", "alt1", "alt2"):
                value = getattr(record, name, None)
                if isinstance(value, str):
                    texts.append(value)
        return texts
    raise ValueError(f"unknown task {task!r}")

