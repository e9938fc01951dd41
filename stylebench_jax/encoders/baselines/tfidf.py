"""TF-IDF-weighted n-grams (STEB section 4.1 and App. D, "TFIDFgrams").

Three TF-IDF blocks, as STEB's ``TFIDFNGModel``: character 3-5-grams of the lowercased text, token
1-2-grams of spaCy's lowercased tokens, and Universal-POS-tag 1-2-grams; each block keeps its 2,000
most frequent n-grams (``max_features=2000``, ``min_df=1``; the POS block has at most 17 + 17^2) and is
L2-normalised, and the blocks are concatenated. Two differences from STEB, both deliberate:

- Tokens and tags are split on whitespace (``token_pattern=r"\\S+"``), so one-letter words and
  punctuation tokens ("I", "a", "!", "n't") are n-grams too; STEB's default pattern drops them.
- The vectorizers are fitted on the background corpus (``background.py``, a register-diverse sample of
  the shared data) rather than on each evaluation set, so a text's vector does not depend on what it
  is evaluated with, and the ~4,300 sparse columns are projected to ``dim`` dense ones by a seeded
  randomized ``TruncatedSVD`` fitted on the same corpus (memory: dense vectors of every column would
  take 17 kB per text).

spaCy runs with only the tagger and attribute ruler (``text.features.load_pipeline``). Fitting happens on the
first ``embed`` call; ``identity`` needs only the background digest, so cached vectors are reused
without refitting.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from stylebench_jax.encoders.baselines.background import PER_SOURCE, load_background
from stylebench_jax.text.features import SPACY_MODEL, load_pipeline, parse, pipeline_label

MAX_FEATURES = 2000
DEFAULT_DIM = 512


def _token_and_pos_strings(docs) -> tuple[list[str], list[str]]:
    tokens = [" ".join(t.text.lower() for t in doc if not t.is_space) for doc in docs]
    tags = [" ".join(t.pos_ for t in doc if not t.is_space) for doc in docs]
    return tokens, tags


class TfidfNgramEmbedder:
    """``embed(texts) -> [N, dim]`` float32: TF-IDF char/token/POS n-grams, SVD-projected."""

    def __init__(self, data_root: str | Path, *, dim: int = DEFAULT_DIM, seed: int = 0,
                 per_source: int = PER_SOURCE, spacy_model: str = SPACY_MODEL):
        if not 1 <= dim <= 2 * MAX_FEATURES:
            raise ValueError(f"dim must be in 1..{2 * MAX_FEATURES}, got {dim}")
        self._background = load_background(data_root, per_source=per_source, seed=seed)
        self._dim = dim
        self._seed = seed
        self._spacy_model = spacy_model
        self._nlp = None
        self._blocks = None
        self._svd = None

    @property
    def name(self) -> str:
        return "baseline:tfidf"

    @property
    def identity(self) -> str:
        import sklearn

        return (f"tfidf:v1:char3-5+tok1-2+pos1-2:maxf{MAX_FEATURES}:svd{self._dim}:seed{self._seed}:"
                f"spacy={pipeline_label(self._spacy_model)}:sklearn={sklearn.__version__}:"
                f"background={self._background.digest[:16]}")

    @property
    def dim(self) -> int:
        return self._dim

    def _vectorizers(self):
        from sklearn.feature_extraction.text import TfidfVectorizer

        common = dict(min_df=1, norm="l2", max_features=MAX_FEATURES, dtype=np.float32)
        return (TfidfVectorizer(analyzer="char", ngram_range=(3, 5), lowercase=True, **common),
                TfidfVectorizer(analyzer="word", ngram_range=(1, 2), lowercase=False,
                                token_pattern=r"\S+", **common),
                TfidfVectorizer(analyzer="word", ngram_range=(1, 2), lowercase=False,
                                token_pattern=r"\S+", **common))

    def _sparse(self, texts: list[str], fit: bool):
        import scipy.sparse

        tokens, tags = _token_and_pos_strings(parse(texts, self._nlp))
        inputs = (texts, tokens, tags)
        if fit:
            return scipy.sparse.hstack([block.fit_transform(x) for block, x in zip(self._blocks, inputs)],
                                       format="csr")
        return scipy.sparse.hstack([block.transform(x) for block, x in zip(self._blocks, inputs)],
                                   format="csr")

    def fit(self) -> TfidfNgramEmbedder:
        """Fit the three vectorizers (and the SVD) on the background corpus; idempotent."""
        if self._blocks is not None:
            return self
        from sklearn.decomposition import TruncatedSVD

        self._nlp = load_pipeline(self._spacy_model, lemmas=False, sentences=False)
        self._blocks = self._vectorizers()
        matrix = self._sparse(list(self._background.texts), fit=True)
        if min(matrix.shape) <= self._dim:
            raise ValueError(f"background corpus gives a {matrix.shape[0]} x {matrix.shape[1]} TF-IDF "
                             f"matrix, too small for dim={self._dim}")
        self._svd = TruncatedSVD(n_components=self._dim, algorithm="randomized",
                                 random_state=self._seed).fit(matrix)
        return self

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``[len(texts), dim]`` float32; texts are independent of each other (no refitting)."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self.fit()
        return self._svd.transform(self._sparse(texts, fit=False)).astype(np.float32)
