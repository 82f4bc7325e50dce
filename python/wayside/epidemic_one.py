"""Parity with The ONE (Keränen et al. 2009), both ways.

- `export` writes a trace as a complete The ONE scenario: the external
  movement file (plain or gzip), a settings file (world size, hosts,
  interface, router, message events, seeds), the message events and the
  map from The ONE's host numbers to vehicle ids and roles (The ONE reads
  only plain movement files: the settings name the file without .gz,
  and say to unpack it). With roles
  (devices and seeds), only the equipped vehicles are hosts and every seed
  creates the file at time 0 (one message id, as The ONE allows the same
  id at several hosts); a device holds the file once The ONE's event log
  shows it relayed to it.
- `load_settings` reads a The ONE settings file with external movement
  into our DTN run (`epidemic_dtn`): one host group, its router, buffer,
  TTL and send queue, one interface, and `MessageEventGenerator` or
  `ExternalEventsQueue` events. The trace is read as The ONE sees it
  (`_native.read_one(as_the_one=True)`), so host `i` is The ONE's host `i`.
  Creation events repeating one id at several hosts at one time are one
  message with a copy at each host, as in The ONE.
"""

from __future__ import annotations

import gzip
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import polars as pl

from wayside import engine as _native, epidemic_dtn, movement

ROUTER_CLASSES = {"EpidemicRouter": "epidemic", "SprayAndWaitRouter": "spray-and-wait", "ProphetRouter": "prophet",
                  "DirectDeliveryRouter": "direct-delivery", "FirstContactRouter": "first-contact"}
FILE_ID = "F"


class OneError(ValueError):
    """A settings file or export that cannot be used; the message names
    the key and what is allowed."""


def _write_movement(trace: movement.Trace, out: Path) -> list[str]:
    """Writes the movement file (gzip when the name ends in .gz) and
    returns the ids in The ONE's host order (the first time instance)."""
    plain = out.with_name(out.name[:-3]) if out.name.endswith(".gz") else out
    movement.write_one(trace, plain, park=True)
    ids: list[str] = []
    with open(plain, encoding="utf-8") as f:
        f.readline()
        first = None
        for line in f:
            if line.startswith("#"):
                continue
            t, vid, *_ = line.split()
            if first is None:
                first = t
            if t != first:
                break
            ids.append(vid)
    if plain != out:
        with open(plain, "rb") as src, gzip.open(out, "wb", compresslevel=6) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        plain.unlink()
    return ids


def _header(path: Path) -> list[float]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [float(v) for v in f.readline().split()]


def export(trace: movement.Trace, out: Path, roles: tuple[Sequence[str], Sequence[str]] | None = None,
           router: str = "epidemic", range_m: float = 150.0, transfer_s: float = 20.0,
           speed: float = 1_000_000.0, seed: int = 1) -> dict[str, Path]:
    """Writes OUT (the movement file, .one/.txt, optionally .gz) and beside
    it OUT.settings.txt, OUT.events.txt (with roles) and OUT.hosts.csv;
    returns their paths. The file is `transfer_s * speed` bytes."""
    if router not in epidemic_dtn.ROUTERS:
        raise OneError(f"router '{router}': allowed: {', '.join(epidemic_dtn.ROUTERS)}")
    stem = out.name.removesuffix(".gz")
    base = out.with_name(stem.rsplit(".", 1)[0])
    paths = {"movement": out, "settings": base.with_suffix(".settings.txt"), "hosts": base.with_suffix(".hosts.csv")}
    frame = movement.to_frame(trace).with_columns(pl.col("vehicle").cast(pl.String))
    role_of: dict[str, str] = {}
    if roles is not None:
        role_of = {v: "device" for v in roles[0]} | {v: "seed" for v in roles[1]}
        frame = frame.filter(pl.col("vehicle").is_in(list(role_of)))
        missing = set(role_of) - set(frame["vehicle"].unique().to_list())
        if missing:
            raise OneError(f"vehicle '{sorted(missing)[0]}' of the roles is not in the trace")
    sub = trace
    if roles is not None:
        sub = movement.from_frame(frame.select(pl.col("time").alias("t"), pl.col("vehicle").alias("v"),
                                               pl.col("x").cast(pl.Float64), pl.col("y").cast(pl.Float64)), str(out))
    try:
        ids = _write_movement(sub, out)
    except (movement.TraceError, OSError) as e:
        raise OneError(str(e)) from None
    hosts = pl.DataFrame({"host": range(len(ids)), "vehicle": ids,
                          "role": [role_of.get(v, "host") for v in ids]})
    hosts.write_csv(paths["hosts"])
    min_t, max_t, min_x, max_x, min_y, max_y = _header(out)[:6]
    size = int(round(transfer_s * speed))
    lines = [f"# The ONE scenario written by wayside epidemic convert ({len(ids)} hosts).",
             f"Scenario.name = {base.name}", "Scenario.simulateConnections = true",
             f"Scenario.updateInterval = {_step(trace):g}", f"Scenario.endTime = {max_t:g}",
             "Scenario.nrofHostGroups = 1", "iface.type = SimpleBroadcastInterface",
             f"iface.transmitSpeed = {speed:.0f}", f"iface.transmitRange = {range_m:g}",
             "Group.groupID = v", f"Group.nrofHosts = {len(ids)}", "Group.movementModel = ExternalMovement",
             *([f"# The ONE reads plain text only: gunzip {out.name} first."] if out.name.endswith(".gz") else []),
             f"ExternalMovement.file = {out.with_name(out.name.removesuffix('.gz'))}", f"Group.router = {_class(router)}", "Group.nrofInterfaces = 1",
             "Group.interface1 = iface", f"SprayAndWaitRouter.nrofCopies = {epidemic_dtn.COPIES}",
             "SprayAndWaitRouter.binaryMode = true", f"ProphetRouter.secondsInTimeUnit = {epidemic_dtn.PROPHET[3]:g}",
             "Events.nrof = 1"]
    if roles is not None:
        paths["events"] = base.with_suffix(".events.txt")
        seeds = [h for h, v in enumerate(ids) if role_of[v] == "seed"]
        # Every seed creates the file at 0 s, for the first seed (never
        # delivered elsewhere: devices only relay it).
        paths["events"].write_text("".join(f"{min_t:g} C {FILE_ID} {h} {seeds[0]} {size}\n" for h in seeds),
                                   encoding="utf-8")
        lines += ["Events1.class = ExternalEventsQueue", f"Events1.filePath = {paths['events']}"]
    else:
        lines += ["Events1.class = MessageEventGenerator", "Events1.interval = 25,35", f"Events1.size = {size}",
                  f"Events1.hosts = 0,{len(ids)}", "Events1.prefix = M"]
    lines += [f"MovementModel.rngSeed = {seed}",
              f"MovementModel.worldSize = {int(max_x - min_x) + 1}, {int(max_y - min_y) + 1}",
              "Report.nrofReports = 2", f"Report.reportDir = {base.name}-reports", "Report.report1 = MessageStatsReport",
              "Report.report2 = EventLogReport", "Optimization.cellSizeMult = 5",
              "Optimization.randomizeUpdateOrder = true"]
    paths["settings"].write_text("\n".join(lines) + "\n", encoding="utf-8")
    return paths


def _step(trace: movement.Trace) -> float:
    s = trace.stats()
    return (s["end"] - s["start"]) / max(s["steps"] - 1, 1)


def _class(router: str) -> str:
    return next(c for c, r in ROUTER_CLASSES.items() if r == router)


def parse(path: Path) -> dict[str, str]:
    """The key = value lines of a The ONE settings file (# comments)."""
    out: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise OneError(f"{path}: cannot be read ({e.strerror or e})") from None
    for no, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if "=" not in line:
            raise OneError(f"{path}, line {no}: '{line}' is not 'key = value'")
        k, v = (p.strip() for p in line.split("=", 1))
        out[k] = v
    return out


@dataclass(frozen=True)
class Scenario:
    name: str
    movement: Path
    end: float
    settings: epidemic_dtn.Settings


def _get(s: dict[str, str], key: str, ns: Sequence[str], default: str | None = None) -> str:
    for n in ns:
        if f"{n}.{key}" in s:
            return s[f"{n}.{key}"]
    if default is None:
        raise OneError(f"{ns[-1]}.{key}: missing; The ONE needs it")
    return default


def load_settings(path: Path, seed: int | None = None, run: int = 0) -> Scenario:
    """A The ONE settings file as our DTN run (see the module doc)."""
    s = parse(path)
    if _get(s, "nrofHostGroups", ["Scenario"]) != "1":
        raise OneError("Scenario.nrofHostGroups: only one host group is supported")
    group = ["Group1", "Group"]
    if _get(s, "movementModel", group) != "ExternalMovement":
        raise OneError(f"Group.movementModel = {_get(s, 'movementModel', group)}: only ExternalMovement is supported")
    router_class = _get(s, "router", group)
    if router_class not in ROUTER_CLASSES:
        raise OneError(f"Group.router = {router_class}: allowed: {', '.join(ROUTER_CLASSES)}")
    router = ROUTER_CLASSES[router_class]
    if router == "spray-and-wait" and _get(s, "binaryMode", ["SprayAndWaitRouter"], "true").lower() != "true":
        raise OneError("SprayAndWaitRouter.binaryMode = false: only binary spray-and-wait is modelled")
    iface = _get(s, "interface1", group)
    ttl = _get(s, "msgTtl", group, "")
    q = _get(s, "sendQueue", group, "random").lower()
    gens, msgs = [], []
    for i in range(1, int(_get(s, "nrof", ["Events"], "0")) + 1):
        ev = [f"Events{i}"]
        cls = _get(s, "class", ev)
        if cls == "MessageEventGenerator":
            gens.append(epidemic_dtn.Generator(_get(s, "interval", ev), _get(s, "size", ev), _get(s, "hosts", ev),
                                               s.get(f"Events{i}.tohosts"), s.get(f"Events{i}.time"),
                                               _get(s, "prefix", ev)))
        elif cls == "ExternalEventsQueue":
            msgs += _creations(Path(_get(s, "filePath", ev)))
        else:
            raise OneError(f"Events{i}.class = {cls}: allowed: MessageEventGenerator, ExternalEventsQueue")
    prophet = (epidemic_dtn.PROPHET[0], float(_get(s, "beta", ["ProphetRouter"], "0.25")),
               float(_get(s, "gamma", ["ProphetRouter"], "0.98")),
               float(_get(s, "secondsInTimeUnit", ["ProphetRouter"], "30")))
    settings = epidemic_dtn.Settings(
        router=router, generators=tuple(gens), messages=tuple(msgs), ttl_min=int(ttl) if ttl else None,
        copies=int(_get(s, "nrofCopies", ["SprayAndWaitRouter"], str(epidemic_dtn.COPIES))), prophet=prophet,
        range_m=epidemic_dtn.amount(_get(s, "transmitRange", [iface]), f"{iface}.transmitRange"),
        speed=epidemic_dtn.amount(_get(s, "transmitSpeed", [iface]), f"{iface}.transmitSpeed"),
        buffer=int(epidemic_dtn.amount(_get(s, "bufferSize", group, str(2**31 - 1)), "Group.bufferSize")),
        queue={"1": "random", "2": "fifo"}.get(q, q),
        seed=int(_get(s, "rngSeed", ["MovementModel"], "1")) if seed is None else seed, run=run)
    return Scenario(_get(s, "name", ["Scenario"], path.stem), Path(_get(s, "file", ["ExternalMovement"])),
                    float(_get(s, "endTime", ["Scenario"])), settings)


def _creations(path: Path) -> list[tuple[int, int, int, float, tuple[int, ...]]]:
    """The creation events (`time C id from to size`) of an external
    events file; one id created at several hosts is one message (from,
    to, size, created, the further hosts)."""
    by_id: dict[str, list[tuple[int, int, int, float]]] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise OneError(f"{path}: cannot be read ({e.strerror or e})") from None
    for no, line in enumerate(lines, 1):
        f = line.split()
        if not f or f[0].startswith("#") or len(f) < 2 or f[1] != "C":
            continue
        try:
            c = (int(f[3]), int(f[4]), int(epidemic_dtn.amount(f[5], "size")), float(f[0]))
        except (IndexError, ValueError, epidemic_dtn.DtnError):
            raise OneError(f"{path}, line {no}: '{line}' is not 'time C id from to size'") from None
        first = by_id.setdefault(f[2], [c])[0]
        if c is not first:
            if c[1:] != first[1:]:
                raise OneError(f"{path}, line {no}: message {f[2]} is created again with another destination, "
                               "size or time; one id created at several hosts needs the same to, size and time")
            by_id[f[2]].append(c)
    out = [(cs[0][0], cs[0][1], cs[0][2], cs[0][3], tuple(c[0] for c in cs[1:])) for cs in by_id.values()]
    return sorted(out, key=lambda m: m[3])


def run_settings(scenario: Scenario) -> tuple[movement.Trace, epidemic_dtn.Result]:
    """Reads the scenario's movement as The ONE sees it and runs it."""
    try:
        trace = _native.read_one(scenario.movement, None, True)
    except movement.TraceError as e:
        raise OneError(str(e)) from None
    return trace, epidemic_dtn.run(trace, scenario.settings)
