"""The compiled engine (crates/wayside-py), as the rest of wayside sees it:
the one module that imports the extension `wayside._native`; every other
module goes through this one. Every export is typed in `_native.pyi`:

- scenarios: `run` (one run; its trace tables are Arrow streams, `Table`),
  `run_streaming` (its trace in batches while it goes on, `StreamedRun`),
  `resolve`, `resolve_defaults`, `builtin_names`, `builtin_text`,
  `ScenarioError`;
- the PHY: `rate_thresholds`;
- the Broadside node's command line: `broadside_cli`;
- emulation (real hosts through a scenario in real time): `emulate`,
  `emulate_addresses`;
- vehicle traces and the contact-level epidemic: `Trace`, `TraceError`,
  `read_fcd`, `read_one`, `TraceStream`, `epidemic_run`, `dtn_run`.

`LIBRARY` is the extension's file, for caches that must not outlive a
rebuild of the engine.
"""

from __future__ import annotations

from wayside import _native
from wayside._native import *  # noqa: F403  (the exports listed above; pyo3 sets __all__)

LIBRARY: str = _native.__file__
