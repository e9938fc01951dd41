"""Pair classification: hand-computed all-to-all and predefined cases, kernel vs sklearn, item
bootstrap vs a naive weighted-pairs loop, similarity-only scorers, 1 and 8 devices."""

import jax
import numpy as np
import pytest
from fakes import FixedEmbedder
from sklearn.metrics import roc_auc_score

from stylebench_jax.metrics import bootstrap_weights, equal_error_rate, percentile_interval
from stylebench_jax.parallel import make_mesh
from stylebench_jax.tasks.base import NotApplicable, TextScorer
from stylebench_jax.tasks.pair_classification import (
    all_pairs_scores,
    all_to_all_from_embeddings,
    all_to_all_from_similarity,
    evaluate_all_to_all,
    evaluate_predefined_pairs,
    predefined_pair_scores,
)


class CosineSimilarityOnly:
    """Similarity-only scorer computing the same cosine pair by pair (float32 like the kernel)."""

    name = "cosine-pairs"

    def __init__(self, vectors):
        self.vectors = {t: np.asarray(v, dtype=np.float32) for t, v in vectors.items()}

    def similarity(self, a, b):
        return np.array([float(self.vectors[x] @ self.vectors[y]) for x, y in zip(a, b)])


# a0 = (1, 0), a1 = (.8, .6) share label A; b0 = (0, 1), b1 = (.6, .8) share B. Pair scores:
# positives a0a1 = .8, b0b1 = .8; negatives a0b0 = 0, a0b1 = .6, a1b0 = .6, a1b1 = .96.
# AUROC: each positive beats 3 of 4 negatives -> 6/8. ROC (0,0) (1/4,0) (1/4,1) (3/4,1) (1,1):
# FPR - FNR goes -3/4 -> +1/4 on the vertical segment at FPR = 1/4 -> EER = 1/4.
HAND = {"a0": (1.0, 0.0), "a1": (0.8, 0.6), "b0": (0.0, 1.0), "b1": (0.6, 0.8)}
HAND_LABELS = ["A", "A", "B", "B"]


def copies(vectors, labels, r=5):
    """Each hand item as ``r`` texts with the same vector (so every label has several items)."""
    texts = [f"{name}#{k}" for name in vectors for k in range(r)]
    return ({f"{name}#{k}": v for name, v in vectors.items() for k in range(r)}, texts,
            [label for label in labels for _ in range(r)])


# Five copies of each hand item (20 texts). Positives: 40 within-copy pairs at 1.0 (C(5,2) x 4) and
# 50 at .8 (a0-a1, b0-b1: 25 each); negatives: 25 each at 0, .6, .6, .96.
# AUROC = (40 x 100 + 50 x 75) / (90 x 100) = 7750 / 9000. ROC (0,0) (0,4/9) (1/4,4/9) (1/4,1)
# (3/4,1) (1,1): FPR - FNR crosses 0 on the vertical segment at FPR = 1/4 -> EER = 1/4.
def test_hand_computed_all_to_all():
    vectors, texts, labels = copies(HAND, HAND_LABELS)
    for model in (FixedEmbedder(vectors), CosineSimilarityOnly(vectors)):
        scores = evaluate_all_to_all(TextScorer(model), texts, labels, n_boot=100)
        assert [s.metric for s in scores] == ["auroc", "eer"]
        assert scores[0].value == pytest.approx(7750 / 9000)
        assert scores[1].value == pytest.approx(0.25)
        assert scores[0].n == 20
        assert scores[0].ci_low <= scores[0].value <= scores[0].ci_high


def test_too_few_items_per_label_for_an_interval():
    with pytest.raises(ValueError, match="every label needs several items"):
        evaluate_all_to_all(TextScorer(FixedEmbedder(HAND)), list(HAND), HAND_LABELS, n_boot=100)


def test_hand_computed_predefined_pairs():
    # trials: (a0, a1) same .8; (b0, b1) same .8; (a0, b1) diff .6; (a1, b1) diff .96:
    # positives beat 1 of 2 negatives each -> 0.5; ROC (0,0) (1/2,0) (1/2,1) (1,1) -> EER 1/2
    pairs = [("a0", "a1", 1), ("b0", "b1", 1), ("a0", "b1", 0), ("a1", "b1", 0)]
    for model in (FixedEmbedder(HAND), CosineSimilarityOnly(HAND)):
        scores = evaluate_predefined_pairs(TextScorer(model), pairs, n_boot=100)
        assert [s.metric for s in scores] == ["auroc", "eer"]
        assert (scores[0].value, scores[1].value) == pytest.approx((0.5, 0.5))
        assert scores[0].n == 4


def random_set(n=61, dim=8, n_labels=5, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, n_labels, n)
    vectors = rng.normal(size=(n, dim)) + 1.5 * np.eye(dim)[labels % dim]
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors.astype(np.float32), labels


@pytest.mark.parametrize("mesh_spec", [None, "data=8"])
def test_kernel_point_estimate_matches_sklearn_on_1_and_8_devices(mesh_spec):
    vectors, labels = random_set()  # 61 items: not divisible by 8
    mesh = None if mesh_spec is None else make_mesh(mesh_spec)
    if mesh is None:
        mesh = make_mesh("data=1", jax.devices()[:1])
    auroc, eer = all_to_all_from_embeddings(vectors, labels, n_boot=50, mesh=mesh, block_size=16)
    scores, same = all_pairs_scores(vectors, labels)
    assert auroc.value == pytest.approx(roc_auc_score(same, scores), abs=1e-6)
    assert eer.value == pytest.approx(equal_error_rate(scores, same), abs=1e-6)


def test_item_bootstrap_equals_naive_weighted_pairs():
    vectors, labels = random_set(n=30)
    auroc, eer = all_to_all_from_embeddings(vectors, labels, n_boot=120, seed=5)
    scores, same = all_pairs_scores(vectors, labels)
    i, j = np.triu_indices(30, k=1)
    a_reps, e_reps = [], []
    # the item bootstrap uses seed + 1 and resamples within labels
    for weights in bootstrap_weights(30, 120, seed=6, strata=labels):
        for w in weights:
            pair_w = w[i] * w[j]  # copies of one item are never paired
            a_reps.append(roc_auc_score(same, scores, sample_weight=pair_w))
            e_reps.append(equal_error_rate(scores, same, sample_weight=pair_w))
    assert (auroc.ci_low, auroc.ci_high) == pytest.approx(percentile_interval(np.array(a_reps)), abs=1e-6)
    assert (eer.ci_low, eer.ci_high) == pytest.approx(percentile_interval(np.array(e_reps)), abs=1e-6)


def test_subsampled_item_bootstrap_is_rescaled_and_deterministic():
    vectors, labels = random_set(n=120, seed=2)
    full = all_to_all_from_embeddings(vectors, labels, n_boot=150, seed=1, max_boot_items=120)
    sub = all_to_all_from_embeddings(vectors, labels, n_boot=150, seed=1, max_boot_items=40)
    assert sub == all_to_all_from_embeddings(vectors, labels, n_boot=150, seed=1, max_boot_items=40)
    assert full[0].value == sub[0].value
    for f, s in zip(full, sub):
        assert s.ci_low <= s.value <= s.ci_high
        # the rescaled subset interval estimates the same width as the full bootstrap
        assert (s.ci_high - s.ci_low) == pytest.approx(f.ci_high - f.ci_low, rel=0.6)


def test_predefined_bootstrap_is_stratified_and_seeded():
    rng = np.random.default_rng(0)
    labels = np.r_[np.ones(5), np.zeros(200)]  # few positives: unstratified replicates could lack them
    scores = rng.normal(size=205) + labels
    first = predefined_pair_scores(scores, labels, seed=3, n_boot=300)
    assert first == predefined_pair_scores(scores, labels, seed=3, n_boot=300)
    assert first[0].value == pytest.approx(roc_auc_score(labels, scores))
    assert first[0].ci_low < first[0].value < first[0].ci_high


def test_similarity_only_limits_and_single_class():
    texts = [f"t{i}" for i in range(30)]
    scorer = TextScorer(CosineSimilarityOnly({t: (1.0, float(i)) for i, t in enumerate(texts)}))
    with pytest.raises(NotApplicable, match="pairwise calls"):
        all_to_all_from_similarity(scorer, texts, [i % 2 for i in range(30)], max_similarity_pairs=100)
    with pytest.raises(ValueError, match="different-label"):
        predefined_pair_scores([0.1, 0.2], [1, 1])


def test_all_to_all_without_same_label_pairs_is_a_data_error_before_the_kernel():
    from stylebench_jax.tasks.base import TooFewInstances

    with pytest.raises(TooFewInstances, match="0 same-label and 6 different-label pairs"):
        all_to_all_from_embeddings(np.eye(4, dtype=np.float32), list("abcd"), n_boot=10)
    with pytest.raises(TooFewInstances, match="6 same-label and 0 different-label pairs"):
        all_to_all_from_embeddings(np.eye(4, dtype=np.float32), list("aaaa"), n_boot=10)


def test_predefined_pair_labels_must_be_0_or_1():
    with pytest.raises(ValueError, match="bool or 0/1"):  # a 2 was read as True
        predefined_pair_scores([0.1, 0.9, 0.5, 0.3], [2, 0, 2, 0])


def test_an_undefined_similarity_is_a_model_output_error_naming_the_pair():
    """STEL's punctuation baseline gives NaN on an empty text (0 / 0, a tie in STEL's own tasks); in a
    pair task it reached the metric as a bare ValueError ("scores hold NaN") with a traceback."""
    from stylebench_jax.encoders.baselines.stel_surface import PunctuationSimilarity
    from stylebench_jax.tasks.base import ModelOutputError

    pairs = [("Hello, there.", "Yes; indeed!", True), ("", "Oh, no.", False), ("Fine.", "Well, fine.", True)]
    scorer = TextScorer(PunctuationSimilarity())
    with pytest.raises(ModelOutputError, match=r"punctuation returned nan for pair 1 \('' / 'Oh, no.'\)"):
        evaluate_predefined_pairs(scorer, pairs, n_boot=10)
    assert np.isnan(scorer.similarity(["", "a,"], ["b.", "c."], nan_is_tie=True)[0])  # STEL's tie rule
