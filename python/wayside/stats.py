"""How much one sweep point gains over another, with a 95% confidence
interval: the ratio of mean data per run, paired by seed; and the mean of
one point's runs with its own interval.

Every point of a sweep runs the same seeds, so run k of two points shares
its random draws wherever the scenarios agree. Pairing the runs by seed and
resampling the pairs (a percentile bootstrap) keeps that shared part out of
the interval; a ratio of means, not a mean of ratios, so a run that moved
nothing at the base point does not make the gain infinite.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Hashable, Mapping, Sequence

import numpy as np

RESAMPLES = 10_000


@dataclass(frozen=True)
class Gain:
    value: float  # mean of `other` over mean of `base`, over the paired runs
    lo: float  # 95% confidence interval (NaN with fewer than 2 pairs)
    hi: float
    pairs: int

    def __str__(self) -> str:
        if math.isnan(self.value):
            return "—"
        if math.isnan(self.lo):
            return f"{self.value:.2f}×"
        return f"{self.value:.2f}× ({self.lo:.2f}–{self.hi:.2f})"


def paired_gain(base: Mapping[Hashable, float], other: Mapping[Hashable, float], seed: int = 0) -> Gain:
    """The gain of `other` over `base` (values per run, keyed by seed or run
    name; keys in both with finite values are paired), with a percentile
    bootstrap interval from RESAMPLES resamples of the pairs. Deterministic
    for a given `seed`."""
    keys = [k for k in base if k in other and math.isfinite(base[k]) and math.isfinite(other[k])]
    b = np.array([base[k] for k in keys], dtype=float)
    o = np.array([other[k] for k in keys], dtype=float)
    n = len(keys)
    if n == 0 or b.sum() <= 0:
        return Gain(math.nan, math.nan, math.nan, n)
    value = float(o.sum() / b.sum())
    if n < 2:
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
    lo: float  # 95% confidence interval (NaN with fewer than 2 values)
    hi: float
    n: int


def mean_interval(values: Sequence[float], seed: int = 0) -> Mean:
    """The mean of the finite `values` (one per run) with a percentile
    bootstrap interval from RESAMPLES resamples. Deterministic for a given
    `seed`."""
    v = np.array([x for x in values if math.isfinite(x)], dtype=float)
    n = len(v)
    if n == 0:
        return Mean(math.nan, math.nan, math.nan, 0)
    if n < 2:
        return Mean(float(v.mean()), math.nan, math.nan, n)
    lo, hi = np.percentile(v[_resamples(n, seed)].mean(axis=1), [2.5, 97.5])
    return Mean(float(v.mean()), float(lo), float(hi), n)
