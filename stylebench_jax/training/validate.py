"""Validation of a bi-encoder on held-out pairs: what the trainer tracks and the run report shows.

For each pair: the classifier's same/different prediction (argmax of the logits at evaluation,
i.e. ArcFace without margin), its probability of "same", the cosine of the two L2-normalised
embeddings, and the topic adversary's predictions for both texts. Reported (``validation_metrics``):

- ``balanced_accuracy`` (the checkpoint and early-stopping criterion, seed 003 §4.4), ``accuracy``;
- ``accuracy_same_topic_negatives`` / ``accuracy_different_topic_negatives``: accuracy on negative
  pairs whose two texts share (or do not share) a coarse topic: the topic-shortcut check;
- ``auroc_cosine`` and ``auroc_classifier``: ROC-AUC of the cosine and of P(same);
- ``adversary_accuracy``: topic accuracy of the adversary on texts with a known topic (low is what
  the gradient reversal aims for; compare with the majority-topic rate ``adversary_majority``).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh
from sklearn.metrics import balanced_accuracy_score

from stylebench_jax.metrics import auroc, auroc_eer_batch, bootstrap_replicates, percentile_interval
from stylebench_jax.metrics.roc import binary_inputs
from stylebench_jax.parallel.distributed import fetch, put_global_batch
from stylebench_jax.training.data import PairSet, iterate_batches
from stylebench_jax.training.model import BiEncoder


def _forward(params, batch, *, model: BiEncoder):
    variables = {"params": params}
    z1 = model.apply(variables, batch["ids1"], batch["mask1"], method=BiEncoder.embed)
    z2 = model.apply(variables, batch["ids2"], batch["mask2"], method=BiEncoder.embed)
    logits = model.apply(variables, z1, z2, batch["feats1"], batch["feats2"], method=BiEncoder.classify)
    n1 = z1 / jnp.maximum(jnp.linalg.norm(z1, axis=-1, keepdims=True), 1e-12)
    n2 = z2 / jnp.maximum(jnp.linalg.norm(z2, axis=-1, keepdims=True), 1e-12)
    out = {"logits": logits, "cosine": (n1 * n2).sum(-1)}
    if model.n_topics:
        out["topics1"] = jnp.argmax(model.apply(variables, z1, jnp.float32(1.0), method=BiEncoder.topics), -1)
        out["topics2"] = jnp.argmax(model.apply(variables, z2, jnp.float32(1.0), method=BiEncoder.topics), -1)
    return out


def make_predictor(model: BiEncoder):
    """The jitted per-batch forward of :func:`predict` (make it once per model: it compiles)."""
    return jax.jit(functools.partial(_forward, model=model))


def predict(fn, params, pairs: PairSet, mesh: Mesh, batch_size: int) -> dict[str, np.ndarray]:
    """Per-pair outputs of ``fn`` (:func:`make_predictor`) over ``pairs`` (batches sharded over
    ``data``; padding rows dropped)."""
    n_data = int(mesh.shape["data"])
    size = max(n_data, -(-batch_size // n_data) * n_data)
    parts: dict[str, list] = {}
    for batch in iterate_batches(pairs, size):
        valid = batch["valid"]
        placed = put_global_batch({k: v for k, v in batch.items() if k != "valid"}, mesh)
        out = fetch(fn(params, placed))  # gathered from every process when sharded across them
        for key, value in out.items():
            parts.setdefault(key, []).append(np.asarray(value)[valid])
    return {k: np.concatenate(v) for k, v in parts.items()}


def validation_metrics(outputs: dict[str, np.ndarray], pairs: PairSet) -> dict[str, float]:
    labels = pairs.labels
    logits = outputs["logits"].astype(np.float64)
    predicted = logits.argmax(-1)
    p_same = np.exp(logits[:, 1] - np.logaddexp(logits[:, 0], logits[:, 1]))
    t = pairs.table
    topics1, topics2 = t.topics[pairs.first], t.topics[pairs.second]
    same_topic = (topics1 == topics2) & (topics1 >= 0)
    result = {"n_pairs": int(labels.size), "accuracy": float((predicted == labels).mean()),
              "balanced_accuracy": float(balanced_accuracy_score(labels, predicted))
              if len(set(labels.tolist())) > 1 else float("nan")}
    for name, select in (("same_topic", same_topic), ("different_topic", ~same_topic & (topics1 >= 0))):
        negatives = (labels == 0) & select
        result[f"accuracy_{name}_negatives"] = float((predicted[negatives] == 0).mean()) if negatives.any() \
            else float("nan")
        result[f"n_{name}_negatives"] = int(negatives.sum())
    if len(set(labels.tolist())) > 1:
        result["auroc_cosine"] = auroc(outputs["cosine"], labels)
        result["auroc_classifier"] = auroc(p_same, labels)
    if "topics1" in outputs:
        known = np.concatenate([topics1, topics2])
        guess = np.concatenate([outputs["topics1"], outputs["topics2"]])
        mask = known >= 0
        if mask.any():
            result["adversary_accuracy"] = float((guess[mask] == known[mask]).mean())
            result["adversary_majority"] = float(np.bincount(known[mask]).max() / mask.sum())
    return result


def auroc_with_ci(scores: np.ndarray, labels: np.ndarray, *, seed: int = 0, n_boot: int = 1000) -> dict:
    """ROC-AUC of pair ``scores`` with a 95% percentile interval from a label-stratified bootstrap
    over pairs (the same resampling as the predefined-pairs task)."""
    scores, same = binary_inputs(np.asarray(scores, np.float64), labels)
    reps = bootstrap_replicates(lambda w: auroc_eer_batch(scores, same, w)[0], scores.size, n_boot=n_boot,
                                seed=seed, strata=same)
    low, high = percentile_interval(reps)
    return {"auroc": auroc(scores, same), "ci_low": low, "ci_high": high, "n": int(scores.size)}


def auroc_difference_with_ci(scores: np.ndarray, reference: np.ndarray, labels: np.ndarray, *, seed: int = 0,
                             n_boot: int = 1000) -> dict:
    """ROC-AUC of ``scores`` minus that of ``reference`` on the same pairs, with a 95% percentile
    interval from a *paired* label-stratified bootstrap: each replicate resamples the pairs once and
    scores both on that resample. Both models' errors on a hard pair move together, so this interval
    is the one that says whether one model beats the other; two separate intervals overlapping does
    not say they do not differ."""
    both = np.stack([np.asarray(scores, np.float64), np.asarray(reference, np.float64)])
    _, same = binary_inputs(both[0], labels)

    def gain(weights):
        return auroc_eer_batch(both[0], same, weights)[0] - auroc_eer_batch(both[1], same, weights)[0]

    reps = bootstrap_replicates(gain, same.size, n_boot=n_boot, seed=seed, strata=same)
    low, high = percentile_interval(reps)
    return {"difference": auroc(both[0], same) - auroc(both[1], same), "ci_low": low, "ci_high": high,
            "n": int(same.size)}


def held_out_report(outputs: dict[str, np.ndarray], pairs: PairSet, base_cosine: np.ndarray, *,
                    seed: int = 0) -> dict:
    """The trained model against its untrained base on held-out pairs: cosine ROC-AUC of both with
    bootstrap CIs and their paired difference (``cosine_auroc_gain``, trained - base), the
    classifier's metrics (incl. same-/different-topic negatives) and the adversary's topic accuracy."""
    report = validation_metrics(outputs, pairs)
    report["cosine_auroc_trained"] = auroc_with_ci(outputs["cosine"], pairs.labels, seed=seed)
    report["cosine_auroc_base"] = auroc_with_ci(base_cosine, pairs.labels, seed=seed)
    report["cosine_auroc_gain"] = auroc_difference_with_ci(outputs["cosine"], base_cosine, pairs.labels,
                                                           seed=seed)
    return report
