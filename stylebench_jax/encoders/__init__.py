"""Embedders: the protocol, the Flax BERT-family encoder, weight loading and the name registry."""

from stylebench_jax.encoders.base import Embedder, PairSimilarity

__all__ = ["Embedder", "PairSimilarity"]
