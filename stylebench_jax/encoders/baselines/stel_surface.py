"""STEL's surface-feature similarities (Wegmann & Nguyen, EMNLP 2021), as ``PairSimilarity`` objects.

Each is defined as in the authors' reference code (github.com/nlpsoc/STEL, ``src/STEL/legacy_sim_classes.py``
and ``src/STEL/similarity.py`` at commit d730a119), so that accuracies on the public STEL files reproduce
the published per-instance results (checked in ``tests/encoders/test_baselines.py``):

=============  ========================================================================================
name           similarity of texts ``s1``, ``s2``
=============  ========================================================================================
char3gram      cosine of character 3-gram count vectors (scikit-learn ``CountVectorizer(analyzer="char",
               ngram_range=(3, 3))`` fitted on the pair: lowercased, runs of whitespace -> one space).
               Both texts empty, or no 3-gram in either text: 1.
punctuation    cosine of relative frequencies ``count(mark) / len(text)`` of the 12 marks
               ' : , _ ! ? ; . " ( ) -
word_length    ``1 - |a - b| / max(a, b)``, a and b the mean length of the tokens of ``text.split(" ")``
uppercase      ``1 - |a - b|``, a and b the share of uppercase characters (``str.isupper``) among all
               characters
levenshtein    ``1 - d / max(len(s1), len(s2))`` with d the character edit distance (insert, delete,
               substitute, each cost 1; NLTK's ``edit_distance``). Both texts empty: 1.
=============  ========================================================================================

"cosine" is STEL's ``cosine_sim`` (see ``stel_cosine``): the cosine when both vectors are non-zero, 0 when
exactly one is zero, 1 when both are zero.

Undefined values: where the reference divides by zero we return NaN, and the order-alignment rules count
a NaN comparison as a tie (0.5), exactly as STEL's own code does for the NaN that ``punctuation`` produces
for an empty text (NumPy 0/0). The reference raises ``ZeroDivisionError`` instead for ``uppercase`` with an
empty text and for ``word_length`` when both mean token lengths are 0 (texts of only spaces or empty);
such texts do not occur in STEL.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np
from rapidfuzz.distance import Levenshtein

PUNCTUATION_MARKS = ("'", ":", ",", "_", "!", "?", ";", ".", '"', "(", ")", "-")

REFERENCE = "github.com/nlpsoc/STEL@d730a119fb980e8f47ca193e24677df521450210 src/STEL/legacy_sim_classes.py"


def stel_cosine(u: np.ndarray, v: np.ndarray) -> float:
    """STEL's ``cosine_sim`` with the SciPy cosine distance of the authors' environment (2021).

    ``1 - |1 - mean(u*v) / sqrt(mean(u*u) * mean(v*v))|`` when both vectors are non-zero (SciPy < 1.9
    computed ``cosine`` from means and returned the absolute value; today's SciPy uses dot products
    and clips), 0 when exactly one vector is zero, 1 when both are. Mathematically this is the plain
    cosine; the last-bit rounding matters because STEL's rule treats exactly equal distances as ties,
    and only this form reproduces the published tie pattern. NaN entries propagate to NaN.
    """
    norm_u, norm_v = np.linalg.norm(u), np.linalg.norm(v)
    if norm_u * norm_v != 0.0:
        uv, uu, vv = np.mean(u * v), np.mean(u * u), np.mean(v * v)
        return float(1.0 - np.abs(1.0 - uv / np.sqrt(uu * vv)))
    if norm_u > 0 or norm_v > 0:
        return 0.0
    return 1.0


def _counter_cosine(a: Counter, b: Counter) -> float:
    """``stel_cosine`` of two sparse count vectors given as Counters (aligned over the union of keys)."""
    keys = sorted(a.keys() | b.keys())
    u = np.fromiter((a.get(key, 0) for key in keys), dtype=np.float64, count=len(keys))
    v = np.fromiter((b.get(key, 0) for key in keys), dtype=np.float64, count=len(keys))
    return stel_cosine(u, v)


def levenshtein_distance(a: str, b: str) -> int:
    """Character edit distance (unit-cost insertions, deletions, substitutions; no transpositions),
    by RapidFuzz's bit-parallel C++ (Hyyro 2001): an exact integer, about 20x faster than the same
    algorithm on Python integers (200 pairs of up to 3,000 characters: 0.39 s -> 0.02 s), which
    took about a minute of the quick suite."""
    return Levenshtein.distance(a, b)


class _SurfaceSimilarity:
    """Shared batching: per-text features are computed once per distinct text, then combined per pair."""

    key = ""

    @property
    def name(self) -> str:
        return f"baseline:{self.key}"

    @property
    def identity(self) -> str:
        return f"stel-surface:{self.key}:v1"

    def _feature(self, text: str):
        return text

    def _combine(self, feature_a, feature_b) -> float:
        raise NotImplementedError

    def pair_similarity(self, text_a: str, text_b: str) -> float:
        return self._combine(self._feature(text_a), self._feature(text_b))

    def similarity(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        """``[len(a)]`` float64: similarity of ``a[i]`` and ``b[i]`` (NaN where undefined, see module doc)."""
        if len(a) != len(b):
            raise ValueError(f"similarity needs equal-length lists, got {len(a)} and {len(b)}")
        features = {text: self._feature(text) for text in dict.fromkeys([*a, *b])}
        return np.fromiter((self._combine(features[x], features[y]) for x, y in zip(a, b)),
                           dtype=np.float64, count=len(a))


class CharThreeGramSimilarity(_SurfaceSimilarity):
    key = "char3gram"

    def __init__(self):
        from sklearn.feature_extraction.text import CountVectorizer

        # The same preprocessing and n-gram extraction as CountVectorizer(analyzer="char",
        # ngram_range=(3, 3)).fit_transform([s1, s2]); counting over the pair's joint vocabulary.
        self._analyzer: Callable[[str], list[str]] = CountVectorizer(
            analyzer="char", ngram_range=(3, 3)).build_analyzer()

    def _feature(self, text: str):
        return len(text), Counter(self._analyzer(text))

    def _combine(self, feature_a, feature_b) -> float:
        (length_a, grams_a), (length_b, grams_b) = feature_a, feature_b
        if length_a == 0 and length_b == 0:
            return 1.0
        if not grams_a and not grams_b:  # CountVectorizer: "empty vocabulary" -> reference returns 1
            return 1.0
        return _counter_cosine(grams_a, grams_b)

    def similarity(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        """Batched form of ``pair_similarity``, bit-identical to it: one count matrix over the distinct
        texts, then per pair ``S_uv = sum u*v`` and the union vocabulary size ``n = nnz(u) + nnz(v) -
        nnz(u*v)`` give ``stel_cosine``'s means ``S / n`` exactly (integer sums are exact in float64)."""
        if len(a) != len(b):
            raise ValueError(f"similarity needs equal-length lists, got {len(a)} and {len(b)}")
        from sklearn.feature_extraction.text import CountVectorizer

        unique = list(dict.fromkeys([*a, *b]))
        position = {text: i for i, text in enumerate(unique)}
        ia = np.fromiter((position[t] for t in a), dtype=np.int64, count=len(a))
        ib = np.fromiter((position[t] for t in b), dtype=np.int64, count=len(b))
        try:
            counts = CountVectorizer(analyzer=self._analyzer, dtype=np.int64).fit_transform(unique).tocsr()
        except ValueError:  # no text has a 3-gram: every pair is "empty vocabulary" -> 1
            return np.ones(len(a), dtype=np.float64)
        squares = np.asarray(counts.multiply(counts).sum(axis=1), dtype=np.float64).ravel()
        sizes = np.diff(counts.indptr)
        uv = np.empty(len(a), dtype=np.float64)
        shared = np.empty(len(a), dtype=np.int64)
        step = max(1, int(2_000_000 // max(1.0, 2 * sizes.mean())))
        for start in range(0, len(a), step):
            rows = slice(start, start + step)
            product = counts[ia[rows]].multiply(counts[ib[rows]]).tocsr()
            product.eliminate_zeros()
            uv[rows] = np.asarray(product.sum(axis=1), dtype=np.float64).ravel()
            shared[rows] = np.diff(product.indptr)
        uu, vv = squares[ia], squares[ib]
        n = (sizes[ia] + sizes[ib] - shared).astype(np.float64)
        out = np.where((uu > 0) | (vv > 0), 0.0, 1.0)
        both = (uu > 0) & (vv > 0)
        m = n[both]
        out[both] = 1.0 - np.abs(1.0 - (uv[both] / m) / np.sqrt((uu[both] / m) * (vv[both] / m)))
        return out


class PunctuationSimilarity(_SurfaceSimilarity):
    key = "punctuation"

    def _feature(self, text: str) -> np.ndarray:
        counts = Counter(text)
        values = np.array([counts.get(mark, 0) for mark in PUNCTUATION_MARKS], dtype=np.float64)
        if not text:
            return np.full(len(PUNCTUATION_MARKS), np.nan)  # 0 / 0, as NumPy gives in the reference
        return values / len(text)

    def _combine(self, feature_a, feature_b) -> float:
        return stel_cosine(feature_a, feature_b)


class WordLengthSimilarity(_SurfaceSimilarity):
    key = "word_length"

    def _feature(self, text: str) -> float:
        tokens = text.split(" ")
        return sum(len(token) for token in tokens) / len(tokens)

    def _combine(self, feature_a, feature_b) -> float:
        longest = max(feature_a, feature_b)
        if longest == 0:
            return math.nan  # reference: ZeroDivisionError
        return 1.0 - abs(feature_a - feature_b) / longest


class UppercaseSimilarity(_SurfaceSimilarity):
    key = "uppercase"

    def _feature(self, text: str) -> float:
        if not text:
            return math.nan  # reference: ZeroDivisionError
        return sum(1 for char in text if char.isupper()) / len(text)

    def _combine(self, feature_a, feature_b) -> float:
        return 1.0 - abs(feature_a - feature_b)


class LevenshteinSimilarity(_SurfaceSimilarity):
    key = "levenshtein"

    def _combine(self, feature_a, feature_b) -> float:
        if not feature_a and not feature_b:
            return 1.0
        return 1.0 - levenshtein_distance(feature_a, feature_b) / max(len(feature_a), len(feature_b))


STEL_SURFACE = {cls.key: cls for cls in (CharThreeGramSimilarity, PunctuationSimilarity, WordLengthSimilarity,
                                          UppercaseSimilarity, LevenshteinSimilarity)}
