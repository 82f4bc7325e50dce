"""The command line's consoles (stdout, stderr) and its one way to fail: a
clear message on stderr and exit code 2, never a traceback."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.markup import escape

console = Console()
errors = Console(stderr=True)


def fail(message: str) -> None:
    errors.print(f"[bold red]error:[/] {escape(message)}", highlight=False, markup=True, emoji=False, soft_wrap=True)
    raise typer.Exit(code=2)
