"""External cluster-evaluation measures: V-measure and adjusted mutual information.

Point estimates wrap scikit-learn. ``v_measure_from_contingency`` evaluates V-measure on a batch
of (weighted) contingency tables, which is how bootstrap replicates are scored without one
scikit-learn call per replicate; it is tested against ``sklearn.metrics.v_measure_score``.
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import adjusted_mutual_info_score, v_measure_score


def v_measure(labels_true, labels_pred) -> float:
    """V-measure (Rosenberg & Hirschberg, EMNLP 2007), beta = 1.

    With classes C and clusters K: homogeneity ``h = 1 - H(C|K) / H(C)`` (``h = 1`` if ``H(C) = 0``),
    completeness ``c = 1 - H(K|C) / H(K)`` (``c = 1`` if ``H(K) = 0``), ``V = 2 h c / (h + c)``
    (0 if ``h + c = 0``). Range [0, 1]; invariant to relabelling. Wraps
    ``sklearn.metrics.v_measure_score``. ``labels_*``: ``[N]`` hashable labels.
    """
    return float(v_measure_score(labels_true, labels_pred))


def adjusted_mutual_info(labels_true, labels_pred) -> float:
    """Adjusted mutual information (Vinh, Epps & Bailey, JMLR 2010), arithmetic normalisation.

    ``AMI = (MI - E[MI]) / (mean(H(C), H(K)) - E[MI])`` with ``E[MI]`` under the hypergeometric
    (permutation) model; 0 for chance-level clusterings, 1 for identical partitions. Wraps
    ``sklearn.metrics.adjusted_mutual_info_score(average_method="arithmetic")``.
    """
    return float(adjusted_mutual_info_score(labels_true, labels_pred, average_method="arithmetic"))


def _entropy_rows(counts: np.ndarray) -> np.ndarray:
    """Shannon entropy (nats) of each row of non-negative ``counts [b, m]``."""
    totals = counts.sum(axis=1, keepdims=True)
    p = np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0)
    logs = np.log(p, out=np.zeros_like(p), where=p > 0)
    return -(p * logs).sum(axis=1)


def v_measure_from_contingency(contingency: np.ndarray) -> np.ndarray:
    """V-measure of each table in ``contingency [b, C, K]`` (counts or bootstrap weights).

    Same definition as :func:`v_measure`, computed from the joint counts ``n_ck``:
    ``H(C|K) = H(C, K) - H(K)``, ``H(K|C) = H(C, K) - H(C)``. Returns ``[b]`` float64.
    """
    table = np.asarray(contingency, dtype=np.float64)
    if table.ndim != 3:
        raise ValueError(f"contingency must be [b, C, K], got shape {table.shape}")
    b = table.shape[0]
    h_c = _entropy_rows(table.sum(axis=2))
    h_k = _entropy_rows(table.sum(axis=1))
    h_ck = _entropy_rows(table.reshape(b, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        homogeneity = np.where(h_c > 0, 1.0 - (h_ck - h_k) / np.where(h_c > 0, h_c, 1.0), 1.0)
        completeness = np.where(h_k > 0, 1.0 - (h_ck - h_c) / np.where(h_k > 0, h_k, 1.0), 1.0)
        total = homogeneity + completeness
        v = np.where(total > 0, 2.0 * homogeneity * completeness / np.where(total > 0, total, 1.0), 0.0)
    return v
