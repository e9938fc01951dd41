"""Retrieval protocol: hand-computed rankings, pools with the query inside, blocking, scorer kinds."""

import numpy as np
import pytest
from fakes import FixedEmbedder

from stylebench_jax.metrics import relevant_ranks
from stylebench_jax.tasks import retrieval
from stylebench_jax.tasks.base import NotApplicable, TextScorer
from stylebench_jax.tasks.retrieval import evaluate_retrieval, retrieve_embeddings

METRICS = ["mrr", "success@1", "success@8", "success@16", "success@32", "success@64", "success@128",
           "mrr_all_relevant"]


class CosineSimilarityOnly:
    """Similarity-only scorer computing the same cosine as FixedEmbedder, pair by pair."""

    name = "cosine-pairs"

    def __init__(self, vectors):
        self.vectors = {t: np.asarray(v, dtype=np.float64) / np.linalg.norm(v) for t, v in vectors.items()}

    def similarity(self, a, b):
        return np.array([self.vectors[x] @ self.vectors[y] for x, y in zip(a, b)])


def by_name(scores):
    return {s.metric: s for s in scores}


def test_hand_computed_two_queries():
    targets = {"t0": (1, 0), "t1": (0.8, 0.6), "t2": (0, 1), "t3": (0.6, 0.8)}
    target_labels = ["A", "B", "A", "B"]
    queries = {"q0": (1, 0), "q1": (0, 1)}
    # q0 (B): order t0 t1 t3 t2 -> relevant ranks [2, 3]; q1 (A): order t2 t3 t1 t0 -> ranks [1, 4]
    scorer = TextScorer(FixedEmbedder({**targets, **queries}))
    scores = evaluate_retrieval(scorer, list(queries), ["B", "A"], list(targets), target_labels, n_boot=200)
    assert [s.metric for s in scores] == METRICS
    got = by_name(scores)
    assert got["mrr"].value == pytest.approx((1 / 2 + 1) / 2)
    assert got["success@1"].value == pytest.approx(0.5)
    assert got["success@8"].value == pytest.approx(1.0)
    assert got["mrr_all_relevant"].value == pytest.approx(((1 / 2 + 1 / 3) / 2 + (1 + 1 / 4) / 2) / 2)
    assert all(s.n == 2 for s in scores)
    assert got["mrr"].ci_low == pytest.approx(0.5) and got["mrr"].ci_high == pytest.approx(1.0)


def test_leave_one_out_excludes_the_query_and_drops_unanswerable():
    vectors = {"a1": (1, 0), "a2": (0.9, 0.1), "b1": (0, 1), "b2": (0.2, 1), "c1": (0.7, 0.7)}
    labels = ["A", "A", "B", "B", "C"]  # c1 has no other text by its author: not scored
    scores = by_name(evaluate_retrieval(TextScorer(FixedEmbedder(vectors)), list(vectors), labels,
                                        n_boot=50))
    assert scores["mrr"].value == pytest.approx(1.0)
    assert scores["mrr"].n == 4


def test_query_inside_target_list_is_excluded():
    vectors = np.array([[1, 0], [0.95, 0.05], [0, 1], [0.6, 0.4]], dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    labels = ["A", "B", "A", "B"]
    # query = target 0 (A): without exclusion it finds itself at rank 1
    with_self = retrieve_embeddings(vectors[:1], ["A"], vectors, labels, n_boot=10)
    without = retrieve_embeddings(vectors[:1], ["A"], vectors, labels, query_target_index=[0], n_boot=10)
    assert with_self[0].value == 1.0
    # remaining order: t1 (B, .9986), t3 (B, .83), t2 (A, 0) -> first relevant at rank 3
    assert without[0].value == pytest.approx(1 / 3)


def test_equal_scores_rank_relevant_last():
    vectors = np.zeros((5, 3), dtype=np.float32)  # every similarity is 0
    scores = by_name(retrieve_embeddings(vectors, [0, 0, 1, 1, 1], n_boot=10))
    # query of author 0 has 3 non-relevant candidates tied with its one relevant: rank 4;
    # author 1 queries: 2 non-relevant ahead, relevant at ranks 3, 4
    assert scores["mrr"].value == pytest.approx((2 * (1 / 4) + 3 * (1 / 3)) / 5)
    assert scores["mrr_all_relevant"].value == pytest.approx((2 * (1 / 4) + 3 * (1 / 3 + 1 / 4) / 2) / 5)


def test_blocked_ranks_equal_full_sort_reference(monkeypatch):
    rng = np.random.default_rng(0)
    queries = rng.normal(size=(23, 8)).astype(np.float32)
    targets = rng.normal(size=(57, 8)).astype(np.float32)
    q_labels, t_labels = rng.integers(0, 9, 23), rng.integers(0, 9, 57)
    full = queries.astype(np.float64) @ targets.T.astype(np.float64)
    expected = [relevant_ranks(full[q], t_labels == q_labels[q]) for q in range(23)]
    expected = [r for r in expected if r.size]
    monkeypatch.setattr(retrieval, "_MAX_BLOCK_SCORES", 57 * 4)  # 4 query rows per block
    got = by_name(retrieve_embeddings(queries, q_labels, targets, t_labels, n_boot=20))
    assert got["mrr"].value == pytest.approx(np.mean([1 / r[0] for r in expected]))
    assert got["mrr_all_relevant"].value == pytest.approx(np.mean([np.mean(1 / r) for r in expected]))
    assert got["success@8"].value == pytest.approx(np.mean([r[0] <= 8 for r in expected]))
    assert got["mrr"].n == len(expected)


def test_similarity_only_scorer_matches_embedder():
    rng = np.random.default_rng(1)
    texts = [f"doc{i}" for i in range(12)]
    vectors = dict(zip(texts, rng.normal(size=(12, 4))))
    labels = [i % 4 for i in range(12)]
    by_vectors = evaluate_retrieval(TextScorer(FixedEmbedder(vectors)), texts, labels, n_boot=50, seed=3)
    by_pairs = evaluate_retrieval(TextScorer(CosineSimilarityOnly(vectors)), texts, labels, n_boot=50, seed=3)
    for a, b in zip(by_vectors, by_pairs):
        assert a.metric == b.metric and a.n == b.n
        assert (a.value, a.ci_low, a.ci_high) == pytest.approx((b.value, b.ci_low, b.ci_high), abs=1e-6)
    with pytest.raises(NotApplicable, match="pairwise calls"):
        evaluate_retrieval(TextScorer(CosineSimilarityOnly(vectors)), texts, labels, max_similarity_pairs=100)


def test_no_answerable_query_is_an_error():
    with pytest.raises(ValueError, match="no query has a relevant target"):
        retrieve_embeddings(np.eye(3, dtype=np.float32), [0, 1, 2])


# ------------------------------------------------------------------------ STEB's episodes vs STEB's code

def _steb_reference(query_vectors, query_labels, target_vectors, target_labels, episode_size, n_episodes=1):
    from tests.reference.steb_reference import (
        extract_features,
        retrieval_evaluate,
        retrieval_records,
        select_records,
    )

    dataset = select_records(retrieval_records(query_labels, target_labels), episode_size, n_episodes)
    rows = {("q", i): v for i, v in enumerate(query_vectors)}
    rows.update({("t", i): v for i, v in enumerate(target_vectors)})
    x, y = extract_features(dataset, episode_size, lambda texts: np.stack([rows[t] for t in texts]))
    return retrieval_evaluate(x, y)


def _random_authors(seed):
    rng = np.random.default_rng(seed)
    query_labels = [int(a) for a in rng.integers(0, 9, 30)]
    target_labels = [int(a) for a in rng.integers(2, 12, 45)]  # authors 0-1 no targets, 9-11 no queries
    centres = rng.normal(size=(12, 6))
    queries = (centres[query_labels] + rng.normal(scale=1.5, size=(30, 6))) * rng.uniform(0.5, 3, (30, 1))
    targets = (centres[target_labels] + rng.normal(scale=1.5, size=(45, 6))) * rng.uniform(0.5, 3, (45, 1))
    return queries.astype(np.float32), query_labels, targets.astype(np.float32), target_labels


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("episode_size,n_episodes", [(-1, 1), (2, 1), (1, 2), (2, 2)])
def test_steb_episodes_equal_stebs_code(seed, episode_size, n_episodes):
    queries, q_labels, targets, t_labels = _random_authors(seed)
    expected = _steb_reference(queries, q_labels, targets, t_labels, episode_size, n_episodes)
    score, metrics = retrieval.retrieval_steb(queries, q_labels, targets, t_labels, episode_size=episode_size,
                                              n_episodes_per_class=n_episodes, n_boot=50)
    assert metrics == expected  # mrr, mean_rank and recall@1..128, to the last bit
    assert score.metric == "mrr_steb" and score.value == expected["mrr"]
    q_episodes, q_episode_labels = retrieval.steb_episodes(q_labels, episode_size, n_episodes)
    t_episode_labels = retrieval.steb_episodes(t_labels, episode_size, n_episodes)[1]
    assert score.n == sum(label in set(t_episode_labels) for label in q_episode_labels)


def test_steb_episodes_by_hand():
    # episode_size=-1: one episode per label, labels in first-appearance order
    assert retrieval.steb_episodes(["b", "a", "b", "c", "b"]) == ([[0, 2, 4], [1], [3]], ["b", "a", "c"])
    # LUAR-style: first n * episodes texts of labels that have them, consecutive episodes
    assert retrieval.steb_episodes(["b", "a", "b", "c", "b", "b"], 2, 2) == ([[0, 2], [4, 5]], ["b", "b"])
    assert retrieval.steb_episodes(["b", "a", "b"], 1) == ([[0], [1]], ["b", "a"])
    with pytest.raises(ValueError, match="episode_size"):
        retrieval.steb_episodes(["a"], 0)
    # pooled author vectors (cosines by hand)
    queries = np.array([[2, 0], [0, 2], [0, 1]], dtype=np.float32)  # A: (2,0),(0,2) -> (1,1); B: (0,1)
    targets = np.array([[1, 1.2], [1, 0], [0.1, 1]], dtype=np.float32)  # A: (1,1.2); B: (1,0),(0.1,1)
    score, metrics = retrieval.retrieval_steb(queries, ["A", "A", "B"], targets, ["A", "B", "B"], n_boot=20)
    # A (1,1) vs A (1,1.2): cos .996; vs B (0.55,0.5): cos .999 -> A ranks second
    # B (0,1) vs A: .768; vs B: .673 -> B ranks second
    assert metrics["mrr"] == score.value == 0.5 and score.n == 2


def test_steb_episodes_average_the_embedders_own_vectors():
    # Unnormalised vectors: pooling them differs from pooling unit vectors, and STEB pools what the
    # model returns. A's long query vector dominates its raw mean and points at target A.
    vectors = {"qa1": (10, 1), "qa2": (0, 1), "qb": (0, 1), "ta": (1, 0.1), "tb": (0.2, 1)}
    scorer = TextScorer(FixedEmbedder(vectors))
    scores = retrieval.evaluate_retrieval_steb(scorer, ["qa1", "qa2", "qb"], ["A", "A", "B"], ["ta", "tb"],
                                               ["A", "B"], n_boot=20)
    assert scores[0].value == 1.0  # raw mean of A = (5, 1): closest to ta; B = (0, 1): closest to tb
    unit = retrieval.retrieval_steb(scorer.embed(["qa1", "qa2", "qb"]), ["A", "A", "B"],
                                    scorer.embed(["ta", "tb"]), ["A", "B"], n_boot=20)[0]
    assert unit.value == 0.75  # unit mean of A = (0.5, 0.55): closer to tb -> A ranks second


def test_run_retrieval_reports_ours_then_stebs():
    from stylebench_jax.data.units import RetrievalSet
    from stylebench_jax.tasks.base import TaskContext

    vectors = {"q0": (1, 0), "q1": (0, 1), "t0": (1, 0.1), "t1": (0.1, 1), "t2": (0.5, 0.5)}
    payload = RetrievalSet(["q0", "q1"], ["A", "B"], ["t0", "t1", "t2"], ["A", "B", "C"])
    scores = retrieval.run_retrieval(TextScorer(FixedEmbedder(vectors)), payload, TaskContext(), seed=0,
                                     n_boot=20)
    assert [s.metric for s in scores] == METRICS + ["mrr_steb"]
    assert by_name(scores)["mrr_steb"].value == 1.0 and by_name(scores)["mrr_steb"].n == 2
    similarity_only = retrieval.run_retrieval(TextScorer(CosineSimilarityOnly(vectors)), payload,
                                              TaskContext(), seed=0, n_boot=20)
    assert [s.metric for s in similarity_only] == METRICS  # no vectors to pool
