"""Hadaller et al.'s recommendations as sweep points: which a scenario
accepts, what "all combined" contains, and a short recommendations sweep."""

from __future__ import annotations

import json

import pytest

from wayside import _native, recommend
from wayside import sweeps as sw
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
    assert ran["management"]["selection_threshold"] == "-87 dBm"
    assert ran["app"][0]["start"] == "on-production" and ran["app"][0]["production_rssi"] == "-87 dBm"
    assert ran["node"][1]["rate_control"]["algorithm"] == "environment-aware"


def test_the_recommendations_table_fits_80_columns_and_pairs_by_seed():
    base = {1: 10.0, 2: 20.0, 3: 30.0}
    cols = [
        recommend.Column("hadaller-highway", {recommend.BASELINE: base, "avoid-fringe": {1: 20.0, 2: 40.0, 3: 60.0},
                                              recommend.ALL: {1: 5.0, 2: 10.0, 3: 15.0}},
                         [("split-tcp", "no application sends from a host behind the AP")]),
        recommend.Column("hadaller-highway-remote", {recommend.BASELINE: base, "split-tcp": {1: 10.0, 2: 20.0, 3: 33.0}}, []),
    ]
    text = recommend.render(cols, 3, 1)
    assert max(len(line) for line in text.splitlines()) <= 80
    rows = {line.split()[0]: line for line in text.splitlines() if line[:1].isalpha()}
    # Every run doubled: the gain is 2 and so is every resample of the pairs.
    assert "2.00× (2.00–2.00)" in rows["avoid-fringe"]
    assert "0.50× (0.50–0.50)" in rows["all"]
    # A point a scenario does not have is a dash, not a gain.
    assert rows["split-tcp"].split()[1] == "—" and "1.05×" in rows["split-tcp"]
    assert "no split-tcp" in text


def test_the_recommendations_table_measures_every_point_of_every_scenario():
    cols = recommend.measure(("hadaller-highway",), runs=2, workers=2,
                             base=('duration="40 s"', "node.car.position=[-450, 0]"))
    (col,) = cols
    assert list(col.points)[0] == recommend.BASELINE and list(col.points)[-1] == recommend.ALL
    assert all(sorted(mbs) == [1, 2] and all(v > 0 for v in mbs.values()) for mbs in col.points.values())
    assert "split-tcp" in dict(col.skipped)
