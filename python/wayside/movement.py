"""Vehicle movement traces: reading SUMO floating-car data (FCD XML, and
the CSV and Parquet that SUMO writes when `--fcd-output` ends in .csv or
.parquet) and The ONE's external movement format, and writing the latter
and our own Parquet. A trace lives in Rust as compact columns
(`_native.Trace`); the XML and ONE readers stream the file, the Parquet
reader (in Rust too) decodes the four columns it needs row group by row
group, and CSV goes through polars' columnar reader, so no trace is ever
held as Python objects.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wayside import engine as _native

if TYPE_CHECKING:
    import polars as pl

# numpy and polars are imported where used: reading a Parquet trace needs
# neither, and a command's start-up pays for what it uses.

TraceError = _native.TraceError
Trace = _native.Trace

FORMATS = ".xml, .xml.gz (SUMO FCD), .csv, .csv.gz, .parquet (SUMO FCD or our own), .one, .one.gz, .txt (The ONE)"

def _kind(path: Path) -> str:
    name = path.name.lower().removesuffix(".gz")
    for suffix, kind in ((".xml", "fcd"), (".csv", "table"), (".parquet", "table"), (".one", "one"), (".txt", "one")):
        if name.endswith(suffix):
            return kind
    raise TraceError(f"{path}: unknown trace format; allowed: {FORMATS}")


def load(path: str | Path, window: tuple[float, float] | None = None) -> Trace:
    """Reads a trace; `window = (from, to)` keeps the samples in [from, to)
    and shifts time so that `from` is 0."""
    path = Path(path)
    if not path.is_file():
        raise TraceError(f"{path}: no such trace file")
    kind = _kind(path)
    if kind == "fcd":
        return _native.read_fcd(path, window)
    if kind == "one":
        return _native.read_one(path, window)
    return _from_table(path, window)


def _le(a: Any, dtype: str) -> bytes:
    import numpy as np

    return np.ascontiguousarray(np.asarray(a), dtype=dtype).tobytes()


def _from_table(path: Path, window: tuple[float, float] | None) -> Trace:
    if path.name.lower().endswith(".parquet"):
        return _native.read_parquet(path, window)
    with (gzip.open(path, "rb") if path.name.endswith(".gz") else open(path, "rb")) as f:
        head = f.readline().decode("utf-8", "replace")
    import polars as pl

    sep = max(";,\t", key=head.count)
    lf = pl.scan_csv(path, separator=sep, infer_schema_length=10_000)
    t, v, x, y = _native.trace_columns(str(path), lf.collect_schema().names())
    df = (lf.select(pl.col(t).cast(pl.Float64).alias("t"), pl.col(v).cast(pl.String).alias("v"),
                    pl.col(x).cast(pl.Float64).alias("x"), pl.col(y).cast(pl.Float64).alias("y"))
          .filter(pl.col("v").is_not_null())  # SUMO writes a row for each empty time step
          .collect())
    return from_frame(df, str(path), window)


def from_frame(df: pl.DataFrame, label: str, window: tuple[float, float] | None = None) -> Trace:
    """A trace from a DataFrame with the columns t, v (vehicle id), x, y in
    time order; `label` names it in errors."""
    import polars as pl

    # Vehicle codes: dense ranks of the ids, so code i names the i-th sorted id.
    codes = (df["v"].rank("dense") - 1).cast(pl.UInt32).to_numpy()
    ids = df["v"].unique().sort().to_list()
    stream = _native.TraceStream(label, window)
    stream.push(_le(df["t"], "<f8"), _le(codes, "<u4"), _le(df["x"], "<f8"), _le(df["y"], "<f8"), ids)
    return stream.finish()


def to_frame(trace: Trace) -> pl.DataFrame:
    """The samples as a DataFrame (time, vehicle, x, y), vehicle categorical."""
    import numpy as np
    import polars as pl

    t, v, x, y = trace.columns()
    names = pl.Series("vehicle", trace.names(), dtype=pl.String)
    return pl.DataFrame({
        "time": np.frombuffer(t, "<f8"),
        "vehicle": names.gather(pl.Series(np.frombuffer(v, "<u4"))).cast(pl.Categorical),
        "x": np.frombuffer(x, "<f4"),
        "y": np.frombuffer(y, "<f4"),
    })


def save_parquet(trace: Trace, path: str | Path) -> None:
    """Writes our Parquet (time, vehicle, x, y), readable by `load`."""
    to_frame(trace).write_parquet(path, compression="zstd")


def write_one(trace: Trace, path: str | Path, park: bool = True) -> None:
    """Writes The ONE's external movement format (see wayside-contact's
    `one` module: `park` adds the parking lot The ONE needs for vehicles
    that appear and disappear)."""
    trace.write_one(Path(path), park)
