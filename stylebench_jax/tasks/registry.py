"""The task table: one row per evaluation task, the one place a task's metadata lives.

A row (``TaskSpec``, after MTEB's per-task metadata) names the task, its report title, its STEB
*family* (the column of STEB's operational score it belongs to), its primary metric (the first
Score its runner returns), the metric STEB's operational and definitional scores read, the typed
payload it takes (``stylebench_jax.data.units``) and its runner. Where our protocol and STEB's differ,
the runner reports both (STEB's as ``<metric>_steb``), STEB's aggregate scores read STEB's, and
``variants`` pairs them for the report with the reason we keep ours. What used to be spelt out in four
places (the payload schema, the dispatcher's ``if task ==`` chain, the score tables, the report
titles) is read from here: a new task is a row plus one module.

Runners are named ``"module:function"`` and imported on first use, so a STEL-only run never loads
spaCy or the JAX kernels. Every runner has the signature::

    run(scorer: TextScorer, payload: <payload type>, context: TaskContext, *, seed: int,
        n_boot: int) -> list[Score]          # first Score = the primary metric
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from stylebench_jax.data.authbench import AuthorshipSet
from stylebench_jax.data.units import (
    EvalUnit,
    LabelledTexts,
    OrderedLists,
    Payload,
    RetrievalSet,
    StelSet,
    TextPairs,
    Texts,
)

if TYPE_CHECKING:
    from stylebench_jax.tasks.base import Score, TaskContext, TextScorer

# STEB's definitional groups that are not an object of study (tasks/scores.py uses the names).
LINGUISTIC = "linguistic_features"
CONTENT = "content_independence"


@dataclasses.dataclass(frozen=True)
class Variant:
    """Our metric and STEB's for the same question (the report shows them side by side); ``why``:
    how the protocols differ and why ours is kept (one or two sentences, shown under the table)."""

    ours: str
    steb: str
    why: str


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """One evaluation task.

    ``operational_metric``: the metric STEB's operational score averages for this task's units
    (``None``: the task is not part of it). ``definitional_metric``: the metric a unit contributes to
    its dataset's definitional group; ``content_metric``: a metric contributing to *content
    independence* instead (STEB's "Order Alignment dagger"); ``definitional_group``: a fixed group
    for every unit of the task whatever its dataset (probing -> linguistic features).
    ``secondary_metrics``: shown as their own report tables after the primary one. ``variants``:
    our metrics next to STEB's (:class:`Variant`).
    """

    name: str
    title: str
    family: str
    primary_metric: str
    operational_metric: str | None
    payload: type[Payload]
    runner: str
    definitional_metric: str | None = None
    content_metric: str | None = None
    definitional_group: str | None = None
    secondary_metrics: tuple[str, ...] = ()
    lower_is_better: tuple[str, ...] = ()  # metrics (of the above) where smaller values are better
    variants: tuple[Variant, ...] = ()
    protocol: str = "STEB"  # the paper whose protocol the primary metric follows (a PROTOCOLS key)

    def run(self) -> Callable:
        """The runner function (imported now)."""
        module, _, function = self.runner.partition(":")
        return getattr(importlib.import_module(module), function)


# The papers behind the task rows, as the reports cite them.
PROTOCOLS = {
    "STEB": "STEB: Style Text Embedding Benchmark (Rivera Soto, Wegmann and Aggazzotti)",
    "STEL": "Does It Capture STEL? A Modular, Similarity-based Linguistic Style Evaluation Framework "
            "(Wegmann and Nguyen, EMNLP 2021)",
    "AuthBench": "AuthBench: A Large-Scale Multilingual Benchmark for Authorship Representation across "
                 "Genres and Lengths (anonymous ACL submission)",
}

_ORDER_WHY = ("STEB aligns each unordered pair of groups once, clips cosines at 0 and solves the Hungarian "
              "assignment with the targets in their true order, crediting each position; the solver breaks "
              "the ties that clipping creates in favour of the right order, so a model blind to style "
              "scores well above chance. Ours aligns shuffled candidates, requires the whole assignment "
              "and gives ties their expected credit (chance for a constant model).")
_RETRIEVAL_WHY = ("STEB pools each author's query texts into one vector and its target texts into another "
                  "(one relevant target per query; target authors without queries dropped). Ours ranks "
                  "single documents against every target document, keeps distractor authors and reports "
                  "the first hit's reciprocal rank: the usual, harder authorship-retrieval question.")
_PROBING_WHY = ("Both bin as pandas.qcut. STEB splits 80/10/10 and breaks validation ties towards the "
                "weakest regularisation; ours splits 60/20/20 (more validation and test texts on small "
                "samples: a steadier choice of strength and a narrower interval) and prefers the stronger "
                "one.")

_ROWS = (
    TaskSpec("clustering", "Clustering", "clustering", "v_measure", "v_measure", LabelledTexts,
             "stylebench_jax.tasks.clustering:run_clustering", definitional_metric="v_measure"),
    TaskSpec("pair_all", "Pair classification (all-to-all)", "pair_all", "auroc", "auroc", LabelledTexts,
             "stylebench_jax.tasks.pair_classification:run_all_to_all", definitional_metric="auroc"),
    TaskSpec("pair_predefined", "Pair classification (predefined pairs)", "pair_predefined", "auroc", "auroc",
             TextPairs, "stylebench_jax.tasks.pair_classification:run_predefined_pairs",
             definitional_metric="auroc"),
    # STEL's own protocol; STEB reads STEL through its own construction (order_list units of the stel
    # dataset, data.stel.steb_stel_lists), so the quadruples are not part of STEB's scores.
    TaskSpec("order_quad", "Order alignment (STEL quadruples)", "order_alignment", "accuracy",
             None, StelSet, "stylebench_jax.tasks.order_alignment:run_stel",
             secondary_metrics=("distractor_accuracy",), protocol="STEL"),
    TaskSpec("order_list", "Order alignment (ordered lists)", "order_alignment", "accuracy",
             "distractor_accuracy_steb", OrderedLists,
             "stylebench_jax.tasks.order_alignment:run_ordered_lists",
             definitional_metric="accuracy_steb", content_metric="distractor_accuracy_steb",
             secondary_metrics=("distractor_accuracy",),
             variants=(Variant("accuracy", "accuracy_steb", _ORDER_WHY),
                       Variant("distractor_accuracy", "distractor_accuracy_steb", _ORDER_WHY))),
    TaskSpec("retrieval", "Retrieval", "retrieval", "mrr", "mrr_steb", RetrievalSet,
             "stylebench_jax.tasks.retrieval:run_retrieval", definitional_metric="mrr_steb",
             variants=(Variant("mrr", "mrr_steb", _RETRIEVAL_WHY),)),
    TaskSpec("probing", "Probing", "probing", "probe_accuracy", "probe_accuracy_steb", Texts,
             "stylebench_jax.tasks.probing:run_probing", definitional_metric="probe_accuracy_steb",
             definitional_group=LINGUISTIC, variants=(Variant("probe_accuracy", "probe_accuracy_steb",
                                                              _PROBING_WHY),)),
    # AuthBench (seed 001): same-author retrieval and verification over a built benchmark's split;
    # not part of STEB's operational score. MRR@100 is reported as an extra, not an AuthBench metric.
    TaskSpec("attribution", "Authorship attribution (AuthBench)", "attribution", "success@5", None,
             AuthorshipSet, "stylebench_jax.tasks.attribution:run_attribution",
             secondary_metrics=("recall@5", "ndcg@5", "mrr@100"), protocol="AuthBench"),
    TaskSpec("verification", "Authorship verification (AuthBench EER)", "verification", "eer", None,
             AuthorshipSet, "stylebench_jax.tasks.verification:run_verification",
             secondary_metrics=("eer_roc", "auroc"), lower_is_better=("eer", "eer_roc"),
             protocol="AuthBench"),
)

TASKS: dict[str, TaskSpec] = {row.name: row for row in _ROWS}


LOWER_IS_BETTER = frozenset(metric for row in _ROWS for metric in row.lower_is_better)


# One line per metric family a report can show (``metric_glossary`` strips ``@K``, ``/feature``,
# ``|stratum`` and ``_steb``); what each measures, chance where it is fixed, and its direction.
METRICS = {
    "v_measure": "V-measure of k-means clusters against the labels (harmonic mean of homogeneity and "
                 "completeness): 0 = unrelated, 1 = the labels exactly; higher is better.",
    "ami": "adjusted mutual information of the same clusters: 0 = chance, 1 = the labels exactly; higher is "
           "better.",
    "auroc": "ROC-AUC: the chance that a positive pair (same label, same author) scores above a negative "
             "one, ties half: 0.5 = chance; higher is better.",
    "eer": "equal error rate, where false accepts equal false rejects (pair tasks: on the ROC curve; "
           "verification: AuthBench's threshold rule): 0.5 = chance; lower is better.",
    "eer_roc": "the equal error rate on the interpolated ROC curve (STEB's and AuthBench's code): 0.5 = "
               "chance; lower is better.",
    "accuracy": "order alignment: the share of instances whose style order the model recovers (STEL "
                "quadruples: the right pairing, chance 0.5; ordered lists: the whole assignment); higher "
                "is better.",
    "triple_accuracy": "STEL triples: the share where the style-matching text wins (chance 0.5); higher is "
                       "better.",
    "distractor_accuracy": "as accuracy, against a content-matched distractor (STEL-or-Content): style must "
                           "beat shared content; higher is better.",
    "mrr": "mean reciprocal rank of the first same-author target (mrr@C: 0 when it lies below rank C); "
           "higher is better.",
    "mrr_all_relevant": "the reciprocal ranks of every same-author target, averaged per query (below 1 "
                        "even for a perfect ranking when a query has several); higher is better.",
    "success": "Success@K: the share of queries with a same-author candidate in the top K; higher is "
               "better.",
    "recall": "Recall@K: the average share of a query's same-author candidates found in the top K; higher "
              "is better.",
    "ndcg": "nDCG@K with binary gains: the top K's discounted hits over the best possible; higher is "
            "better.",
    "probe_accuracy": "accuracy of a logistic-regression probe predicting a linguistic feature's quintile "
                      "from the vectors (chance about 0.2; /feature: one feature); higher is better.",
}
STEB_SUFFIX = "_steb"


def metric_glossary(metrics) -> list[tuple[str, str]]:
    """``(name, definition)`` for the metric families of ``metrics`` (names as in results.jsonl), in
    ``METRICS`` order; a ``*_steb`` metric is its family computed by STEB's protocol."""
    families = set()
    for metric in metrics:
        base = metric.split("|", 1)[0].split("/", 1)[0].split("@", 1)[0]
        families.add(base)
    steb = sorted(m for m in families if m.endswith(STEB_SUFFIX))
    rows = [(name, METRICS[name]) for name in METRICS
            if name in families or f"{name}{STEB_SUFFIX}" in families]
    if steb:
        rows.append(("*" + STEB_SUFFIX, f"the same metric by STEB's protocol ({', '.join(steb)}; see 'Our "
                                        "protocols vs STEB's'), which STEB's aggregate scores read."))
    return rows


def task_names() -> tuple[str, ...]:
    return tuple(TASKS)


def get(name: str) -> TaskSpec:
    """The row of task ``name`` (``KeyError`` listing the known tasks otherwise)."""
    try:
        return TASKS[name]
    except KeyError:
        raise KeyError(f"unknown task {name!r}; known: {', '.join(TASKS)}") from None


def families() -> tuple[str, ...]:
    """STEB operational-score columns in table order (first appearance among the rows)."""
    return tuple(dict.fromkeys(row.family for row in _ROWS if row.operational_metric))


def operational_metrics() -> dict[str, str]:
    """``{task: metric}`` read by STEB's operational score."""
    return {row.name: row.operational_metric for row in _ROWS if row.operational_metric}


def task_families() -> dict[str, str]:
    """``{task: family}`` of the tasks in STEB's operational score."""
    return {row.name: row.family for row in _ROWS if row.operational_metric}


def check_unit(unit: EvalUnit) -> None:
    """``ValueError`` unless ``unit.task`` is a known task and its payload the type that task takes."""
    if unit.task not in TASKS:
        raise ValueError(f"{unit.key}: unknown task {unit.task!r}; known: {', '.join(TASKS)}")
    expected = TASKS[unit.task].payload
    if not isinstance(unit.payload, expected):
        raise ValueError(f"{unit.key}: task {unit.task!r} takes a {expected.__name__} payload, "
                         f"got {type(unit.payload).__name__}")


def run_task(task: str, scorer: TextScorer, payload: Payload, *, seed: int, n_boot: int,
             context: TaskContext) -> list[Score]:
    """Run task ``task``'s protocol on ``payload`` (its row's runner); first Score = primary metric."""
    spec = get(task)
    if not isinstance(payload, spec.payload):
        raise ValueError(f"task {task!r} takes a {spec.payload.__name__} payload, "
                         f"got {type(payload).__name__}")
    return spec.run()(scorer, payload, context, seed=seed, n_boot=n_boot)
