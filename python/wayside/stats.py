"""Confidence intervals across runs: the mean of a metric with its 95%
Student t interval, and how much one sweep point gains over another, the
ratio of mean data per run, paired by seed.

Every point of a sweep runs the same seeds, so run k of two points shares
its random draws wherever the scenarios agree. Pairing the runs by seed and
resampling the pairs (a percentile bootstrap) keeps that shared part out of
the interval; a ratio of means, not a mean of ratios, so a run that moved
nothing at the base point does not make the gain infinite.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Hashable, Iterable, Mapping

import numpy as np

RESAMPLES = 10_000
# Fewer runs than this get no interval, only their mean and range: with 2
# runs the 95% t interval is 12.7 standard errors wide on each side
# (t(0.975, 1) = 12.71; 4.30 with 3 runs), which says nothing a reader can
# use, and a bootstrap over 2 pairs has 3 distinct resamples.
MIN_RUNS = 3


def mean_ci(values: Iterable[float | None]) -> tuple[float, float]:
    """Mean and half-width of its two-sided 95% Student t interval; None and
    NaN values are left out. No values give (NaN, NaN); one value has an
    infinite half-width."""
    v = [float(x) for x in values if x is not None and not math.isnan(float(x))]
    if not v:
        return math.nan, math.nan
    if len(v) == 1:
        return v[0], math.inf
    from scipy.special import stdtrit  # Student t quantile; scipy.stats takes seconds to import

    return statistics.fmean(v), float(stdtrit(len(v) - 1, 0.975)) * statistics.stdev(v) / math.sqrt(len(v))


@dataclass(frozen=True)
class Gain:
    value: float  # mean of `other` over mean of `base`, over the paired runs
    lo: float  # 95% confidence interval (NaN with fewer than MIN_RUNS pairs)
    hi: float
    pairs: int

    def __str__(self) -> str:
        if math.isnan(self.value):
            return "—"
        if math.isnan(self.lo):
            return f"{self.value:.2f}× (n={self.pairs})"  # too few pairs for an interval
        return f"{self.value:.2f}× ({self.lo:.2f}–{self.hi:.2f})"


def paired_gain(base: Mapping[Hashable, float], other: Mapping[Hashable, float], seed: int = 0) -> Gain:
    """The gain of `other` over `base` (values per run, keyed by seed or run
    name; keys in both with finite values are paired), with a percentile
    bootstrap interval from RESAMPLES resamples of the pairs. Deterministic
    for a given `seed`, whatever order the runs came in."""
    keys = sorted(k for k in base if k in other and math.isfinite(base[k]) and math.isfinite(other[k]))
    b = np.array([base[k] for k in keys], dtype=float)
    o = np.array([other[k] for k in keys], dtype=float)
    n = len(keys)
    if n == 0 or b.sum() <= 0:
        return Gain(math.nan, math.nan, math.nan, n)
    value = float(o.sum() / b.sum())
    if n < MIN_RUNS:
        return Gain(value, math.nan, math.nan, n)
    idx = _resamples(n, seed)
    bs, os_ = b[idx].sum(axis=1), o[idx].sum(axis=1)
    ratios = os_[bs > 0] / bs[bs > 0]
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    return Gain(value, float(lo), float(hi), n)


def _resamples(n: int, seed: int) -> np.ndarray:
    """RESAMPLES bootstrap resamples of n items: indices, one row each."""
    return np.random.default_rng(seed).integers(0, n, size=(RESAMPLES, n))


@dataclass(frozen=True)
class Mean:
    value: float  # mean of the finite values
    lo: float  # 95% Student t interval (NaN with fewer than 2 values)
    hi: float
    n: int


def mean_interval(values: Iterable[float | None]) -> Mean:
    """`mean_ci` as the interval's bounds, with the number of values used."""
    values = list(values)
    n = sum(1 for x in values if x is not None and not math.isnan(float(x)))
    m, half = mean_ci(values)
    if n < 2:
        return Mean(m, math.nan, math.nan, n)
    return Mean(m, m - half, m + half, n)


def describe(values: Iterable[float | None], digits: int = 1) -> str:
    """The mean of the finite values with the half-width of its 95% t
    interval and n ("27.7 ± 3.1 (n=8)"), or, below MIN_RUNS values, the
    mean and the range, saying that n is too small for an interval."""
    v = [float(x) for x in values if x is not None and not math.isnan(float(x))]
    if not v:
        return "—"
    m, half = mean_ci(v)
    if len(v) < MIN_RUNS:
        spread = f"; {min(v):.{digits}f}–{max(v):.{digits}f}" if len(v) > 1 else ""
        return f"{m:.{digits}f} (n={len(v)}, too few for a CI{spread})"
    return f"{m:.{digits}f} ± {half:.{digits}f} (n={len(v)})"
