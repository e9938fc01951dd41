"""STEB operational and definitional scores on hand-built result rows."""

import subprocess
import sys

import numpy as np
import pytest
from scipy.stats import spearmanr

from stylebench_jax.errors import UserInputError
from stylebench_jax.tasks.base import NotApplicable
from stylebench_jax.tasks.scores import (
    definitional_score,
    operational_score,
    redundancy_clusters,
    spearman_matrix,
)

MODELS = ("m1", "m2", "m3")


def rows_for(dataset, subset, task, metric, values, models=MODELS):
    return [{"model": m, "dataset": dataset, "subset": subset, "task": task, "metric": metric, "value": v}
            for m, v in zip(models, values)]


@pytest.mark.parametrize("seed", range(3))
def test_spearman_matches_scipy(seed):
    rng = np.random.default_rng(seed)
    values = np.round(rng.random((6, 7)), 1)  # ties
    assert spearman_matrix(values) == pytest.approx(spearmanr(values, axis=1).statistic, abs=1e-12)


def test_constant_unit_is_uncorrelated():
    rho = spearman_matrix(np.array([[0.5, 0.5, 0.5], [0.1, 0.2, 0.3]]))
    assert rho.tolist() == [[1.0, 0.0], [0.0, 1.0]]


def test_ward_cut_by_hand():
    # A and B rank the models identically (distance 0), C reverses them (distance 2 to both):
    # Ward merges A+B at 0, then {A,B}+C at sqrt((2*4 + 2*4 - 1*0) / 3) = 2.31 > 0.5 -> two clusters
    values = np.array([[0.9, 0.5, 0.1], [0.8, 0.6, 0.2], [0.1, 0.5, 0.9]])
    ids = redundancy_clusters(values)
    assert ids[0] == ids[1] != ids[2]
    # rho = 1/2 gives distance exactly 0.5: merged (fcluster keeps distances <= t together)
    half = np.array([[0.9, 0.5, 0.1], [0.9, 0.1, 0.5]])
    assert spearman_matrix(half)[0, 1] == 0.5
    assert len(set(redundancy_clusters(half))) == 1
    assert len(set(redundancy_clusters(half, threshold=0.49))) == 2


def test_operational_score_by_hand():
    rows = (rows_for("a", "all", "clustering", "v_measure", (0.9, 0.5, 0.1))
            + rows_for("b", "all", "clustering", "v_measure", (0.8, 0.6, 0.2))
            + rows_for("c", "all", "clustering", "v_measure", (0.1, 0.5, 0.9))
            + rows_for("a", "all", "clustering", "ami", (0.0, 0.0, 0.0))  # not the column metric: ignored
            # order alignment: STEB's distractor accuracy is the operational metric (STEL enters as
            # STEB's order_list units; STEL's own quadruples and our list rule are not read)
            + rows_for("s", "formality", "order_list", "distractor_accuracy_steb", (0.2, 0.4, 0.6))
            + rows_for("s", "formality", "order_list", "accuracy_steb", (0.9, 0.9, 0.9))
            + rows_for("s", "formality", "order_quad", "distractor_accuracy", (0.9, 0.1, 0.1))
            + rows_for("o", "all", "order_list", "distractor_accuracy", (0.9, 0.1, 0.1))
            + rows_for("o", "all", "order_list", "distractor_accuracy_steb", (0.3, 0.5, 0.7)))
    result = operational_score(rows)
    assert result.columns == ["clustering", "order_alignment"]
    assert sorted(map(sorted, result.clusters["clustering"])) == [["a/all/clustering", "b/all/clustering"],
                                                                   ["c/all/clustering"]]
    # clusters {a, b} and {c}: m1 = ((0.9 + 0.8) / 2 + 0.1) / 2
    expected_clustering = {"m1": (0.85 + 0.1) / 2, "m2": (0.55 + 0.5) / 2, "m3": (0.15 + 0.9) / 2}
    # both order units rank the models alike -> one cluster -> plain mean
    expected_order = {"m1": 0.25, "m2": 0.45, "m3": 0.65}
    for model in MODELS:
        assert result.table[model]["clustering"] == pytest.approx(expected_clustering[model])
        assert result.table[model]["order_alignment"] == pytest.approx(expected_order[model])
        assert result.table[model]["overall"] == pytest.approx(
            (expected_clustering[model] + expected_order[model]) / 2)
    assert result.notes == []


def test_units_where_every_model_ties_are_left_out():
    # a one-query unit where every model scores 1.0 ranks nobody; as a cluster of its own it would
    # lift every model's retrieval score from 0.5 / 0.35 / 0.15 to 0.75 / 0.675 / 0.575
    rows = (rows_for("a", "all", "retrieval", "mrr_steb", (0.9, 0.5, 0.1))
            + rows_for("b", "all", "retrieval", "mrr_steb", (0.1, 0.2, 0.2))
            + rows_for("one", "q", "retrieval", "mrr_steb", (1.0, 1.0, 1.0)))
    result = operational_score(rows)
    assert sorted(map(sorted, result.clusters["retrieval"])) == [["a/all/retrieval"], ["b/all/retrieval"]]
    assert [result.table[m]["retrieval"] for m in MODELS] == pytest.approx([0.5, 0.35, 0.15])
    assert result.notes == ["retrieval: left out 1 unit(s) on which all 3 models score the same: "
                            "one/q/retrieval"]
    # when every unit ties, every model gets the same column score (the mean over units)
    tied = rows_for("a", "all", "retrieval", "mrr_steb", (0.4,) * 3) + rows_for("b", "all", "retrieval",
                                                                              "mrr_steb", (0.8,) * 3)
    assert [operational_score(tied).table[m]["retrieval"] for m in MODELS] == pytest.approx([0.6] * 3)


def test_missing_cells_and_too_few_models():
    four = ("m1", "m2", "m3", "m4")
    rows = (rows_for("a", "all", "retrieval", "mrr_steb", (0.9, 0.5, 0.1, 0.3), models=four)
            + rows_for("b", "all", "retrieval", "mrr_steb", (0.8, 0.6, 0.2), models=("m1", "m2", "m3"))
            + rows_for("b", "all", "retrieval", "mrr", (0.8,), models=("m4",)))  # ours: not read
    result = operational_score(rows)
    assert "retrieval" not in result.table["m4"] and "overall" not in result.table["m4"]
    assert result.notes == ["m4: no retrieval score (missing b/all/retrieval)"]
    with pytest.raises(NotApplicable, match="at least 3 models"):
        operational_score(rows_for("a", "all", "retrieval", "mrr_steb", (0.9, 0.5), models=("m1", "m2")))


def test_bad_rows():
    with pytest.raises(UserInputError, match="row 0: missing field"):
        operational_score([{"model": "m1", "dataset": "a"}])
    row = rows_for("a", "all", "retrieval", "mrr", (0.9,))[0]
    with pytest.raises(UserInputError, match="duplicate"):
        operational_score([row, dict(row)])


def test_definitional_score_by_hand():
    two = ("m1", "m2")
    rows = (rows_for("cds_samples", "all", "clustering", "v_measure", (0.6, 0.2), two)          # genre
            + rows_for("cds_samples", "all", "pair_all", "auroc", (0.8, 0.6), two)              # genre
            + rows_for("cds_samples", "all", "probing", "probe_accuracy_steb", (0.5, 0.7), two)  # ling.
            + rows_for("cds_samples", "all", "probing", "probe_accuracy", (0.0, 0.0), two)  # ours: not read
            + rows_for("stel", "formality", "order_list", "accuracy_steb", (0.9, 0.7), two)     # register
            # content independence:
            + rows_for("stel", "formality", "order_list", "distractor_accuracy_steb", (0.3, 0.1), two)
            + rows_for("stel", "formality", "order_quad", "accuracy", (0.0, 0.0), two)  # STEL's: not read
            + rows_for("stanford_politeness", "wikipedia", "clustering", "v_measure", (0.1, 0.3), two)
            + rows_for("stel", "contraction", "order_list", "accuracy_steb", (1.0, 0.8), two)   # ling.
            + rows_for("stel", "contraction", "order_list", "distractor_accuracy_steb", (0.5, 0.5), two)
            + rows_for("m4_llama2_sample", "all", "pair_predefined", "auroc", (0.7, 0.7), two))
    result = definitional_score(rows)
    m1 = result.table["m1"]
    assert m1["genre"] == pytest.approx((0.6 + 0.8) / 2)
    # register: per dataset first (stel/formality 0.9, stanford_politeness 0.1), then across datasets
    assert m1["register"] == pytest.approx((0.9 + 0.1) / 2)
    assert m1["object_of_study"] == pytest.approx((0.7 + 0.5) / 2)
    assert m1["linguistic_features"] == pytest.approx((0.5 + 1.0) / 2)  # probing unit, stel/contraction
    assert m1["content_independence"] == pytest.approx((0.3 + 0.5) / 2)
    assert m1["overall"] == pytest.approx((0.6 + 0.75 + 0.4) / 3)
    assert result.unassigned == ["m4_llama2_sample/all/pair_predefined"]
    assert "time" not in m1 and "dialect" not in m1


def test_stel_counts_as_stebs_two_datasets():
    # STEB loads STEL as STEL_register (formality + simplicity) and STEL_feature, each averaging over
    # all its pairs; our per-style-type order_list units merge into those two, weighted by n
    two = ("m1", "m2")

    def steb_rows(subset, values, n):
        return [{**r, "n": n} for r in rows_for("stel", subset, "order_list", "accuracy_steb", values, two)]

    rows = (steb_rows("formality", (1.0, 1.0), 100) + steb_rows("simplicity", (1.0, 0.0), 300)
            + rows_for("asset", "all", "order_list", "accuracy_steb", (0.0, 0.0), two)
            + steb_rows("contraction", (0.5, 0.5), 100) + steb_rows("emotives", (0.7, 0.7), 100))
    result = definitional_score(rows)
    # register: the datasets STEL_register (one, not two) and ASSET
    assert result.table["m1"]["register"] == pytest.approx((1.0 + 0.0) / 2)
    assert result.table["m2"]["register"] == pytest.approx((0.25 + 0.0) / 2)  # (100 x 1 + 300 x 0) / 400
    assert result.table["m1"]["linguistic_features"] == pytest.approx(0.6)
    assert result.members["register"] == ["asset: asset/all/order_list/accuracy_steb",
                                          "stel/register: stel/register/order_list/accuracy_steb"]
    # a model without one of the members gets no STEL_register value (a partial mean is not STEB's)
    partial = [r for r in rows if not (r["model"] == "m2" and r["subset"] == "simplicity")]
    result = definitional_score(partial)
    assert "register" not in result.table["m2"]
    assert result.notes == ["m2: no register score (missing stel/register/order_list/accuracy_steb)"]


def test_definitional_requires_every_cell_of_a_group():
    rows = (rows_for("bible_8_versions", "all", "clustering", "v_measure", (0.5, 0.4), ("m1", "m2"))
            + rows_for("bible_8_versions", "all", "pair_all", "auroc", (0.7,), ("m1",)))
    result = definitional_score(rows)
    assert result.table["m1"]["time"] == pytest.approx(0.6)
    assert "time" not in result.table["m2"] and "overall" not in result.table["m2"]
    assert result.notes == ["m2: no time score (missing bible_8_versions/all/pair_all/auroc)"]


HASH_SEED_SCRIPT = """
import numpy as np
from stylebench_jax.tasks.scores import definitional_score
rng = np.random.default_rng(0)
rows = []
for subset in ("age", "education", "ethnic", "gender", "politics", "tod", "country"):
    for task, metric in (("pair_all", "auroc"), ("clustering", "v_measure")):
        for model in ("m1", "m2"):
            value = float(rng.uniform(0, 1) * 10.0 ** rng.integers(-8, 3))
            rows.append({"model": model, "dataset": "pastel", "subset": subset, "task": task,
                         "metric": metric, "value": value})
print(repr(definitional_score(rows).table))
"""


def test_definitional_score_does_not_depend_on_string_hashing():
    """Cells of a group are averaged in sorted order: a set's order follows PYTHONHASHSEED, and float
    sums in another order change the last bits of scores.json between two identical runs."""
    outputs = {subprocess.run([sys.executable, "-c", HASH_SEED_SCRIPT], capture_output=True, text=True,
                              check=True, env={"PYTHONHASHSEED": str(seed), "PATH": "/usr/bin:/bin"},
                              timeout=120).stdout
               for seed in range(6)}
    assert len(outputs) == 1, outputs
