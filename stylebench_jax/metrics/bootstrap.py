"""Seeded percentile bootstrap over instances, vectorised as resample-count weights.

A bootstrap replicate draws ``n`` instances with replacement. We represent it by its count vector
``w`` (``w[i]`` = how often instance ``i`` was drawn, ``sum(w) = n``): any plug-in statistic of the
empirical distribution can be evaluated from ``w`` (a mean is ``w @ x / n``; a contingency table is a
weighted bincount; scikit-learn metrics take ``sample_weight=w``). Statistics are evaluated on
chunks of replicates at once (``[b, n]`` weight blocks), so a thousand replicates cost a few matrix
products instead of a thousand Python calls.

Reference: Efron & Tibshirani (1993), *An Introduction to the Bootstrap*, ch. 13 (percentile
interval): the ``100(1 - alpha)%`` interval is ``[q(alpha / 2), q(1 - alpha / 2)]`` of the replicate
distribution. With ``strata`` the resampling is stratified (each stratum is resampled to its own
size), the usual choice for AUROC, whose value is undefined when a replicate lacks a class
(Carpenter & Bithell 2000; pROC's default).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np

WeightStatistic = Callable[[np.ndarray], np.ndarray]

# Largest number of int entries in one ``[b, n]`` index block (keeps memory near 32 MB).
_MAX_BLOCK_ENTRIES = 1 << 22


def _chunk_rows(n: int, n_boot: int) -> int:
    return int(max(1, min(n_boot, _MAX_BLOCK_ENTRIES // max(n, 1))))


def bootstrap_weights(n: int, n_boot: int, seed: int, *,
                      strata: Sequence | np.ndarray | None = None) -> Iterator[np.ndarray]:
    """Yield resample-count blocks ``[b, n]`` float64 (rows sum to ``n``) until ``n_boot`` rows.

    Deterministic in ``(n, n_boot, seed, strata)``: one ``np.random.default_rng(seed)`` stream is
    consumed block by block. With ``strata`` (``[n]`` labels) every stratum of size ``m`` receives
    exactly ``m`` draws from its own members in each replicate.
    """
    if n <= 0:
        raise ValueError("bootstrap needs at least one instance")
    if n_boot <= 0:
        raise ValueError(f"n_boot must be positive, got {n_boot}")
    if seed is None:  # default_rng(None) draws fresh OS entropy: the interval would change every run
        raise ValueError("seed: expected an int (or a sequence of ints), found None")
    rng = np.random.default_rng(seed)
    if strata is None:
        groups = [np.arange(n)]
    else:
        strata = np.asarray(strata)
        if strata.shape != (n,):
            raise ValueError(f"strata must have shape ({n},), got {strata.shape}")
        _, inverse = np.unique(strata, return_inverse=True)
        groups = [np.flatnonzero(inverse == g) for g in range(inverse.max() + 1)]
    rows = _chunk_rows(n, n_boot)
    done = 0
    while done < n_boot:
        b = min(rows, n_boot - done)
        weights = np.zeros((b, n), dtype=np.float64)
        offsets = (np.arange(b) * n)[:, None]
        for members in groups:
            draws = members[rng.integers(0, members.size, size=(b, members.size))]
            weights += np.bincount((draws + offsets).ravel(), minlength=b * n).reshape(b, n)
        yield weights
        done += b


def bootstrap_replicates(statistic: WeightStatistic, n: int, *, n_boot: int = 1000, seed: int = 0,
                         strata: Sequence | np.ndarray | None = None) -> np.ndarray:
    """Replicate values of ``statistic(weights [b, n])``: ``[n_boot]`` float64 for a statistic
    returning ``[b]``, or ``[k, n_boot]`` for one returning ``k`` statistics at once (``[k, b]``).

    Raises ``ValueError`` if any replicate is not finite: a statistic undefined on some resamples
    (e.g. AUROC without negatives) needs ``strata``, not silently dropped replicates.
    """
    out = []
    for weights in bootstrap_weights(n, n_boot, seed, strata=strata):
        values = np.asarray(statistic(weights), dtype=np.float64)
        if values.ndim not in (1, 2) or values.shape[-1] != weights.shape[0]:
            raise ValueError(f"statistic returned shape {values.shape}, expected ({weights.shape[0]},) "
                             f"or (k, {weights.shape[0]})")
        out.append(values)
    replicates = np.concatenate(out, axis=-1)
    if not np.all(np.isfinite(replicates)):
        bad = int(np.sum(~np.all(np.isfinite(replicates.reshape(-1, n_boot)), axis=0)))
        raise ValueError(f"{bad} of {n_boot} bootstrap replicates are not finite (e.g. a resample without "
                         f"one of the classes); stratify the resampling or use more instances")
    return replicates


def percentile_interval(replicates: np.ndarray, alpha: float = 0.05) -> tuple[float, float]:
    """``(q(alpha/2), q(1 - alpha/2))`` of ``replicates`` (NumPy's default linear quantiles)."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    low, high = np.quantile(np.asarray(replicates, dtype=np.float64), [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(low), float(high)


def centred_interval(replicates: np.ndarray, point: float, alpha: float = 0.05) -> tuple[float, float]:
    """``point + (q(alpha/2), q(1 - alpha/2))`` of the replicates' deviations from their mean.

    The spread of the bootstrap distribution without its location: an interval for the expected
    value of the statistic at this sample size, centred on the reported value. Use it for
    statistics whose replicates are biased relative to the estimate itself, such as V-measure and
    AMI: resampling duplicates instances, and duplicates always sit in the same cluster, so the
    replicates overstate the agreement. In 200 simulated samples each, the plain percentile interval
    covered the mean of the V-measure estimator in 62% (11 classes, n = 2000, V ~ 0.07), 84%
    (V ~ 0.55) and 0% (50 classes x 50 items) of the samples, this interval in 94%, 92% and 94%
    (``tests/metrics/test_bootstrap.py`` checks a small case).
    """
    replicates = np.asarray(replicates, dtype=np.float64)
    low, high = percentile_interval(replicates - replicates.mean(), alpha)
    return float(point + low), float(point + high)


def bootstrap_ci(data: np.ndarray | Sequence[float] | WeightStatistic, *, n: int | None = None,
                 n_boot: int = 1000, seed: int = 0, alpha: float = 0.05,
                 strata: Sequence | np.ndarray | None = None) -> tuple[float, float]:
    """Percentile bootstrap interval, resampling instances with replacement.

    ``data`` is either
      * ``[N]`` per-instance values: the interval of their mean (e.g. per-query reciprocal ranks,
        per-item 0/1 correctness); or
      * a statistic ``f(weights [b, N]) -> [b]`` of resample-count weights (see module docstring);
        then ``n`` (= N) is required.

    Returns ``(ci_low, ci_high)``. Seeded and vectorised; ``n_boot`` replicates; ``alpha=0.05`` gives
    the 95% interval.
    """
    if callable(data):
        if n is None:
            raise ValueError("bootstrap_ci with a statistic function needs n (the instance count)")
        return percentile_interval(bootstrap_replicates(data, n, n_boot=n_boot, seed=seed, strata=strata),
                                   alpha)
    values = np.asarray(data, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError(f"per-instance values must be 1-D, got shape {values.shape}")
    if not np.isfinite(values).all():
        raise ValueError(f"per-instance value {int(np.flatnonzero(~np.isfinite(values))[0])} is NaN or "
                         "infinite")
    if n is not None and n != values.size:
        raise ValueError(f"n={n} does not match {values.size} per-instance values")
    return percentile_interval(
        bootstrap_replicates(lambda w: w @ values / values.size, values.size, n_boot=n_boot, seed=seed,
                             strata=strata), alpha)
