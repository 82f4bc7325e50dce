"""wayside: vehicular opportunistic communication — simulate a drive-by at
packet level, run Broadside on real hosts, and analyze what was lost.

>>> import wayside, polars as pl
>>> result = wayside.run("saturation", seed=1)
>>> pl.DataFrame(result.frames).head()
"""

from typing import TYPE_CHECKING, Any

# Imported on first use (PEP 562), so that a command pays at start-up only
# for the libraries it uses (polars and pyarrow take a few hundred ms).
_LAZY = {"RunResult": ("wayside.result", "RunResult"), "ScenarioError": ("wayside.engine", "ScenarioError"),
         "builtin_scenarios": ("wayside.scenario", "builtin_scenarios"),
         "load_scenario": ("wayside.scenario", "load_scenario"), "run": ("wayside.runner", "run"),
         "sweep": ("wayside.sweeps", "run_sweep")}

if TYPE_CHECKING:
    from wayside.engine import ScenarioError
    from wayside.result import RunResult
    from wayside.runner import run
    from wayside.scenario import builtin_scenarios, load_scenario
    from wayside.sweeps import run_sweep as sweep


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'wayside' has no attribute {name!r}")
    import importlib

    module, attr = _LAZY[name]
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


__all__ = ["RunResult", "ScenarioError", "builtin_scenarios", "load_scenario", "run", "sweep"]
__version__ = "0.1.0"
