"""The same drive-by in ns-3 and in wayside, side by side, in one run.

Cars pass an 802.11g AP at 80 km/h while a wired server behind the AP sends
each car bulk TCP from 1.5 s after its association. The wayside scenario is
the built-in `hadaller-highway-remote` with Minstrel on every radio, fast
frames off and the car replaced by the case's cars; the ns-3 program
(driveby.cc) gets every parameter it can match from that same scenario
(`ns3_args`). Prints, per simulator, event-loop seconds (wall and CPU), data
delivered and association position per car, and the ratios.

    python benches/ns3/bench.py --ns3 PATH_TO_DRIVEBY [--case one|fifty|all]
"""

from __future__ import annotations

import argparse
import math
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

BASE_SCENARIO = "hadaller-highway-remote"
SPEED = "80 km/h"
# wayside's TCP profile closest to ns-3's TcpCubic + PRR with a 10-segment
# initial window and a 1 s initial RTO, on every node.
TCP_PROFILE = "linux-modern"
# What ns-3 gets of that profile (crates/wayside-sim/src/transport/tcp/
# profile.rs) and of the `linux` ARP profile: 64 KB receive window, MSS
# 1460 without timestamps, 200 ms minimum RTO, 40 ms delayed ACK, and a
# failed ARP entry that the next packet retries (ns-3 otherwise drops
# packets to it for 100 s).
NS3_STACK = {"mss": 1460, "rcvBuf": 65535, "initialCwnd": 10, "minRtoMs": 200, "delAckMs": 40, "arpDeadMs": 1}
# ns-3's thermal noise: kT at 290 K over the channel width (WifiPhy).
THERMAL_DBM_PER_HZ = -174.0
CHANNEL_WIDTH_HZ = 20e6
SPEED_OF_LIGHT = 299_792_458.0

_UNITS = {
    "m": 1.0, "km": 1e3,
    "s": 1.0, "ms": 1e-3, "us": 1e-6,
    "dBm": 1.0, "dB": 1.0, "dBi": 1.0,
    "bps": 1.0, "kbps": 1e3, "Mbps": 1e6, "Gbps": 1e9,
    "m/s": 1.0, "km/h": 1 / 3.6,
}
_QUANTITY = re.compile(r"\s*([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)\s*(\S*)\s*$")


def quantity(value: Any, key: str) -> float:
    """A scenario quantity ("19 dBm", "80 km/h", 1.5) in its base unit."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    m = _QUANTITY.fullmatch(str(value))
    if m is None or m.group(2) not in _UNITS:
        raise ValueError(f"{key}: {value!r} is not a quantity; units allowed: {', '.join(_UNITS)}")
    return float(m.group(1)) * _UNITS[m.group(2)]


def car_starts(case: str) -> list[float]:
    """Start x of each car (m, relative to the AP): one car where the
    scenario's car starts, or 50 evenly spaced over -1900..-100 m."""
    if case == "one":
        return [-1500.0]
    if case == "fifty":
        return [-1900.0 + i * 1800.0 / 49 for i in range(50)]
    raise ValueError(f"case: {case!r} is unknown; allowed: one, fifty")


def car_name(i: int) -> str:
    return f"car{i:02d}"


def wayside_scenario(base: dict[str, Any], xs: Sequence[float], ap_queue: str = "fifo") -> dict[str, Any]:
    """`base` (hadaller-highway-remote as a dict) with Minstrel on every
    radio, fast frames off (ns-3 has no 802.11g aggregation), TCP_PROFILE
    on every node, the AP's queue `ap_queue`, and one car with its own bulk
    transfer per start x."""
    s = {k: v for k, v in base.items() if k not in ("node", "app")}
    s["mac"] = dict(base["mac"], fast_frames=False, rate_control={"algorithm": "minstrel"})
    template = next(n for n in base["node"] if n.get("role") == "sta")
    app = next(a for a in base["app"] if a["kind"] == "tcp-bulk")
    nodes = []
    for n in base["node"]:
        if n.get("role") == "sta":
            continue
        n = dict(n, tcp=TCP_PROFILE)
        if n.get("role") == "ap" and ap_queue != "fifo":
            n["queue"] = ap_queue
        if "rate_control" in n:
            n["rate_control"] = {"algorithm": "minstrel"}
        nodes.append(n)
    apps = []
    for i, x in enumerate(xs):
        car = dict(template, name=car_name(i), position=[x, template["position"][1]], tcp=TCP_PROFILE)
        car["mobility"] = dict(template["mobility"], speed=SPEED)
        nodes.append(car)
        apps.append(dict(app, to=car_name(i)))
    s["node"] = nodes
    s["app"] = apps
    return s


def _node(s: dict[str, Any], role: str) -> dict[str, Any]:
    return next(n for n in s["node"] if n.get("role") == role)


# wayside's default transmit queue, frames (scenario mac.queue_limit).
WAYSIDE_QUEUE_LIMIT = 1000
# A WifiMacQueue age limit longer than any run: none in effect.
NO_MAX_DELAY = "1000s"


def ns3_setting(setting: str) -> tuple[str, str]:
    """NAME=VALUE, as `--ns3-set` takes it, split."""
    name, eq, value = setting.partition("=")
    if not (name and eq and value):
        raise ValueError(f"--ns3-set: {setting!r} is not NAME=VALUE "
                         "(e.g. nakagamiM=0 or ns3::WifiMacQueue::MaxSize=123p)")
    return name, value


def ns3_args(
    s: dict[str, Any],
    preamble_floor: float | None = None,
    class3_deauth: bool = True,
    ap_fifo: bool = False,
    no_max_delay: bool = False,
    extra: Sequence[str] = (),
) -> list[str]:
    """driveby.cc's command line for scenario `s` (as `wayside_scenario`
    builds it): the same road, radios, channel and backhaul.

    wayside locks on a frame when a draw on its PLCP header's success at
    the SINR says so, with no power floor; ns-3's threshold model needs
    4 dB SNR and an RSSI of at least `MinimumRssi` (-82 dBm by default).
    `preamble_floor` None sets that floor to the noise floor, where the
    4 dB SNR rule alone decides, as close to wayside as ns-3 allows.
    `class3_deauth` False leaves ns-3's AP as shipped: a car whose ACK of
    the association response was lost stays half-associated (driveby.cc).
    `ap_fifo` gives ns-3's AP wayside's FIFO (one drop-tail queue of
    wayside's length, no queue disc, no age limit); `no_max_delay` keeps
    ns-3's queue disc but lifts its WifiMacQueue's 500 ms age limit
    (`MaxDelay`), which neither ath9k's driver queue nor mac80211 has.
    `extra`: NAME=VALUE settings that go to driveby.cc as `--NAME=VALUE`
    last, over the ones derived here (a driveby option such as
    `nakagamiM=0`, or an ns-3 attribute such as
    `ns3::WifiMacQueue::MaxSize=123p`)."""
    env, radio = s["environment"], s["radio"]
    if env["path_loss"] != "three-log-distance":
        raise ValueError(f"environment.path_loss: {env['path_loss']!r}; the ns-3 side models three-log-distance only")
    if env.get("fading") != "rician":
        raise ValueError(f"environment.fading: {env.get('fading')!r}; the ns-3 side models rician only")
    ap, car = _node(s, "ap"), _node(s, "sta")
    cars = [n for n in s["node"] if n.get("role") == "sta"]
    link = s["link"][0]
    app = s["app"][0]
    channel = int(radio.get("channel", 1))
    freq = (2407 + 5 * channel) * 1e6
    d0 = quantity(env.get("reference_distance", 1), "environment.reference_distance")
    ref_loss = 20 * math.log10(4 * math.pi * d0 * freq / SPEED_OF_LIGHT)
    k = 10 ** (quantity(env.get("rician_k", "0 dB"), "environment.rician_k") / 10)
    nakagami_m = (k + 1) ** 2 / (2 * k + 1)
    noise = quantity(env.get("noise_floor", "-95 dBm"), "environment.noise_floor")
    noise_figure = noise - (THERMAL_DBM_PER_HZ + 10 * math.log10(CHANNEL_WIDTH_HZ))
    capture = radio.get("capture_margin", "10 dB")
    n0, n1, n2 = env["path_loss_exponents"]
    b1, b2 = (quantity(b, "environment.path_loss_breakpoints") for b in env["path_loss_breakpoints"])
    gains = {quantity(n.get("antenna_gain", 0), "antenna_gain") for n in (ap, *cars)}
    heights = {quantity(n.get("antenna_height", 1.5), "antenna_height") for n in (ap, *cars)}
    if len(gains) > 1 or len(heights) > 1:
        raise ValueError("node.*.antenna_gain / antenna_height: the ns-3 side takes one value for every radio")
    args = {
        "xs": ",".join(f"{n['position'][0]:.3f}" for n in cars),
        "carY": car["position"][1],
        "apX": ap["position"][0],
        "apY": ap["position"][1],
        "height": heights.pop(),
        "speed": quantity(car["mobility"]["speed"], "mobility.speed"),
        "duration": quantity(s["duration"], "duration"),
        "apTxPower": quantity(ap["tx_power"], "node.ap.tx_power"),
        "carTxPower": quantity(car["tx_power"], "node.car.tx_power"),
        "antennaGain": gains.pop(),
        "noiseFigure": round(noise_figure, 3),
        "referenceLoss": round(ref_loss, 3),
        "d0": d0,
        "d1": b1,
        "d2": b2,
        "n0": n0,
        "n1": n1,
        "n2": n2,
        "nakagamiM": round(nakagami_m, 4),
        "preambleMinRssi": noise if preamble_floor is None else preamble_floor,
        "captureMargin": -1 if capture == "off" else quantity(capture, "radio.capture_margin"),
        "ccaEd": quantity(radio.get("cca_threshold", "-62 dBm"), "radio.cca_threshold"),
        "linkMbps": quantity(link["bandwidth"], "link.bandwidth") / 1e6,
        "linkDelayMs": quantity(link["delay"], "link.delay") * 1e3,
        "startDelay": quantity(app.get("start_delay", 0), "app.start_delay"),
        "startDelayMax": quantity(app.get("start_delay_max", app.get("start_delay", 0)), "app.start_delay_max"),
        "class3Deauth": int(class3_deauth),
        **NS3_STACK,
    }
    if ap_fifo:
        limit = ap.get("queue_limit", s["mac"].get("queue_limit", WAYSIDE_QUEUE_LIMIT))
        args.update({"apQdisc": 0, "ns3::WifiMacQueue::MaxSize": f"{limit}p"})
    if ap_fifo or no_max_delay:
        args["ns3::WifiMacQueue::MaxDelay"] = NO_MAX_DELAY
    for name, value in map(ns3_setting, extra):
        args.pop(name, None)  # moved to the end: it goes last
        args[name] = value
    return [f"--{k}={v}" for k, v in args.items()]


@dataclass
class Outcome:
    """One simulator's run: loop seconds, and per car bytes and where it
    first associated (None: never)."""

    wall_s: float
    cpu_s: float
    bytes: list[int] = field(default_factory=list)
    assoc_x: list[float | None] = field(default_factory=list)
    # ns-3 only: where the AP first counted the car as associated.
    ap_assoc_x: list[float | None] = field(default_factory=list)
    # Where the car got its first data (None: never).
    data_x: list[float | None] = field(default_factory=list)
    # ns-3 only: the AP's queue counters (driveby.cc's `apqueue` line).
    queue: dict[str, float] = field(default_factory=dict)


_FIELD = re.compile(r"(\w+)=(\S+)")


def parse_ns3(text: str, cars: int) -> Outcome:
    """Reads driveby.cc's output: one `car` line per car, one `loop` line
    and, from a driveby.cc that counts them, one `apqueue` line."""
    rows: dict[int, dict[str, str]] = {}
    loop = None
    queue: dict[str, float] = {}
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        fields = dict(_FIELD.findall(rest))
        if kind == "car":
            rows[int(fields["index"])] = fields
        elif kind == "loop":
            loop = fields
        elif kind == "apqueue":
            queue = {k: float(v) for k, v in fields.items()}
    if loop is None or sorted(rows) != list(range(cars)):
        raise ValueError(f"ns-3 output: expected {cars} car lines and a loop line, got {len(rows)} car lines"
                         f"{'' if loop else ' and no loop line'}")
    out = Outcome(float(loop["wall_s"]), float(loop["cpu_s"]), queue=queue)
    for i in range(cars):
        r = rows[i]
        out.bytes.append(int(r["bytes"]))
        out.assoc_x.append(float(r["assoc_x"]) if r["associated"] == "1" else None)
        out.ap_assoc_x.append(float(r["ap_accepted_x"]) if r["ap_accepted"] == "1" else None)
        out.data_x.append(float(r["data_x"]) if r.get("data") == "1" else None)
    return out


def run_ns3(binary: Path, s: dict[str, Any], cars: int, options: dict[str, Any]) -> Outcome:
    """Runs driveby.cc for `s`; `options` are ns3_args's keywords."""
    proc = subprocess.run([str(binary), *ns3_args(s, **options)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{binary} exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    return parse_ns3(proc.stdout, cars)


def wayside_outcome(result: Any, cars: int, wall_s: float, cpu_s: float) -> Outcome:
    """Bytes delivered to each car's application, and x at its first
    association and at its first data, from a wayside RunResult."""
    import polars as pl

    names = [car_name(i) for i in range(cars)]
    got = (
        pl.DataFrame(result.transport)
        .with_columns(pl.col("node").cast(pl.Utf8))
        .group_by("node")
        .agg(pl.col("bytes").cast(pl.UInt64).sum())
    )
    delivered = dict(zip(got["node"].to_list(), got["bytes"].to_list()))
    events = pl.DataFrame(result.events).with_columns(pl.col("node").cast(pl.Utf8), pl.col("event").cast(pl.Utf8))

    def first_x(event: str) -> dict[str, float]:
        first = events.filter(pl.col("event") == event).sort("time_ns").group_by("node", maintain_order=True).first()
        return dict(zip(first["node"].to_list(), first["x"].to_list()))

    at, data = first_x("associated"), first_x("first-data")
    out = Outcome(wall_s, cpu_s)
    out.bytes = [int(delivered.get(n, 0)) for n in names]
    out.assoc_x = [float(at[n]) if n in at else None for n in names]
    out.data_x = [float(data[n]) if n in data else None for n in names]
    return out


def run_wayside(s: dict[str, Any], cars: int) -> Outcome:
    """Runs `s` once; the time is the whole run call (setup, event loop and
    trace export), which overstates wayside's event loop."""
    import wayside

    wall, cpu = time.perf_counter(), time.process_time()
    result = wayside.run(s)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return wayside_outcome(result, cars, wall, cpu)


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f}"


def _mean_x(xs: Sequence[float | None]) -> str:
    known = [x for x in xs if x is not None]
    return "-" if not known else f"{sum(known) / len(known):.0f}"


def _at(xs: Sequence[float | None], i: int) -> float | None:
    return xs[i] if i < len(xs) else None


def _ratio(a: float, b: float) -> str:
    return "n/a" if b == 0 else f"{a / b:.2f}x"


def report(case: str, xs: Sequence[float], ns3: Outcome, ws: Outcome, ap_queue: str = "fifo") -> str:
    """The case's table and summary, at most 80 columns wide."""
    lines = [f"== {case}: {len(xs)} car(s) at {SPEED}, {BASE_SCENARIO} road ==",
             f"wayside AP queue: {ap_queue}", ""]
    lines.append(f"{'':22}{'ns-3':>12}{'wayside':>12}{'ratio':>12}")
    lines.append(f"{'event loop wall s':22}{ns3.wall_s:12.2f}{ws.wall_s:12.2f}"
                 f"{_ratio(ns3.wall_s, ws.wall_s):>12}")
    lines.append(f"{'event loop CPU s':22}{ns3.cpu_s:12.2f}{ws.cpu_s:12.2f}"
                 f"{_ratio(ns3.cpu_s, ws.cpu_s):>12}")
    tn, tw = sum(ns3.bytes) / 1e6, sum(ws.bytes) / 1e6
    lines.append(f"{'data delivered MB':22}{tn:12.2f}{tw:12.2f}{_ratio(tw, tn):>12}")
    got_n = sum(b > 0 for b in ns3.bytes)
    got_w = sum(b > 0 for b in ws.bytes)
    lines.append(f"{'cars that got data':22}{got_n:12d}{got_w:12d}")
    as_n = sum(x is not None for x in ns3.assoc_x)
    as_w = sum(x is not None for x in ws.assoc_x)
    lines.append(f"{'cars associated':22}{as_n:12d}{as_w:12d}")
    ap_n = sum(x is not None for x in ns3.ap_assoc_x)
    lines.append(f"{'  ...AP agrees (ns-3)':22}{ap_n:12d}")
    lines.append(f"{'mean x at association':22}{_mean_x(ns3.assoc_x):>12}{_mean_x(ws.assoc_x):>12}")
    lines.append(f"{'mean x at first data':22}{_mean_x(ns3.data_x):>12}{_mean_x(ws.data_x):>12}")
    q = ns3.queue
    if q:
        lines.append("")
        lines.append(f"ns-3 AP: queue disc took {q['qdisc_enqueued']:.0f}, dropped {q['qdisc_overflow']:.0f} "
                     f"full and {q['qdisc_codel']:.0f} by CoDel;")
        lines.append(f"WifiMacQueue took {q['wmq_enqueued']:.0f}, expired {q['wmq_expired']:.0f} "
                     f"(MaxDelay), refused {q['wmq_refused']:.0f} (full);")
        lines.append(f"{q['wmq_removed']:.0f} left it after {q['wmq_mean_s']:.3f} s on average.")
        if "tries_failed" in q:
            lines.append(f"Unacknowledged AP tries: {q['tries_failed']:.0f}; MPDUs that used up "
                         f"their tries: {q['mpdus_failed']:.0f}.")
    lines.append("")
    lines.append("speed ratio = ns-3 / wayside seconds (wayside is that many times")
    lines.append("faster); data ratio = wayside / ns-3 bytes.")
    lines.append("")
    lines.append(f"{'':12}{' ns-3 ':-^28} {' wayside ':-^20}")
    lines.append(f"{'car':>4}{'start':>7}{'MB':>8}{'assoc':>7}{'AP x':>7}{'data':>7}"
                 f"{'MB':>8}{'assoc':>7}{'data':>6}{'ratio':>8}")
    for i, x in enumerate(xs):
        bn, bw = ns3.bytes[i] / 1e6, ws.bytes[i] / 1e6
        lines.append(f"{i:>4}{x:7.0f}{bn:8.2f}{_x(ns3.assoc_x[i]):>7}{_x(ns3.ap_assoc_x[i]):>7}"
                     f"{_x(_at(ns3.data_x, i)):>7}{bw:8.2f}{_x(ws.assoc_x[i]):>7}{_x(_at(ws.data_x, i)):>6}"
                     f"{_ratio(bw, bn):>8}")
    lines.append("")
    lines.append("assoc, data: car's x (m from the AP) at its first association and")
    lines.append("at its first data; AP x: where ns-3's AP first counted it associated.")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns3", type=Path, required=True, help="the compiled driveby.cc")
    ap.add_argument("--case", choices=["one", "fifty", "all"], default="all")
    ap.add_argument("--ns3-preamble-floor", type=float, metavar="DBM",
                    help="ns-3's preamble-detection MinimumRssi (default: the noise floor; ns-3's own: -82)")
    ap.add_argument("--ns3-as-shipped", action="store_true",
                    help="no class-3 deauthentication emulated at ns-3's AP (see driveby.cc)")
    ap.add_argument("--ns3-ap-fifo", action="store_true",
                    help="ns-3's AP queues as wayside's does: one drop-tail FIFO, no FqCoDel, no age limit")
    ap.add_argument("--ns3-no-max-delay", action="store_true",
                    help="keep ns-3's FqCoDel but lift its WifiMacQueue's 500 ms age limit (MaxDelay)")
    ap.add_argument("--ns3-set", action="append", default=[], metavar="NAME=VALUE",
                    help="pass --NAME=VALUE to driveby.cc last (a driveby option or an ns-3 attribute); repeatable")
    ap.add_argument("--ap-queue", action="append", choices=["fifo", "fq_codel", "airtime"],
                    help="wayside's AP queue; repeat to run several against one ns-3 run (default: fifo)")
    args = ap.parse_args(argv)
    queues = args.ap_queue or ["fifo"]
    try:
        for setting in args.ns3_set:
            ns3_setting(setting)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    if not args.ns3.is_file():
        print(f"--ns3: {args.ns3} is not a file; build driveby.cc first (benches/ns3/run.sh does)",
              file=sys.stderr)
        return 2
    import wayside

    base = wayside.load_scenario(BASE_SCENARIO)
    for case in (["one", "fifty"] if args.case == "all" else [args.case]):
        xs = car_starts(case)
        s = wayside_scenario(base, xs)
        options = {"preamble_floor": args.ns3_preamble_floor, "class3_deauth": not args.ns3_as_shipped,
                   "ap_fifo": args.ns3_ap_fifo, "no_max_delay": args.ns3_no_max_delay, "extra": args.ns3_set}
        try:
            ns3 = run_ns3(args.ns3, s, len(xs), options)
        except (RuntimeError, ValueError) as e:
            print(f"ns-3 run failed: {e}", file=sys.stderr)
            return 1
        for queue in queues:
            ws = run_wayside(wayside_scenario(base, xs, queue), len(xs))
            print(report(case, xs, ns3, ws, queue), flush=True)
            print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
