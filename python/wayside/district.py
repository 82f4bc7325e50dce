"""The bridge from a city trace to the packet level: a district cut (an area
and a time window) written as a scenario file the simulator runs, every
vehicle a node that follows its trace through the waypoint mobility model.

Each vehicle's stay in the cut (wayside-contact's `district` module) is one
node: its radio comes on when the vehicle enters the cut (`appear`) and goes
off one trace step after its last sample (`disappear`); it starts where it
entered, departs when it first moves, follows one waypoint per trace step,
and broadcasts a small frame every second while present, so that the run
shows who hears whom over the simulated radio. Outside its stay a node
neither sends nor hears. Replacing those broadcasts with the real protocol
is the user's next step.
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path
from typing import Any

import tomli_w

from wayside import movement

# The radio of the drive-by scenarios (scenarios/drive-by.toml: Hadaller et
# al. 2007 §3, 802.11g on channel 6, cars at 15 dBm with 7 dBi antennas).
RADIO = {"standard": "802.11g", "channel": 6}
ENVIRONMENT = {"seed": 1, "path_loss": "two-ray", "shadowing_sigma": "4 dB", "shadowing_decorrelation": "20 m",
               "fading": "rician", "rician_k": "6 dB"}
NODE_RADIO = {"tx_power": "15 dBm", "antenna_gain": "7 dBi", "antenna_height": "1.5 m"}
# A beacon-sized broadcast once a second (the cadence of Broadside's
# discovery beacons is the user's to set when the protocol replaces it).
BEACON = {"kind": "cbr", "to": "broadcast", "payload": "200 B", "interval": "1 s"}


class DistrictError(ValueError):
    """A cut that cannot be made (empty, too many vehicles, bad area)."""


def _node_name(path_name: str) -> str:
    return "v" + re.sub(r"[^A-Za-z0-9_.-]", "-", path_name)


def scenario(trace: movement.Trace, area: tuple[float, float, float, float], start: float, duration: float,
             max_vehicles: int = 400, name: str = "district") -> dict[str, Any]:
    """The scenario (as a dict ready for TOML) of a district cut."""
    x0, y0, x1, y1 = area
    if not (x1 > x0 and y1 > y0):
        raise DistrictError(f"--area {x0},{y0},{x1},{y1}: give MIN_X,MIN_Y,MAX_X,MAX_Y with MAX > MIN")
    if duration <= 0:
        raise DistrictError(f"--duration {duration}: give a positive number of seconds")
    paths = trace.district(area, start, start + duration)
    if not paths:
        raise DistrictError(f"no vehicle is in {x0},{y0},{x1},{y1} between {start} s and {start + duration} s")
    if len(paths) > max_vehicles:
        raise DistrictError(f"the cut has {len(paths)} vehicle stays, more than --max-vehicles {max_vehicles}: "
                            "choose a smaller area or a shorter window")
    nodes, traffic = [], []
    for p in paths:
        node_name = _node_name(p["name"])
        node: dict[str, Any] = {"name": node_name, "position": list(p["start"]), **NODE_RADIO,
                                "disappear": f"{p['disappear'] + 1:g} s"}
        if p["appear"] > 0:
            node["appear"] = f"{p['appear']:g} s"
        if p["waypoints"]:
            node["mobility"] = {
                "model": "waypoints", "depart": f"{p['depart']:g} s",
                "waypoints": [{"position": [x, y], "speed": f"{v:.6g} m/s", "pause": f"{w:g} s"} for x, y, v, w in p["waypoints"]],
            }
        nodes.append(node)
        # Each vehicle's beacons keep their own phase within the second (its
        # device booted at its own time): beacons that all start on the
        # same instant collide every second for the whole run.
        phase = zlib.crc32(node_name.encode()) / 2**32
        traffic.append({**BEACON, "from": node_name, "start": f"{p['appear'] + phase:.6f} s", "stop": f"{p['disappear'] + 1:g} s"})
    return {"name": name, "description": f"district cut {x0:g},{y0:g}-{x1:g},{y1:g} m, {start:g}-{start + duration:g} s, "
                                         f"{len(nodes)} vehicles",
            "duration": f"{duration:g} s", "environment": ENVIRONMENT, "radio": RADIO, "node": nodes, "traffic": traffic}


def write(trace: movement.Trace, out: str | Path, **kw: Any) -> dict[str, Any]:
    """Writes the cut's scenario TOML to `out`; returns the scenario."""
    sc = scenario(trace, **kw)
    Path(out).write_text(tomli_w.dumps(sc), encoding="utf-8")
    return sc
