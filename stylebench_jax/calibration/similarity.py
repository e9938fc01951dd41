"""Similarity calibration: a monotone map from an embedder's (aggregated) cosine to the probability
that two texts share a style (Writing7, seed 003 §5.2; authors' ``calibrate_style_similarity.py``).

Two maps, both fitted on labelled pairs ``(cosine_i, y_i)`` with scikit-learn:

- ``logistic`` (Platt's sigmoid): ``P(same | c) = sigmoid(a c + b)``, the maximum-likelihood fit on
  the 0/1 labels (``LogisticRegression(C=np.inf)``, no penalty, on standardised cosines; without
  Platt's (1999) target smoothing, which scikit-learn's sigmoid calibration applies). The authors
  call ``LogisticRegression()``, whose default L2 penalty (C = 1) pulls ``a`` toward 0 when cosines
  span a narrow range, i.e. flattens the map; the unpenalised fit is the seed's formula.
- ``isotonic``: ``IsotonicRegression(out_of_bounds="clip")``, stored as its breakpoints
  ``x_thresholds``/``y_values`` and applied by linear interpolation between them, clipped at the
  ends (exactly scikit-learn's ``predict``; the authors store and apply the same arrays). Only
  offered for more than ``ISOTONIC_MIN_PAIRS`` = 1000 pairs (seed §5.2 "requires n > 1000"):
  ``method="auto"`` then leaves it out with a warning, ``method="isotonic"`` is refused.

``method="auto"`` picks the candidate with the lower mean score over ``n_splits`` = 5 folds of
``GroupKFold`` (groups: each pair's first book or author, as the authors' ``group = book1``: no
pair's first book is in a fold's training and test part, but a negative pair's second book, and
with it some of its chunks, can be in the training part of the fold that tests it, so the CV scores
are not fully held out; seed §5.2 names the aim, "to avoid leakage", not this detail), scored by
Brier (default) or ECE (15 equal-width bins,
``metrics.ece``); with fewer groups than folds it falls back to a seeded ``StratifiedKFold`` (as the
authors) with a warning, which needs at least ``n_splits`` pairs of each label (``fold_problem``:
refused otherwise, before any embedding in ``stylebench calibrate``). ``cv_brier``/``cv_ece`` of
the chosen method are stored either way.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy.special import expit

from stylebench_jax.metrics import brier, ece

METHODS = ("auto", "logistic", "isotonic")
CV_METRICS = ("brier", "ece")
ISOTONIC_MIN_PAIRS = 1000
N_SPLITS = 5


@dataclasses.dataclass(frozen=True)
class SimilarityMap:
    """A fitted cosine -> probability map. ``logistic``: ``coef``, ``intercept``; ``isotonic``:
    ``x_thresholds``, ``y_values`` (ascending breakpoints)."""

    method: str
    coef: float | None = None
    intercept: float | None = None
    x_thresholds: tuple[float, ...] = ()
    y_values: tuple[float, ...] = ()

    def __call__(self, cosine) -> np.ndarray:
        """``[N]`` float64 probabilities of ``cosine [N]`` (a scalar gives a 0-d array)."""
        x = np.asarray(cosine, dtype=np.float64)
        if self.method == "logistic":
            return expit(self.coef * x + self.intercept)
        return np.clip(np.interp(x, self.x_thresholds, self.y_values), 0.0, 1.0)

    def to_dict(self) -> dict:
        if self.method == "logistic":
            return {"method": "logistic", "coef": self.coef, "intercept": self.intercept}
        return {"method": "isotonic", "x_thresholds": list(self.x_thresholds),
                "y_values": list(self.y_values)}

    @classmethod
    def from_dict(cls, data: dict) -> SimilarityMap:
        """Inverse of :meth:`to_dict`; ``ValueError`` naming the bad field."""
        method = data.get("method")
        if method == "logistic":
            for key in ("coef", "intercept"):
                if not _finite_number(data.get(key)):
                    raise ValueError(f"style_calibration.{key}: expected a finite number, "
                                     f"found {data.get(key)!r}")
            return cls("logistic", coef=float(data["coef"]), intercept=float(data["intercept"]))
        if method == "isotonic":
            xs, ys = data.get("x_thresholds"), data.get("y_values")
            if not isinstance(xs, list) or not isinstance(ys, list) or len(xs) != len(ys) or not xs:
                raise ValueError("style_calibration.x_thresholds/y_values: expected two non-empty lists of "
                                 "equal length")
            for key, values in (("x_thresholds", xs), ("y_values", ys)):
                bad = next((i for i, v in enumerate(values) if not _finite_number(v)), None)
                if bad is not None:
                    raise ValueError(f"style_calibration.{key}[{bad}]: expected a finite number, "
                                     f"found {values[bad]!r}")
            if any(b < a for a, b in zip(xs, xs[1:])) or any(not 0 <= y <= 1 for y in ys):
                raise ValueError("style_calibration.x_thresholds: expected ascending breakpoints with "
                                 "y_values in [0, 1]")
            return cls("isotonic", x_thresholds=tuple(map(float, xs)), y_values=tuple(map(float, ys)))
        raise ValueError(f"style_calibration.method: expected 'logistic' or 'isotonic', found {method!r}")


def _finite_number(value) -> bool:
    """A JSON number that is finite (``true`` is not 1, ``NaN`` is not a breakpoint)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check(cosines, labels) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(cosines, dtype=np.float64)
    y = np.asarray(labels)
    if x.ndim != 1 or y.shape != x.shape or x.size == 0:
        raise ValueError(f"cosines and labels: expected two non-empty 1-D arrays of one length, found "
                         f"{x.shape} and {y.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("cosines: contain NaN or infinity")
    if not np.isin(y, (0, 1)).all() or y.min() == y.max():
        raise ValueError("labels: expected 0/1 with both classes present")
    return x, y.astype(np.int64)


def fit_logistic(cosines, labels) -> SimilarityMap:
    """Platt scaling by unpenalised maximum likelihood (module docstring)."""
    from sklearn.linear_model import LogisticRegression

    x, y = _check(cosines, labels)
    # Fitted on standardised cosines, then mapped back: on raw cosines in a narrow band (0.99 +- 0.002,
    # mean-pooled decoders) the gradient at the start is tiny and L-BFGS stopped near a = 0 without a
    # warning (a flat map; NLL 0.6925 against the maximum's 0.6750).
    centre, scale = float(x.mean()), float(x.std()) or 1.0
    model = LogisticRegression(C=np.inf, solver="lbfgs", max_iter=1000, tol=1e-10)
    model.fit(((x - centre) / scale)[:, None], y)
    weight, bias = float(model.coef_.ravel()[0]), float(model.intercept_[0])
    return SimilarityMap("logistic", coef=weight / scale, intercept=bias - weight * centre / scale)


def fit_isotonic(cosines, labels) -> SimilarityMap:
    """Isotonic regression of labels on cosines (module docstring)."""
    from sklearn.isotonic import IsotonicRegression

    x, y = _check(cosines, labels)
    model = IsotonicRegression(out_of_bounds="clip", y_min=0.0, y_max=1.0).fit(x, y)
    return SimilarityMap("isotonic", x_thresholds=tuple(model.X_thresholds_.tolist()),
                         y_values=tuple(model.y_thresholds_.tolist()))


FITTERS = {"logistic": fit_logistic, "isotonic": fit_isotonic}


def fold_problem(labels, groups, n_splits: int = N_SPLITS, *, group_word: str = "groups") -> str | None:
    """Why ``n_splits`` cross-validation folds cannot be made of these pairs (None: they can), as
    :func:`cv_folds` would make them: GroupKFold needs at least ``n_splits`` distinct groups (and has
    no rule per label); without them the StratifiedKFold fallback needs at least ``n_splits`` pairs of
    each label (so every test fold holds both labels; scikit-learn refuses fewer pairs than folds and
    warns below that). ``group_word`` names the groups in the message ("books"). Cheap: callers check
    it before any embedding."""
    y = np.asarray(labels)
    n_groups = 0 if groups is None else len(set(groups))
    if n_groups >= n_splits:
        return None
    n_positive = int((y == 1).sum())
    n_negative = int(y.size - n_positive)
    if min(n_positive, n_negative) >= n_splits:
        return None
    why = f"no {group_word}" if groups is None else f"{n_groups} {group_word}, fewer than the folds"
    return (f"{n_splits} folds need at least {n_splits} pairs of each label for stratified folds ({why}); "
            f"found {y.size} pairs ({n_positive} same-style, {n_negative} different-style)")


def cv_folds(labels: np.ndarray, groups, n_splits: int = N_SPLITS, seed: int = 0):
    """``(folds [(train_idx, test_idx)], kind, warning or None)``: GroupKFold over ``groups``, or a
    seeded StratifiedKFold when there are fewer groups than folds or no groups. ``ValueError`` (the
    :func:`fold_problem`) when neither can be made."""
    from sklearn.model_selection import GroupKFold, StratifiedKFold

    problem = fold_problem(labels, groups, n_splits)
    if problem:
        raise ValueError(f"n_splits: {problem}")
    n = labels.size
    if groups is not None and len(set(groups)) >= n_splits:
        return list(GroupKFold(n_splits=n_splits).split(np.zeros(n), labels, groups)), "GroupKFold", None
    found = 0 if groups is None else len(set(groups))
    warning = (f"{found} groups for {n_splits} folds: cross-validation falls back to StratifiedKFold "
               f"(seed {seed}), so pairs of one book/author can sit in a fold's training and test part")
    folds = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed).split(np.zeros(n), labels)
    return list(folds), "StratifiedKFold", warning


def cross_validate(cosines, labels, method: str, folds) -> dict[str, float]:
    """Mean Brier and ECE over ``folds`` of ``method`` fitted on each training part. A training part
    with one class only predicts its constant frequency (nothing to fit)."""
    x, y = _check(cosines, labels)
    scores = {"brier": [], "ece": []}
    for train, test in folds:
        if y[train].min() == y[train].max():
            p = np.full(test.size, float(y[train][0]))
        else:
            p = FITTERS[method](x[train], y[train])(x[test])
        scores["brier"].append(brier(p, y[test]))
        scores["ece"].append(ece(p, y[test]))
    return {name: float(np.mean(values)) for name, values in scores.items()}


@dataclasses.dataclass(frozen=True)
class FittedCalibration:
    mapping: SimilarityMap
    cv: dict[str, dict[str, float]]  # method -> {"brier", "ece"}
    cv_kind: str
    candidates: tuple[str, ...]
    warnings: tuple[str, ...]


def fit_similarity_calibration(cosines, labels, groups=None, *, method: str = "auto",
                               cv_metric: str = "brier", n_splits: int = N_SPLITS,
                               seed: int = 0) -> FittedCalibration:
    """Fit the map of ``method`` (or choose one, ``auto``) on all pairs after cross-validating every
    candidate (module docstring). ``groups [N]``: a book or author per pair (None: stratified folds)."""
    if method not in METHODS:
        raise ValueError(f"method: expected one of {', '.join(METHODS)}, found {method!r}")
    if cv_metric not in CV_METRICS:
        raise ValueError(f"cv_metric: expected one of {', '.join(CV_METRICS)}, found {cv_metric!r}")
    x, y = _check(cosines, labels)
    warnings = []
    if method == "isotonic" and x.size <= ISOTONIC_MIN_PAIRS:
        raise ValueError(f"method: isotonic calibration needs more than {ISOTONIC_MIN_PAIRS} pairs "
                         f"(seed 003 §5.2), found {x.size}; use logistic")
    candidates = ("logistic", "isotonic") if method == "auto" else (method,)
    if method == "auto" and x.size <= ISOTONIC_MIN_PAIRS:
        candidates = ("logistic",)
        warnings.append(f"{x.size} pairs: isotonic is only offered for more than {ISOTONIC_MIN_PAIRS} "
                        "pairs, so auto chose logistic without comparing")
    folds, kind, warning = cv_folds(y, None if groups is None else list(groups), n_splits, seed)
    if warning:
        warnings.append(warning)
    cv = {name: cross_validate(x, y, name, folds) for name in candidates}
    chosen = min(candidates, key=lambda name: (cv[name][cv_metric], candidates.index(name)))
    return FittedCalibration(FITTERS[chosen](x, y), cv, kind, candidates, tuple(warnings))
