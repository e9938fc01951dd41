"""NumPy metric functions; each docstring gives its formula and reference. Imports nothing of ours.

The names below load their module on first use (PEP 562 ``__getattr__``): importing one light
submodule (``metrics.labels``, which the kernels and so every encoder use) does not import
scikit-learn, SciPy and pandas, ~1 s of every ``stylebench embed``."""

from __future__ import annotations

import importlib

# module -> the names it exports here
_HOMES = {
    "bootstrap": ("bootstrap_ci", "bootstrap_replicates", "bootstrap_weights", "centred_interval",
                  "percentile_interval"),
    "calibration": ("ECE_BINS", "adversary_accuracy", "balanced_accuracy", "brier", "calibration_metrics",
                    "classification_metrics", "cross_topic_consistency", "ece", "pr_auc",
                    "reliability_bins", "topic_sliced_negatives"),
    "classification": ("accuracy", "auroc", "auroc_eer_batch", "equal_error_rate"),
    "clustering": ("adjusted_mutual_info", "v_measure", "v_measure_from_contingency"),
    "pan": ("calibrate_two_thresholds", "pan_metrics", "rescale_two_thresholds", "two_threshold_grid"),
    "ranking": ("DEFAULT_KS", "order_hits", "per_query_from_hits", "ranking_metrics", "ranking_metrics_topk",
                "ranking_per_query", "topk_ties_unresolved"),
    "retrieval": ("SUCCESS_KS", "hits_at_k", "mean_reciprocal_rank", "mean_reciprocal_rank_steb",
                  "recall_at_k", "reciprocal_ranks_first", "relevant_ranks", "steb_reciprocal_ranks",
                  "success_at_k"),
    "roc": ("RocResult", "auroc_eer", "eer_from_curve", "roc_from_counts"),
    "verification": ("EER_METHODS", "eer", "eer_threshold", "eer_threshold_batch"),
}
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str):
    if name == "RECALL_KS":  # deprecated alias, warns (see metrics.retrieval)
        from stylebench_jax.metrics import retrieval

        return retrieval.__getattr__(name)
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later look-ups find it without this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
