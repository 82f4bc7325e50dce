"""Per-MAC-rate reference figures measured on our own static scenario (the
lab set-up behind Hadaller et al. 2007, Table 3), cached on disk:

- the static TCP goodput at each fixed rate (measured as iperf reports it:
  from the first byte delivered, after 1 s of slow start), which turns a
  rate into the goodput the theoretical potential counts (§5);
- the TCP-ACK frames the receiver sends per Mbit delivered, and the airtime
  one TCP ACK costs at that rate (the data frame carrying it plus its MAC
  ACK, from transmission to end of reception in the frame trace), which
  price the receiver's ACK rates (§6.3.2).

The cache key is the resolved scenario text of every rate's run, the seed,
a hash of the compiled engine and the measuring method's version, so a changed scenario or engine is
measured again. The cache lives in $WAYSIDE_CACHE, else ~/.cache/wayside."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import polars as pl

from wayside import engine
from wayside.jobs import run_jobs

SKIP_S = 1.0
# Part of the cache key: bump when what measure_rate measures changes.
METHOD = 1


@dataclass(frozen=True)
class RateProfile:
    rate_mbps: float
    goodput_mbps: float
    acks_per_mbit: float  # receiver's TCP-ACK frames per Mbit delivered
    ack_airtime_us: float  # one such frame and its MAC ACK, on the air

    @property
    def ack_us_per_mbit(self) -> float:
        """Airtime the receiver's TCP ACKs take per Mbit delivered at this
        rate (fast frames pack two ACKs per frame at the high rates, so
        frames per Mbit and airtime per frame both vary)."""
        return self.acks_per_mbit * self.ack_airtime_us


def cache_dir() -> Path:
    return Path(os.environ.get("WAYSIDE_CACHE") or Path.home() / ".cache" / "wayside")


@lru_cache(maxsize=1)
def _engine_hash() -> str:
    h = hashlib.sha256()
    with open(engine.LIBRARY, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _rates(scenario: str) -> list[float]:
    from wayside.scenario import load_scenario

    standard = load_scenario(scenario)["radio"]["standard"]
    return [m for m, _, _ in engine.rate_thresholds(standard, 1500)]


def _rate_text(rate: float) -> str:
    return f"{rate:g} Mbps"


def measure_rate(job: tuple[str, float, int]) -> RateProfile:
    """Runs `scenario` once at a fixed MAC rate and measures it (a job for
    `wayside.jobs.run_jobs`)."""
    from wayside import traces
    from wayside.runner import run

    scenario, rate, seed = job
    result = run(scenario, seed=seed, overrides=[f'mac.rate="{_rate_text(rate)}"'])
    app = result.scenario["app"][0]
    sender, receiver = app["from"], app["to"]
    goodput = traces.tcp_goodput_mbps(result, receiver=receiver, sender=sender, skip=SKIP_S, origin="first-data")
    delivered = traces.table(result, "transport").filter((pl.col("node") == receiver) & (pl.col("proto") == "tcp"))
    frames = traces.table(result, "frames")
    if delivered.is_empty():
        return RateProfile(rate, goodput, float("nan"), float("nan"))
    start = int(delivered["time_ns"].min()) + int(SKIP_S * 1e9)
    mbit = float(delivered.filter(pl.col("time_ns") >= start)["bytes"].cast(pl.UInt64).sum()) * 8 / 1e6
    acks = frames.filter(
        (pl.col("node") == receiver) & (pl.col("peer") == sender) & (pl.col("event") == "tx")
        & (pl.col("kind") == "data") & (pl.col("time_ns") >= start)
    )
    airtime = _airtime_us(frames, receiver, sender, "data") + _airtime_us(frames, sender, receiver, "ack")
    return RateProfile(rate, goodput, acks.height / mbit if mbit > 0 else float("nan"), airtime)


def _airtime_us(frames: pl.DataFrame, src: str, dst: str, kind: str) -> float:
    """Mean time from `src`'s transmission of a `kind` frame to the end of
    its reception at `dst` (the frame's airtime plus propagation), µs."""
    tx = frames.filter((pl.col("node") == src) & (pl.col("event") == "tx") & (pl.col("kind") == kind) & (pl.col("peer") == dst))
    rx = frames.filter((pl.col("node") == dst) & (pl.col("event") == "rx") & (pl.col("kind") == kind) & (pl.col("peer") == src))
    if tx.is_empty() or rx.is_empty():
        return float("nan")
    # The reception of the same frame (same sequence number and size) that
    # ends within 5 ms: a TCP ACK or MAC ACK lasts under 1.5 ms even at 1 Mbps.
    pairs = tx.select("time_ns", "seq", "bytes").sort("time_ns").join_asof(
        rx.select(pl.col("time_ns").alias("rx_ns"), "time_ns", "seq", pl.col("bytes").alias("rx_bytes")).sort("time_ns"),
        on="time_ns", by="seq", strategy="forward", tolerance=5_000_000, check_sortedness=False,
    ).filter(pl.col("rx_bytes") == pl.col("bytes"))
    if pairs.is_empty():
        return float("nan")
    return float((pairs["rx_ns"].cast(pl.Int64) - pairs["time_ns"].cast(pl.Int64)).mean()) / 1e3


def static_profile(scenario: str = "static-lab", seed: int = 1, workers: int | None = None,
                   executor: str = "local", use_cache: bool = True) -> list[RateProfile]:
    """One RateProfile per rate of the scenario's standard, slowest first:
    from the cache when the same scenario, seed and engine were measured
    before, else measured now (one run per rate, in parallel)."""
    rates = _rates(scenario)
    from wayside.scenario import scenario_text

    text = scenario_text(scenario)
    resolved = [engine.resolve(text, [f'mac.rate="{_rate_text(r)}"']) for r in rates]
    key = hashlib.sha256(json.dumps([resolved, seed, _engine_hash(), METHOD]).encode()).hexdigest()[:24]
    path = cache_dir() / f"static-{key}.json"
    if use_cache and path.is_file():
        try:
            return [RateProfile(**row) for row in json.loads(path.read_text(encoding="utf-8"))]
        except (ValueError, TypeError):
            pass  # a damaged cache file is measured again
    jobs = [(scenario, r, seed) for r in rates]
    out: list[RateProfile | None] = [None] * len(jobs)
    for i, profile in run_jobs(measure_rate, jobs, executor=executor, workers=workers):
        out[i] = profile
    profiles = [p for p in out if p is not None]
    if use_cache:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps([asdict(p) for p in profiles]), encoding="utf-8")
            tmp.replace(path)
        except OSError:
            pass  # an unwritable cache only costs time
    return profiles
