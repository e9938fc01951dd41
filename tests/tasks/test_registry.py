"""The task table: every dataset's tasks are rows, payload types match, scores/report derive from it."""

import pytest

from stylebench_jax.data.registry import DATASETS
from stylebench_jax.data.units import EvalUnit, LabelledTexts, Texts
from stylebench_jax.report import tables
from stylebench_jax.tasks import registry, scores
from stylebench_jax.tasks.base import Score, TaskContext, TextScorer


def test_every_dataset_task_is_a_row_with_an_importable_runner():
    for spec in DATASETS.values():
        for task in spec.tasks:
            assert task in registry.TASKS, (spec.name, task)
    for row in registry.TASKS.values():
        assert callable(row.run())
        assert row.primary_metric and row.title and row.family


def test_derived_tables_follow_the_rows():
    assert scores.OPERATIONAL_METRICS == {r.name: r.operational_metric for r in registry.TASKS.values()
                                          if r.operational_metric}
    assert scores.FAMILY_ORDER == ("clustering", "pair_all", "pair_predefined", "order_alignment",
                                   "retrieval", "probing")
    assert tables.TASK_ORDER == tuple(registry.TASKS)
    assert tables.task_title("order_quad") == "Order alignment (STEL quadruples)"
    assert tables.SECONDARY_METRICS == {"order_quad": ("distractor_accuracy",),
                                        "order_list": ("distractor_accuracy",),
                                        "attribution": ("recall@5", "ndcg@5", "mrr@100"),
                                        "verification": ("eer_roc", "auroc")}


def test_check_unit_rejects_unknown_task_and_wrong_payload():
    good = EvalUnit("d", "all", "clustering", LabelledTexts(["a", "b"], ["x", "y"]))
    registry.check_unit(good)
    with pytest.raises(ValueError, match="unknown task 'clusters'"):
        registry.check_unit(EvalUnit("d", "all", "clusters", LabelledTexts(["a", "b"], ["x", "y"])))
    with pytest.raises(ValueError, match="takes a LabelledTexts payload, got Texts"):
        registry.check_unit(EvalUnit("d", "all", "clustering", Texts(["a"])))
    with pytest.raises(ValueError, match="needs at least two distinct labels"):
        LabelledTexts(["a", "b"], ["x", "x"]).check("u")
    with pytest.raises(ValueError, match="payload must be a typed payload"):
        EvalUnit("d", "all", "clustering", {"texts": ["a"], "labels": ["x"]})


class Chars:
    name, identity, dim = "chars", "chars/v1", 26

    def embed(self, texts):
        import numpy as np

        out = np.zeros((len(texts), 26), np.float32)
        for i, text in enumerate(texts):
            for ch in text.lower():
                if "a" <= ch <= "z":
                    out[i, ord(ch) - 97] += 1
        return out + 1e-3


def test_run_task_calls_the_rows_runner():
    payload = LabelledTexts(["aaa bbb", "aaa bba", "zzz yyy", "zzy yyz"], ["x", "x", "y", "y"])
    result = registry.run_task("clustering", TextScorer(Chars()), payload, seed=0, n_boot=20,
                               context=TaskContext())
    assert isinstance(result[0], Score) and result[0].metric == "v_measure" and result[0].value == 1.0
    with pytest.raises(ValueError, match="takes a LabelledTexts payload"):
        registry.run_task("clustering", TextScorer(Chars()), Texts(["a"]), seed=0, n_boot=20,
                          context=TaskContext())


def test_every_task_names_a_cited_protocol():
    from stylebench_jax.tasks.registry import PROTOCOLS, TASKS

    assert {spec.protocol for spec in TASKS.values()} == set(PROTOCOLS)
    assert TASKS["order_quad"].protocol == "STEL" and TASKS["verification"].protocol == "AuthBench"
