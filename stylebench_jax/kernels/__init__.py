"""Jitted, sharded similarity kernels: exact blocked top-k, streaming all-pairs AUROC/EER,
hard-negative mining. Host arrays in, NumPy results out; see each module's docstring. The C++
kernels for XLA:CPU (``native`` builds them; ``cpu_topk``: the float32 top-k scan,
``cpu_attention``: the encoder's fused attention, imported where used) run through ``jax.ffi``."""

from stylebench_jax.kernels.mining import group_centroids, item_hard_negatives, nearest_groups
from stylebench_jax.kernels.npy_rows import NpyRows
from stylebench_jax.kernels.pair_scores import (
    PairsRoc,
    all_pairs_auroc_eer,
    pair_cosine_scores,
    pairs_auroc_eer,
)
from stylebench_jax.kernels.scan import ShardedPool, shard_pool
from stylebench_jax.kernels.topk import NonFiniteRowError, TopK, topk_cosine

__all__ = [
    "NonFiniteRowError",
    "NpyRows",
    "PairsRoc",
    "ShardedPool",
    "TopK",
    "all_pairs_auroc_eer",
    "group_centroids",
    "item_hard_negatives",
    "nearest_groups",
    "pair_cosine_scores",
    "pairs_auroc_eer",
    "shard_pool",
    "topk_cosine",
]
