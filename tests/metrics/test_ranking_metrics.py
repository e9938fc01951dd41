"""AuthBench ranking metrics: hand cases, plain-loop and scikit-learn references, the tie rule, and the
streaming (top-k) form against the dense form."""

import warnings

import numpy as np
import pytest
from sklearn.metrics import ndcg_score

from stylebench_jax import metrics
from stylebench_jax.metrics import ranking_metrics, ranking_metrics_topk, ranking_per_query, success_at_k
from stylebench_jax.metrics.ranking import per_query_from_hits


def loop_metrics(scores, relevant, ks):
    """Independent reference: rank each row with Python's sort (tie rule as a sort key), then count."""
    out = {f"{name}@{k}": [] for name in ("success", "recall", "ndcg") for k in ks}
    out["mrr"] = []
    for row, rel in zip(scores, relevant):
        order = sorted(range(len(row)), key=lambda i: (-row[i], bool(rel[i])))
        hits = [bool(rel[i]) for i in order]
        n_rel = sum(hits)
        for k in ks:
            found = sum(hits[:k])
            out[f"success@{k}"].append(float(found > 0))
            out[f"recall@{k}"].append(found / n_rel)
            dcg = sum(1 / np.log2(i + 2) for i in range(k) if i < len(hits) and hits[i])
            idcg = sum(1 / np.log2(i + 2) for i in range(min(k, n_rel)))
            out[f"ndcg@{k}"].append(dcg / idcg)
        out["mrr"].append(1 / (hits.index(True) + 1))
    return {name: float(np.mean(v)) for name, v in out.items()}


def random_case(seed, q=12, n=40, ties=False):
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=(q, n))
    if ties:
        scores = np.round(scores, 0)  # few distinct values: many ties
    relevant = rng.random((q, n)) < 0.15
    relevant[np.arange(q), rng.integers(0, n, q)] = True
    return scores, relevant


def test_hand_computed_query():
    # order: r, n, r, n, r (relevant at ranks 1, 3, 5), |P| = 3
    scores = np.array([[0.9, 0.8, 0.7, 0.6, 0.5]])
    relevant = np.array([[True, False, True, False, True]])
    got = ranking_metrics(scores, relevant, ks=(1, 2, 5))
    assert got["success@1"] == 1.0 and got["recall@1"] == pytest.approx(1 / 3)
    assert got["recall@2"] == pytest.approx(1 / 3)
    assert got["recall@5"] == pytest.approx(1.0)
    idcg2 = 1 + 1 / np.log2(3)
    assert got["ndcg@2"] == pytest.approx(1 / idcg2)
    dcg5 = 1 + 1 / np.log2(4) + 1 / np.log2(6)
    assert got["ndcg@5"] == pytest.approx(dcg5 / (1 + 1 / np.log2(3) + 1 / np.log2(4)))
    assert got["mrr"] == 1.0
    assert list(got) == ["success@1", "success@2", "success@5", "recall@1", "recall@2", "recall@5",
                         "ndcg@1", "ndcg@2", "ndcg@5", "mrr"]


def test_idcg_uses_min_of_k_and_relevant_count():
    # one relevant candidate at rank 1: nDCG@5 = 1 (IDCG over min(5, 1) = 1 position, not 5)
    got = ranking_metrics([[0.9, 0.1, 0.0]], [[True, False, False]], ks=(5,))
    assert got["ndcg@5"] == 1.0 and got["recall@5"] == 1.0


def test_ties_are_broken_against_the_query():
    # all equal: the two non-relevant candidates come first
    got = ranking_metrics([[0.5, 0.5, 0.5]], [[True, False, False]], ks=(1, 2, 3))
    assert (got["success@1"], got["success@2"], got["success@3"]) == (0.0, 0.0, 1.0)
    assert got["mrr"] == pytest.approx(1 / 3)
    # relevant tied with each other stay consecutive after the tied non-relevant one
    got = ranking_metrics([[0.5, 0.5, 0.5, 0.9]], [[True, True, False, False]], ks=(2, 4))
    assert got["recall@2"] == 0.0 and got["recall@4"] == 1.0


def test_excluded_candidates_never_count():
    scores = [[0.99, 0.5, 0.4]]
    relevant = [[True, True, False]]
    got = ranking_metrics(scores, relevant, ks=(1,), candidate=[[False, True, True]])
    assert got["success@1"] == 1.0 and got["recall@1"] == 1.0  # |P| = 1 once the query itself is out


@pytest.mark.parametrize("ties", [False, True])
def test_matches_plain_loop(ties):
    scores, relevant = random_case(3, ties=ties)
    got = ranking_metrics(scores, relevant, ks=(1, 3, 7))
    want = loop_metrics(scores, relevant, (1, 3, 7))
    assert got == pytest.approx(want)


def test_ndcg_matches_scikit_learn_without_ties():
    # scikit-learn averages over tied orders; with distinct scores both definitions coincide.
    scores, relevant = random_case(5)
    for k in (1, 5, 10):
        got = ranking_metrics(scores, relevant, ks=(k,))[f"ndcg@{k}"]
        assert got == pytest.approx(ndcg_score(relevant.astype(float), scores, k=k))


def test_ndcg_differs_from_scikit_learn_on_ties():
    # documented difference: sklearn gives a tied relevant item the average gain, we rank it last
    scores, relevant = np.array([[0.5, 0.5]]), np.array([[True, False]])
    assert ranking_metrics(scores, relevant, ks=(1,))["ndcg@1"] == 0.0
    assert ndcg_score(relevant.astype(float), scores, k=1) == pytest.approx(0.5)


def test_query_without_relevant_is_refused():
    with pytest.raises(ValueError, match="query 1 has no relevant"):
        ranking_metrics([[0.1, 0.2], [0.3, 0.4]], [[True, False], [False, False]])


def topk_of(scores, length):
    """What the top-k kernel returns: best first, ties by lower index (not the tie rule)."""
    order = np.lexsort((np.broadcast_to(np.arange(scores.shape[1]), scores.shape), -scores), axis=-1)
    return order[:, :length], np.take_along_axis(scores, order[:, :length], axis=-1)


@pytest.mark.parametrize("ties", [False, True])
def test_streaming_form_equals_dense(ties):
    scores, relevant = random_case(11, q=30, n=60, ties=ties)
    ks = (1, 5, 10)
    dense = ranking_per_query(scores, relevant, ks, mrr_cutoff=20)
    length = 21
    while True:  # what a task does: lengthen the list for queries whose ties reach its end
        idx, top = topk_of(scores, length)
        hits = np.take_along_axis(relevant, idx, axis=-1)
        try:
            streamed = ranking_metrics_topk(hits, top, relevant.sum(1), ks, n_candidates=60, mrr_cutoff=20)
            break
        except ValueError:
            assert ties
            length *= 2
    assert list(streamed) == list(dense)
    for name in dense:
        np.testing.assert_allclose(streamed[name], dense[name], err_msg=name)


def test_streaming_form_flags_unresolved_ties():
    scores = np.array([[0.9, 0.5, 0.5, 0.5]])
    relevant = np.array([[False, True, False, False]])
    idx, top = topk_of(scores, 2)  # rank 2 is tied with unseen candidates
    with pytest.raises(ValueError, match="ties reaching the end"):
        ranking_metrics_topk(np.take_along_axis(relevant, idx, 1), top, [1], (2,), n_candidates=4,
                             mrr_cutoff=2)
    assert metrics.topk_ties_unresolved(top, 1, 4).tolist() == [False]  # rank 1 is determined


def test_full_mrr_needs_the_whole_pool():
    with pytest.raises(ValueError, match="whole pool"):
        ranking_metrics_topk([[True]], [[0.9]], [1], (1,), n_candidates=3)


def test_recall_at_k_is_deprecated_alias_of_success_at_k():
    with pytest.warns(DeprecationWarning, match="success_at_k"):
        assert metrics.recall_at_k([1, 5], 1) == success_at_k([1, 5], 1) == 0.5
    with pytest.warns(DeprecationWarning, match="SUCCESS_KS"):
        assert metrics.RECALL_KS == metrics.SUCCESS_KS
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        success_at_k([1], 1)


@pytest.mark.parametrize("kwargs, message", [
    ({"ks": (2.7,)}, "ks must be"), ({"ks": (0,)}, "ks must be"), ({"ks": ()}, "ks must be"),
    ({"mrr_cutoff": 0}, "mrr_cutoff must be"), ({"mrr_cutoff": -1}, "mrr_cutoff must be"),
])
def test_bad_cutoffs_are_refused_not_rounded(kwargs, message):
    with pytest.raises(ValueError, match=message):
        per_query_from_hits(np.array([[True, False, False]]), [1], **kwargs)
    # an array or a generator of cutoffs is as good as a tuple
    hits = np.array([[False, True, False]])
    assert per_query_from_hits(hits, [1], ks=np.array([1, 2])) == per_query_from_hits(hits, [1], ks=(1, 2))
    assert list(per_query_from_hits(hits, [1], ks=(k for k in (1, 2)))) == list(
        per_query_from_hits(hits, [1], ks=(1, 2)))
