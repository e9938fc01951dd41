"""STEB's aggregate scores over result rows: operational (redundancy-aware) and definitional.

Input rows are ``results.jsonl`` lines: ``{"model", "dataset", "subset", "task", "metric", "value",
...}``. A *unit* is one ``(dataset, subset, task)``; task names, families and the metrics read below
are columns of the task table (``tasks.registry``).

Operational score (STEB §3.3, after Olmo et al. 2026). Tasks are grouped into STEB's six columns
(``TASK_FAMILIES``) and each unit contributes the column's metric (``OPERATIONAL_METRICS``: V-measure,
AUROC, and for the tasks where our protocol differs from STEB's, STEB's: ``distractor_accuracy_steb``,
``mrr_steb``, ``probe_accuracy_steb``, as in STEB Tab. 2). STEL enters as STEB builds it (the
``order_list`` units of the stel dataset, one per style type, merged into STEB's two datasets
STEL_register and STEL_feature by ``STEB_DATASETS`` before either score); STEL's own quadruples
(``order_quad``) are not part of it.
Within a column, for the models that have every unit:

1. ``rho[u, v]`` = Spearman correlation across models of units u and v (ranks with ties averaged,
   ``scipy.stats.rankdata``; a unit on which all models tie has no ranking, its correlations are set
   to 0);
   units on which every model scores the same are left out of the column (noted), unless all of
   its units are (then every model has the same column score); as a cluster of their own they
   would lift every model's score by the same amount with a whole cluster's weight (in a small
   run, a one-query retrieval unit where every model scores 1.0);
2. Ward linkage (``scipy.cluster.hierarchy.linkage(method="ward")``) on the distances ``1 - rho``,
   cut at distance 0.5 (``fcluster(criterion="distance")``, which merges at distances <= 0.5):
   units whose rankings agree merge;
3. a model's column score = mean over clusters of the mean of its values in the cluster.

The overall score is the mean over columns. The clusters depend on the models compared: STEB's
come from its 40 models, ours from the models of the run, so a model's score can change when other
models join the run; compare scores within one run, not across runs or with STEB's Tab. 2.
Correlating rankings needs at least 3 models (``NotApplicable`` otherwise). Models lacking a unit of
a column get no score for that column (and no overall score); the reason is listed in ``notes``.

Definitional score (STEB §3.3, Tab. 9 and 13, after Wegmann et al. 2026): units are assigned to
*object of study* (genre, register, time, demographics, dialect, idiolect), *linguistic features*
or *content independence* (``DEFINITIONAL_GROUPS``, our datasets mapped as STEB maps the same or
equivalent corpora). Probing units are linguistic features; order-alignment units contribute their
``accuracy_steb`` to their dataset's group and their ``distractor_accuracy_steb`` to content
independence (STEB's "Order Alignment†"). Other units contribute their operational metric. A group's
value is the mean over its datasets of the mean over that dataset's units (STEB's
``scripts/benchmark_clustering/manual_cluster.py`` builds per group a table of task columns, each the
mean over the group's datasets that have that task; how the paper's Tab. 9 combines those columns is
not in its code, so the order differs from ours when a group's datasets have different tasks);
object of study is the mean of its available sub-groups (we have no dialect dataset); the overall
value is the mean of the three groups. Units with no group (e.g. the M4 human-vs-machine sample,
which STEB's Tab. 13 omits) are listed in ``unassigned``.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import squareform
from scipy.stats import rankdata

from stylebench_jax.data.stel import STEB_GROUPS
from stylebench_jax.errors import UserInputError
from stylebench_jax.tasks import registry
from stylebench_jax.tasks.base import NotApplicable

WARD_THRESHOLD = 0.5
MIN_MODELS = 3

# Derived from the task table (tasks/registry.py), the one place a task's metadata lives.
TASK_FAMILIES = registry.task_families()
FAMILY_ORDER = registry.families()
OPERATIONAL_METRICS = registry.operational_metrics()

OBJECTS_OF_STUDY = ("genre", "register", "time", "demographics", "dialect", "idiolect")
LINGUISTIC = registry.LINGUISTIC
CONTENT = registry.CONTENT
# Keys: "dataset" or "dataset/subset" (the more specific key wins). Values: an object of study or
# LINGUISTIC. STEB Tab. 13 equivalents in comments.
DEFINITIONAL_GROUPS = {
    "cds_samples": "genre",                    # Corpus of Diverse Styles
    "stel/register": "register",               # STEL_register (formality + simplicity: STEB_DATASETS)
    "onestopenglish": "register",              # OneStopEnglish
    "asset": "register",                       # ASSET
    "stanford_politeness": "register",         # wikipedia_ / stackexchange_politeness
    "bible_8_versions": "time",                # Bible versions
    "shakespeare_modern_parallel": "time",     # Shakespeare
    "pastel": "demographics",                  # PASTEL
    "reuters_c50": "idiolect",                 # authorship (AV / AR datasets)
    "english_novels_100": "idiolect",
    "british_fiction_corpus": "idiolect",
    "eighteenth_century_novels": "idiolect",
    "federalist_papers": "idiolect",
    "stel/feature": LINGUISTIC,                # STEL_feature (contraction, nbr_substitution, emotives)
    "styleptb_compositional": LINGUISTIC,      # StylePTB
}

# STEB's datasets made of several of our units: STEB loads STEL as two datasets, STEL_register and
# STEL_feature (steb/loaders/stel.py STEL_TYPES_BY_GROUP), each aligning pairs within a style type and
# averaging over all its pairs; we build one order_list unit per style type (data.stel.STEB_GROUPS).
# Before either score, a model's values of the member units are merged into the STEB dataset's unit,
# weighted by their instance counts (``n``): STEB's pooled mean, so STEL counts as two datasets, not five.
STEB_DATASETS = {("stel", style, "order_list"): ("stel", group, "order_list")
                 for style, group in STEB_GROUPS.items()}

_REQUIRED = ("model", "dataset", "subset", "task", "metric", "value")

Unit = tuple[str, str, str]  # (dataset, subset, task)


def _unit_name(unit: Unit) -> str:
    return "/".join(unit)


def _index_rows(rows: Iterable[Mapping]) -> dict[tuple[str, Unit, str], float]:
    """``{(model, unit, metric): value}``, the member units of ``STEB_DATASETS`` merged; non-finite
    values are treated as missing."""
    table: dict[tuple[str, Unit, str], float] = {}
    merged: dict[tuple[str, Unit, str], dict[Unit, tuple[float, float]]] = defaultdict(dict)
    for i, row in enumerate(rows):
        missing = [key for key in _REQUIRED if key not in row]
        if missing:
            raise UserInputError(f"result row {i}: missing field(s) {', '.join(missing)}")
        unit = (str(row["dataset"]), str(row["subset"]), str(row["task"]))
        key = (str(row["model"]), unit, str(row["metric"]))
        if key in table or unit in merged.get((key[0], STEB_DATASETS.get(unit), key[2]), {}):
            raise UserInputError(f"result row {i}: duplicate {key[0]} / {_unit_name(key[1])} / {key[2]}")
        value = row["value"]
        if unit in STEB_DATASETS:
            if value is not None and math.isfinite(float(value)):
                merged[(key[0], STEB_DATASETS[unit], key[2])][unit] = (float(value), float(row.get("n") or 1))
            continue
        if value is not None and math.isfinite(float(value)):
            table[key] = float(value)
    members = defaultdict(set)
    for unit, target in STEB_DATASETS.items():
        members[target].add(unit)
    present = {unit for parts in merged.values() for unit in parts}
    for (model, target, metric), parts in merged.items():
        # every member this run has (for any model) must be there: a partial mean is not STEB's
        expected = members[target] & present
        if set(parts) == expected:
            weights = np.array([parts[u][1] for u in sorted(parts)])
            values = np.array([parts[u][0] for u in sorted(parts)])
            table[(model, target, metric)] = float(weights @ values / weights.sum())
    return table


def spearman_matrix(values: np.ndarray) -> np.ndarray:
    """Spearman correlations ``[U, U]`` between the rows of ``values [U, M]`` (across the M models).

    Pearson correlation of average ranks (``scipy.stats.rankdata``), i.e. ``scipy.stats.spearmanr``;
    a constant row has no ranking and gets correlation 0 with every other row (1 with itself).
    """
    ranks = rankdata(np.asarray(values, dtype=np.float64), axis=1)
    centred = ranks - ranks.mean(axis=1, keepdims=True)
    norms = np.linalg.norm(centred, axis=1)
    unit = np.divide(centred, norms[:, None], out=np.zeros_like(centred), where=norms[:, None] > 0)
    # rounded so that exact values (with 3 models rho is one of -1, -1/2, 1/2, 1) stay exact and a
    # distance of exactly 0.5 is decided by fcluster's "<= t" rule, not by float noise
    rho = np.round(np.clip(unit @ unit.T, -1.0, 1.0), 12)
    np.fill_diagonal(rho, 1.0)
    return rho


def redundancy_clusters(values: np.ndarray, threshold: float = WARD_THRESHOLD) -> np.ndarray:
    """Cluster ids ``[U]`` (1-based) of units ``values [U, M]``: Ward linkage on ``1 - Spearman``
    distances, cut at ``threshold``."""
    n_units = values.shape[0]
    if n_units == 1:
        return np.ones(1, dtype=np.int64)
    distance = 1.0 - spearman_matrix(values)
    distance = np.clip((distance + distance.T) / 2.0, 0.0, None)
    np.fill_diagonal(distance, 0.0)
    tree = linkage(squareform(distance, checks=False), method="ward")
    return fcluster(tree, t=threshold, criterion="distance").astype(np.int64)


@dataclasses.dataclass(frozen=True)
class OperationalScore:
    """``table[model][column]`` (columns of ``FAMILY_ORDER`` present, plus ``"overall"``);
    ``clusters[column]`` = unit-name groups found redundant; ``notes`` = why cells are missing."""

    models: list[str]
    columns: list[str]
    table: dict[str, dict[str, float]]
    clusters: dict[str, list[list[str]]]
    notes: list[str]


def operational_score(rows: Iterable[Mapping], *, metrics: Mapping[str, str] = OPERATIONAL_METRICS,
                      families: Mapping[str, str] = TASK_FAMILIES,
                      threshold: float = WARD_THRESHOLD) -> OperationalScore:
    """STEB operational score per model; see the module docstring."""
    table = _index_rows(rows)
    models = sorted({model for model, _, _ in table})
    if len(models) < MIN_MODELS:
        raise NotApplicable(f"the operational score correlates model rankings and needs at least "
                            f"{MIN_MODELS} models, got {len(models)}")
    units_by_family: dict[str, list[Unit]] = defaultdict(list)
    for unit in sorted({u for _, u, metric in table if metrics.get(u[2]) == metric}):
        if unit[2] in families:
            units_by_family[families[unit[2]]].append(unit)
    columns = ([f for f in FAMILY_ORDER if f in units_by_family]
               + sorted(set(units_by_family) - set(FAMILY_ORDER)))
    scores: dict[str, dict[str, float]] = {model: {} for model in models}
    clusters: dict[str, list[list[str]]] = {}
    notes: list[str] = []
    for column in columns:
        units = units_by_family[column]
        complete = [m for m in models if all((m, u, metrics[u[2]]) in table for u in units)]
        for model in sorted(set(models) - set(complete)):
            lacking = [_unit_name(u) for u in units if (model, u, metrics[u[2]]) not in table]
            notes.append(f"{model}: no {column} score (missing {', '.join(lacking)})")
        if len(complete) < MIN_MODELS:
            notes.append(f"{column}: only {len(complete)} model(s) have every unit; need {MIN_MODELS}")
            continue
        values = np.array([[table[(m, u, metrics[u[2]])] for m in complete] for u in units])
        tied = np.all(values == values[:, :1], axis=1)
        if tied.any() and not tied.all():
            # no ranking to correlate: as its own cluster it would add a constant to every model's
            # column score with a whole cluster's weight (a one-query unit where all score 1.0)
            notes.append(f"{column}: left out {int(tied.sum())} unit(s) on which all {len(complete)} models "
                         f"score the same: {', '.join(_unit_name(units[i]) for i in np.flatnonzero(tied))}")
            units = [u for u, t in zip(units, tied) if not t]
            values = values[~tied]
        ids = redundancy_clusters(values, threshold)
        groups = [np.flatnonzero(ids == c) for c in np.unique(ids)]
        clusters[column] = [[_unit_name(units[i]) for i in g] for g in groups]
        column_scores = np.mean([values[g].mean(axis=0) for g in groups], axis=0)
        for model, value in zip(complete, column_scores):
            scores[model][column] = float(value)
    for model in models:
        if columns and all(c in scores[model] for c in columns):
            scores[model]["overall"] = float(np.mean([scores[model][c] for c in columns]))
    return OperationalScore(models, columns, scores, clusters, notes)


def definitional_group(dataset: str, subset: str,
                       groups: Mapping[str, str] = DEFINITIONAL_GROUPS) -> str | None:
    """The object of study or ``LINGUISTIC`` a dataset (subset) belongs to, or None."""
    return groups.get(f"{dataset}/{subset}", groups.get(dataset))


@dataclasses.dataclass(frozen=True)
class DefinitionalScore:
    """``table[model]`` has each sub-group (objects of study), ``object_of_study``,
    ``linguistic_features``, ``content_independence`` and ``overall`` where the model has every cell;
    ``members[group]`` lists the ``dataset-key: unit/metric`` cells; ``unassigned`` units without a
    group; ``notes`` why a model lacks a value."""

    models: list[str]
    table: dict[str, dict[str, float]]
    members: dict[str, list[str]]
    unassigned: list[str]
    notes: list[str]


def _definitional_cells(table, groups):
    """``{(group, dataset key): sorted [(unit, metric)]}`` and the unassigned unit names."""
    cells: dict[tuple[str, str], set[tuple[Unit, str]]] = defaultdict(set)
    unassigned: set[str] = set()
    for _, unit, metric in table:
        dataset, subset, task = unit
        spec = registry.TASKS.get(task)
        if spec is None:
            continue
        key = f"{dataset}/{subset}" if f"{dataset}/{subset}" in groups else dataset
        group = definitional_group(dataset, subset, groups)
        if metric == spec.content_metric:
            if group is not None:
                cells[(CONTENT, key)].add((unit, metric))
        elif spec.definitional_group is not None and metric == spec.definitional_metric:
            cells[(spec.definitional_group, f"{dataset}/{subset}")].add((unit, metric))
        elif metric == spec.definitional_metric:
            if group is None:
                unassigned.add(_unit_name(unit))
            else:
                cells[(group, key)].add((unit, metric))
    # Sorted lists, not sets: a set's order follows PYTHONHASHSEED, and averaging in another
    # order changes the last bits of a score between two runs of the same command.
    return {key: sorted(members) for key, members in cells.items()}, sorted(unassigned)


def definitional_score(rows: Iterable[Mapping], *,
                       groups: Mapping[str, str] = DEFINITIONAL_GROUPS) -> DefinitionalScore:
    """STEB definitional score per model; see the module docstring."""
    table = _index_rows(rows)
    models = sorted({model for model, _, _ in table})
    cells, unassigned = _definitional_cells(table, groups)
    scores: dict[str, dict[str, float]] = {model: {} for model in models}
    members: dict[str, list[str]] = {}
    notes: list[str] = []
    present = [g for g in (*OBJECTS_OF_STUDY, LINGUISTIC, CONTENT) if any(grp == g for grp, _ in cells)]
    for group in present:
        keys = sorted(k for g, k in cells if g == group)
        members[group] = [f"{key}: {_unit_name(u)}/{m}"
                          for key in keys for u, m in sorted(cells[(group, key)])]
        for model in models:
            lacking = [f"{_unit_name(u)}/{m}" for key in keys for u, m in sorted(cells[(group, key)])
                       if (model, u, m) not in table]
            if lacking:
                notes.append(f"{model}: no {group} score (missing {', '.join(lacking)})")
                continue
            per_key = [np.mean([table[(model, u, m)] for u, m in cells[(group, key)]]) for key in keys]
            scores[model][group] = float(np.mean(per_key))
    objects = [g for g in OBJECTS_OF_STUDY if g in present]
    top = (["object_of_study"] if objects else []) + [g for g in (LINGUISTIC, CONTENT) if g in present]
    for model in models:
        if objects and all(g in scores[model] for g in objects):
            scores[model]["object_of_study"] = float(np.mean([scores[model][g] for g in objects]))
        if top and all(g in scores[model] for g in top):
            scores[model]["overall"] = float(np.mean([scores[model][g] for g in top]))
    return DefinitionalScore(models, scores, members, unassigned, notes)
