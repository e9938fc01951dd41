"""Classifier calibration for a trained bi-encoder's pair head (Writing7, seed 003 §5.1).

Temperature scaling (Guo et al. 2017): one scalar ``T > 0`` divides the two logits ``z [N, 2]``,
``P(same | z) = softmax(z / T)[1]``, fitted by maximum likelihood on validation pairs, i.e. it
minimises the mean negative log-likelihood::

    NLL(T) = mean_i [ logsumexp(z_i / T) - z_i[y_i] / T ]

with L-BFGS (SciPy's L-BFGS-B over ``log T``, analytic gradient, so ``T`` stays positive). The
authors' ``train_contrastive._optimize_temperature`` runs ``torch.optim.LBFGS(lr=0.01, max_iter=50)``
from ``T = 1``, which can stop before the optimum; we run to convergence (``gtol`` 1e-10), so our
``T`` is the NLL minimiser within ``[MIN_TEMPERATURE, MAX_TEMPERATURE]``. Two edge cases: on
separable logits the NLL keeps falling as ``T -> 0`` and the search stops where it is flat (NLL
~1e-9, ``T`` above the lower bound); when every argmax is wrong ``T`` ends at the upper bound and
every probability is ~0.5. ``T`` does not change the argmax, only the probabilities.

Threshold search (seed §5.1, appendix "Calibration"): the decision is ``P(same) >= tau``; ``tau`` is
the grid value in ``0.01, 0.02, ..., 0.99`` (the authors' ``np.linspace(0.01, 0.99, 99)``) that
maximises ``metric`` (default balanced accuracy) among the thresholds meeting the optional
constraints (accuracy >= ``min_accuracy``, e.g. 0.85; recall >= ``min_recall``, e.g. 0.80). Ties go
to the lowest threshold (the authors' ``max`` over the grid in order). When no threshold meets the
constraints the authors silently search all thresholds; we do the same but report
``constraints_met: false`` and a warning.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp, softmax

THRESHOLD_GRID = np.linspace(0.01, 0.99, 99)
THRESHOLD_METRICS = ("balanced_accuracy", "accuracy", "f1")
MIN_TEMPERATURE = 1e-3
MAX_TEMPERATURE = 1e4


def _check_logits(logits, labels) -> tuple[np.ndarray, np.ndarray]:
    logits = np.asarray(logits, dtype=np.float64)
    labels = np.asarray(labels)
    if logits.ndim != 2 or logits.shape[1] != 2 or logits.shape[0] == 0:
        raise ValueError(f"logits: expected [N, 2] with N >= 1, found shape {logits.shape}")
    if labels.shape != (logits.shape[0],) or not np.isin(labels, (0, 1)).all():
        raise ValueError(f"labels: expected {logits.shape[0]} values in {{0, 1}}, found shape {labels.shape}")
    if not np.all(np.isfinite(logits)):
        raise ValueError("logits: contain NaN or infinity")
    return logits, labels.astype(np.int64)


def nll(logits, labels, temperature: float = 1.0) -> float:
    """Mean negative log-likelihood of ``labels`` under ``softmax(logits / temperature)`` (nats)."""
    logits, labels = _check_logits(logits, labels)
    z = logits / temperature
    return float(np.mean(logsumexp(z, axis=1) - z[np.arange(z.shape[0]), labels]))


def probabilities(logits, temperature: float = 1.0) -> np.ndarray:
    """``[N]`` float64 ``softmax(logits / temperature)[:, 1]``: the probability of "same"."""
    logits = np.asarray(logits, dtype=np.float64)
    return softmax(logits / temperature, axis=1)[:, 1]


def fit_temperature(logits, labels) -> float:
    """The ``T`` minimising :func:`nll` (module docstring), at least ``MIN_TEMPERATURE``."""
    logits, labels = _check_logits(logits, labels)
    picked = logits[np.arange(logits.shape[0]), labels]

    def objective(x):
        t = np.exp(x[0])
        z = logits / t
        lse = logsumexp(z, axis=1)
        p = np.exp(z - lse[:, None])
        value = np.mean(lse - picked / t)
        # d/dx with T = e^x: dz/dx = -z, so d(lse)/dx = -sum_k p_k z_k and d(-z_y)/dx = z_y
        grad = np.mean(-(p * z).sum(axis=1) + picked / t)
        return value, np.array([grad])

    result = minimize(objective, x0=np.array([0.0]), jac=True, method="L-BFGS-B",
                      bounds=[(np.log(MIN_TEMPERATURE), np.log(MAX_TEMPERATURE))],
                      options={"gtol": 1e-10, "maxiter": 200})
    return float(np.exp(result.x[0]))


def threshold_table(probs, labels, grid: np.ndarray = THRESHOLD_GRID) -> dict[str, np.ndarray]:
    """Metrics of ``probs >= t`` for every ``t`` of ``grid``: ``{"threshold", "accuracy",
    "balanced_accuracy", "precision", "recall", "f1"}``, each ``[len(grid)]`` (recall of class 1;
    precision and F1 are 0 where undefined, as scikit-learn's ``zero_division=0``)."""
    probs = np.asarray(probs, dtype=np.float64)
    labels = np.asarray(labels).astype(bool)
    decide = probs[None, :] >= np.asarray(grid)[:, None]
    tp = (decide & labels).sum(1).astype(np.float64)
    fp = (decide & ~labels).sum(1).astype(np.float64)
    fn = (~decide & labels).sum(1).astype(np.float64)
    tn = (~decide & ~labels).sum(1).astype(np.float64)
    n_pos, n_neg = labels.sum(), (~labels).sum()
    recall = tp / n_pos if n_pos else np.zeros_like(tp)
    specificity = tn / n_neg if n_neg else np.zeros_like(tn)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(tp + fp > 0, tp / (tp + fp), 0.0)
        f1 = np.where(2 * tp + fp + fn > 0, 2 * tp / (2 * tp + fp + fn), 0.0)
    both = n_pos and n_neg
    return {"threshold": np.asarray(grid, dtype=np.float64), "accuracy": (tp + tn) / labels.size,
            "balanced_accuracy": (recall + specificity) / 2 if both else (recall if n_pos else specificity),
            "precision": precision, "recall": recall, "f1": f1}


@dataclasses.dataclass(frozen=True)
class ThresholdChoice:
    threshold: float
    metric: str
    row: dict
    constraints_met: bool


def search_threshold(probs, labels, *, metric: str = "balanced_accuracy", min_accuracy: float | None = None,
                     min_recall: float | None = None, grid: np.ndarray = THRESHOLD_GRID) -> ThresholdChoice:
    """The grid threshold maximising ``metric`` under the constraints (module docstring)."""
    if metric not in THRESHOLD_METRICS:
        raise ValueError(f"metric: expected one of {', '.join(THRESHOLD_METRICS)}, found {metric!r}")
    table = threshold_table(probs, labels, grid)
    feasible = np.ones(len(grid), bool)
    if min_accuracy is not None:
        feasible &= table["accuracy"] >= min_accuracy
    if min_recall is not None:
        feasible &= table["recall"] >= min_recall
    met = bool(feasible.any())
    candidates = np.flatnonzero(feasible) if met else np.arange(len(grid))
    best = int(candidates[np.argmax(table[metric][candidates])])  # first maximum: the lowest threshold
    row = {name: float(values[best]) for name, values in table.items()}
    return ThresholdChoice(float(grid[best]), metric, row, met)
