"""The authorship-verification methods of RAVEN §5.2, each trained per fold on that fold's data.

Every method maps a fold (training documents and pairs, test pairs; document indices into the
corpus texts) to test probabilities in [0, 1] with 0.5 = non-answer (PAN's answer format).

- ``char_ngram``: PAN 2021's distance baseline as RAVEN runs it (``hits/av_methods/ngram_dist.py``,
  from ``pan22-verif-baseline-cngdist.py``): ``TfidfVectorizer(max_features=3000, analyzer="char",
  ngram_range=(4, 4))`` fitted on the fold's *training documents* (computed from corpus-wide term
  counts, identical to refitting, see ``TermCounts``), cosine of each pair, p1/p2 found
  by grid search (step 0.01) maximising the overall score on the training pairs (as RAVEN's code and
  PAN's baseline do; the paper's §5.2 says "validation data held out from our training data"), then
  PAN's ``correct_scores`` rescaling (``metrics.pan``). RAVEN's grid objective is its unrounded
  ``evaluate_all`` (PAN's rounds to 3 decimals first); we use RAVEN's.
- ``ppm``: PAN's compressor baseline (``raven.ppm``): the two cross-entropies of each pair into
  ``LogisticRegression()`` (scikit-learn defaults, as PAN), fitted on the training pairs; a probability
  within ``radius`` (0.01) of 0.5 becomes 0.5, then rounded to 3 decimals (PAN's answers). Features:
  ``(mean, |difference|)`` as RAVEN's text says (PAN's and RAVEN's code pass the raw pair
  ``(d1, d2)``; ``features: raw`` does that).
- ``topic_fit``: RAVEN's topic-fit model (``topicfit_ngram_dist.py``): the ``mask_top_k`` most frequent
  words of the fold's training documents are masked (text distortion, Stamatatos 2017, reversed),
  then the n-gram distance method runs on *word unigrams*. Departures: (1) every masked word becomes
  as many ``*`` as it has characters and every all-digit word as many ``#`` (RAVEN's Table 3 shows
  this; the code's default is one ``*`` per word); (2) word frequencies are counted on lowercased
  tokens (RAVEN counts case-sensitive tokens but compares lowercased words against them, so a
  capitalised frequent word such as a name is never masked); (3) test texts are masked with the same
  list (RAVEN leaves them as they are: identical vectors, since masked words are outside the
  vocabulary either way and ``*``/``#`` are not word characters). Words are CountVectorizer tokens
  (two or more word characters, as RAVEN), so one-letter words are never masked.
- ``embedder:<name>``: cosine of any Embedder's vectors (from the embedding cache), calibrated with
  p1/p2 like RAVEN's LUAR and sentence-BERT runs (``get_sentencebert_pred.py``); untrained here, a
  model from ``stylebench train`` plugs in by its directory. Negative cosines are clipped to 0
  before calibration (PAN's rescaling expects similarities in [0, 1]; RAVEN does not clip and could
  emit negative "probabilities").
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from stylebench_jax.config import InvalidField
from stylebench_jax.metrics.pan import calibrate_two_thresholds, rescale_two_thresholds, threshold_grid
from stylebench_jax.raven.ppm import PPMTables, pair_features
from stylebench_jax.raven.sampling import Fold, Pairs


@dataclasses.dataclass(frozen=True)
class Calibration:
    """What the p1/p2 search and the rescaling need: the grid step and the overall definition."""

    grid_step: float = 0.01
    overall: str = "raven"
    f05u: str = "pan21"

    def fit(self, similarities: np.ndarray, labels: np.ndarray) -> dict:
        p1, p2, value = calibrate_two_thresholds(similarities, labels, threshold_grid(self.grid_step),
                                                 overall=self.overall, f05u=self.f05u)
        return {"p1": p1, "p2": p2, "train_overall": value}

    def apply(self, vectors, rows: dict[int, int], fold: Fold) -> tuple[dict, np.ndarray]:
        """p1/p2 fitted on the cosines of the fold's training pairs (``vectors[rows[doc]]``, rows
        L2-normalised), and the rescaled cosines of its test pairs (the test probabilities)."""
        fitted = self.fit(_pair_cosines(vectors, fold.train_pairs, rows), fold.train_pairs.labels)
        test = _pair_cosines(vectors, fold.test_pairs, rows)
        return fitted, rescale_two_thresholds(test, fitted["p1"], fitted["p2"])


@dataclasses.dataclass(frozen=True)
class MethodResult:
    """Test probabilities ``[P_test]`` float64 of one method on one fold, and what was fitted."""

    probs: np.ndarray
    fitted: dict


def _pair_cosines(vectors, pairs: Pairs, rows: dict[int, int]) -> np.ndarray:
    """Cosine of L2-normalised rows (dense or sparse) for each pair, clipped to [0, 1]."""
    a = vectors[[rows[int(i)] for i in pairs.first]]
    b = vectors[[rows[int(i)] for i in pairs.second]]
    product = a.multiply(b).sum(axis=1) if hasattr(a, "multiply") else np.sum(a * b, axis=1)
    return np.clip(np.asarray(product, dtype=np.float64).ravel(), 0.0, 1.0)


def _pair_docs(*pair_sets: Pairs) -> list[int]:
    return sorted({int(i) for pairs in pair_sets for i in np.concatenate([pairs.first, pairs.second])})


class TermCounts:
    """Term counts of every corpus document (``CountVectorizer``, ``analyzer`` n-grams), from which a
    fold's ``TfidfVectorizer(max_features=..., analyzer=..., ngram_range=(n, n))`` fitted on its
    training documents is derived *exactly* without re-tokenising the corpus for every fold: the
    vocabulary is the training terms (alphabetical, as scikit-learn sorts it), cut to ``max_features``
    by ``(-term frequency).argsort()`` on that same array (scikit-learn's ``_limit_features``, so even
    ties go the same way); ``idf = ln((1 + n) / (1 + df)) + 1`` over the ``n`` training documents
    (``smooth_idf``); rows are raw counts x idf, L2-normalised. ``excluded`` terms (topic-fit's masked
    words) are left out of the vocabulary, which is what masking them in the text does (``*`` and
    ``#`` are not word characters). Tested against ``TfidfVectorizer`` on masked texts.
    """

    def __init__(self, texts: Sequence[str], *, analyzer: str, n: int):
        from sklearn.feature_extraction.text import CountVectorizer

        vectorizer = CountVectorizer(analyzer=analyzer, ngram_range=(n, n))
        self.counts = vectorizer.fit_transform(texts).tocsr()  # [N, V] int64, terms alphabetical
        self.terms = vectorizer.get_feature_names_out()

    def train_frequencies(self, train_docs: np.ndarray) -> np.ndarray:
        """``[V]`` total count of each term in the training documents."""
        return np.asarray(self.counts[train_docs].sum(axis=0)).ravel()

    def tfidf(self, train_docs: np.ndarray, max_features: int, excluded: np.ndarray | None = None):
        """``(vectors [N, F] CSR float64, F)`` for every corpus document in the fold's vocabulary."""
        from sklearn.preprocessing import normalize

        frequencies = self.train_frequencies(train_docs)
        candidates = np.flatnonzero((frequencies > 0) & (True if excluded is None else ~excluded))
        if candidates.size == 0:
            raise ValueError("no terms left in the training documents (every word masked?)")
        if candidates.size > max_features:
            candidates = np.sort(candidates[(-frequencies[candidates]).argsort()[:max_features]])
        train = self.counts[train_docs][:, candidates]
        df = np.bincount(train.indices, minlength=candidates.size)
        idf = np.log((1 + len(train_docs)) / (1 + df)) + 1
        vectors = self.counts[:, candidates].astype(np.float64).multiply(idf[None, :]).tocsr()
        return normalize(vectors), int(candidates.size)


class CalibratedTfidf:
    """TF-IDF cosine + p1/p2: the ``char_ngram`` method, and ``topic_fit`` (``mask_top_k`` set)."""

    def __init__(self, name: str, *, analyzer: str, n: int, max_features: int, calibration: Calibration,
                 mask_top_k: int | None = None, counts: Callable[[], TermCounts]):
        self.name = name
        self.analyzer, self.n, self.max_features = analyzer, n, max_features
        self.calibration, self.mask_top_k, self.counts = calibration, mask_top_k, counts

    @property
    def identity(self) -> str:
        return (f"{self.name} tfidf analyzer={self.analyzer} n={self.n} max_features={self.max_features} "
                f"mask_top_k={self.mask_top_k} {self.calibration}")

    def _excluded(self, counts: TermCounts, fold: Fold) -> np.ndarray | None:
        if self.mask_top_k is None:
            return None
        # topic-fit: the fold's most frequent training words are masked
        words = set(top_terms(counts.terms, counts.train_frequencies(fold.train_docs), self.mask_top_k))
        return np.array([term in words or term.isdigit() for term in counts.terms])

    def check(self, fold: Fold) -> None:
        """Refuse, before any method runs, a mask that leaves a fold no training term (RAVEN's
        default 10,000 masks every word type of a small corpus)."""
        if self.mask_top_k is None:
            return
        counts = self.counts()
        left = (counts.train_frequencies(fold.train_docs) > 0) & ~self._excluded(counts, fold)
        if not left.any():
            raise InvalidField(f"methods.{self.name}.mask_top_k",
                               f"{self.mask_top_k} masks every word of fold {fold.index}'s training "
                               "documents; lower it below that fold's vocabulary")

    def run(self, texts: Sequence[str], fold: Fold) -> MethodResult:
        del texts  # the term counts were built from them
        counts = self.counts()
        excluded = self._excluded(counts, fold)
        try:
            vectors, size = counts.tfidf(fold.train_docs, self.max_features, excluded)
        except ValueError as error:
            raise ValueError(f"{self.name}: fold {fold.index}: {error}") from None
        rows = {i: i for i in range(vectors.shape[0])}
        fitted, probs = self.calibration.apply(vectors, rows, fold)
        return MethodResult(probs, {**fitted, "vocabulary": size})


def top_terms(terms: Sequence[str], frequencies: np.ndarray, k: int) -> list[str]:
    """The ``k`` most frequent terms (frequency > 0; ties: alphabetical)."""
    present = [i for i in np.argsort(-frequencies, kind="stable") if frequencies[i] > 0][:k]
    return [str(terms[i]) for i in present]


_COUNT_TOKEN = re.compile(r"(?u)\b\w\w+\b")  # CountVectorizer's default token_pattern
_WORD = re.compile(r"\b\w+\b")  # TextDistorter.distort's pattern


def frequent_words(texts: Sequence[str], k: int) -> list[str]:
    """The ``k`` most frequent lowercased tokens of ``texts`` (ties: alphabetical)."""
    counts = Counter(token for text in texts for token in _COUNT_TOKEN.findall(text.lower()))
    return [word for word, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:k]]


class TextDistorter:
    """Stamatatos' text distortion as RAVEN's ``TextDistorter.distort`` with ``multiple_asterisk=True``:
    an all-digit word becomes ``#`` per character, a word in ``words`` (compared lowercased) ``*`` per
    character; everything else is kept."""

    def __init__(self, words: Sequence[str]):
        self.words = frozenset(words)

    def _replace(self, match: re.Match) -> str:
        word = match.group()
        if word.isdigit():
            return "#" * len(word)
        if word.lower() in self.words:
            return "*" * len(word)
        return word

    def __call__(self, text: str) -> str:
        return _WORD.sub(self._replace, text)


class PPMMethod:
    """PAN's compressor baseline (module docstring); ``tables`` holds the corpus's n-gram tables."""

    name = "ppm"

    def __init__(self, tables_factory: Callable[[], PPMTables], *, order: int, radius: float, features: str):
        self.tables_factory = tables_factory
        self.order, self.radius, self.features = order, radius, features

    @property
    def identity(self) -> str:
        return f"ppm order={self.order} radius={self.radius} features={self.features} logreg=sklearn-default"

    def _features(self, tables: PPMTables, pairs: Pairs) -> np.ndarray:
        return np.array([pair_features(d1, d2, self.features)
                         for d1, d2 in tables.distances(pairs.first, pairs.second)],
                        dtype=np.float64).reshape(-1, 2)

    def run(self, texts: Sequence[str], fold: Fold) -> MethodResult:
        from sklearn.linear_model import LogisticRegression

        del texts  # the tables were built from them
        tables = self.tables_factory()
        try:
            train = self._features(tables, fold.train_pairs)
            model = LogisticRegression().fit(train, fold.train_pairs.labels)
            raw = model.predict_proba(self._features(tables, fold.test_pairs))[:, 1]
        finally:
            tables.clear_cache()
        raw = np.where((0.5 - self.radius <= raw) & (raw <= 0.5 + self.radius), 0.5, raw)
        probs = np.array([round(float(p), 3) for p in raw])
        return MethodResult(probs, {"coefficients": [float(c) for c in model.coef_.ravel()],
                                    "intercept": float(model.intercept_[0])})


class EmbedderCosine:
    """Cosine of an Embedder's vectors, calibrated with p1/p2 (module docstring)."""

    def __init__(self, name: str, identity: str, vectors: Callable[[], np.ndarray], calibration: Calibration):
        self.name, self._identity, self.vectors, self.calibration = name, identity, vectors, calibration

    @property
    def identity(self) -> str:
        return f"embedder-cosine {self._identity} {self.calibration}"

    def run(self, texts: Sequence[str], fold: Fold) -> MethodResult:
        del texts
        vectors = self.vectors()  # [N, D], rows L2-normalised
        rows = {i: i for i in range(vectors.shape[0])}
        fitted, probs = self.calibration.apply(vectors, rows, fold)
        return MethodResult(probs, fitted)
