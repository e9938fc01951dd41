"""Clustering protocol (STEB §3.1, following MTEB): k-means the embeddings, score against labels.

``MiniBatchKMeans(n_clusters = number of distinct labels, batch_size = 32, random_state = seed,
n_init = 1)`` on the embeddings as the embedder returns them, in float32: STEB's
``calculate_clustering_metrics`` (steb/metrics.py) fits the model's outputs, not normalised (its
``l2_normalize`` is not called there), as MTEB does; a model with a Normalize module (MiniLM) gives
unit vectors either way, while STEB-mode encoders (``--long-text steb``) and feature baselines keep
their lengths. ``n_init = 1`` is what STEB's and MTEB's ``n_init="auto"`` resolves to for k-means++
initialisation; we spell it out so a scikit-learn default change cannot move the numbers. The seed
is the run's (``--seed``, default 0) where STEB fixes ``random_state=42``. Reported: V-measure
(primary, STEB) and AMI.

Confidence intervals: bootstrap over *instances with the cluster assignment held fixed* (resample
texts with replacement, recompute the metric from the resampled (label, cluster) pairs). This
measures how much the score depends on which texts were sampled; it does not re-run k-means per
replicate (1000 k-means fits would dominate the run time), so variation due to the k-means seed is
not included. The interval is ``metrics.centred_interval`` (the replicates' spread around their own
mean, placed at the reported value; clipped to V-measure's range [0, 1] and AMI's maximum 1), not
the plain percentile interval: resampling duplicates texts, duplicates always share a cluster, so
V-measure and AMI replicates are biased upwards, often by more than their spread (simulation
numbers in ``centred_interval``'s docstring). V-measure replicates are computed from weighted
contingency tables in one vectorised pass; AMI needs its expected-MI term per replicate (~10 ms
each at N = 10^4), so its interval uses the first ``min(n_boot, AMI_MAX_BOOT)`` replicates of the
same resampling stream.

k-means and the AMI replicates run single-threaded (``threadpoolctl``): on this 2-core machine
under load, MiniBatchKMeans on 11,000 x 384 took 15 s with 2 OpenMP threads and 0.5 s with one,
with identical assignments.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse
from sklearn.cluster import MiniBatchKMeans
from threadpoolctl import threadpool_limits

from stylebench_jax.data.units import LabelledTexts
from stylebench_jax.metrics import (
    adjusted_mutual_info,
    bootstrap_replicates,
    centred_interval,
    v_measure,
    v_measure_from_contingency,
)
from stylebench_jax.metrics.labels import encode_labels
from stylebench_jax.tasks.base import Score, TaskContext, TextScorer, TooFewInstances

KMEANS_BATCH_SIZE = 32
AMI_MAX_BOOT = 200


def _encode_labels(labels: Sequence) -> tuple[np.ndarray, int]:
    (codes,) = encode_labels(labels)
    return codes, int(codes.max()) + 1 if codes.size else 0


def kmeans_assign(embeddings: np.ndarray, n_clusters: int, *, seed: int = 0) -> np.ndarray:
    """Cluster ids ``[N]`` int64 from ``MiniBatchKMeans`` as in the module docstring.

    ``embeddings``: ``[N, D]`` float, as the embedder returns them (fitted in float32, as STEB's
    arrays are).
    """
    model = MiniBatchKMeans(n_clusters=n_clusters, batch_size=KMEANS_BATCH_SIZE, random_state=seed,
                            n_init=1)
    with threadpool_limits(limits=1):
        return model.fit_predict(np.asarray(embeddings, dtype=np.float32)).astype(np.int64)


def cluster_scores(labels: Sequence, clusters: Sequence, *, seed: int = 0, n_boot: int = 1000) -> list[Score]:
    """V-measure and AMI of a fixed assignment with instance-bootstrap CIs (module docstring).

    ``labels``, ``clusters``: ``[N]``. Returns ``[Score("v_measure"), Score("ami")]``.
    """
    codes, n_labels = _encode_labels(labels)
    cluster_codes, n_clusters = _encode_labels(clusters)
    n = codes.size
    if cluster_codes.size != n:
        raise ValueError(f"{n} labels but {cluster_codes.size} cluster ids")
    cell = codes * n_clusters + cluster_codes
    onehot = scipy.sparse.csr_matrix((np.ones(n), (np.arange(n), cell)), shape=(n, n_labels * n_clusters))

    def v_stat(weights: np.ndarray) -> np.ndarray:
        tables = np.asarray(onehot.T.dot(weights.T).T).reshape(-1, n_labels, n_clusters)
        return v_measure_from_contingency(tables)

    v_reps = bootstrap_replicates(v_stat, n, n_boot=n_boot, seed=seed)

    def ami_stat(weights: np.ndarray) -> np.ndarray:
        out = np.empty(weights.shape[0])
        for row, w in enumerate(weights):
            idx = np.repeat(np.arange(n), w.astype(np.int64))
            out[row] = adjusted_mutual_info(codes[idx], cluster_codes[idx])
        return out

    with threadpool_limits(limits=1):
        ami_reps = bootstrap_replicates(ami_stat, n, n_boot=min(n_boot, AMI_MAX_BOOT), seed=seed)
    v, ami = v_measure(codes, cluster_codes), adjusted_mutual_info(codes, cluster_codes)
    v_low, v_high = np.clip(centred_interval(v_reps, v), 0.0, 1.0)  # V-measure lies in [0, 1]
    ami_low, ami_high = np.minimum(centred_interval(ami_reps, ami), 1.0)  # AMI <= 1, may be negative
    return [Score("v_measure", v, float(v_low), float(v_high), n),
            Score("ami", ami, float(ami_low), float(ami_high), n)]


def cluster_embeddings(embeddings: np.ndarray, labels: Sequence, *, seed: int = 0,
                       n_boot: int = 1000) -> list[Score]:
    """Clustering protocol on precomputed ``[N, D]`` L2-normalised embeddings; see module docstring."""
    embeddings = np.asarray(embeddings)
    codes, n_labels = _encode_labels(labels)
    if embeddings.ndim != 2 or embeddings.shape[0] != codes.size:
        raise ValueError(f"embeddings {embeddings.shape} do not match {codes.size} labels")
    if n_labels < 2:
        raise TooFewInstances(f"clustering needs at least 2 distinct labels, got {n_labels}")
    if codes.size <= n_labels:
        raise TooFewInstances(f"clustering {codes.size} texts into {n_labels} clusters needs more texts "
                         f"than labels")
    clusters = kmeans_assign(embeddings, n_labels, seed=seed)
    return cluster_scores(codes, clusters, seed=seed, n_boot=n_boot)


def evaluate_clustering(scorer: TextScorer, texts: Sequence[str], labels: Sequence, *, seed: int = 0,
                        n_boot: int = 1000) -> list[Score]:
    """STEB clustering: ``[Score("v_measure"), Score("ami")]`` (first = primary).

    ``texts [N]``, ``labels [N]`` (any hashable; k = number of distinct labels). Needs vectors:
    raises ``NotApplicable`` for similarity-only scorers (via ``scorer.embed``).
    """
    if len(texts) != len(labels):
        raise ValueError(f"{len(texts)} texts but {len(labels)} labels")
    return cluster_embeddings(scorer.embed_raw(texts), labels, seed=seed, n_boot=n_boot)


def run_clustering(scorer: TextScorer, payload: LabelledTexts, context: TaskContext, *, seed: int,
                   n_boot: int) -> list[Score]:
    """Task-table runner (``tasks.registry``) of :func:`evaluate_clustering`."""
    return evaluate_clustering(scorer, payload.texts, payload.labels, seed=seed, n_boot=n_boot)
