"""Validation against the papers: `wayside validate` reads validation files,
runs the scenario behind each published figure, measures it, and compares.
The files of the papers we reproduce ship with wayside, in
`wayside/validation/`; any other file is given by its path.

The package: `targets` (the file format, loading and finding files),
`running` (simulations, shared between targets, and seed sets), `judging`
(rows, tallies, exit code) and `rendering` (the table and output files).

File format
-----------

One file per paper. Every target names a published value, the scenario that
reproduces it, the metric that measures it (a function in
`wayside.metrics`), and how close is close enough::

    [meta]
    paper = "hadaller-2007"          # defaults to the file name
    title = "Vehicular opportunistic communication under the microscope"
    base_seed = 1                    # run i of every target uses seed base_seed + i

    [defaults]                       # optional: any target key, for every target
    scenario = "hadaller-highway"
    overrides = ['duration="100 s"'] # defaults' overrides come first, then the target's

    [[target]]
    name = "table3-54mbps"           # unique in the file; --only selects by it (globs allowed)
    source = "Hadaller et al. 2007, Table 3"
    scenario = "static-lab"          # built-in name, or a TOML path relative to this file's
                                     # directory, its parent, or the working directory; a bare
                                     # name not built in is also looked up as scenarios/NAME.toml
                                     # in the parent or the working directory (a checkout)
    overrides = ['mac.rate="54 Mbps"']   # as `wayside run --set`
    runs = 1                         # seeds base_seed .. base_seed + runs - 1; --runs N replaces it
    metric = "tcp_goodput_mbps"      # a function in wayside.metrics
    metric_args = { receiver = "client", skip = "2 s" }
    aggregate = "median"             # over runs: median (default) | mean | min | max | pNN
                                     # (percentile, e.g. p90) | none (the metric takes every
                                     # run at once, e.g. supremum_data_mb)
    expected = 29.3                  # the paper's figure
    tolerance = { relative = 0.10 }  # one of: relative = r   -> expected·(1 ± r)
                                     #         absolute = a   -> expected ± a
                                     #         factor = f     -> expected/f .. expected·f
                                     #         range = [lo, hi] (expected then optional, shown only)
    unit = "Mb/s"                    # optional, for the table

A target with a `grid` is run once per grid point (the same seeds at every
point), and measured and checked per point::

    [[target]]
    name = "udp-mobile-volume"
    grid = { "node.car.mobility.speed" = ["80 km/h", "120 km/h", "180 km/h"] }
    expected = [8.8, 7.8, 3.7]       # one per point (or one number for all points)
    tolerance = { relative = 0.35 }  # applies to each point
    monotone = "decreasing"          # optional: the measured values must fall (or "increasing": rise)
                                     # strictly from point to point

Several grid keys vary together (zipped, equal lengths), not as a product.
Each point's value becomes an override `key=value` after the target's own.

A grid target may also check the ratio of two of its points' measured
values (the points named by their labels), with its own expected value and
tolerance; it adds one row::

    grid = { "node.ap.rate_control.preset" = ["default", "tuned"] }
    ratio = { of = "default", to = "tuned", expected = 0.25, tolerance = { range = [0.15, 0.5] } }

A ratio or trend target whose points have no published figure of their
own leaves out `expected` and `tolerance`: its points are then measured
and shown, never judged or counted; only the ratio or trend row is.

`to = "best"` compares with whichever point measured highest (for "is this
point close to the best?", e.g. a packet size against every other).

Command line::

    wayside validate [TARGETS...] [--runs N] [--jobs J] [--only NAME] [--out DIR]
                     [--executor E] [--details] [--seed-sets K]

TARGETS are validation files, directories, or paper names (the stems of
the shipped files); default: every shipped file. `--runs N` replaces every
target's runs (a quick subset for CI); `--jobs J` worker processes (default:
the number of CPUs; `--executor dask://HOST:PORT` runs them on a Dask
cluster instead, see `wayside.jobs`); `--only` selects targets by name, "paper/name" or
"name [point]" (globs, repeatable); `--out DIR` also writes
DIR/validation.json and DIR/validation.csv. Runs with the same scenario,
overrides and seed are simulated once and measured for every target that
wants them. `--seed-sets K` measures everything K times on disjoint seeds
(`seed_set`: set j shifts every target's seeds by j × its runs) and shows,
per row, in how many sets it passed and the range of its values over the
sets (`render_sets`, `tally_sets`); the files then hold every set's rows,
told apart by `seed_set`.

Calibration: a scenario lists the targets it was fitted to in its
top-level `calibrated_on` ("paper/target", globs allowed). Those rows are
measured and shown apart, as "held" or "DRIFT", and never counted as
reproduced: the summary counts independent targets only.

In and out of sample: every row is one of three (`Row.sample`): in sample
(its scenario was calibrated on it), out of sample (its scenario was
calibrated on other targets: what the fit predicts), or unfitted (its
scenario lists no calibration). Under each paper's title and in the
summary, the median absolute relative error of each class is shown apart,
so a fit that helps its own rows and hurts the others shows. A scenario
fits at most one row of a table: calibrating on a grid target of several
points is an error (give the fitted row a target of its own).

Outcome, one line per target (per grid point, plus one for a monotone or
ratio check), fitting 80 columns: PASS, MISS or ERROR, the target, the
measured value, the paper's, and the deviation. `--details` adds under each
its source, scenario, metric, allowed range, runs, and how far outside it
missed (or the error: a scenario that does not exist or does not resolve,
a metric that cannot be computed). Exit code 0 if everything passes or
holds, 1 if any target misses or drifts, 2 on bad input (a malformed file,
an unknown metric or target, any ERROR).
"""

from wayside.validate.judging import (
    IN_SAMPLE,
    MEASURED,
    OUT_OF_SAMPLE,
    SAMPLES,
    UNFITTED,
    Row,
    aggregate,
    exit_code,
    sample_errors,
    tally,
    tally_sets,
)
from wayside.validate.rendering import WIDTH, render, render_sets, write_outputs
from wayside.validate.running import (
    Job,
    Request,
    calibrated_on,
    execute,
    resolve_scenario,
    run_seed_sets,
    run_targets,
    seed_set,
)
from wayside.validate.targets import (
    SHIPPED,
    Point,
    Ratio,
    Target,
    Tolerance,
    ValidationFileError,
    find_files,
    fmt,
    load_file,
    select,
)

__all__ = [
    "IN_SAMPLE", "OUT_OF_SAMPLE", "SAMPLES", "UNFITTED", "sample_errors",
    "MEASURED", "SHIPPED", "WIDTH", "Job", "Point", "Ratio", "Request", "Row", "Target", "Tolerance",
    "ValidationFileError", "aggregate", "calibrated_on", "execute", "exit_code", "find_files", "fmt",
    "load_file", "render", "render_sets", "resolve_scenario", "run_seed_sets", "run_targets", "seed_set",
    "select", "tally", "tally_sets", "write_outputs",
]
