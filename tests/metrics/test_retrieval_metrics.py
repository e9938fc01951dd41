"""Ranks, MRR (first hit and STEB's all-relevant variant), Recall@K: hand cases and STEB's code."""

import numpy as np
import pytest

from stylebench_jax.metrics import (
    mean_reciprocal_rank,
    mean_reciprocal_rank_steb,
    relevant_ranks,
    success_at_k,
)


def test_hand_computed_ranks():
    scores = [0.9, 0.8, 0.7, 0.6]
    relevant = [False, True, False, True]
    assert relevant_ranks(scores, relevant).tolist() == [2, 4]
    # excluding target 0 (e.g. the query itself) moves both up by one
    assert relevant_ranks(scores, relevant, [False, True, True, True]).tolist() == [1, 3]
    assert relevant_ranks(scores, [False] * 4).tolist() == []


def test_ties_are_broken_against_the_query():
    assert relevant_ranks([0.5, 0.5, 0.5], [True, False, False]).tolist() == [3]
    # two relevant tied with one non-relevant: the non-relevant goes first, relevant take 2 and 3
    assert relevant_ranks([0.5, 0.5, 0.5], [True, True, False]).tolist() == [2, 3]
    assert relevant_ranks([0.7, 0.5, 0.5], [True, True, False]).tolist() == [1, 3]


def test_hand_computed_mrr_variants_and_recall():
    ranks = [np.array([2, 4]), np.array([1]), np.array([10, 11, 12])]
    first = [r[0] for r in ranks]
    assert mean_reciprocal_rank(first) == pytest.approx((1 / 2 + 1 + 1 / 10) / 3)
    steb = ((1 / 2 + 1 / 4) / 2 + 1 + (1 / 10 + 1 / 11 + 1 / 12) / 3) / 3
    assert mean_reciprocal_rank_steb(ranks) == pytest.approx(steb)
    assert success_at_k(first, 1) == pytest.approx(1 / 3)
    assert success_at_k(first, 8) == pytest.approx(2 / 3)
    assert success_at_k(first, 10) == pytest.approx(1.0)
    # perfect ranking with two relevant targets: MRR 1, STEB's variant (1 + 1/2) / 2
    assert mean_reciprocal_rank_steb([np.array([1, 2])]) == pytest.approx(0.75)


def steb_retrieval(scores, query_labels, target_labels):
    """STEB's loop (steb/metrics.py calculate_retrieval_metrics) on similarities instead of distances."""
    mrr, first = [], []
    for i in range(scores.shape[0]):
        order = np.argsort(-scores[i])
        ranks = np.where(query_labels[i] == target_labels[order])[0] + 1
        mrr.append(np.mean(1.0 / ranks))
        first.append(ranks[0])
    return float(np.mean(mrr)), np.array(first)


@pytest.mark.parametrize("seed", range(3))
def test_matches_steb_on_untied_random_scores(seed):
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=(40, 90))
    q_labels, t_labels = rng.integers(0, 12, 40), rng.integers(0, 12, 90)
    keep = [q for q in range(40) if np.any(t_labels == q_labels[q])]
    ranks = [relevant_ranks(scores[q], t_labels == q_labels[q]) for q in keep]
    steb_mrr, steb_first = steb_retrieval(scores[keep], q_labels[keep], t_labels)
    assert mean_reciprocal_rank_steb(ranks) == pytest.approx(steb_mrr, abs=1e-12)
    assert [r[0] for r in ranks] == steb_first.tolist()


def test_bad_ranks():
    with pytest.raises(ValueError):
        mean_reciprocal_rank([0, 1])
    with pytest.raises(ValueError):
        mean_reciprocal_rank_steb([np.array([], dtype=int)])
    with pytest.raises(ValueError):
        success_at_k([1, 2], 0)


def test_nan_scores_are_refused():
    # nothing scores >= NaN, so a NaN relevant target would rank first
    with pytest.raises(ValueError, match="NaN or infinity"):
        relevant_ranks([0.9, 0.8, np.nan, 0.1], [0, 0, 1, 0])
    # an excluded candidate is not looked at
    assert relevant_ranks([0.9, np.nan, 0.5], [0, 0, 1], [True, False, True]).tolist() == [2]
