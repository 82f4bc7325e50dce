"""wayside: vehicular opportunistic communication — simulate a drive-by at
packet level, run Broadside on real hosts, and analyze what was lost.

>>> import wayside, polars as pl
>>> result = wayside.run("saturation", seed=1)
>>> pl.DataFrame(result.frames).head()
"""

from wayside.engine import ScenarioError
from wayside.result import RunResult
from wayside.runner import run
from wayside.scenario import builtin_scenarios, load_scenario
from wayside.sweeps import run_sweep as sweep

__all__ = ["RunResult", "ScenarioError", "builtin_scenarios", "load_scenario", "run", "sweep"]
__version__ = "0.1.0"
