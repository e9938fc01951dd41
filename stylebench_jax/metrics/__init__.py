"""NumPy metric functions; each docstring gives its formula and reference. Imports nothing of ours."""

from stylebench_jax.metrics.bootstrap import (
    bootstrap_ci,
    bootstrap_replicates,
    bootstrap_weights,
    centred_interval,
    percentile_interval,
)
from stylebench_jax.metrics.calibration import (
    ECE_BINS,
    adversary_accuracy,
    balanced_accuracy,
    brier,
    calibration_metrics,
    classification_metrics,
    cross_topic_consistency,
    ece,
    pr_auc,
    reliability_bins,
    topic_sliced_negatives,
)
from stylebench_jax.metrics.classification import accuracy, auroc, auroc_eer_batch, equal_error_rate
from stylebench_jax.metrics.clustering import adjusted_mutual_info, v_measure, v_measure_from_contingency
from stylebench_jax.metrics.pan import (
    calibrate_two_thresholds,
    pan_metrics,
    rescale_two_thresholds,
    two_threshold_grid,
)
from stylebench_jax.metrics.ranking import (
    DEFAULT_KS,
    order_hits,
    per_query_from_hits,
    ranking_metrics,
    ranking_metrics_topk,
    ranking_per_query,
    topk_ties_unresolved,
)
from stylebench_jax.metrics.retrieval import (
    SUCCESS_KS,
    hits_at_k,
    mean_reciprocal_rank,
    mean_reciprocal_rank_steb,
    recall_at_k,
    reciprocal_ranks_first,
    relevant_ranks,
    steb_reciprocal_ranks,
    success_at_k,
)
from stylebench_jax.metrics.roc import RocResult, auroc_eer, eer_from_curve, roc_from_counts
from stylebench_jax.metrics.verification import EER_METHODS, eer, eer_threshold, eer_threshold_batch


def __getattr__(name: str):
    if name == "RECALL_KS":  # deprecated alias, warns (see metrics.retrieval)
        from stylebench_jax.metrics import retrieval

        return retrieval.__getattr__(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_KS",
    "ECE_BINS",
    "EER_METHODS",
    "RocResult",
    "SUCCESS_KS",
    "accuracy",
    "adversary_accuracy",
    "adjusted_mutual_info",
    "auroc",
    "auroc_eer",
    "auroc_eer_batch",
    "balanced_accuracy",
    "bootstrap_ci",
    "bootstrap_replicates",
    "bootstrap_weights",
    "brier",
    "calibrate_two_thresholds",
    "calibration_metrics",
    "centred_interval",
    "classification_metrics",
    "cross_topic_consistency",
    "ece",
    "eer",
    "eer_from_curve",
    "eer_threshold",
    "eer_threshold_batch",
    "equal_error_rate",
    "hits_at_k",
    "mean_reciprocal_rank",
    "mean_reciprocal_rank_steb",
    "order_hits",
    "pan_metrics",
    "per_query_from_hits",
    "percentile_interval",
    "pr_auc",
    "ranking_metrics",
    "ranking_metrics_topk",
    "ranking_per_query",
    "recall_at_k",
    "reciprocal_ranks_first",
    "relevant_ranks",
    "reliability_bins",
    "rescale_two_thresholds",
    "roc_from_counts",
    "steb_reciprocal_ranks",
    "success_at_k",
    "topic_sliced_negatives",
    "topk_ties_unresolved",
    "two_threshold_grid",
    "v_measure",
    "v_measure_from_contingency",
]
