"""The Writing7 siamese bi-encoder (seed 003 §4.1-4.2) in Flax, on the existing BERT-family encoder.

``BiEncoder`` holds, under one parameter tree:

- ``embedder``: ``encoders.pooling.SentenceEncoder`` (the shared-weight encoder, pooling: attention
  by default, ``softmax(w^T tanh(W h_i))``, or mean / CLS; optional projection head Dense -> GELU ->
  LayerNorm). Its subtree is exactly what ``encoders.export`` writes, so the trained encoder is
  exported as an ordinary model directory.
- ``head``: the pair classifier on symmetric pair features
  ``[h1 + h2, |h1 - h2|, h1 * h2, f1 + f2, |f1 - f2|]`` (``h``: embeddings, ``f``: the three
  standardised style features). The seed's ``[h1, h2, ...]`` is not symmetric in the order of the
  two texts; replacing ``[h1, h2]`` by their sum (as the issue allows) makes every term symmetric in
  IEEE arithmetic (``a + b == b + a``, ``|a - b| == |b - a|``, ``a * b == b * a``), so
  ``score(a, b) == score(b, a)`` holds exactly, not just approximately. Either an MLP (2 layers,
  ReLU, dropout 0.1) or ArcFace (Deng et al. 2019; margin 0.2, scale 30): the features are projected
  to the embedding width, L2-normalised and compared by cosine with one normalised weight vector per
  class; during training the target class's logit is ``s cos(theta + m)`` (InsightFace's form, with
  its ``cos(theta) - m sin(m)`` fallback past ``theta > pi - m``), at evaluation ``s cos(theta)``.
- ``adversary``: topic classifier (5 coarse topics) behind a gradient-reversal layer
  (``losses.gradient_reversal``), on each text's embedding.
- ``log_temperature``: the learnable contrastive temperature, ``t = exp(log_temperature)``, kept in
  [0.01, 1] by clamping the parameter after each update (initial 0.07, as SupCon).
"""

from __future__ import annotations

import math

import flax.linen as nn
import jax
import jax.numpy as jnp
from jax.sharding import Mesh

from stylebench_jax.encoders.config import EncoderConfig
from stylebench_jax.encoders.dropout import Dropout
from stylebench_jax.encoders.pooling import SentenceEncoder
from stylebench_jax.training.losses import gradient_reversal

CLASSIFIERS = ("arcface", "mlp")
MIN_TEMPERATURE, MAX_TEMPERATURE = 0.01, 1.0


def clamp_temperature(params: dict) -> dict:
    """``params`` with ``log_temperature`` clipped to ``[log MIN_TEMPERATURE, log MAX_TEMPERATURE]``
    (applied after each optimiser update)."""
    bounded = jnp.clip(params["log_temperature"], math.log(MIN_TEMPERATURE), math.log(MAX_TEMPERATURE))
    return {**params, "log_temperature": bounded}


def _dense(features: int, axes: tuple, name: str) -> nn.Dense:
    return nn.Dense(features, name=name,
                    kernel_init=nn.with_logical_partitioning(nn.initializers.normal(0.02), axes),
                    bias_init=nn.with_logical_partitioning(nn.initializers.zeros_init(), axes[-1:]))


def pair_features(h1: jax.Array, h2: jax.Array, f1: jax.Array | None, f2: jax.Array | None) -> jax.Array:
    """Symmetric pair features ``[B, 3H (+6)]`` (module docstring)."""
    parts = [h1 + h2, jnp.abs(h1 - h2), h1 * h2]
    if f1 is not None:
        parts += [f1 + f2, jnp.abs(f1 - f2)]
    return jnp.concatenate(parts, axis=-1)


class ArcFace(nn.Module):
    """``x [B, F]`` -> logits ``[B, 2]``: projection to ``width``, cosine with class centres. No
    dropout of its own (the MLP head has it; the seed's §4.4 puts 0.1 in the classification heads)."""

    width: int
    margin: float = 0.2
    scale: float = 30.0

    @nn.compact
    def __call__(self, x, labels=None):
        z = _dense(self.width, ("mlp", "embed"), "project")(x)
        z = z / jnp.maximum(jnp.linalg.norm(z, axis=-1, keepdims=True), 1e-12)
        centres = self.param("centres", nn.with_logical_partitioning(nn.initializers.normal(0.02),
                                                                     (None, "embed")), (2, self.width))
        centres = centres / jnp.maximum(jnp.linalg.norm(centres, axis=-1, keepdims=True), 1e-12)
        cos = jnp.clip(z @ centres.T, -1.0, 1.0)
        if labels is None:
            return self.scale * cos
        # floor 1e-12: at cos = +-1 the square root's derivative is infinite and a NaN gradient
        # would reach every parameter (the forward moves by at most 1e-6 * sin(m))
        sin = jnp.sqrt(jnp.clip(1.0 - cos * cos, 1e-12, 1.0))
        phi = cos * math.cos(self.margin) - sin * math.sin(self.margin)
        fallback = cos - math.sin(math.pi - self.margin) * self.margin
        phi = jnp.where(cos > math.cos(math.pi - self.margin), phi, fallback)
        target = jax.nn.one_hot(labels, 2, dtype=bool)
        return self.scale * jnp.where(target, phi, cos)


class MLPClassifier(nn.Module):
    """Two layers with ReLU and dropout -> logits ``[B, 2]``."""

    width: int
    dropout_rate: float = 0.1

    @nn.compact
    def __call__(self, x, deterministic: bool = True):
        x = nn.relu(_dense(self.width, ("mlp", "embed"), "hidden")(x))
        x = Dropout(self.dropout_rate)(x, deterministic=deterministic)
        return _dense(2, ("embed", None), "out")(x)


class TopicAdversary(nn.Module):
    """Gradient reversal, then Dense -> ReLU -> Dense: topic logits ``[N, n_topics]``."""

    n_topics: int
    width: int

    @nn.compact
    def __call__(self, h, scale):
        h = gradient_reversal(h, scale)
        h = nn.relu(_dense(self.width, ("embed", "mlp"), "hidden")(h))
        return _dense(self.n_topics, ("mlp", None), "out")(h)


class BiEncoder(nn.Module):
    """See the module docstring. ``embed`` -> raw embeddings (not normalised); ``classify``,
    ``topics`` and ``temperature`` act on them."""

    config: EncoderConfig
    pooling: str = "attention"
    projection_dim: int | None = None
    classifier: str = "arcface"
    arcface_margin: float = 0.2
    arcface_scale: float = 30.0
    use_style_features: bool = True
    n_topics: int = 5
    dropout_rate: float = 0.1
    head_dropout: float = 0.1
    remat: bool = False
    dtype: jnp.dtype = jnp.float32
    fused_attention: Mesh | str | None = None  # encoders.bert: the C++ CPU attention kernels
    attention_dropout: float = 0.0  # encoders.bert: dropout of the attention probabilities

    def setup(self):
        if self.classifier not in CLASSIFIERS:
            raise ValueError(f"classifier: expected one of {', '.join(CLASSIFIERS)}, "
                             f"found {self.classifier!r}")
        self.embedder = SentenceEncoder(self.config, pooling=self.pooling, normalize=False,
                                        projection_dim=self.projection_dim,
                                        dropout_rate=self.dropout_rate, remat=self.remat, dtype=self.dtype,
                                        fused_attention=self.fused_attention,
                                        attention_dropout_rate=self.attention_dropout)
        width = self.projection_dim or self.config.hidden_size
        if self.classifier == "arcface":
            self.head = ArcFace(width, self.arcface_margin, self.arcface_scale)
        else:
            self.head = MLPClassifier(width, self.head_dropout)
        if self.n_topics:
            self.adversary = TopicAdversary(self.n_topics, max(width // 2, 8))
        self.log_temperature = self.param("log_temperature", nn.initializers.constant(math.log(0.07)), ())

    def embed(self, input_ids, attention_mask, deterministic: bool = True):
        return self.embedder(input_ids, attention_mask, deterministic=deterministic)

    def classify(self, h1, h2, f1=None, f2=None, labels=None, deterministic: bool = True):
        x = pair_features(h1, h2, f1 if self.use_style_features else None,
                          f2 if self.use_style_features else None)
        if self.classifier == "arcface":
            return self.head(x, labels if not deterministic else None)
        return self.head(x, deterministic=deterministic)

    def topics(self, h, scale):
        return self.adversary(h, scale)

    def temperature(self):
        """``exp(log_temperature)``; the train step keeps ``log_temperature`` in its bounds by clamping
        the parameter after each update (:func:`clamp_temperature`), as CLIP: a clip here would have
        zero gradient past a bound, and the optimiser's momentum could leave it there for good."""
        return jnp.exp(self.log_temperature)

    def __call__(self, input_ids, attention_mask, deterministic: bool = True):
        """Touches every part once (for ``init``): embeds the batch as text1 and text2 of pairs."""
        h = self.embed(input_ids, attention_mask, deterministic)
        f = jnp.zeros((h.shape[0], 3), h.dtype)
        logits = self.classify(h, h, f, f, deterministic=deterministic)
        topics = self.topics(h, jnp.float32(1.0)) if self.n_topics else None
        return h, logits, topics, self.temperature()
