"""``policyscheduler lsp``: the language server for editors (Language Server Protocol on stdin/stdout).

Editors start it as a subprocess (see README, "Editor support"). It is wired here, in the CLI, because
the diagnostics it publishes are lint's: the loader's diagnostics plus
:func:`policyscheduler.cli.lint.with_lint_checks`, the same function ``policyscheduler lint`` runs.
Exit status 0 when the editor shuts the server down.
"""

from __future__ import annotations

import argparse

__all__ = ["add_arguments", "run"]


def _millis(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of milliseconds: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stdio", action="store_true",
                        help="talk LSP on stdin/stdout (the default and only transport; accepted because "
                             "editors pass it)")
    parser.add_argument("--debounce-ms", type=_millis, default=100, metavar="MS",
                        help="quiet time after a change before the set is re-checked (default 100)")


def run(args: argparse.Namespace) -> int:
    from policyscheduler.cli.lint import with_lint_checks
    from policyscheduler.lsp import build_server

    server = build_server(with_lint_checks, debounce=args.debounce_ms / 1000)
    server.start_io()
    return 0
