"""A run whose trace is written to Parquet while it goes on: the same
tables as a run that keeps them, opened lazily."""

from __future__ import annotations

import json

import polars as pl
import pyarrow.parquet as pq

import wayside
from wayside.result import TABLES, scan
from wayside.runner import run_to_directory


def test_streamed_run_directory_holds_the_whole_trace(tmp_path):
    overrides = ['duration="30 s"']
    whole = wayside.run("drive-by", seed=4, overrides=overrides)
    d = run_to_directory("drive-by", tmp_path / "run", seed=4, overrides=overrides, rows=2_000)
    lazy = scan(d)
    assert set(lazy) == set(TABLES)
    for name in TABLES:
        assert isinstance(lazy[name], pl.LazyFrame)
        # Compared as polars frames: pyarrow's `equals` holds NaN (the
        # signal columns of `tx` rows) unequal to itself.
        written = pl.DataFrame(pq.read_table(d / f"{name}.parquet"))
        assert written.equals(pl.DataFrame(getattr(whole, name))), name
    # Many row groups: the frames came out in batches while the run went on.
    assert pq.ParquetFile(d / "frames.parquet").num_row_groups > 5
    n = lazy["frames"].select(pl.len()).collect().item()
    assert n == whole.frames.num_rows
    summary = json.loads((d / "summary.json").read_text())
    assert summary["stats"]["events"] == whole.stats["events"]
    assert summary["nodes"] == whole.nodes
