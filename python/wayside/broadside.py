"""`wayside broadside …`: run the Broadside node from the wayside CLI.

Each command forwards its arguments unchanged to the Rust node's command
line (`broadside_node::run_cli`, reached through
`wayside._native.broadside_cli`) and exits with its code: 0 ok, 1 runtime
failure, 2 usage or configuration error. Options, defaults and `--help` are
the node's own, so they are documented in one place:

    wayside broadside keygen --out provider.key
    wayside broadside publish map.bin --store store/ --key provider.key
    wayside broadside serve store/ --trust KEY --bind 0.0.0.0:47474
    wayside broadside status store/
    wayside broadside relay --listen-a … --listen-b … --a … --b … --loss 0.3

`serve` stops cleanly on SIGTERM or Ctrl-C (exit 0) and reloads its
`--config` on SIGHUP: while it runs, Python's own Ctrl-C handler is set
aside so that the node, not a KeyboardInterrupt, handles the signal.

The CLI registers this sub-app with `app.add_typer(broadside.app, name="broadside")`.
"""

from __future__ import annotations

import signal
import sys
import threading
from typing import Callable, List, Optional

import typer

from wayside import engine

PROG = "wayside broadside"

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Broadside on real hosts: keys, publishing, serving, status, a lossy relay.",
)

# Arguments are not parsed here: everything after the command name, `--help`
# included, goes to the node's parser.
_FORWARD = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


def _native_cli() -> Optional[Callable[[List[str]], int]]:
    return getattr(engine, "broadside_cli", None)


def run(args: List[str]) -> int:
    """Runs the node's command line on `args` (without the program name) and
    returns its exit code; 2 if this build has no Broadside CLI."""
    cli = _native_cli()
    if cli is None:
        print(
            f"{PROG}: error: this build of wayside has no Broadside node "
            "(wayside._native.broadside_cli is missing); rebuild the extension",
            file=sys.stderr,
        )
        return 2
    # Whatever Python printed must reach the terminal before Rust writes to the same descriptors.
    sys.stdout.flush()
    sys.stderr.flush()
    # The extension adds the program name ("wayside broadside") itself.
    if not args or args[0] != "serve" or threading.current_thread() is not threading.main_thread():
        return int(cli(list(args)))
    # The node installs its own SIGINT handler; Python's would raise
    # KeyboardInterrupt after the node had already stopped cleanly.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return int(cli(list(args)))
    finally:
        signal.signal(signal.SIGINT, previous)


def _forward(command: str, ctx: typer.Context) -> None:
    code = run([command, *ctx.args])
    raise typer.Exit(code=code)


_COMMANDS = {
    "keygen": "Generate a provider key: --out FILE (secret seed); prints the public key.",
    "publish": "Sign a new version of FILE into a store: FILE --store DIR --key FILE [--name NAME].",
    "serve": "Serve a store directory (--create for a new one; --config FILE for settings); "
    "SIGTERM/Ctrl-C stop it cleanly, SIGHUP reloads.",
    "status": "Print whether a node serves a store, its files, versions, partials, peers, counters.",
    "relay": "Run a seeded lossy UDP relay between two nodes on loopback.",
}


def _forwarder(command: str) -> Callable[[typer.Context], None]:
    def forward(ctx: typer.Context) -> None:
        _forward(command, ctx)

    return forward


for _name, _help in _COMMANDS.items():
    app.command(name=_name, help=_help, context_settings=_FORWARD, add_help_option=False)(_forwarder(_name))


def main() -> None:
    """Entry point for running this sub-app on its own (`python -m wayside.broadside`)."""
    app(prog_name=PROG)


if __name__ == "__main__":
    main()
