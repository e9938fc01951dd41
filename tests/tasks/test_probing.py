"""Probing protocol: binning and splits by hand, the strength <-> C mapping, probes on planted signal."""

import csv

import numpy as np
import pytest
from fakes import FixedEmbedder
from sklearn.linear_model import LogisticRegression

from stylebench_jax.tasks.base import NotApplicable, TextScorer
from stylebench_jax.tasks.probing import (
    balanced_splits,
    evaluate_probing,
    probe_features,
    probing_scores,
    quantile_bins,
)


class PairOnly:
    name = "pair-only"

    def similarity(self, a, b):
        return np.ones(len(a))


def test_quantile_bins_by_hand():
    # quantiles of 1..10 at 20/40/60/80% are 2.8, 4.6, 6.4, 8.2 -> two values per bin
    assert quantile_bins(np.arange(1, 11)).tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    # eight zeros, then 1 and 2: edges 0, 0, 0, 0.2 merge to (0, 0.2) -> classes {0} and {1, 2}
    assert quantile_bins([0] * 8 + [1, 2]).tolist() == [0] * 8 + [1, 1]
    assert quantile_bins([3.0] * 6).tolist() == [0] * 6


def test_balanced_splits_by_hand():
    classes = np.repeat([0, 1, 2], [30, 12, 20])
    train, val, test = balanced_splits(classes, np.random.default_rng(0))
    # smallest class 12 -> per class round(7.2) = 7 train, round(2.4) = 2 val, 3 test
    for part, size in ((train, 7), (val, 2), (test, 3)):
        assert np.bincount(classes[part]).tolist() == [size] * 3
    assert len(set(train) | set(val) | set(test)) == 36
    again = balanced_splits(classes, np.random.default_rng(0))
    assert all(np.array_equal(a, b) for a, b in zip((train, val, test), again))


def test_strength_is_weight_decay_on_the_mean_loss():
    """C = 1 / (lambda n) makes sklearn minimise mean CE + lambda/2 ||W||^2: its gradient vanishes."""
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(120, 6)), rng.integers(0, 3, 120)
    strength = 1e-2
    model = LogisticRegression(C=1 / (strength * 120), tol=1e-10, max_iter=10_000).fit(x, y)
    logits = x @ model.coef_.T + model.intercept_
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    grad = (p - np.eye(3)[y]).T @ x / 120 + strength * model.coef_
    assert np.abs(grad).max() < 1e-6


def planted(n=400, seed=0):
    """Embeddings whose first coordinate encodes feature 0 exactly; feature 1 is noise to them."""
    rng = np.random.default_rng(seed)
    signal = rng.permutation(n).astype(float)
    embeddings = np.column_stack([signal / n, rng.normal(size=(n, 3))])
    embeddings /= np.linalg.norm(embeddings, axis=1, keepdims=True)
    noise = rng.integers(0, 50, n).astype(float)
    return embeddings, np.column_stack([np.argsort(np.argsort(embeddings[:, 0])), noise])


def test_probe_reads_planted_feature_and_not_noise():
    embeddings, features = planted()
    result = probe_features(embeddings, features, ["planted", "noise"], seed=0)
    planted_probe, noise_probe = result.probes
    assert planted_probe.n_classes == 5 and planted_probe.n_per_class == 80
    assert planted_probe.test_accuracy > 0.8
    assert noise_probe.test_accuracy < 0.45  # chance is 0.2
    assert planted_probe.strength in (1e-5, 1e-4, 1e-3, 1e-2)


def test_scores_average_features_with_bootstrap():
    embeddings, features = planted()
    result = probe_features(embeddings, features, ["planted", "noise"], seed=0)
    scores = probing_scores(result, n_boot=200, seed=1)
    assert [s.metric for s in scores] == ["probe_accuracy", "probe_accuracy/planted", "probe_accuracy/noise"]
    mean = (result.probes[0].test_accuracy + result.probes[1].test_accuracy) / 2
    assert scores[0].value == pytest.approx(mean)
    assert scores[1].n == 80  # planted: 80 per class -> 48 / 16 / 16, test = 16 x 5 classes
    assert scores[0].n == sum(p.test_correct.size for p in result.probes)
    for s in scores:
        assert s.ci_low <= s.value <= s.ci_high
    assert scores == probing_scores(result, n_boot=200, seed=1)


def test_constant_and_tiny_bin_features_are_skipped_with_reason():
    embeddings, features = planted()
    rare = np.zeros(len(features))
    rare[:5] = 1.0  # second bin has only 5 texts
    result = probe_features(embeddings, np.column_stack([features[:, 0], np.full(len(features), 7.0), rare]),
                            ["planted", "constant", "rare"])
    assert [p.name for p in result.probes] == ["planted"]
    assert "constant" in result.skipped["constant"]
    assert "5 texts" in result.skipped["rare"]


def test_evaluate_with_precomputed_features_and_scorer_checks():
    embeddings, features = planted(n=200)
    texts = [f"t{i}" for i in range(200)]
    scorer = TextScorer(FixedEmbedder(dict(zip(texts, embeddings))))
    scores = evaluate_probing(scorer, texts, features=features, feature_names=["planted", "noise"], n_boot=50)
    assert scores[0].metric == "probe_accuracy"
    with pytest.raises(NotApplicable):
        evaluate_probing(TextScorer(PairOnly()), texts, features=features, feature_names=["a", "b"])
    with pytest.raises(ValueError, match="feature_names"):
        evaluate_probing(scorer, texts, features=features)


def test_spacy_features_on_real_sentences(data_root):
    """End to end with spaCy features on 300 CDS sentences, embedded as a point on a quarter circle
    whose angle is the log character length (survives L2 normalisation; noise in a third axis)."""
    with open(data_root / "cds_samples" / "cds_samples.tsv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    texts = [row["text"] for row in rows[::37]][:300]
    rng = np.random.default_rng(0)
    log_length = np.log1p([len(t) for t in texts])
    angle = (log_length - log_length.min()) / np.ptp(log_length) * np.pi / 2
    vectors = np.column_stack([np.cos(angle), np.sin(angle), 0.05 * rng.normal(size=len(texts))])
    scorer = TextScorer(FixedEmbedder(dict(zip(texts, vectors))))
    scores = {s.metric: s for s in evaluate_probing(scorer, texts, n_boot=50)}
    assert 0.0 < scores["probe_accuracy"].value < 1.0
    # the embedding carries log length: character and word counts are readable, far above chance
    assert scores["probe_accuracy/t_char"].value > 0.5
    assert scores["probe_accuracy/t_word"].value > 0.4
