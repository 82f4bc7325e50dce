"""Where the data of any scenario went: per flow, per car, per AP and per
association, with goodput against position along the road.

Unlike `wayside.driveby` (one car passing one AP, as Hadaller et al. 2007
analyze it), this assumes nothing about the road: any number of APs,
stations and applications. "Data" is application payload delivered (the
`transport` table: UDP datagrams received, TCP bytes delivered in order).
A car is a node with the station role; its position over time comes from
the rows it recorded. An association runs from the station's `associated`
event to its next `disassociated` or `roam` (the station leaving for
another AP after a background scan), or the end of the run; a handover is
a change of AP between two associations in a row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from wayside.driveby import usable_time
from wayside.result import RunResult
from wayside.traces import table

SLOT_NS = 100_000_000  # the track keeps one position per node and 100 ms


def stations(result: RunResult) -> list[str]:
    return [n["name"] for n in result.scenario.get("node", []) if n.get("role") == "sta"]


def access_points(result: RunResult) -> list[str]:
    return [n["name"] for n in result.scenario.get("node", []) if n.get("role") == "ap"]


Tracks = dict[str, pl.DataFrame]


def tracks(result: RunResult) -> Tracks:
    """Where every node that recorded anything was: its first row in each
    100 ms, and its last (per node, columns time_s, x, y)."""
    rows = pl.concat([table(result, name).select("time_ns", "node", "x", "y") for name in ("frames", "events")])
    rows = rows.filter(pl.col("x").is_not_nan())
    if rows.is_empty():
        return {}
    rows = rows.sort("node", "time_ns")
    last = rows.group_by("node").agg(pl.all().last())
    sampled = rows.with_columns((pl.col("time_ns") // SLOT_NS).alias("slot")).group_by("node", "slot").agg(
        pl.col("time_ns").first(), pl.col("x").first(), pl.col("y").first()).drop("slot")
    both = pl.concat([sampled, last.select(sampled.columns)]).unique(["node", "time_ns"], keep="first")
    both = both.sort("node", "time_ns").select(
        "node", (pl.col("time_ns") / 1e9).alias("time_s"), pl.col("x").cast(pl.Float64), pl.col("y").cast(pl.Float64))
    return {k[0]: v.drop("node") for k, v in both.partition_by("node", as_dict=True, maintain_order=True).items()}


def position_at(track: Tracks, node: str, times_s: np.ndarray) -> np.ndarray:
    """x of `node` at `times_s` (linear between its samples; NaN without any)."""
    t = track.get(node)
    if t is None:
        return np.full(len(times_s), math.nan)
    return np.interp(times_s, t["time_s"].to_numpy(), t["x"].to_numpy())


def _per_car(d: pl.DataFrame, cars: list[str]) -> dict[str, pl.DataFrame]:
    """The deliveries to or from each car (split once, not filtered per car)."""
    empty = d.clear()
    to = d.partition_by("receiver", as_dict=True)
    by = d.partition_by("sender", as_dict=True)
    return {c: pl.concat([to.get((c,), empty), by.get((c,), empty)]).sort("time_s") for c in cars}


def _delivered(result: RunResult) -> pl.DataFrame:
    """Every delivery (time_s, receiver, sender, app, bytes)."""
    t = table(result, "transport")
    return t.select((pl.col("time_ns") / 1e9).alias("time_s"), pl.col("node").alias("receiver"),
                    pl.col("peer").alias("sender"), "app", pl.col("bytes").cast(pl.Int64), "proto")


def flows(result: RunResult) -> pl.DataFrame:
    """Per application of the scenario: app, kind, from, to, data_mb, first
    and last delivery (s). Disabled applications are left out."""
    d = _delivered(result)
    rows = []
    for i, app in enumerate(result.scenario.get("app", [])):
        if app.get("enabled") is False:
            continue
        mine = d.filter(pl.col("app") == i)
        rows.append({"app": i, "kind": str(app.get("kind", "")), "from": str(app.get("from", "")),
                     "to": str(app.get("to", "")), "data_mb": float(mine["bytes"].sum()) / 1e6,
                     "first_s": float(mine["time_s"].min()) if mine.height else None,
                     "last_s": float(mine["time_s"].max()) if mine.height else None})
    return pl.DataFrame(rows, schema={"app": pl.Int64, "kind": pl.Utf8, "from": pl.Utf8, "to": pl.Utf8,
                                      "data_mb": pl.Float64, "first_s": pl.Float64, "last_s": pl.Float64})


def flow_label(row: dict) -> str:
    return f"{row['from']}→{row['to']}"


_ASSOC_SCHEMA = {"car": pl.Utf8, "ap": pl.Utf8, "start_s": pl.Float64, "end_s": pl.Float64, "start_x": pl.Float64,
                 "end_x": pl.Float64, "ended": pl.Utf8, "data_mb": pl.Float64, "production_start_x": pl.Float64,
                 "production_end_x": pl.Float64, "entry_mb": pl.Float64, "production_mb": pl.Float64,
                 "exit_mb": pl.Float64}


def production(times_s: np.ndarray, sizes: np.ndarray) -> tuple[float, float] | None:
    """When the production phase of one association started and ended: the
    first delivery from which the car gets at least the production goodput
    (`driveby.PRODUCTION_MBPS`) over the next `driveby.USABLE_WINDOW_S`,
    and the last delivery up to which it got that over the window before;
    None if it never did (deliveries sorted by time)."""
    start = usable_time(times_s, sizes)
    if start is None:
        return None
    end = usable_time(-times_s[::-1], sizes[::-1])  # the same rule, backwards in time
    return start, -end


def associations(result: RunResult, track: Tracks | None = None) -> pl.DataFrame:
    """One row per association of a station: car, ap, start_s, end_s,
    start_x, end_x, ended (disassociated, or end of run), data_mb (the
    data to and from the car delivered while it lasted) and its phases, as
    Hadaller et al. (2007) §6.1 split a pass but per association: where
    production started and ended (`production`; NaN without one) and the
    data in the entry, production and exit phases."""
    track = tracks(result) if track is None else track
    ev = table(result, "events").filter(pl.col("event").is_in(["associated", "disassociated", "roam"])).sort("time_ns")
    cars = stations(result)
    moved_by = _per_car(_delivered(result), cars)
    events_by = ev.partition_by("node", as_dict=True)
    end_of_run = result.duration_s
    rows = []
    for car in cars:
        mine = events_by.get((car,), ev.clear())
        moved = moved_by[car]
        open_: tuple[str, float] | None = None

        def close(t: float, how: str) -> None:
            ap, t0 = open_
            inside = moved.filter((pl.col("time_s") >= t0) & (pl.col("time_s") < t))
            times, sizes = inside["time_s"].to_numpy(), inside["bytes"].to_numpy()
            x0, x1 = position_at(track, car, np.array([t0, t]))
            phase = production(times, sizes)
            p0, p1 = phase if phase else (math.nan, math.nan)
            px = position_at(track, car, np.array([p0, p1])) if phase else (math.nan, math.nan)
            parts = ([float(sizes[m].sum()) / 1e6 for m in (times < p0, (times >= p0) & (times <= p1), times > p1)]
                     if phase else [math.nan] * 3)
            rows.append({"car": car, "ap": ap, "start_s": t0, "end_s": t, "start_x": float(x0), "end_x": float(x1),
                         "ended": how, "data_mb": float(sizes.sum()) / 1e6, "production_start_x": float(px[0]),
                         "production_end_x": float(px[1]), "entry_mb": parts[0], "production_mb": parts[1],
                         "exit_mb": parts[2]})

        for r in mine.iter_rows(named=True):
            t = r["time_ns"] / 1e9
            if r["event"] == "associated":
                if open_ is not None:
                    close(t, "reassociated")
                open_ = (str(r["peer"]), t)
            elif open_ is not None:
                close(t, "roamed" if r["event"] == "roam" else "disassociated")
                open_ = None
        if open_ is not None:
            close(end_of_run, "end of run")
    return pl.DataFrame(rows, schema=_ASSOC_SCHEMA)


HANDOVER_SCHEMA = {"car": pl.Utf8, "time_s": pl.Float64, "x": pl.Float64, "from": pl.Utf8, "to": pl.Utf8,
                   "how": pl.Utf8, "gap_s": pl.Float64, "data_gap_s": pl.Float64, "lost_mb": pl.Float64}


def handovers(assocs: pl.DataFrame, result: RunResult | None = None) -> pl.DataFrame:
    """Changes of AP between a car's associations in a row: car, time_s and
    x (when and where it left the old AP), from, to, how the old
    association ended (roamed, disassociated), gap_s (from leaving the old
    AP to associating with the new one). With the run's `result`, also
    data_gap_s, from the car's last MAC payload received from the old AP
    before it left to its first from the new one after it associated (NaN
    without either), and lost_mb, the MSDUs for the car that the old AP
    failed or dropped after the car last received from it, until the car
    associated with it again (or the end of the run)."""
    mac = table(result, "mac") if result is not None else None
    rows = []
    for car, g in assocs.sort("start_s").group_by("car", maintain_order=True):
        prev = None
        later = g.sort("start_s").to_dicts()
        for i, r in enumerate(later):
            if prev is not None and prev["ap"] != r["ap"]:
                row = {"car": car[0], "time_s": prev["end_s"], "x": prev["end_x"], "from": prev["ap"], "to": r["ap"],
                       "how": prev["ended"], "gap_s": r["start_s"] - prev["end_s"], "data_gap_s": math.nan,
                       "lost_mb": math.nan}
                if mac is not None:
                    row.update(_handover_data(mac, car[0], prev, r, later[i + 1:], result.duration_s))
                rows.append(row)
            prev = r
    return pl.DataFrame(rows, schema=HANDOVER_SCHEMA)


def _handover_data(mac: pl.DataFrame, car: str, old: dict, new: dict, after: list[dict], end_s: float) -> dict:
    """A handover's data gap and the data lost at the old AP (see `handovers`)."""
    t = pl.col("time_ns") / 1e9
    got = mac.filter((pl.col("node") == car) & (pl.col("event") == "received"))
    before = got.filter((pl.col("peer") == old["ap"]) & (t <= old["end_s"]))["time_ns"].max()
    first = got.filter((pl.col("peer") == new["ap"]) & (t >= new["start_s"]))["time_ns"].min()
    gap = (first - before) / 1e9 if before is not None and first is not None else math.nan
    back = next((a["start_s"] for a in after if a["ap"] == old["ap"]), end_s)
    since = before / 1e9 if before is not None else old["start_s"]
    lost = mac.filter((pl.col("node") == old["ap"]) & (pl.col("peer") == car)
                      & pl.col("event").is_in(["failed", "queue-drop"]) & (t > since) & (t <= back))
    return {"data_gap_s": gap, "lost_mb": float(lost["bytes"].cast(pl.Int64).sum()) / 1e6}


def cars(result: RunResult, assocs: pl.DataFrame | None = None, track: Tracks | None = None) -> pl.DataFrame:
    """Per station: data received and sent (MB), first and last data (time
    and x), associations, handovers and the APs that served it."""
    track = tracks(result) if track is None else track
    assocs = associations(result, track) if assocs is None else assocs
    moves = dict(handovers(assocs).group_by("car").len().iter_rows())
    names = stations(result)
    moved_by = _per_car(_delivered(result), names)
    assocs_by = assocs.partition_by("car", as_dict=True)
    rows = []
    for car in names:
        both = moved_by[car]
        got = both.filter(pl.col("receiver") == car)["bytes"].sum()
        first = float(both["time_s"].min()) if both.height else None
        last = float(both["time_s"].max()) if both.height else None
        xs = position_at(track, car, np.array([first or 0.0, last or 0.0]))
        mine = assocs_by.get((car,), assocs.clear())
        rows.append({"car": car, "received_mb": float(got) / 1e6, "sent_mb": float(both["bytes"].sum() - got) / 1e6,
                     "first_data_s": first, "first_data_x": float(xs[0]) if first is not None else None,
                     "last_data_s": last, "last_data_x": float(xs[1]) if last is not None else None,
                     "associations": mine.height, "handovers": moves.get(car, 0),
                     "served_by": ", ".join(dict.fromkeys(mine["ap"].to_list()))})
    return pl.DataFrame(rows, schema={"car": pl.Utf8, "received_mb": pl.Float64, "sent_mb": pl.Float64,
                                      "first_data_s": pl.Float64, "first_data_x": pl.Float64, "last_data_s": pl.Float64,
                                      "last_data_x": pl.Float64, "associations": pl.Int64, "handovers": pl.Int64,
                                      "served_by": pl.Utf8})


def aps(result: RunResult, assocs: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per AP: MAC payload it delivered to stations and received from them
    (MB), its position, and the cars it associated."""
    assocs = associations(result) if assocs is None else assocs
    mac = table(result, "mac")
    sta = stations(result)
    where = {n["name"]: n.get("position", [math.nan, math.nan]) for n in result.scenario.get("node", [])}
    rows = []
    for ap in access_points(result):
        out = mac.filter((pl.col("node") == ap) & (pl.col("event") == "delivered") & pl.col("peer").is_in(sta))
        inn = mac.filter((pl.col("node") == ap) & (pl.col("event") == "received") & pl.col("peer").is_in(sta))
        served = assocs.filter(pl.col("ap") == ap)["car"].unique(maintain_order=True).to_list()
        rows.append({"ap": ap, "x": float(where[ap][0]), "channel": _channel(result, ap),
                     "to_cars_mb": float(out["bytes"].cast(pl.Int64).sum()) / 1e6,
                     "from_cars_mb": float(inn["bytes"].cast(pl.Int64).sum()) / 1e6,
                     "cars": len(served), "served": ", ".join(served)})
    return pl.DataFrame(rows, schema={"ap": pl.Utf8, "x": pl.Float64, "channel": pl.Int64, "to_cars_mb": pl.Float64,
                                      "from_cars_mb": pl.Float64, "cars": pl.Int64, "served": pl.Utf8})


def _channel(result: RunResult, node: str) -> int | None:
    n = next(n for n in result.scenario.get("node", []) if n["name"] == node)
    ch = n.get("channel", result.scenario.get("radio", {}).get("channel"))
    return int(ch) if ch is not None else None


def goodput_along_road(result: RunResult, bin_m: float = 20.0, track: Tracks | None = None) -> pl.DataFrame:
    """Per car and bin of road (by x): the time the car spent there and the
    data delivered to or from it there. Columns car, start_m, time_s,
    bytes, goodput_mbps."""
    track = tracks(result) if track is None else track
    cars = stations(result)
    moved_by = _per_car(_delivered(result), cars)
    frames = []
    for car in cars:
        t = track.get(car)
        if t is None or t.height < 2:
            continue
        ts, xs = t["time_s"].to_numpy(), t["x"].to_numpy()
        # Time per bin from the track, sampled finely enough for any speed.
        grid = np.arange(ts[0], ts[-1], 0.05)
        gx = np.interp(grid, ts, xs)
        spent = pl.DataFrame({"bin": np.floor(gx / bin_m).astype(np.int64)}).group_by("bin").agg(
            (pl.len() * 0.05).alias("time_s"))
        moved = moved_by[car]
        mx = np.interp(moved["time_s"].to_numpy(), ts, xs)
        got = pl.DataFrame({"bin": np.floor(mx / bin_m).astype(np.int64), "bytes": moved["bytes"].to_numpy()},
                           schema={"bin": pl.Int64, "bytes": pl.Int64}).group_by("bin").agg(pl.col("bytes").sum())
        frames.append(spent.join(got, on="bin", how="left").fill_null(0).with_columns(pl.lit(car).alias("car")))
    if not frames:
        return pl.DataFrame(schema={"car": pl.Utf8, "start_m": pl.Float64, "time_s": pl.Float64, "bytes": pl.Int64,
                                    "goodput_mbps": pl.Float64})
    out = pl.concat(frames).with_columns((pl.col("bin") * bin_m).cast(pl.Float64).alias("start_m"))
    return out.select("car", "start_m", "time_s", "bytes",
                      (pl.col("bytes") * 8 / 1e6 / pl.col("time_s")).alias("goodput_mbps")).sort("car", "start_m")


def serving_ap(assocs: pl.DataFrame, car: str, times_s: np.ndarray) -> list[str | None]:
    """The AP `car` was associated with at each of `times_s` (None between
    associations)."""
    mine = assocs.filter(pl.col("car") == car).sort("start_s")
    out: list[str | None] = [None] * len(times_s)
    for r in mine.iter_rows(named=True):
        inside = (times_s >= r["start_s"]) & (times_s < r["end_s"])
        for i in np.nonzero(inside)[0]:
            out[i] = r["ap"]
    return out


@dataclass
class Breakdown:
    """All of one run's tables above, computed once."""

    name: str
    flows: pl.DataFrame
    cars: pl.DataFrame
    aps: pl.DataFrame
    associations: pl.DataFrame
    handovers: pl.DataFrame
    along_road: pl.DataFrame

    @property
    def data_mb(self) -> float:
        return float(self.flows["data_mb"].sum())


def breakdown(result: RunResult, name: str = "run", bin_m: float = 20.0) -> Breakdown:
    track = tracks(result)
    assocs = associations(result, track)
    return Breakdown(name, flows(result), cars(result, assocs, track), aps(result, assocs), assocs,
                     handovers(assocs, result), goodput_along_road(result, bin_m, track))
