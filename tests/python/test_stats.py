"""The mean with its Student t interval, and the paired gain between sweep
points with its bootstrap interval."""

from __future__ import annotations

import math

import pytest

from hypothesis import given
from hypothesis import strategies as st

from wayside.stats import MIN_RUNS, mean_ci, mean_interval, paired_gain

# Enough runs for an interval (fewer get none: stats.MIN_RUNS).
runs = st.lists(st.floats(min_value=0.1, max_value=100.0), min_size=MIN_RUNS, max_size=30)


@given(runs, st.floats(min_value=0.2, max_value=5.0))
def test_a_point_that_scales_every_run_gains_exactly_that_with_no_spread(base, factor):
    g = paired_gain(dict(enumerate(base)), {k: v * factor for k, v in enumerate(base)})
    assert math.isclose(g.value, factor, rel_tol=1e-9)
    assert math.isclose(g.lo, factor, rel_tol=1e-9) and math.isclose(g.hi, factor, rel_tol=1e-9)


@given(runs, runs)
def test_the_interval_holds_the_ratio_of_means_and_is_deterministic(base, other):
    n = min(len(base), len(other))
    a, b = dict(enumerate(base[:n])), dict(enumerate(other[:n]))
    g = paired_gain(a, b)
    assert math.isclose(g.value, sum(other[:n]) / sum(base[:n]), rel_tol=1e-9)
    assert g.lo <= g.value * (1 + 1e-9) and g.value <= g.hi * (1 + 1e-9) and g.pairs == n
    assert paired_gain(a, b) == g
    # Runs finish in any order when they run in parallel: the interval does not depend on it.
    assert paired_gain(dict(reversed(list(a.items()))), b) == g


def test_only_runs_in_both_with_finite_values_are_paired():
    g = paired_gain({1: 10.0, 2: 10.0, 3: 10.0, 4: math.nan}, {2: 20.0, 3: 30.0, 4: 5.0, 5: 1.0})
    assert g.pairs == 2 and g.value == 2.5
    assert str(paired_gain({1: 10.0}, {1: 15.0})) == "1.50× (n=1)"  # one pair: no interval
    assert str(paired_gain({1: 0.0, 2: 0.0}, {1: 1.0, 2: 1.0})) == "—"  # nothing at the base
    # Two pairs are too few for an interval (stats.MIN_RUNS), three are not.
    assert str(paired_gain({1: 10.0, 2: 20.0}, {1: 12.0, 2: 21.0})) == "1.10× (n=2)"
    assert str(paired_gain({1: 10.0, 2: 20.0, 3: 30.0}, {1: 12.0, 2: 21.0, 3: 33.0})).startswith("1.10× (1.")


def test_describe_says_when_n_is_too_small():
    from wayside.stats import describe

    # The "27.7 ± 216.0" from 2 runs: now the mean, n and the range.
    assert describe([10.7, 44.7]) == "27.7 (n=2, too few for a CI; 10.7–44.7)"
    assert describe([5.0]) == "5.0 (n=1, too few for a CI)"
    assert describe([None, math.nan]) == "—"
    text = describe([10.0, 12.0, 14.0])
    assert text.startswith("12.0 ± ") and text.endswith("(n=3)")
    assert float(text.split("±")[1].split()[0]) == pytest.approx(4.30 * 2 / math.sqrt(3), abs=0.06)


def test_runs_that_disagree_widen_the_interval():
    base = {k: 10.0 for k in range(20)}
    steady = paired_gain(base, {k: 12.0 if k % 2 else 11.0 for k in range(20)})
    noisy = paired_gain(base, {k: 20.0 if k % 2 else 3.0 for k in range(20)})
    assert steady.hi - steady.lo < noisy.hi - noisy.lo
    assert noisy.lo < 1.0 < noisy.hi and steady.lo > 1.0


def test_mean_ci_is_student_t_and_skips_missing_values():
    m, half = mean_ci([1.0, 2.0, 3.0, None, math.nan])
    # t(0.975, 2 df) = 4.303 (any printed table); the stdev of 1, 2, 3 is 1.
    assert m == 2.0 and half == pytest.approx(4.303 / math.sqrt(3), rel=1e-4)
    # 60 df: 2.000; far out the quantile tends to the normal's 1.960.
    assert mean_ci([0.0, 2.0] * 31)[1] == pytest.approx(2.000 * math.sqrt(62 / 61) / math.sqrt(62), rel=1e-3)
    assert mean_ci([5.0]) == (5.0, math.inf)
    assert all(math.isnan(x) for x in mean_ci([None, math.nan]))


def test_mean_interval_brackets_the_mean_and_narrows_with_runs():
    few = mean_interval([10.0, 12.0, 11.0, 13.0, 9.0])
    many = mean_interval([10.0, 12.0, 11.0, 13.0, 9.0] * 4)
    assert few.value == many.value == 11.0 and few.n == 5 and many.n == 20
    assert few.lo < 11.0 < few.hi and many.lo < 11.0 < many.hi
    assert many.hi - many.lo < few.hi - few.lo, "20 runs pin the mean down better than 5"
    assert mean_interval([10.0, 12.0, 11.0]) == mean_interval([10.0, 12.0, 11.0]), "deterministic"


def test_mean_interval_skips_nan_and_needs_two_values():
    one = mean_interval([4.0, math.nan])
    assert one.value == 4.0 and one.n == 1 and math.isnan(one.lo) and math.isnan(one.hi)
    assert math.isnan(mean_interval([]).value)
