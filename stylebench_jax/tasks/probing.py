"""Probing protocol (STEB §3.1, App. C.1): which linguistic features can a linear probe read off?

For every per-text feature from ``text.features.linguistic_features`` (token, stop-word,
punctuation, syllable, character and sentence counts; total and distinct-lemma counts per Universal
POS tag), two variants that share steps 1 and 3 and differ in step 2 and the tie rule:

1. **Quantile bins**, exactly ``pandas.qcut(values, 5, duplicates="drop")`` (the call in STEB's
   ``scripts/probing/split_probing_datasets.py``): edges are the 0/20/.../100% percentiles (NumPy
   linear), duplicate edges are dropped, a text falls in bin ``c`` when ``edge[c] < value <=
   edge[c+1]`` and the minimum joins the first bin. Count features have ties, so bins merge and a
   feature can have fewer than 5 classes (a minimum equal to the 20% quantile merges with the next
   values; it does not become a class of its own).
2. **Balance and split.** Every class is subsampled to the size ``m`` of the smallest, then split per
   class into train / validation / test, so all three are balanced (chance = 1 / classes).
   *Ours* (``probe_accuracy``): ``round(0.6 m)`` / ``round(0.2 m)`` / rest, drawn per feature from
   ``default_rng([seed, f])``. *STEB's* (``probe_accuracy_steb``): ``int(0.8 m)`` / ``int(0.1 m)`` /
   rest with ``m = min(smallest class, 38,400 // classes)``, classes visited by descending size
   (``value_counts`` order), members drawn with ``choice`` then ``shuffle`` of one legacy
   ``np.random.RandomState(seed)`` stream across the features in order: after
   ``np.random.seed(seed)`` STEB's script draws the very same splits from our texts' order (tested
   against a re-implementation of the script). (The script first shuffles its rows with
   ``df.sample(random_state=42)``; we keep the payload's order.)
3. **Probe.** Multinomial logistic regression (scikit-learn, L2, lbfgs) on the frozen embeddings:
   *ours* L2-normalised (every model's vectors on one scale, so one strength grid means the same
   for all), *STEB's* as the embedder returns them (STEB's ``ProbingProcessor`` feeds the model's
   pooled outputs to the probe; models with a Normalize module give unit vectors either way). The
   regularisation strength ``lambda`` is chosen on validation accuracy from
   ``{1e-5, 1e-4, 1e-3, 1e-2}``. Ties: *ours* keeps the stronger regularisation (of equally good
   validation scores the simpler model; small validation sets tie often), *STEB's* the weakest
   (``np.argmax`` over the strengths in increasing order, in steb/tasks/probing.py as in SentEval's
   ``senteval/tools/validation.py``). The test accuracy of that probe (trained on the train split
   only) is reported.

Why we keep ours. With the quick suite's few hundred texts per unit the smallest class often has
only a few dozen texts; 80/10/10 leaves a handful of validation and test texts per class, so the
strength is chosen on noise and the test accuracy has a wide interval. 60/20/20 halves the interval's
width for the same texts. Results labelled STEB (``probe_accuracy_steb``, STEB's aggregate scores)
use STEB's splits and tie rule.

Features are skipped, with the reason kept in ``ProbingResult.skipped``, when they are constant
(fewer than 2 bins) or their smallest bin has fewer than ``min_per_class`` texts (an empty bin, which
``qcut`` can produce from interpolated edges, counts as 0).

What "regularisation strength" means. STEB (§3.1) selects "the L2 regularization strength from
{1e-5, ..., 1e-2}", following SentEval (Conneau et al. 2018), whose PyTorch probe uses these values
as ``weight_decay`` of Adam on the *mean* cross-entropy (senteval/tools/validation.py,
``regs = [10**t for t in range(-5, -1)]``; STEB's steb/tasks/probing.py does the same). Weight decay
``lambda`` on the mean loss is the objective ``mean_i CE_i + (lambda / 2) ||W||^2``. scikit-learn
minimises ``C sum_i CE_i + (1/2) ||W||^2``; dividing by ``C n`` shows the two agree when
``C = 1 / (lambda n_train)``. So the grid is a grid of strengths (bigger = more regularised), not of
scikit-learn's inverse ``C``: read as ``C`` directly, 1e-2 would regularise about ``n_train`` times
harder than STEB intends. (STEB's App. C.1 calls the probe a "small MLP"; its code is a single
linear layer trained with Adam and early stopping on validation accuracy, whose outputs pass through
a sigmoid before ``F.cross_entropy``: a linear decision rule like logistic regression's, under a
different loss (softmax over sigmoids). We fit multinomial logistic regression to convergence with
lbfgs instead: the same kind of classifier, not STEB's exact objective or its early stopping.)

Headline ``probe_accuracy`` (``probe_accuracy_steb``) = mean over probed features of test accuracy,
with a percentile bootstrap CI that resamples each feature's test texts independently (seeded per
feature) and averages the resampled accuracies; per-feature Scores follow as
``probe_accuracy/<feature>`` (``probe_accuracy_steb/<feature>``).
"""

from __future__ import annotations

import dataclasses
import logging
import warnings
from collections.abc import Sequence

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

from stylebench_jax.data.units import Texts
from stylebench_jax.metrics import bootstrap_replicates, percentile_interval
from stylebench_jax.tasks.base import Score, TaskContext, TextScorer, TooFewInstances

log = logging.getLogger(__name__)

REGULARISATION_STRENGTHS = (1e-5, 1e-4, 1e-3, 1e-2)
N_BINS = 5
SPLIT_FRACTIONS = (0.6, 0.2, 0.2)
# STEB's scripts/probing/split_probing_datasets.py defaults: --train_p 0.8 --val_p 0.1 --total_data 38400
STEB_TRAIN, STEB_VAL, STEB_TOTAL = 0.8, 0.1, 38_400
MIN_PER_CLASS = 10
MAX_ITER = 2000
# PROBE_THREADS note: the probes are small dense problems (hundreds x D), where BLAS/OpenMP threads
# only add synchronisation; on this 2-core machine under load one lbfgs iteration on 600 x 384 took
# ~70 ms with 2 threads and ~1 ms with 1, so fits run single-threaded.


@dataclasses.dataclass(frozen=True)
class FeatureProbe:
    """One probed feature: classes, chosen strength, validation accuracy, test correctness."""

    name: str
    n_classes: int
    n_per_class: int
    strength: float
    val_accuracy: float
    test_correct: np.ndarray  # [n_test] bool
    converged: bool

    @property
    def test_accuracy(self) -> float:
        return float(self.test_correct.mean())


@dataclasses.dataclass(frozen=True)
class ProbingResult:
    probes: list[FeatureProbe]
    skipped: dict[str, str]


def qcut_codes(values: np.ndarray, n_bins: int = N_BINS) -> tuple[np.ndarray, int]:
    """``pandas.qcut(values, n_bins, duplicates="drop")`` as ``(codes [N] int64, n_classes)``.

    Edges: ``np.percentile(values, linspace(0, 1, n_bins + 1) * 100)`` (what pandas computes), unique;
    ``code = searchsorted(edges, value, "left") - 1`` with the minimum put in bin 0. ``n_classes =
    len(edges) - 1`` counts every interval, empty ones included (0 for a constant feature, whose
    codes are all 0).
    """
    values = np.asarray(values, dtype=np.float64)
    edges = np.unique(np.percentile(values, np.linspace(0.0, 1.0, n_bins + 1) * 100.0))
    ids = np.searchsorted(edges, values, side="left")
    ids[values == edges[0]] = 1
    return (ids - 1).astype(np.int64), len(edges) - 1


def quantile_bins(values: np.ndarray, n_bins: int = N_BINS) -> np.ndarray:
    """Class ids ``[N]`` int64 in ``0..c-1`` of :func:`qcut_codes`, empty bins left out (``c <=
    n_bins``; a constant feature is one class)."""
    codes, _ = qcut_codes(values, n_bins)
    return np.unique(codes, return_inverse=True)[1].astype(np.int64)


def balanced_splits(classes: np.ndarray, rng: np.random.Generator,
                    fractions: tuple[float, float, float] = SPLIT_FRACTIONS) -> tuple[np.ndarray, ...]:
    """``(train, val, test)`` index arrays, every class subsampled to the smallest class's size
    ``m`` and split ``round(f_train m)`` / ``round(f_val m)`` / rest."""
    n_classes = int(classes.max()) + 1
    members = [np.flatnonzero(classes == c) for c in range(n_classes)]
    m = min(len(idx) for idx in members)
    n_train, n_val = round(fractions[0] * m), round(fractions[1] * m)
    parts: list[list[np.ndarray]] = [[], [], []]
    for idx in members:
        chosen = rng.permutation(idx)[:m]
        for part, piece in zip(parts, np.split(chosen, [n_train, n_train + n_val])):
            part.append(piece)
    return tuple(np.sort(np.concatenate(p)) for p in parts)


def value_counts_order(codes: np.ndarray, n_classes: int) -> list[int]:
    """The classes in the order STEB's script visits them: ``value_counts()`` of the ``qcut`` labels
    ``"0" .. "<n_classes - 1>"`` (a pandas Categorical, empty classes included): descending size, and
    among equal sizes pandas' own order, which is not always the lower class first (sizes 17, 6, 6,
    13, 7 are visited 0, 3, 4, 2, 1), so pandas itself decides it."""
    import pandas as pd

    labels = pd.Categorical.from_codes(codes, categories=[str(i) for i in range(n_classes)])
    return [int(label) for label in pd.Series(labels).value_counts().index]


def steb_balanced_splits(codes: np.ndarray, n_classes: int, rng: np.random.RandomState, *,
                         train_p: float = STEB_TRAIN, val_p: float = STEB_VAL,
                         total_data: int = STEB_TOTAL) -> tuple[np.ndarray, ...]:
    """STEB's ``(train, val, test)`` index arrays for one feature (split_probing_datasets.py).

    ``codes [N]`` of :func:`qcut_codes` with ``n_classes`` intervals. ``m = min(class sizes + [total_data
    // n_classes])``; classes in :func:`value_counts_order`, each
    draws ``m`` members with ``rng.choice(members, m, replace=False)`` then ``rng.shuffle``: the first
    ``int(train_p m)`` train, the next ``int(val_p m)`` validation, the rest test. Uses ``rng``'s draws
    exactly as STEB's script uses ``np.random`` (also when ``m`` is 0). A constant feature (no class)
    draws nothing and returns empty splits.
    """
    counts = np.bincount(codes, minlength=n_classes)[:n_classes] if n_classes else np.zeros(0, np.int64)
    parts: list[list[np.ndarray]] = [[], [], []]
    if n_classes:
        m = int(min(counts.min(), total_data // n_classes))
        train_end = int(train_p * m)
        val_end = train_end + int(val_p * m)
        for c in value_counts_order(codes, n_classes):
            kept = rng.choice(np.flatnonzero(codes == c), size=m, replace=False)
            rng.shuffle(kept)
            for part, piece in zip(parts, (kept[:train_end], kept[train_end:val_end], kept[val_end:])):
                part.append(piece)
    return tuple(np.sort(np.concatenate(p)).astype(np.int64) if p else np.zeros(0, np.int64) for p in parts)


def fit_probe(x_train: np.ndarray, y_train: np.ndarray, x_val: np.ndarray, y_val: np.ndarray,
              strengths: Sequence[float] = REGULARISATION_STRENGTHS, *, ties: str = "stronger"):
    """Fit one probe per strength (strongest first, warm-started), keep the best on validation.

    ``C = 1 / (strength * n_train)`` (module docstring). Returns ``(model, strength, val_accuracy,
    converged)``; ties in validation accuracy keep the ``"stronger"`` regularisation (ours) or the
    ``"weaker"`` one (STEB and SentEval: ``np.argmax`` over increasing strengths).
    """
    if ties not in ("stronger", "weaker"):
        raise ValueError(f"ties must be 'stronger' or 'weaker', got {ties!r}")
    n_train = len(y_train)
    model = LogisticRegression(solver="lbfgs", max_iter=MAX_ITER, warm_start=True)
    best = None
    for strength in sorted(strengths, reverse=True):
        model.set_params(C=1.0 / (strength * n_train))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            model.fit(x_train, y_train)
        converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
        accuracy = float(np.mean(model.predict(x_val) == y_val))
        if best is None or accuracy > best[2] or (ties == "weaker" and accuracy == best[2]):
            best = (_snapshot(model), strength, accuracy, converged)
    return best


def _snapshot(model: LogisticRegression) -> LogisticRegression:
    """A predict-only copy of a fitted model (the warm-started one keeps changing)."""
    copy = LogisticRegression(**model.get_params())
    copy.classes_, copy.coef_, copy.intercept_ = model.classes_, model.coef_.copy(), model.intercept_.copy()
    copy.n_features_in_ = model.n_features_in_
    return copy


def probe_features(embeddings: np.ndarray, features: np.ndarray, names: Sequence[str], *, seed: int = 0,
                   strengths: Sequence[float] = REGULARISATION_STRENGTHS,
                   min_per_class: int = MIN_PER_CLASS, protocol: str = "ours") -> ProbingResult:
    """Probe every feature column; see the module docstring.

    ``embeddings [N, D]`` float (L2-normalised for ours, raw for STEB's), ``features [N, F]``, ``names [F]``.
    ``protocol="ours"``: feature ``f`` draws its subsample and splits from
    ``np.random.default_rng([seed, f])``; ``"steb"``: STEB's splits from one
    ``np.random.RandomState(seed)`` across the features in order, and STEB's tie rule.
    """
    if protocol not in ("ours", "steb"):
        raise ValueError(f"protocol must be 'ours' or 'steb', got {protocol!r}")
    embeddings = np.asarray(embeddings, dtype=np.float64)
    features = np.asarray(features, dtype=np.float64)
    names = list(names)
    if features.ndim != 2 or features.shape[0] != embeddings.shape[0] or features.shape[1] != len(names):
        raise ValueError(f"features {features.shape} do not match embeddings {embeddings.shape} "
                         f"and {len(names)} names")
    steb_rng = np.random.RandomState(seed) if protocol == "steb" else None
    probes, skipped = [], {}
    for f, name in enumerate(names):
        codes, n_bins = qcut_codes(features[:, f])
        if steb_rng is not None:  # drawn for every feature, as STEB's script does, even if skipped below
            splits = steb_balanced_splits(codes, n_bins, steb_rng)
            classes, n_classes = codes, n_bins
            smallest = int(np.bincount(codes, minlength=n_bins)[:n_bins].min()) if n_bins else 0
        else:
            classes = np.unique(codes, return_inverse=True)[1].astype(np.int64)
            n_classes = int(classes.max()) + 1
            smallest = int(np.bincount(classes).min())
        if n_classes < 2:
            skipped[name] = f"constant on these texts (single value {features[0, f]:g})" if n_bins == 0 \
                else "a single quantile bin on these texts (duplicate edges merged)"
            continue
        if smallest < min_per_class:
            skipped[name] = f"smallest of {n_classes} quantile bins has {smallest} texts (< {min_per_class})"
            continue
        if steb_rng is None:
            splits = balanced_splits(classes, np.random.default_rng([seed, f]))
        train, val, test = splits
        with threadpool_limits(limits=1):  # see PROBE_THREADS note
            model, strength, val_accuracy, converged = fit_probe(
                embeddings[train], classes[train], embeddings[val], classes[val], strengths,
                ties="weaker" if protocol == "steb" else "stronger")
        correct = model.predict(embeddings[test]) == classes[test]
        probes.append(FeatureProbe(name, n_classes, smallest, strength, val_accuracy, correct, converged))
    return ProbingResult(probes, skipped)


def probing_scores(result: ProbingResult, *, seed: int = 0, n_boot: int = 1000,
                   metric: str = "probe_accuracy") -> list[Score]:
    """``[Score(metric), Score("<metric>/<feature>") ...]`` with bootstrap CIs.

    ``n`` of the headline is the number of test predictions over all features; per feature, its
    test-set size.
    """
    if not result.probes:
        raise TooFewInstances(f"no feature could be probed: {result.skipped}")
    per_feature_reps = []
    for f, probe in enumerate(result.probes):
        values = probe.test_correct.astype(np.float64)
        per_feature_reps.append(bootstrap_replicates(lambda w, v=values: w @ v / v.size, values.size,
                                                     n_boot=n_boot, seed=[seed, f]))
    mean_reps = np.mean(per_feature_reps, axis=0)
    accuracies = [probe.test_accuracy for probe in result.probes]
    total = sum(probe.test_correct.size for probe in result.probes)
    scores = [Score(metric, float(np.mean(accuracies)), *percentile_interval(mean_reps), total)]
    for probe, reps in zip(result.probes, per_feature_reps):
        scores.append(Score(f"{metric}/{probe.name}", probe.test_accuracy, *percentile_interval(reps),
                            int(probe.test_correct.size)))
    return scores


def evaluate_probing(scorer: TextScorer, texts: Sequence[str], *, features: np.ndarray | None = None,
                     feature_names: Sequence[str] | None = None, nlp=None, seed: int = 0,
                     n_boot: int = 1000, protocols: Sequence[str] = ("ours",)) -> list[Score]:
    """Probing: per protocol (``"ours"`` -> ``probe_accuracy``, ``"steb"`` -> ``probe_accuracy_steb``)
    the headline Score then one per probed feature.

    ``features [N, F]`` / ``feature_names [F]``: precomputed ``linguistic_features(texts)`` (they do
    not depend on the model, so a caller evaluating several models should compute them once);
    computed here with spaCy (``nlp``) when omitted. Needs vectors: raises ``NotApplicable`` for
    similarity-only scorers. Skipped features are logged with their reason.
    """
    raw = scorer.embed_raw(texts)  # STEB probes the outputs as they are, ours their unit rows
    embeddings = scorer.unit_rows(raw)
    if features is None:
        from stylebench_jax.text.features import linguistic_features

        features, feature_names = linguistic_features(texts, nlp)
    elif feature_names is None:
        raise ValueError("features given without feature_names")
    scores: list[Score] = []
    for protocol in protocols:
        result = probe_features(raw if protocol == "steb" else embeddings, features, feature_names, seed=seed,
                                protocol=protocol)
        for name, reason in result.skipped.items():
            log.info("probing %s (%s): skipped feature %s: %s", scorer.name, protocol, name, reason)
        not_converged = [p.name for p in result.probes if not p.converged]
        if not_converged:
            log.warning("probing %s (%s): lbfgs hit max_iter=%d for %s", scorer.name, protocol, MAX_ITER,
                        ", ".join(not_converged))
        metric = "probe_accuracy" if protocol == "ours" else "probe_accuracy_steb"
        scores += probing_scores(result, seed=seed, n_boot=n_boot, metric=metric)
    return scores


def run_probing(scorer: TextScorer, payload: Texts, context: TaskContext, *, seed: int,
                n_boot: int) -> list[Score]:
    """Task-table runner (``tasks.registry``) of :func:`evaluate_probing`, ours then STEB's; the
    linguistic features come from the run's shared cache (computed once per text list, whatever the
    number of models)."""
    if not scorer.has_vectors:  # let the task raise NotApplicable before any spaCy work
        return evaluate_probing(scorer, payload.texts, seed=seed, n_boot=n_boot)
    features, names = context.features(payload.texts)
    return evaluate_probing(scorer, payload.texts, features=features, feature_names=names, seed=seed,
                            n_boot=n_boot, protocols=("ours", "steb"))
