"""Merging the captures of several sniffers of one run into one list of
transmissions (Hadaller et al. 2007 §3.1: four sniffers so that every frame
on the air was caught by at least one; "our data set unifies these four
captured traces").

Each sniffer stamps frames with its host's clock. The offsets between the
hosts' clocks (Table 2: up to 500 ms of drift a day) are estimated from the
frames two sniffers both caught: a first transmission (retry bit clear) is
identified by its transmitter, sequence number, kind and length. A host
stamps a frame its own radio sent (a record without a received signal) at
its first bit and a frame it received at its last, so such a pair's
difference of stamps is the offset plus or minus the frame's airtime
(from its length and rate), which is taken off; frames both received
need nothing. The median of the corrected differences is the hosts'
offset. Offsets chain from the reference host through every host that
shares frames with one already placed. Then the records are put on the
reference clock and duplicates removed: records of the same transmitter,
receiver, sequence number, retry bit, kind and length from different
sniffers close in time are one transmission: within `FIRST_WINDOW_S` for a
first transmission (its sequence number makes it unique for seconds),
within `RETRY_WINDOW_S` for a retry (the airings of one frame share their
sequence number) and for frames without a transmitter address or sequence
number (ACK, CTS: matched by receiver and length).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import polars as pl

# Two copies of a retry (or of an ACK or CTS) are one airing when, on the
# reference clock, they are closer than this: below the gap between two
# airings of one frame (an ACK timeout plus the retry's airtime, over 100 µs
# at any 802.11 rate; two ACKs are at least a data frame apart).
RETRY_WINDOW_S = 100e-6
# A first transmission's copies are one airing within this: one
# transmitter's sequence numbers wrap after 4096 frames, at least 1.6 s at
# 54 Mb/s (a 1500-byte frame with its preamble, SIFS and ACK takes about
# 400 µs in 802.11g), so 10 ms absorbs hosts' timestamping jitter without
# merging two frames.
FIRST_WINDOW_S = 10e-3
# Largest clock offset looked for between two sniffers' hosts, and the
# fewest shared frames that place a host.
MAX_OFFSET_S = 1.0
MIN_SHARED = 20

_KEY = ["ta", "ra", "seq", "retry", "kind", "bytes"]


class MergeError(ValueError):
    """Sniffer captures that cannot be put on one clock."""


@dataclass(frozen=True)
class Offsets:
    """Each host's clock minus the reference host's, in seconds, and how
    many shared frames placed it (0 for the reference and for hosts given)."""

    reference: str
    seconds: dict[str, float]
    shared: dict[str, int]


def _airtime_s() -> pl.Expr:
    """A frame's time on the air from its length and rate: the PSDU's bits
    plus the preamble and header (802.11g OFDM 20 µs; DSSS long 192 µs)."""
    dsss = pl.col("rate_mbps").is_in([1.0, 2.0, 5.5, 11.0])
    rate = pl.col("rate_mbps").fill_nan(1.0).fill_null(1.0).cast(pl.Float64)
    preamble = pl.when(dsss).then(192e-6).otherwise(20e-6)
    return pl.col("bytes").cast(pl.Float64) * 8 / rate / 1e6 + preamble


def pair_offset(a: pl.DataFrame, b: pl.DataFrame, max_offset_s: float = MAX_OFFSET_S) -> tuple[float, int]:
    """b's clock minus a's, from the first transmissions both caught (see
    the module's doc), and how many there were (NaN and 0 when none)."""
    def firsts(df: pl.DataFrame) -> pl.DataFrame:
        sent = pl.col("rssi_dbm").is_null() | pl.col("rssi_dbm").is_nan()
        return df.filter((pl.col("ta") != "") & (pl.col("seq") >= 0) & ~pl.col("retry") & ~pl.col("bad_fcs")).select(
            "ta", "seq", "kind", "bytes", "rate_mbps", "time_s", sent.alias("sent")).sort("time_s")
    fa, fb = firsts(a), firsts(b).drop("rate_mbps").rename({"time_s": "time_b", "sent": "sent_b"})
    if fa.is_empty() or fb.is_empty():
        return math.nan, 0
    # Sequence numbers wrap every 4096 frames of a transmitter: pair each
    # frame with b's nearest one of the same key within the largest offset.
    pairs = fa.join_asof(fb.with_columns(pl.col("time_b").alias("time_s")).sort("time_s"), on="time_s",
                         by=["ta", "seq", "kind", "bytes"], strategy="nearest", tolerance=max_offset_s,
                         check_sortedness=False).drop_nulls("time_b")
    if pairs.is_empty():
        return math.nan, 0
    d = pl.col("time_b") - pl.col("time_s")
    offset = pl.when(pl.col("sent")).then(d - _airtime_s()).when(pl.col("sent_b")).then(d + _airtime_s()).otherwise(d)
    return float(pairs.select(offset.median()).item()), pairs.height


def clock_offsets(records: pl.DataFrame, hosts: dict[str, str], reference: str,
                  given: dict[str, float] | None = None, min_shared: int = MIN_SHARED) -> Offsets:
    """Every host's offset from the reference host's clock. `hosts` maps a
    sniffer to the host whose clock stamps it; `given` fixes some hosts'
    offsets (from the manifest) instead of estimating them."""
    given = dict(given or {})
    by_host = {h: records.filter(pl.col("sniffer").is_in([s for s, hh in hosts.items() if hh == h]))
               for h in sorted(set(hosts.values()))}
    placed = {reference: given.pop(reference, 0.0), **given}
    shared = dict.fromkeys(placed, 0)
    frontier = sorted(h for h in placed if h in by_host)
    while frontier:
        nxt = []
        for h in frontier:
            for other in sorted(by_host):
                if other in placed:
                    continue
                off, n = pair_offset(by_host[h], by_host[other])
                if n >= min_shared:
                    placed[other] = placed[h] + off
                    shared[other] = n
                    nxt.append(other)
        frontier = nxt
    missing = sorted(set(by_host) - set(placed))
    if missing:
        raise MergeError(
            f"host(s) {', '.join(missing)}: fewer than {min_shared} frames shared with a sniffer already on the "
            f"reference clock ({reference}); give their clock offsets in capture.toml ([clock] HOST = \"±N ms\")")
    return Offsets(reference, placed, shared)


def merge(records: pl.DataFrame, hosts: dict[str, str], offsets: Offsets) -> pl.DataFrame:
    """One row per transmission, on the reference clock, sorted by time:
    the record columns (the earliest copy's) plus `heard_by` (the sniffers
    that caught it) and `rssi_by` (their signal readings, same order)."""
    host_of = pl.DataFrame({"sniffer": list(hosts), "offset": [offsets.seconds[h] for h in hosts.values()]})
    on_ref = records.join(host_of, on="sniffer", how="left").with_columns(
        (pl.col("time_s") - pl.col("offset")).alias("time_s")).drop("offset")
    ordered = on_ref.sort([*_KEY, "time_s"])
    same_key = pl.all_horizontal([pl.col(c) == pl.col(c).shift(1) for c in _KEY]).fill_null(False)
    first = (pl.col("seq") >= 0) & ~pl.col("retry")
    window = pl.when(first).then(pl.lit(FIRST_WINDOW_S)).otherwise(pl.lit(RETRY_WINDOW_S))
    close = (pl.col("time_s") - pl.col("time_s").shift(1) <= window).fill_null(False)
    grouped = ordered.with_columns((~(same_key & close)).cum_sum().alias("airing"))
    airings = grouped.group_by("airing").agg(
        pl.all().exclude("sniffer", "rssi_dbm").first(),
        pl.col("rssi_dbm").first(),
        pl.col("sniffer").alias("heard_by"),
        pl.col("rssi_dbm").alias("rssi_by"),
    )
    return airings.drop("airing").sort("time_s", "ta", "ra", "seq", "kind")

