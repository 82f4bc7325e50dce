"""The door to the compiled engine: `wayside.engine` is the only module that
imports the extension, `_native.pyi` types every export, and a run's trace
tables cross through the Arrow C stream interface into pyarrow, polars and
pandas without a copy."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import wayside
from wayside import _native, engine

PACKAGE = Path(wayside.__file__).parent
STUB = PACKAGE / "_native.pyi"


@pytest.fixture(scope="module")
def raw():
    return engine.run(engine.builtin_text("saturation"), ['duration="2 s"'], 1)


def _imports_native(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "wayside" and any(a.name == "_native" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.module == "wayside._native":
            return True
        if isinstance(node, ast.Import) and any(a.name == "wayside._native" for a in node.names):
            return True
    return False


def test_only_the_engine_module_imports_the_extension():
    importers = sorted(
        str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
        if _imports_native(ast.parse(p.read_text(encoding="utf-8")))
    )
    assert importers == ["engine.py"]


def _stub() -> tuple[list[str], dict[str, ast.AST]]:
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    exported: list[str] = []
    defs: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            exported = list(ast.literal_eval(node.value))
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defs[node.name] = node
    return exported, defs


def _params(fn: ast.FunctionDef) -> list[str]:
    return [a.arg for a in fn.args.args]


def test_the_stub_types_every_export_with_its_parameters():
    exported, defs = _stub()
    assert sorted(exported) == sorted(_native.__all__)
    for name in exported:
        assert name in defs, f"{name} is exported but not defined in {STUB.name}"
        runtime = getattr(_native, name)
        if inspect.isbuiltin(runtime):
            fn = defs[name]
            assert isinstance(fn, ast.FunctionDef)
            assert _params(fn) == list(inspect.signature(runtime).parameters), name
            assert fn.returns is not None, f"{name}: no return type"
            assert all(a.annotation is not None for a in fn.args.args), f"{name}: a parameter has no type"
        elif isinstance(runtime, type) and not issubclass(runtime, BaseException):
            cls = defs[name]
            assert isinstance(cls, ast.ClassDef)
            typed = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
            public = {m for m in vars(runtime) if not m.startswith("_") or m == "__arrow_c_stream__"}
            assert public <= typed, f"{name}: untyped members {sorted(public - typed)}"


def test_engine_reexports_everything_and_names_the_library():
    for name in _native.__all__:
        assert getattr(engine, name) is getattr(_native, name)
    assert Path(engine.LIBRARY).is_file()
    assert wayside.ScenarioError is engine.ScenarioError


def test_a_table_is_an_arrow_stream_every_consumer_reads(raw):
    table = raw["tables"]["frames"]
    capsule = table.__arrow_c_stream__()
    assert type(capsule).__name__ == "PyCapsule"
    via_pyarrow = pa.RecordBatchReader.from_stream(table).read_all()
    via_polars = pl.DataFrame(table)
    via_pandas = pd.DataFrame.from_arrow(table) if hasattr(pd.DataFrame, "from_arrow") else via_pyarrow.to_pandas()
    assert via_pyarrow.num_rows == via_polars.height == len(via_pandas) > 100
    assert via_pyarrow.column_names == via_polars.columns == list(via_pandas.columns)
    assert via_pyarrow.schema.field("node").type == pa.dictionary(pa.uint32(), pa.string())
    assert via_pyarrow.schema.field("event").type == pa.dictionary(pa.uint8(), pa.string())
    assert via_polars["time_ns"].to_list() == via_pyarrow["time_ns"].to_pylist() == via_pandas["time_ns"].tolist()
    assert set(via_polars["node"].cast(pl.Utf8)) == {"sender", "receiver"}
    assert set(via_pandas["event"].astype(str)) <= {"tx", "rx", "drop"}
    # The requested schema is not applied: the table keeps its own.
    assert pa.RecordBatchReader.from_stream(table, schema=None).schema == via_pyarrow.schema


def _address(arrow_array: pa.Array) -> int:
    return arrow_array.buffers()[1].address


def test_the_stream_hands_over_the_engines_buffers_not_copies(raw):
    table = raw["tables"]["frames"]
    first = pa.RecordBatchReader.from_stream(table).read_all()
    again = pa.RecordBatchReader.from_stream(table).read_all()
    for name in ("time_ns", "rssi_dbm", "bytes"):
        assert _address(first[name].chunks[0]) == _address(again[name].chunks[0]), name
    # polars hands its column back to Arrow without a copy too, so the
    # address tells whether taking it in copied.
    from_polars = pl.DataFrame(table)["time_ns"].to_arrow()
    assert _address(from_polars) == _address(first["time_ns"].chunks[0])
    # pandas with Arrow-backed columns keeps the buffers as well.
    as_pandas = first.select(["time_ns"]).to_pandas(types_mapper=pd.ArrowDtype)
    assert _address(pa.array(as_pandas["time_ns"].array)) == _address(first["time_ns"].chunks[0])


def test_broadcast_rows_name_the_broadcast_node():
    result = wayside.run("chen-vanet", seed=1, overrides=['duration="3 s"'])
    peers = set(pl.DataFrame(result.frames)["peer"].cast(pl.Utf8))
    assert "broadcast" in peers
    assert peers - {"broadcast"} <= set(result.nodes)
