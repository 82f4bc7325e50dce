"""Writes traces/small-city.fcd.xml.gz, the small trace the tests run on: a
district of the SUMO city (`wayside epidemic city`) over its first five
minutes, as SUMO FCD XML (positions to 0.01 m, as SUMO writes them).

    python scripts/make-small-trace.py CITY_DIR [--side 560] [--out traces/small-city.fcd.xml.gz]

The district is the square of side SIDE metres centred on downtown (x = 2 km,
y = 1.5 km, west of the river), cut from the trace after the warm-up.
"""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path

import polars as pl

from wayside import city, movement

DOWNTOWN = (2000.0, 1500.0)  # city.py: downtown is x = 1-3 km, west of the river
MINUTES = 5


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("city_dir", type=Path)
    ap.add_argument("--side", type=float, default=560.0)
    ap.add_argument("--out", type=Path, default=Path("traces/small-city.fcd.xml.gz"))
    a = ap.parse_args()
    t = movement.load(a.city_dir / "fcd.xml.gz", (city.WARMUP_S, city.WARMUP_S + MINUTES * 60))
    df = movement.to_frame(t)
    cx, cy = city.GRID_ORIGIN_M[0] + DOWNTOWN[0], city.GRID_ORIGIN_M[1] + DOWNTOWN[1]
    h = a.side / 2
    df = df.filter(pl.col("x").is_between(cx - h, cx + h) & pl.col("y").is_between(cy - h, cy + h))
    steps = sorted(set(range(MINUTES * 60)))
    by_time = {k[0]: g for k, g in df.group_by("time")}
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', "", "<fcd-export>"]
    for s in steps:
        g = by_time.get(float(s))
        if g is None or g.is_empty():
            lines.append(f'    <timestep time="{s:.2f}"/>')
            continue
        lines.append(f'    <timestep time="{s:.2f}">')
        for v, x, y in g.sort("vehicle").select(pl.col("vehicle").cast(pl.String), "x", "y").iter_rows():
            lines.append(f'        <vehicle id="{v}" x="{x:.2f}" y="{y:.2f}"/>')
        lines.append("    </timestep>")
    lines.append("</fcd-export>")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode(), compresslevel=9, mtime=0))
    print(f"{a.out}: {df['vehicle'].n_unique()} vehicles, {df.height} samples, {a.out.stat().st_size} bytes")


if __name__ == "__main__":
    main()
