"""Vehicle movement traces: reading SUMO floating-car data (FCD XML, and
the CSV and Parquet that SUMO writes when `--fcd-output` ends in .csv or
.parquet) and The ONE's external movement format, and writing the latter
and our own Parquet. A trace lives in Rust as compact columns (`_native.Trace`); the
XML and ONE readers stream the file, Parquet streams batch by batch through
pyarrow (`_native.TraceStream`), and CSV goes through polars' columnar
reader, so no trace is ever held as Python objects.
"""

from __future__ import annotations

import gzip
import itertools
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wayside import engine as _native

if TYPE_CHECKING:
    import polars as pl

# numpy, polars and pyarrow are imported where used: reading our Parquet
# needs pyarrow alone, and a command's start-up pays for what it uses.

TraceError = _native.TraceError
Trace = _native.Trace

FORMATS = ".xml, .xml.gz (SUMO FCD), .csv, .csv.gz, .parquet (SUMO FCD or our own), .one, .one.gz, .txt (The ONE)"

# Column names: SUMO's tabular FCD output (its XML attribute paths), then ours.
_COLUMNS = (("timestep_time", "vehicle_id", "vehicle_x", "vehicle_y"), ("time", "vehicle", "x", "y"))


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


def _columns(path: Path, names: list[str]) -> tuple[str, str, str, str]:
    cols = next((c for c in _COLUMNS if all(n in names for n in c)), None)
    if cols is None:
        raise TraceError(f"{path}: needs the columns {', '.join(_COLUMNS[0])} (SUMO) or {', '.join(_COLUMNS[1])}; it has {', '.join(names[:8])}")
    return cols


def _le(a: Any, dtype: str) -> bytes:
    import numpy as np

    return np.ascontiguousarray(np.asarray(a), dtype=dtype).tobytes()


def _from_parquet(path: Path, window: tuple[float, float] | None) -> Trace:
    """Streams a Parquet trace batch by batch into Rust: pyarrow decodes,
    Rust reads each batch through the Arrow C stream interface, and memory
    is the trace's compact columns plus one batch."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    # The system allocator gives freed batches back (pyarrow's default pool
    # keeps them: 100 MB more on the city), and one batch is read at a time.
    previous = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        f = pq.ParquetFile(path, memory_map=False, pre_buffer=False)
        cols = _columns(path, f.schema_arrow.names)
        # Reserve for every row unless a window will drop some.
        stream = _native.TraceStream(str(path), window, 0 if window else f.metadata.num_rows)
        batches = (_trace_batch(b, cols) for b in
                   f.iter_batches(batch_size=1 << 16, columns=list(cols), use_threads=False))
        first = next(batches, None)
        if first is not None:
            stream.push_arrow(pa.RecordBatchReader.from_batches(first.schema, itertools.chain([first], batches)))
    finally:
        pa.set_memory_pool(previous)
    return stream.finish()


def _trace_batch(batch: Any, cols: tuple[str, str, str, str]) -> Any:
    """One Parquet batch as `TraceStream.push_arrow` takes it: time
    float64, vehicle a dictionary of strings without nulls, x and y floats.
    Our own Parquet already is; SUMO's is converted."""
    import pyarrow as pa

    t, v, x, y = (batch.column(c) for c in cols)
    if v.null_count or not pa.types.is_dictionary(v.type) or not pa.types.is_float64(t.type) \
            or not all(pa.types.is_floating(c.type) for c in (x, y)):
        import pyarrow.compute as pc

        if v.null_count:  # SUMO writes a row for each empty time step
            keep = pc.is_valid(v)
            t, v, x, y = (pc.filter(c, keep) for c in (t, v, x, y))
        if not pa.types.is_dictionary(v.type):
            v = pc.dictionary_encode(v.cast(pa.string()))
        t, x, y = (c.cast(pa.float64()) for c in (t, x, y))
    if not pa.types.is_string(v.type.value_type):
        v = pa.DictionaryArray.from_arrays(v.indices, v.dictionary.cast(pa.string()))
    return pa.record_batch([t, v, x, y], names=["time", "vehicle", "x", "y"])


def _from_table(path: Path, window: tuple[float, float] | None) -> Trace:
    if path.name.lower().endswith(".parquet"):
        return _from_parquet(path, window)
    with (gzip.open(path, "rb") if path.name.endswith(".gz") else open(path, "rb")) as f:
        head = f.readline().decode("utf-8", "replace")
    import polars as pl

    sep = max(";,\t", key=head.count)
    lf = pl.scan_csv(path, separator=sep, infer_schema_length=10_000)
    t, v, x, y = _columns(path, lf.collect_schema().names())
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
