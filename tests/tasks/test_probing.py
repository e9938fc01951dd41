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
    fit_probe,
    probe_features,
    probing_scores,
    qcut_codes,
    quantile_bins,
    steb_balanced_splits,
    value_counts_order,
)


class PairOnly:
    name = "pair-only"

    def similarity(self, a, b):
        return np.ones(len(a))


def test_quantile_bins_by_hand():
    # quantiles of 1..10 at 20/40/60/80% are 2.8, 4.6, 6.4, 8.2 -> two values per bin
    assert quantile_bins(np.arange(1, 11)).tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    # eight zeros, then 1 and 2: edges 0, 0, 0, 0, 0.2, 2 -> [0, 0.2] and (0.2, 2]
    assert quantile_bins([0] * 8 + [1, 2]).tolist() == [0] * 8 + [1, 1]
    assert quantile_bins([3.0] * 6).tolist() == [0] * 6
    # a minimum equal to the 20% quantile joins the next values (qcut), it is no class of its own:
    # 0, 0, 0, 1..7: edges 0, 0, 1.6, 3.4, 5.2, 7 -> [0, 1.6] holds the zeros and the 1
    values = [0, 0, 0, 1, 2, 3, 4, 5, 6, 7]
    assert quantile_bins(values).tolist() == [0, 0, 0, 0, 1, 1, 2, 2, 3, 3]
    codes, n = qcut_codes(values)
    assert codes.tolist() == [0, 0, 0, 0, 1, 1, 2, 2, 3, 3] and n == 4
    # interpolated edges can leave a bin empty: 0, 1, 2, 10 -> edges 0, .6, 1.2, 1.8, 5.2, 10
    codes, n = qcut_codes([0, 1, 2, 10])
    assert codes.tolist() == [0, 1, 3, 4] and n == 5
    assert quantile_bins([0, 1, 2, 10]).tolist() == [0, 1, 2, 3]  # ours: empty bin left out
    assert qcut_codes([3.0] * 6)[1] == 0


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


def test_constant_single_bin_and_tiny_bin_features_are_skipped_with_reason():
    embeddings, features = planted()
    rare = np.zeros(len(features))
    rare[:5] = 1.0  # 5 ones among 395 zeros: edges 0, 0, 0, 0, 0, 1 -> one bin [0, 1] (qcut)
    columns = np.column_stack([features[:, 0], np.full(len(features), 7.0), rare])
    for protocol in ("ours", "steb"):
        result = probe_features(embeddings, columns, ["planted", "constant", "rare"], protocol=protocol)
        assert [p.name for p in result.probes] == ["planted"]
        assert "constant" in result.skipped["constant"]
        assert "single quantile bin" in result.skipped["rare"]
        result = probe_features(embeddings, columns[:, :1], ["planted"], min_per_class=81, protocol=protocol)
        assert result.skipped == {"planted": "smallest of 5 quantile bins has 80 texts (< 81)"}


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


def test_stebs_probe_reads_the_raw_vectors_ours_the_normalised():
    # a feature carried by the vectors' length along one direction: STEB feeds its probe the model's
    # outputs as they are and reads it; our protocol normalises first and cannot
    rng = np.random.default_rng(4)
    texts = [f"text {i}" for i in range(500)]
    planted = rng.uniform(1, 10, size=500)
    vectors = planted[:, None] * np.ones(8) / np.sqrt(8) + 0.01 * rng.normal(size=(500, 8))
    scorer = TextScorer(FixedEmbedder(dict(zip(texts, vectors))))
    scores = {s.metric: s.value for s in evaluate_probing(
        scorer, texts, features=planted[:, None], feature_names=["planted"], n_boot=20,
        protocols=("ours", "steb"))}
    assert scores["probe_accuracy_steb/planted"] > 0.8
    assert scores["probe_accuracy/planted"] < 0.5  # 5 classes: chance 0.2


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


# ------------------------------------------------------------------------- STEB's protocol vs STEB's code

def _count_features(seed, n=300, f=12):
    """Count-like features with heavy ties (many zeros, small integers) and one continuous column."""
    rng = np.random.default_rng(seed)
    columns = [rng.poisson(lam, n) * (rng.random(n) < keep) for lam, keep in
               zip(rng.uniform(0.2, 6, f - 1), rng.uniform(0.3, 1, f - 1))]
    return np.column_stack(columns + [rng.normal(size=n)]).astype(np.float64)


@pytest.mark.parametrize("seed", range(4))
def test_qcut_codes_equal_pandas(seed):
    import pandas as pd

    features = _count_features(seed)
    rng = np.random.default_rng(seed)
    extra = [rng.integers(0, 3, 40), [0, 1, 2, 10], rng.exponential(size=25).round(1), [5.0] * 9]
    for column in [*features.T, *extra]:
        column = np.asarray(column, dtype=np.float64)
        codes, n = qcut_codes(column)
        if n == 0:  # constant: pandas has no interval for it (every code NaN)
            assert np.isnan(pd.qcut(column, 5, labels=False, duplicates="drop")).all()
            continue
        expected = pd.qcut(column, 5, labels=False, duplicates="drop")
        assert codes.tolist() == expected.astype(int).tolist()
        assert n == len(pd.qcut(column, 5, duplicates="drop", retbins=True)[1]) - 1


@pytest.mark.parametrize("seed", range(3))
def test_steb_splits_equal_stebs_script(seed):
    from tests.reference.steb_reference import split_probing_feature

    features = _count_features(seed + 10)
    np.random.seed(seed)  # STEB's script draws from the global legacy stream
    expected = [split_probing_feature(column) for column in features.T]
    rng = np.random.RandomState(seed)
    for column, (labels, splits) in zip(features.T, expected):
        codes, n = qcut_codes(column)
        train, val, test = steb_balanced_splits(codes, n, rng)
        for part, name in ((train, "train"), (val, "val"), (test, "test")):
            assert part.tolist() == [i for i, s in enumerate(splits) if s == name]
        kept = np.sort(np.concatenate([train, val, test]))
        assert codes[kept].tolist() == [labels[i] for i in kept]
        assert all(labels[i] is None for i in set(range(len(column))) - set(kept.tolist()))


def test_steb_splits_follow_pandas_order_of_equal_sized_bins():
    # value_counts' order of equal counts is pandas' own, not always the lower class first: sizes
    # 17, 6, 6, 13, 7 are visited 0, 3, 4, 2, 1; every bin draws from one shared stream, so the order
    # decides the splits (small-integer features hit such ties often: 3 of these 300 used to differ)
    from tests.reference.steb_reference import split_probing_feature

    assert value_counts_order(np.repeat(np.arange(5), [17, 6, 6, 13, 7]), 5) == [0, 3, 4, 2, 1]
    rng = np.random.default_rng(5)
    for trial in range(300):
        column = rng.integers(0, int(rng.integers(3, 12)), int(rng.integers(20, 120))).astype(np.float64)
        if np.unique(column).size < 2:
            continue
        np.random.seed(trial)
        _, splits = split_probing_feature(column)
        codes, n = qcut_codes(column)
        train, val, test = steb_balanced_splits(codes, n, np.random.RandomState(trial))
        for part, name in ((train, "train"), (val, "val"), (test, "test")):
            assert part.tolist() == [i for i, s in enumerate(splits) if s == name], trial


def test_steb_split_sizes_by_hand():
    codes = np.repeat([0, 1, 2], [30, 12, 20])
    train, val, test = steb_balanced_splits(codes, 3, np.random.RandomState(0))
    # m = 12: int(9.6) = 9 train, int(1.2) = 1 val, 2 test per class
    for part, size in ((train, 9), (val, 1), (test, 2)):
        assert np.bincount(codes[part]).tolist() == [size] * 3
    # total_data caps m at total_data // classes; an empty class leaves nothing to draw
    train, val, test = steb_balanced_splits(codes, 3, np.random.RandomState(0), total_data=15)
    assert len(train) + len(val) + len(test) == 15
    assert all(len(part) == 0 for part in steb_balanced_splits(codes, 4, np.random.RandomState(0)))


def test_validation_ties_weakest_for_steb_strongest_for_ours():
    from tests.reference.steb_reference import select_regularisation

    # separable classes: every strength reaches validation accuracy 1.0 -> a four-way tie
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 30)
    x = np.column_stack([y * 4.0 - 2.0 + rng.normal(scale=0.1, size=60), rng.normal(size=60)])
    strengths = (1e-5, 1e-4, 1e-3, 1e-2)
    per_strength = [fit_probe(x[:40], y[:40], x[40:], y[40:], [s])[2] for s in strengths]
    assert per_strength == [1.0] * 4
    assert fit_probe(x[:40], y[:40], x[40:], y[40:], strengths, ties="weaker")[1] == \
        select_regularisation(per_strength) == 1e-5
    assert fit_probe(x[:40], y[:40], x[40:], y[40:], strengths)[1] == 1e-2
    with pytest.raises(ValueError, match="ties"):
        fit_probe(x[:40], y[:40], x[40:], y[40:], strengths, ties="middle")


def test_run_probing_reports_ours_then_stebs():
    from stylebench_jax.data.units import Texts
    from stylebench_jax.tasks.base import TaskContext
    from stylebench_jax.tasks.probing import run_probing

    embeddings, features = planted(n=300)
    texts = [f"t{i}" for i in range(300)]

    class Context(TaskContext):
        def __init__(self):
            super().__init__()
            self.features = lambda t: (features, ["planted", "noise"])

    scores = run_probing(TextScorer(FixedEmbedder(dict(zip(texts, embeddings)))), Texts(texts), Context(),
                         seed=0, n_boot=20)
    assert [s.metric for s in scores] == ["probe_accuracy", "probe_accuracy/planted", "probe_accuracy/noise",
                                          "probe_accuracy_steb", "probe_accuracy_steb/planted",
                                          "probe_accuracy_steb/noise"]
    by_name = {s.metric: s for s in scores}
    assert by_name["probe_accuracy/planted"].n == 5 * 12  # 60 per class: 36 / 12 / 12
    assert by_name["probe_accuracy_steb/planted"].n == 5 * 6  # int(48) / int(6) / 6
    assert by_name["probe_accuracy_steb/planted"].value > 0.8
