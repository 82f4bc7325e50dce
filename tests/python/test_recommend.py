"""Hadaller et al.'s recommendations as sweep points: which a scenario
accepts, what "all combined" contains, and a short recommendations sweep."""

from __future__ import annotations

import json

import pytest

from wayside import _native, recommend
from wayside import sweep as sw
from wayside.scenario import scenario_text


def test_points_are_baseline_each_then_all():
    text = scenario_text("hadaller-highway")
    points, skipped = recommend.points(text)
    labels = [p[0] for p in points]
    assert labels[0] == recommend.BASELINE and points[0][1] == ()
    assert labels[-1] == recommend.ALL
    singles = points[1:-1]
    assert points[-1][1] == tuple(o for _, ov in singles for o in ov)
    names = {r.name for r in recommend.RECOMMENDATIONS}
    assert {lab for lab, _ in singles} | {n for n, _ in skipped} == names
    # Every point is a scenario the engine accepts.
    for _, overrides in points:
        _native.resolve(text, list(overrides))
    # The AP sends itself: nothing to split.
    assert "split-tcp" in dict(skipped)


def test_a_scenario_without_the_named_nodes_skips_with_the_reason():
    text = scenario_text("static-lab")  # nodes "ap" and "client": no "car"
    points, skipped = recommend.points(text)
    reasons = dict(skipped)
    assert "tuned-arp" in reasons and "car" in reasons["tuned-arp"]
    assert all("car" not in " ".join(ov) for _, ov in points)


def test_recommendations_and_grid_exclude_each_other(tmp_path):
    with pytest.raises(sw.SweepError, match="one or the other"):
        sw.plan("hadaller-highway", 1, sw.parse_grid(['mac.rate="1 Mbps"']), tmp_path, recommendations=True)


def test_a_recommendations_sweep_runs_every_point(tmp_path):
    manifest = sw.sweep("hadaller-highway", 1, tmp_path, overrides=['duration="40 s"', "node.car.position=[-450, 0]"],
                        workers=2, recommendations=True)
    written = json.loads((tmp_path / sw.MANIFEST).read_text())
    assert written["recommendations"] is True
    labels = [p["label"] for p in manifest["points"]]
    assert labels[0] == recommend.BASELINE and labels[-1] == recommend.ALL
    assert all(r["status"] == "ok" for p in manifest["points"] for r in p["runs"])
    assert all(r["data_mb"] > 0 for p in manifest["points"] for r in p["runs"])
    # The combined point ran with every switch applied.
    import tomllib

    ran = tomllib.loads((tmp_path / manifest["points"][-1]["runs"][0]["dir"] / "scenario.toml").read_text())
    assert ran["management"]["driver"] == "tuned"
    assert ran["management"]["selection_threshold"] == "-80 dBm"
    assert ran["node"][1]["rate_control"]["algorithm"] == "environment-aware"
