"""A run's trace tables as polars, and the pieces every analysis of them
shares (unit strings, node checks, the data delivered to a receiver, TCP
goodput): `wayside.metrics`, `wayside.driveby` and `wayside.staticlab` all
build on this module, which imports none of them."""

from __future__ import annotations

import re

import polars as pl

from wayside.result import RunResult

_TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9, "min": 60.0, "h": 3600.0}
_LENGTH_UNITS = {"m": 1.0, "km": 1e3}
_QUANTITY = re.compile(r"\s*([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)\s*([^\s0-9].*?)?\s*$")


def _quantity(value: float | int | str, units: dict[str, float], what: str, name: str) -> float:
    if isinstance(value, bool):
        raise ValueError(f"{name}: {value!r} is not a {what}")
    if isinstance(value, (int, float)):
        return float(value)
    m = _QUANTITY.fullmatch(str(value))
    if m and (m.group(2) or "") in units:
        return float(m.group(1)) * units[m.group(2)]
    if m and not m.group(2):
        return float(m.group(1))
    raise ValueError(f"{name}: {value!r} is not a {what}; use a number or a unit string with {', '.join(units)}")


def seconds(value: float | int | str, name: str = "duration") -> float:
    """A duration in seconds from a number (seconds) or a string like "500 ms"."""
    return _quantity(value, _TIME_UNITS, "duration", name)


def metres(value: float | int | str, name: str = "length") -> float:
    """A length in metres from a number (metres) or a string like "1.2 km"."""
    return _quantity(value, _LENGTH_UNITS, "length", name)


def table(result: RunResult, name: str) -> pl.DataFrame:
    """One of a run's trace tables as polars, node/peer/event/... as Utf8."""
    df = pl.DataFrame(getattr(result, name))
    return df.with_columns(pl.col(c).cast(pl.Utf8) for c, t in df.schema.items() if t == pl.Categorical or t == pl.Enum)


def check_node(result: RunResult, node: str, arg: str) -> None:
    if node not in result.nodes:
        raise ValueError(f"{arg}: no node named '{node}' in the run; nodes: {', '.join(result.nodes)}")


def delivered(result: RunResult, receiver: str, proto: str, sender: str | None, app: int | None) -> pl.DataFrame:
    """Rows of the transport table delivered to `receiver`, filtered."""
    check_node(result, receiver, "receiver")
    if sender is not None:
        check_node(result, sender, "sender")
    if proto not in ("tcp", "udp", "any"):
        raise ValueError(f"proto: '{proto}' is not a protocol; allowed: tcp, udp, any")
    t = table(result, "transport").filter(pl.col("node") == receiver)
    if proto != "any":
        t = t.filter(pl.col("proto") == proto)
    if sender is not None:
        t = t.filter(pl.col("peer") == sender)
    if app is not None:
        apps = result.scenario.get("app", [])
        if not isinstance(app, int) or isinstance(app, bool) or not 0 <= app < len(apps):
            raise ValueError(f"app: {app!r} is not an application of the scenario; it has {len(apps)} (indices 0 to {len(apps) - 1})")
        t = t.filter(pl.col("app") == app)
    return t


def tcp_goodput_mbps(
    result: RunResult,
    receiver: str,
    skip: float | str = 0.0,
    origin: str = "run",
    sender: str | None = None,
) -> float:
    """TCP goodput at `receiver`, Mb/s: in-order TCP payload bytes delivered
    to the application from `skip` onwards, divided by the time from `skip`
    to the end of the run.

    `origin = "run"` counts `skip` from the start of the run;
    `origin = "first-data"` from the receiver's first delivered TCP byte (so
    association and connection set-up time do not count, as with iperf's
    report). 0 if nothing was delivered; `sender` restricts to one peer."""
    t = delivered(result, receiver, "tcp", sender, None)
    skip_s = seconds(skip, "skip")
    if origin == "run":
        start_ns = skip_s * 1e9
    elif origin == "first-data":
        if t.is_empty():
            return 0.0
        start_ns = float(t["time_ns"].min()) + skip_s * 1e9
    else:
        raise ValueError(f"origin: '{origin}' is not allowed; allowed: run, first-data")
    end_ns = result.duration_s * 1e9
    if end_ns <= start_ns:
        raise ValueError(f"skip: {skip!r} leaves no time to measure (the run lasts {result.duration_s:g} s)")
    got = t.filter(pl.col("time_ns") >= start_ns)["bytes"].cast(pl.UInt64).sum()
    return float(got) * 8 / ((end_ns - start_ns) * 1e-9) / 1e6
