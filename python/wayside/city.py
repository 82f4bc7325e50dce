"""`wayside epidemic city`: a city-scale vehicle trace built with SUMO
itself, standing in for the Portland TRANSIMS trace of Zahn et al. (2009)
§5.6 (3 x 7 km of downtown straddling a river, with freeways; 16,529
vehicles over 15 minutes of a weekday morning; moving vehicles at 54 km/h).

The city, written as a plain-XML network and built by `netconvert`:

- an arterial grid over 7 km (x) by 3 km (y), junctions every 250 m with
  traffic lights, at 35 mph (a common posted speed of urban arterials in
  Oregon, where ORS 811.111 sets 25 mph by default and lets road
  authorities post higher): one-way streets of three lanes alternating in
  direction, as downtown Portland's one-way couplets, and two-way streets
  of two lanes a direction every kilometre;
- a river 250 m wide running north-south at x = 3.0-3.25 km that the grid
  crosses only on six bridges, every 500 m (downtown Portland has six road
  bridges over the Willamette within 3 km: Steel to Ross Island);
- four freeways at 55 mph (the Oregon highway speed, ORS 811.111), three
  lanes a direction, grade-separated from the grid: two east-west (at
  y = 0.625 and 1.625 km, as I-84 and US-26 cross the area) and two
  north-south (x = 0.875 km west of downtown, as I-405, and x = 3.375 km on
  the east bank, as I-5), with interchanges where they cross and every
  kilometre, and entries 500 m beyond the area;
- arterials every kilometre continue 250 m beyond the area, so that traffic
  enters and leaves at the edges as well as inside.

The demand is `randomTrips.py` with `duarouter` validation: trips at least
1.5 km long, three times as likely to end downtown (west of the river,
x = 1-3 km: the morning commute in), fringe entries weighted up, at a rate
that puts about 16,500 vehicles into the recorded 15 minutes. SUMO runs 5
minutes of warm-up first so that, as in the TRANSIMS trace, the city is
already full when the trace starts; the floating-car data is recorded each
second from then on.

Every step is cached in the output directory under a fingerprint of its
inputs: a second call with the same parameters returns at once.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

MPH = 0.44704  # m/s

WIDTH_M = 7000.0
HEIGHT_M = 3000.0
BLOCK_M = 250.0
RIVER_X = (3000.0, 3250.0)
BRIDGES_EVERY_M = 500.0
FREEWAYS_EW_Y = (625.0, 1625.0)
FREEWAYS_NS_X = (875.0, 3375.0)
INTERCHANGE_EVERY_M = 1000.0
ARTERIAL_SPEED = 35 * MPH
FREEWAY_SPEED = 55 * MPH
# netconvert moves the network so that its south-west corner (the freeway
# ends, 500 m beyond the grid) is at 0, 0: the grid's origin is here.
GRID_ORIGIN_M = (2 * BLOCK_M, 2 * BLOCK_M)
WARMUP_S = 300.0
DURATION_S = 900.0


class CityError(RuntimeError):
    """SUMO is missing or one of its tools failed; the message says which."""


@dataclass(frozen=True)
class CityParams:
    # Vehicles inserted per hour. Calibrated so that about 16,500 distinct
    # vehicles appear in the 15 recorded minutes (the paper's 16,529).
    insertion_rate: float = 52_000.0
    seed: int = 1
    # Destination weight of downtown edges against the rest.
    downtown_weight: float = 3.0
    fringe_factor: float = 5.0
    min_trip_m: float = 1500.0

    def fingerprint(self) -> str:
        text = json.dumps(asdict(self), sort_keys=True) + Path(__file__).read_text(encoding="utf-8")
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def sumo_home() -> Path:
    """SUMO's installation, from the `eclipse-sumo` wheel (pip install
    'wayside[city]') or SUMO_HOME."""
    try:
        import sumo  # the eclipse-sumo wheel

        return Path(sumo.SUMO_HOME)
    except ImportError:
        pass
    home = os.environ.get("SUMO_HOME")
    if home and (Path(home) / "tools" / "randomTrips.py").is_file():
        return Path(home)
    raise CityError("SUMO is not installed: pip install 'wayside[city]' (the eclipse-sumo wheel), or set SUMO_HOME")


def _binary(home: Path, name: str) -> str:
    for candidate in (home / "bin" / name, shutil.which(name)):
        if candidate and Path(candidate).is_file():
            return str(candidate)
    raise CityError(f"SUMO's {name} was not found in {home / 'bin'} or on PATH")


def _run(args: list[str], cwd: Path, log: Path, what: str) -> None:
    env = dict(os.environ, SUMO_HOME=str(sumo_home()))
    with log.open("w", encoding="utf-8") as f:
        r = subprocess.run(args, cwd=cwd, stdout=f, stderr=subprocess.STDOUT, env=env)
    if r.returncode != 0:
        tail = "".join(log.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)[-10:])
        raise CityError(f"{what} failed (exit {r.returncode}); the end of {log}:\n{tail}")


# ---------------------------------------------------------------- network


def _grid_xs() -> list[float]:
    return [i * BLOCK_M for i in range(int(WIDTH_M / BLOCK_M) + 1)]


def _grid_ys() -> list[float]:
    return [j * BLOCK_M for j in range(int(HEIGHT_M / BLOCK_M) + 1)]


def _is_bridge_row(y: float) -> bool:
    return abs((y - BLOCK_M) % BRIDGES_EVERY_M) < 1e-6


def plain_network() -> tuple[str, str]:
    """The city as SUMO plain XML: (nodes, edges)."""
    nodes: dict[str, str] = {}
    edges: list[str] = []

    def node(nid: str, x: float, y: float, kind: str) -> None:
        nodes.setdefault(nid, f'  <node id="{nid}" x="{x:.1f}" y="{y:.1f}" type="{kind}"/>')

    def edge(f: str, t: str, lanes: int, speed: float, priority: int) -> None:
        edges.append(f'  <edge id="{f}-{t}" from="{f}" to="{t}" numLanes="{lanes}" speed="{speed:.2f}" priority="{priority}"/>')

    def road(a: str, b: str, lanes: int, speed: float, priority: int) -> None:
        edge(a, b, lanes, speed, priority)
        edge(b, a, lanes, speed, priority)

    def street(a: str, b: str, index: int, at: float) -> None:
        """A grid street: two-way on the kilometre lines, else one-way,
        alternating in direction (downtown Portland's one-way couplets)."""
        if at % INTERCHANGE_EVERY_M == 0:
            road(a, b, 2, ARTERIAL_SPEED, 3)
        elif index % 2:
            edge(a, b, 3, ARTERIAL_SPEED, 3)
        else:
            edge(b, a, 3, ARTERIAL_SPEED, 3)

    xs, ys = _grid_xs(), _grid_ys()
    g = lambda i, j: f"g{i}_{j}"  # noqa: E731
    for i, x in enumerate(xs):
        for j, y in enumerate(ys):
            node(g(i, j), x, y, "traffic_light")
    for i, x in enumerate(xs):
        for j, y in enumerate(ys):
            if i + 1 < len(xs):
                crosses_river = x < RIVER_X[1] and xs[i + 1] > RIVER_X[0]
                if not crosses_river:
                    street(g(i, j), g(i + 1, j), j, y)
                elif _is_bridge_row(y):
                    road(g(i, j), g(i + 1, j), 2, ARTERIAL_SPEED, 3)
            if j + 1 < len(ys) and not (RIVER_X[0] < x < RIVER_X[1]):
                street(g(i, j), g(i, j + 1), i, x)
    # Arterial entries every kilometre beyond the edges of the area.
    out = BLOCK_M
    for i, x in enumerate(xs):
        if x % INTERCHANGE_EVERY_M == 0 and not (RIVER_X[0] <= x <= RIVER_X[1]):
            node(f"s{i}", x, -out, "priority")
            node(f"n{i}", x, HEIGHT_M + out, "priority")
            road(f"s{i}", g(i, 0), 2, ARTERIAL_SPEED, 3)
            road(g(i, len(ys) - 1), f"n{i}", 2, ARTERIAL_SPEED, 3)
    for j, y in enumerate(ys):
        if y % INTERCHANGE_EVERY_M == 0:
            node(f"w{j}", -out, y, "priority")
            node(f"e{j}", WIDTH_M + out, y, "priority")
            road(f"w{j}", g(0, j), 2, ARTERIAL_SPEED, 3)
            road(g(len(xs) - 1, j), f"e{j}", 2, ARTERIAL_SPEED, 3)
    # Freeways, grade-separated from the grid: chains of interchanges (where
    # freeways cross, and every kilometre), with two-way ramps to the
    # nearest grid junction; they run 500 m beyond the area.
    far = GRID_ORIGIN_M[0]
    f = lambda x, y: f"f{x:.0f}_{y:.0f}"  # noqa: E731
    for y in FREEWAYS_EW_Y:
        stops = sorted({-far, WIDTH_M + far, *FREEWAYS_NS_X, *(k * INTERCHANGE_EVERY_M for k in range(int(WIDTH_M / INTERCHANGE_EVERY_M) + 1))})
        for x in stops:
            node(f(x, y), x, y, "priority")
            if x % INTERCHANGE_EVERY_M == 0 and 0 <= x <= WIDTH_M and not (RIVER_X[0] <= x <= RIVER_X[1]):
                road(f(x, y), g(int(round(x / BLOCK_M)), int((y - BLOCK_M / 2) // BLOCK_M)), 1, ARTERIAL_SPEED, 5)
        for a, b in zip(stops, stops[1:]):
            road(f(a, y), f(b, y), 3, FREEWAY_SPEED, 10)
    for x in FREEWAYS_NS_X:
        stops = sorted({-far, HEIGHT_M + far, *FREEWAYS_EW_Y, *(k * INTERCHANGE_EVERY_M for k in range(int(HEIGHT_M / INTERCHANGE_EVERY_M) + 1))})
        for y in stops:
            node(f(x, y), x, y, "priority")
            if y % INTERCHANGE_EVERY_M == 0 and 0 <= y <= HEIGHT_M:
                road(f(x, y), g(int((x + BLOCK_M / 2) // BLOCK_M), int(round(y / BLOCK_M))), 1, ARTERIAL_SPEED, 5)
        for a, b in zip(stops, stops[1:]):
            road(f(x, a), f(x, b), 3, FREEWAY_SPEED, 10)
    nod = "<nodes>\n" + "\n".join(nodes.values()) + "\n</nodes>\n"
    edg = "<edges>\n" + "\n".join(edges) + "\n</edges>\n"
    return nod, edg


def _downtown_weights(net_file: Path, prefix: Path, weight: float) -> None:
    """randomTrips destination weights: downtown edges `weight`, others 1."""
    import sumolib

    net = sumolib.net.readNet(str(net_file))
    lines = ['<edgedata>', '  <interval begin="0" end="1e9">']
    for e in net.getEdges():
        (x0, y0), (x1, y1) = e.getFromNode().getCoord(), e.getToNode().getCoord()
        mx, my = (x0 + x1) / 2, (y0 + y1) / 2
        w = weight if 1000 <= mx <= RIVER_X[0] and 0 <= my <= HEIGHT_M else 1.0
        lines.append(f'    <edge id="{e.getID()}" value="{w}"/>')
    lines += ["  </interval>", "</edgedata>"]
    Path(str(prefix) + ".dst.xml").write_text("\n".join(lines) + "\n", encoding="utf-8")


# ---------------------------------------------------------------- the build


def build(out: str | Path, params: CityParams = CityParams(), log: Callable[[str], None] = print) -> Path:
    """Builds (or finds cached) the city's FCD trace; returns the path of
    the FCD XML (gzip), recorded from the end of the warm-up."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    stamp = out / "city.json"
    fcd = out / "fcd.xml.gz"
    fp = params.fingerprint()
    if fcd.is_file() and stamp.is_file() and json.loads(stamp.read_text()).get("fingerprint") == fp:
        log(f"cached: {fcd}")
        return fcd
    home = sumo_home()
    nod, edg = plain_network()
    (out / "city.nod.xml").write_text(nod, encoding="utf-8")
    (out / "city.edg.xml").write_text(edg, encoding="utf-8")
    log("netconvert: building the network")
    _run([_binary(home, "netconvert"), "--node-files", "city.nod.xml", "--edge-files", "city.edg.xml",
          "--no-turnarounds", "true", "--output-file", "city.net.xml"],
         out, out / "netconvert.log", "netconvert")
    _downtown_weights(out / "city.net.xml", out / "weights", params.downtown_weight)
    end = WARMUP_S + DURATION_S
    log("randomTrips + duarouter: the morning demand")
    _run([sys.executable, str(home / "tools" / "randomTrips.py"), "--net-file", "city.net.xml",
          "--weights-prefix", "weights", "--fringe-factor", str(params.fringe_factor),
          "--min-distance", str(params.min_trip_m), "--begin", "0", "--end", str(end),
          "--insertion-rate", str(params.insertion_rate), "--seed", str(params.seed),
          "--validate", "--remove-loops", "--output-trip-file", "city.trips.xml", "--route-file", "city.rou.xml"],
         out, out / "randomTrips.log", "randomTrips")
    log(f"sumo: {end:.0f} s ({WARMUP_S:.0f} s of warm-up), floating-car data every second")
    _run([_binary(home, "sumo"), "--net-file", "city.net.xml", "--route-files", "city.rou.xml",
          "--begin", "0", "--end", str(end), "--step-length", "1", "--seed", str(params.seed),
          "--fcd-output", fcd.name, "--fcd-output.attributes", "x,y,speed", "--device.fcd.begin", str(WARMUP_S),
          "--time-to-teleport", "120", "--no-step-log", "true", "--duration-log.statistics", "true"],
         out, out / "sumo.log", "sumo")
    stamp.write_text(json.dumps({"fingerprint": fp, "params": asdict(params), "warmup_s": WARMUP_S,
                                 "duration_s": DURATION_S}, indent=2) + "\n", encoding="utf-8")
    return fcd
