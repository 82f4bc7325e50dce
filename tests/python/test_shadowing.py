"""The environment seed freezes the shadowing map: passes with different run
seeds see the same large-scale signal per road position (the papers found
RSSI repeatable per position), and another environment seed is another road.

Statistics (measured on this scenario, fading on): the mean RSSI of a 20 m
bin in one pass varies from run seed to run seed with a standard deviation of
about 0.2-0.35 dB, with a heavy tail. Rician fading here is a sum of sinusoids
in the distance travelled, so the ~900 frames in a bin are far from
independent samples. Between two single passes the largest per-bin difference
exceeded 1 dB for 3 of 15 seed pairs tried. To keep the 1 dB criterion without
relying on lucky seeds, each side averages N_PASSES passes (per-bin means
averaged over passes): over 8 such pairs of groups the largest per-bin
difference was 0.08-0.64 dB. Shadowing has sigma 4 dB, so another environment
seed moves most bins by several dB.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import wayside

# Car from x = -200 m for 18 s at 80 km/h: it ends at x = +200 m, on a bin
# edge, so every bin it records is crossed completely.
OVERRIDES = ['duration="18 s"', "node.car.position=[-200, 0]"]
BIN_M = 20.0
MIN_FRAMES = 30
N_PASSES = 4


def rssi_per_bin(seed: int, environment_seed: int = 1) -> pl.DataFrame:
    """Mean RSSI (mean of dBm values) of the frames the car received, per 20 m of its position."""
    result = wayside.run("drive-by", seed=seed, overrides=[*OVERRIDES, f"environment.seed={environment_seed}"])
    assert result.scenario["environment"]["shadowing_sigma"] == "4 dB"
    assert result.scenario["environment"]["fading"] == "rician"
    frames = pl.DataFrame(result.frames).with_columns(
        pl.col("node").cast(pl.Utf8), pl.col("peer").cast(pl.Utf8), pl.col("event").cast(pl.Utf8)
    )
    rx = frames.filter((pl.col("node") == "car") & (pl.col("peer") == "ap") & (pl.col("event") == "rx"))
    assert rx.height > 1000
    assert rx["rssi_dbm"].is_nan().sum() == 0
    return (
        rx.with_columns(((pl.col("x") / BIN_M).floor() * BIN_M).alias("bin"))
        .group_by("bin")
        .agg(pl.col("rssi_dbm").cast(pl.Float64).mean().alias("rssi"), pl.len().alias("n"))
        .filter(pl.col("n") >= MIN_FRAMES)
        .sort("bin")
    )


def pooled(seeds: list[int], environment_seed: int = 1) -> pl.DataFrame:
    """Per bin, the mean over passes of the per-pass mean RSSI; only bins
    with enough frames in every pass."""
    per_pass = [rssi_per_bin(s, environment_seed).select("bin", pl.col("rssi").alias(f"r{s}")) for s in seeds]
    table = per_pass[0]
    for t in per_pass[1:]:
        table = table.join(t, on="bin", how="inner")
    cols = [f"r{s}" for s in seeds]
    return table.select("bin", pl.mean_horizontal(cols).alias("rssi")).sort("bin")


@pytest.fixture(scope="module")
def env1_a():
    return pooled(list(range(1, 1 + N_PASSES)))


@pytest.fixture(scope="module")
def env1_b():
    return pooled(list(range(101, 101 + N_PASSES)))


@pytest.fixture(scope="module")
def env2_a():
    return pooled(list(range(1, 1 + N_PASSES)), environment_seed=2)


def compare(a: pl.DataFrame, b: pl.DataFrame) -> pl.DataFrame:
    j = a.join(b, on="bin", suffix="_b", how="inner")
    return j.with_columns((pl.col("rssi") - pl.col("rssi_b")).abs().alias("diff"))


def test_run_seed_changes_fading():
    # Otherwise the agreement below would be trivial.
    a, b = rssi_per_bin(1), rssi_per_bin(2)
    d = compare(a, b)
    assert d.height >= 18
    assert d["diff"].max() > 0.05


def test_same_environment_seed_same_shadowing(env1_a, env1_b):
    d = compare(env1_a, env1_b)
    # The drive covers [-200, 200): 20 bins, all crossed completely.
    assert d.height >= 18, d
    worst = d.sort("diff", descending=True).head(3)
    assert d["diff"].max() <= 1.0, f"per-bin mean RSSI differs by more than 1 dB across run seeds:\n{worst}"


def test_other_environment_seed_other_shadowing(env1_a, env2_a, env1_b):
    d = compare(env1_a, env2_a)
    assert d.height >= 18, d
    moved = d.filter(pl.col("diff") > 1.0).height
    # sigma = 4 dB shadowing: most bins move by more than 1 dB; ask for a quarter.
    assert moved >= d.height // 4, f"only {moved} of {d.height} bins moved by more than 1 dB:\n{d}"
    # And the map change is far larger than the run-to-run spread.
    same = compare(env1_a, env1_b)
    rms_env = float(np.sqrt((d["diff"] ** 2).mean()))
    rms_run = float(np.sqrt((same["diff"] ** 2).mean()))
    assert rms_env > 4 * rms_run, (rms_env, rms_run)
