"""What every task protocol shares: the scorer it evaluates and the shape of its results.

A task never calls an encoder directly. It receives a ``TextScorer``, which wraps either an
``Embedder`` (vectors; similarity = cosine) or a ``PairSimilarity`` (only pairwise scores), and
routes embedding through the shared cache. Tasks that need vectors (clustering, probing) check
``scorer.has_vectors`` and raise ``NotApplicable`` otherwise.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from stylebench_jax.encoders.base import Embedder, EmbedFn, PairSimilarity, embed_direct
from stylebench_jax.text.features import LinguisticFeatureCache


class NotApplicable(Exception):
    """This scorer cannot run this task (e.g. clustering with a similarity-only baseline)."""


class TooFewInstances(ValueError):
    """The payload is too small or too uniform for the task's protocol (fewer texts than clusters, no
    pair of one label, ...): a property of the data, which ``stylebench eval`` reports as one line
    naming the cell, not as a traceback."""


class ModelOutputError(ValueError):
    """The model returned NaN or infinity vectors (a broken checkpoint, an overflow in half precision):
    ``stylebench eval`` reports it as one line naming the cell and the text."""


def _check_finite(values: np.ndarray, what: str, name: str) -> np.ndarray:
    """``values`` unchanged, or ``ModelOutputError`` naming the first row (text) that is not finite;
    caught here, a NaN vector would sort as the lowest score in one metric and the highest in
    another. (Similarity-only scorers may return NaN: STEL's baselines do, and its tasks count it as
    a tie.)"""
    bad = ~np.isfinite(values)
    if bad.any():
        row = int(np.flatnonzero(bad.reshape(len(values), -1).any(axis=1))[0])
        raise ModelOutputError(f"{name} returned NaN or infinity for {what} {row}")
    return values


def _preview(text: str, limit: int = 40) -> str:
    """``text`` quoted and cut to ``limit`` characters, for an error message."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


@dataclasses.dataclass(frozen=True)
class Score:
    """One reported number: point estimate, 95% bootstrap interval, and the instance count."""

    metric: str
    value: float
    ci_low: float
    ci_high: float
    n: int


@dataclasses.dataclass
class TaskContext:
    """What the cells of one run share, passed explicitly to every task runner.

    ``mesh``: the run's device mesh (``jax.sharding.Mesh``) for the kernels (``None``: their
    default, every device on ``data``). ``features``: the probing targets (spaCy linguistic
    features), computed once per text list for all models.
    """

    mesh: Any = None
    features: LinguisticFeatureCache = dataclasses.field(default_factory=LinguisticFeatureCache)


class TextScorer:
    """Uniform access to an Embedder or a PairSimilarity for task code.

    ``embed_fn`` is how vectors are obtained (the CLI passes the embedding cache's lookup);
    default is a direct ``embedder.embed``.
    """

    def __init__(self, model: Embedder | PairSimilarity, embed_fn: EmbedFn | None = None):
        self.model = model
        self._embed_fn = embed_fn or embed_direct
        self.has_vectors = isinstance(model, Embedder)

    @property
    def name(self) -> str:
        return self.model.name

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``[N, D]`` float32, L2-normalised rows (zero rows stay zero)."""
        return self.unit_rows(self.embed_raw(texts))

    @staticmethod
    def unit_rows(vectors: np.ndarray) -> np.ndarray:
        """``vectors [N, D]`` with L2-normalised rows (zero rows stay zero): :meth:`embed` of vectors
        already obtained with :meth:`embed_raw` (a protocol that needs both embeds once)."""
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms > 0, norms, 1.0)

    def embed_raw(self, texts: Sequence[str]) -> np.ndarray:
        """``[N, D]`` float32 as the embedder returns them (not normalised here): for protocols that
        average vectors before normalising, as STEB's episodes do."""
        if not self.has_vectors:
            raise NotApplicable(f"{self.name} gives only pairwise similarities, not vectors")
        return _check_finite(np.asarray(self._embed_fn(self.model, texts), dtype=np.float32), "text",
                             self.name)

    def similarity(self, a: Sequence[str], b: Sequence[str], *, nan_is_tie: bool = False) -> np.ndarray:
        """``[len(a)]`` float64 similarity of ``a[i]`` and ``b[i]`` (cosine for embedders).

        A similarity-only scorer may return NaN where its feature is undefined (STEL's punctuation
        and uppercase baselines on an empty text: 0 / 0). STEL's protocol counts it as a tie
        (``nan_is_tie=True``, order alignment); every other task would rank it arbitrarily, so
        there it is ``ModelOutputError`` naming the pair."""
        if len(a) != len(b):
            raise ValueError(f"similarity needs equal-length lists, got {len(a)} and {len(b)}")
        if not self.has_vectors:
            values = np.asarray(self.model.similarity(list(a), list(b)), dtype=np.float64)
            bad = np.isinf(values) if nan_is_tie else ~np.isfinite(values)
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                raise ModelOutputError(f"{self.name} returned {values[row]} for pair {row} "
                                       f"({_preview(a[row])} / {_preview(b[row])})")
            return values
        unique = list(dict.fromkeys(list(a) + list(b)))
        index = {text: i for i, text in enumerate(unique)}
        vectors = self.embed(unique).astype(np.float64)
        ia = np.fromiter((index[t] for t in a), dtype=np.int64, count=len(a))
        ib = np.fromiter((index[t] for t in b), dtype=np.int64, count=len(b))
        return np.einsum("nd,nd->n", vectors[ia], vectors[ib])
