"""`python -m wayside.zahn`: the sweep over Zahn et al. (2009)'s three
locations and configurations, printed as tables within 80 columns, and
with `--plots DIR` Figures 2-11 and a markdown report
([`wayside.zahn.report`])."""

from __future__ import annotations

from typing import Sequence

from wayside import zahn
from wayside.zahn.report import write_report


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m wayside.zahn [--runs N] [--jobs J] [--variants a,b] [--out runs.csv] [--plots DIR]`"""
    import argparse
    import textwrap

    p = argparse.ArgumentParser(prog="python -m wayside.zahn", description="Zahn et al. 2009 §5: sweep the three locations and print the paper's metrics.")
    p.add_argument("--runs", type=int, default=5, help="seeds per location and variant (paper: 5)")
    p.add_argument("--jobs", type=int, default=1, help="worker processes")
    p.add_argument("--variants", default=",".join(zahn.VARIANTS), help=f"comma-separated, of {', '.join(zahn.VARIANTS)}")
    p.add_argument("--out", help="also write every run's row to this CSV file")
    p.add_argument("--plots", metavar="DIR", help="also write Figures 2-11 as PNGs and report.md into DIR")
    a = p.parse_args(argv)
    if a.runs < 1:
        p.error(f"--runs: {a.runs} is not at least 1")
    try:
        runs = zahn.sweep(a.runs, [v for v in a.variants.split(",") if v], a.jobs)
    except ValueError as e:
        # Within 80 columns after argparse's "PROG: error: " prefix.
        prefix = " " * len(f"{p.prog}: error: ")
        p.error("\n".join(textwrap.wrap(str(e), 80, initial_indent=prefix, subsequent_indent="  ")).lstrip())
    if a.out:
        runs.write_csv(a.out)
    table = zahn.summary(zahn.broadside_runs(runs))
    print(zahn.format_summary(table))
    print("\n95% intervals (MB/b: bootstrap, paired by seed)")
    print(zahn.format_intervals(table))
    print("\nBytes the receiver sent back, per run")
    print(zahn.format_acks(zahn.ack_table(runs)))
    sizes = zahn.size_table(runs)
    if not sizes.is_empty():
        print("\nFigure 7: saturating sender, median MB by packet size")
        print(zahn.format_sizes(sizes))
    if a.plots:
        print(f"\nreport: {write_report(runs, a.plots)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
