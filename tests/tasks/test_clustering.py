"""Clustering protocol: hand-computed partitions, sklearn parity, bootstrap path, scorer handling."""

import numpy as np
import pytest
from fakes import FixedEmbedder
from sklearn.cluster import MiniBatchKMeans
from sklearn.metrics import v_measure_score

from stylebench_jax.metrics import bootstrap_weights, centred_interval
from stylebench_jax.tasks.base import NotApplicable, TextScorer
from stylebench_jax.tasks.clustering import cluster_embeddings, cluster_scores, evaluate_clustering


class PairOnly:
    name = "pair-only"

    def similarity(self, a, b):
        return np.ones(len(a))


def separated(n_per_label=6, n_labels=3, seed=0):
    """Texts whose vectors sit near orthogonal axes, one axis per label."""
    rng = np.random.default_rng(seed)
    texts, labels, vectors = [], [], []
    for label in range(n_labels):
        for k in range(n_per_label):
            texts.append(f"text {label}-{k}")
            labels.append(f"style{label}")
            vectors.append(np.eye(n_labels)[label] + 0.01 * rng.normal(size=n_labels))
    return texts, labels, np.array(vectors)


def test_perfectly_separated_styles_score_one():
    texts, labels, vectors = separated()
    scores = evaluate_clustering(TextScorer(FixedEmbedder(dict(zip(texts, vectors)))), texts, labels,
                                 n_boot=100)
    assert [s.metric for s in scores] == ["v_measure", "ami"]
    for s in scores:
        assert (s.value, s.ci_low, s.ci_high, s.n) == (pytest.approx(1.0), pytest.approx(1.0),
                                                       pytest.approx(1.0), 18)


def test_hand_computed_fixed_assignment():
    # classes [0,0,1,1] vs clusters [0,0,0,1]: V = 2hc/(h+c) with
    # h = 1 - (3/4) H(2/3,1/3) / ln 2 and c = 1 - (ln 2 / 2) / H(3/4,1/4)
    def entropy(*p):
        return -sum(x * np.log(x) for x in p)

    h = 1 - 0.75 * entropy(2 / 3, 1 / 3) / np.log(2)
    c = 1 - 0.5 * np.log(2) / entropy(0.75, 0.25)
    v, ami = cluster_scores([0, 0, 1, 1], [0, 0, 0, 1], n_boot=200)
    assert v.value == pytest.approx(2 * h * c / (h + c))
    assert v.n == 4 and v.ci_low <= v.value <= v.ci_high
    assert ami.metric == "ami"


def test_bootstrap_replicates_equal_sklearn_on_resampled_data():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 3, 40)
    clusters = np.where(rng.random(40) < 0.7, labels, rng.integers(0, 3, 40))
    reps = []
    for weights in bootstrap_weights(40, 150, seed=11):
        for w in weights:
            idx = np.repeat(np.arange(40), w.astype(int))
            reps.append(v_measure_score(labels[idx], clusters[idx]))
    v = cluster_scores(labels, clusters, seed=11, n_boot=150)[0]
    expected = centred_interval(np.array(reps), v_measure_score(labels, clusters))
    assert (v.ci_low, v.ci_high) == pytest.approx(expected, abs=1e-12)


def test_assignment_is_sklearn_minibatch_kmeans():
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(60, 5))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    labels = rng.integers(0, 4, 60)
    pred = MiniBatchKMeans(n_clusters=4, batch_size=32, random_state=7, n_init=1).fit_predict(vectors)
    scores = cluster_embeddings(vectors, labels, seed=7, n_boot=50)
    assert scores[0].value == pytest.approx(v_measure_score(labels, pred))


def test_clusters_the_vectors_as_returned_like_stebs_code():
    # the label is carried by the vectors' length along one direction: STEB's calculate_clustering_metrics
    # k-means the model outputs as they are and finds it; normalising first would erase it
    rng = np.random.default_rng(0)
    labels = np.repeat([0, 1, 2], 100)
    vectors = (1 + 4 * labels)[:, None] * np.ones(6) / np.sqrt(6) + 0.05 * rng.normal(size=(300, 6))
    texts = [f"t{i}" for i in range(300)]
    scores = evaluate_clustering(TextScorer(FixedEmbedder(dict(zip(texts, vectors)))), texts, labels,
                                 seed=42, n_boot=20)
    steb = MiniBatchKMeans(n_clusters=3, random_state=42, batch_size=32, n_init="auto").fit(
        vectors.astype(np.float32))
    assert scores[0].value == pytest.approx(v_measure_score(labels, steb.labels_)) and scores[0].value > 0.95


def test_deterministic_in_seed():
    texts, labels, vectors = separated(seed=1)
    noisy = vectors + np.random.default_rng(2).normal(scale=0.8, size=vectors.shape)
    first = cluster_embeddings(noisy, labels, seed=4, n_boot=100)
    assert first == cluster_embeddings(noisy, labels, seed=4, n_boot=100)
    assert first[0].ci_low < first[0].ci_high


def test_similarity_only_scorer_is_not_applicable():
    with pytest.raises(NotApplicable):
        evaluate_clustering(TextScorer(PairOnly()), ["a", "b", "c"], [0, 1, 0])


def test_bad_inputs():
    with pytest.raises(ValueError, match="2 distinct labels"):
        cluster_embeddings(np.eye(3), [0, 0, 0])
    with pytest.raises(ValueError, match="more texts than labels"):
        cluster_embeddings(np.eye(2), [0, 1])


def test_v_measure_interval_stays_in_range():
    rng = np.random.default_rng(0)
    labels, clusters = rng.integers(0, 8, 400), rng.integers(0, 8, 400)  # chance level, V near 0
    v, ami = cluster_scores(labels, clusters, n_boot=300)
    assert 0.0 <= v.ci_low <= v.ci_high <= 1.0
    assert ami.ci_low < 0.0 < ami.ci_high <= 1.0
