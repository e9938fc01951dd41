"""Losses of the Writing7 bi-encoder (seed 003 §4.3): L = CE + alpha CL + lambda ADV + beta KD.

All functions are pure ``jax.numpy`` and work on one device's share of a global batch: each returns
``(sum of per-item losses, number of items)`` so the caller can normalise by the *global* count
(``lax.psum`` over ``data``) and get exactly the same value and gradients on 1 or 8 devices.

Contrastive layout. A batch of ``B`` pairs has ``2B`` texts; the candidate matrix of the global
batch is ``Z = [z1 (B rows, text1 of every pair, device order); z2 (B rows, text2)]`` (L2-normalised
embeddings), with ``groups [2B]`` (book or author ids) in the same order. An anchor is a row of the
local shard; ``anchor_index`` gives its row in ``Z`` (so it is not its own candidate). Rows whose text
is in the batch under two groups (:func:`contradicted_texts`) are masked by the caller as anchors,
queries and candidates.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

NEG = -1e9  # logit of a masked candidate (finite, so masked rows cannot produce NaN)


def balanced_class_weights(labels: np.ndarray, *, enabled: bool = True) -> tuple[float, float]:
    """``N / (2 N_c)`` per class (scikit-learn's "balanced"); 1 for an absent class, and for both
    unless ``enabled`` (``loss.class_weights``)."""
    if not enabled:
        return 1.0, 1.0
    labels = np.asarray(labels, np.int64)
    counts = np.bincount(labels, minlength=2).astype(np.float64)
    return tuple(float(labels.size / (2 * c)) if c else 1.0 for c in counts)


def weighted_cross_entropy(logits: jax.Array, labels: jax.Array, valid: jax.Array, *,
                           class_weights: jax.Array | None = None,
                           label_smoothing: float = 0.0) -> tuple[jax.Array, jax.Array]:
    """Class-weighted cross-entropy with label smoothing, PyTorch's ``CrossEntropyLoss(weight=w,
    label_smoothing=eps)`` (mean reduction) as a ``(sum, count)`` pair.

    ``logits [N, C]``, ``labels [N]`` int, ``valid [N]`` 0/1 mask (padding, unknown labels),
    ``class_weights [C]`` (default all 1). With ``w_i = w[y_i] valid_i``::

        sum   = (1 - eps) sum_i w_i (-log p_i[y_i]) + eps / C sum_i valid_i sum_c w[c] (-log p_i[c])
        count = sum_i w_i

    and ``sum / count`` is PyTorch's value: its smoothing term weights each class's log-probability by
    that class's own weight (not the item's), and both terms are divided by the weights of the targets.
    """
    n_classes = logits.shape[-1]
    logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    w = jnp.ones((n_classes,), jnp.float32) if class_weights is None else class_weights.astype(jnp.float32)
    valid = valid.astype(jnp.float32)
    item_weights = w[labels] * valid
    nll = -jnp.take_along_axis(logp, labels[:, None], axis=-1)[:, 0]
    smooth = -(logp * w[None, :]).sum(-1)
    total = ((1.0 - label_smoothing) * item_weights * nll).sum() \
        + label_smoothing / n_classes * (valid * smooth).sum()
    return total, item_weights.sum()


def contradicted_texts(text_codes: jax.Array, groups: jax.Array) -> jax.Array:
    """``[M]`` bool: the rows whose text appears in these ``M`` rows under more than one group.

    A passage found in two books (or a text listed under two authors) is one text with two groups; in
    one batch it would be its own negative, a target no encoder can meet (cosine 1 to itself), so
    both copies take no part in that batch's contrastive loss. ``text_codes [M]`` equal for equal
    texts, ``groups [M]``. O(M log M): rows sorted by text, a text's group range per segment."""
    m = text_codes.shape[0]
    order = jnp.argsort(text_codes, stable=True)
    codes, codes_groups = text_codes[order], groups[order]
    starts = jnp.concatenate([jnp.ones((1,), bool), codes[1:] != codes[:-1]])
    segment = jnp.cumsum(starts) - 1
    low = jax.ops.segment_min(codes_groups, segment, num_segments=m)
    high = jax.ops.segment_max(codes_groups, segment, num_segments=m)
    return jnp.zeros((m,), bool).at[order].set((low != high)[segment])


def supcon(anchors: jax.Array, anchor_groups: jax.Array, anchor_index: jax.Array, candidates: jax.Array,
           candidate_groups: jax.Array, temperature: jax.Array, *,
           anchor_valid: jax.Array | None = None,
           candidate_valid: jax.Array | None = None) -> tuple[jax.Array, jax.Array]:
    """Supervised contrastive loss (Khosla et al. 2020, "L_out"), anchors against the global batch.

    For anchor ``i`` with positives ``P(i)`` (candidates of its group other than itself) and
    candidates ``A(i)`` (every candidate but itself)::

        l_i = -1/|P(i)| sum_{p in P(i)} log( exp(z_i.z_p / t) / sum_{a in A(i)} exp(z_i.z_a / t) )

    Items of the anchor's group are positives, never negatives. Anchors without a positive do not
    count: the loss is their mean over the anchors that have one (Eq. 2 of Khosla et al. 2020). The
    authors' reference ``SupConLoss`` (SupContrast) counts such anchors as 0 in a mean over all
    anchors and scales by ``t / base_t`` (equal at t = 0.07); in pairs mode, where the texts of a
    negative pair often have no positive in the batch, ours weighs the term more.
    ``anchors [n, D]``, ``candidates [M, D]`` L2-normalised; ``anchor_index [n]`` row of each
    anchor in the candidates; ``*_valid`` mask padding. Returns ``(sum_i l_i, #anchors counted)``;
    a batch with no positive pair gives ``(0, 0)``, not NaN.
    """
    n, m = anchors.shape[0], candidates.shape[0]
    anchor_valid = jnp.ones((n,), bool) if anchor_valid is None else anchor_valid
    candidate_valid = jnp.ones((m,), bool) if candidate_valid is None else candidate_valid
    logits = (anchors @ candidates.T).astype(jnp.float32) / temperature
    not_self = jnp.arange(m)[None, :] != anchor_index[:, None]
    allowed = not_self & candidate_valid[None, :]
    positive = allowed & (anchor_groups[:, None] == candidate_groups[None, :])
    logits = jnp.where(allowed, logits, NEG)
    log_prob = logits - jax.nn.logsumexp(logits, axis=1, keepdims=True)
    n_pos = positive.sum(1)
    counted = anchor_valid & (n_pos > 0)
    per_anchor = -jnp.where(positive, log_prob, 0.0).sum(1) / jnp.maximum(n_pos, 1)
    return jnp.where(counted, per_anchor, 0.0).sum(), counted.sum().astype(jnp.float32)


def info_nce(queries: jax.Array, query_groups: jax.Array, query_index: jax.Array, keys: jax.Array,
             key_groups: jax.Array, temperature: jax.Array, *, query_valid: jax.Array,
             key_valid: jax.Array | None = None) -> tuple[jax.Array, jax.Array]:
    """One direction of in-batch InfoNCE (van den Oord et al. 2018; sentence-transformers'
    ``MultipleNegativesRankingLoss``): query ``i`` must pick key ``query_index[i]`` among all keys.

    Other keys of the query's group are masked (neither positive nor negative). ``query_valid``
    selects the queries that have a positive key (e.g. positive pairs). Returns ``(sum of
    -log softmax at the positive, #queries)``.
    """
    m = keys.shape[0]
    key_valid = jnp.ones((m,), bool) if key_valid is None else key_valid
    logits = (queries @ keys.T).astype(jnp.float32) / temperature
    target = jnp.arange(m)[None, :] == query_index[:, None]
    same_group = query_groups[:, None] == key_groups[None, :]
    allowed = key_valid[None, :] & (target | ~same_group)
    logits = jnp.where(allowed, logits, NEG)
    loss = -(jnp.where(target, logits, 0.0).sum(1) - jax.nn.logsumexp(logits, axis=1))
    return jnp.where(query_valid, loss, 0.0).sum(), query_valid.sum().astype(jnp.float32)


def distillation_kl(student_logits: jax.Array, teacher_logits: jax.Array, weights: jax.Array, *,
                    temperature: float = 4.0) -> tuple[jax.Array, jax.Array]:
    """Hinton et al. (2015) distillation: ``T^2 KL(softmax(teacher/T) || softmax(student/T))`` per
    item. Returns ``(sum_i w_i KL_i, sum_i w_i)``. The ``T^2`` factor (keeps the soft targets'
    gradients at the hard loss's scale) is Hinton's, not in the seed's §4.3 ("beta = 0.1 KL, tau = 4"):
    the KL's effective weight is ``beta T^2 = 1.6``. The student logits are the classifier's training
    logits (ArcFace's with its margin on the target class)."""
    t = temperature
    p_teacher = jax.nn.softmax(teacher_logits.astype(jnp.float32) / t, axis=-1)
    log_student = jax.nn.log_softmax(student_logits.astype(jnp.float32) / t, axis=-1)
    kl = (p_teacher * (jnp.log(jnp.clip(p_teacher, 1e-12)) - log_student)).sum(-1) * t * t
    return (weights * kl).sum(), weights.sum()


@jax.custom_vjp
def gradient_reversal(x: jax.Array, scale: jax.Array) -> jax.Array:
    """Identity forward; backward multiplies the gradient by ``-scale`` (Ganin & Lempitsky 2015)."""
    return x


def _grl_fwd(x, scale):
    return x, scale


def _grl_bwd(scale, g):
    return (-scale * g, jnp.zeros_like(scale))


gradient_reversal.defvjp(_grl_fwd, _grl_bwd)
