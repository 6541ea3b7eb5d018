"""``policyscheduler`` command line: thin dispatch to one module per subcommand.

``lint`` is delegated verbatim to :func:`policyscheduler.cli.lint.main` (its own argparse), so both
entry points agree on options and exit codes. Any exception escaping a subcommand is a bug: it prints
one ``policyscheduler: internal error: ...`` line and a hint, and exits 70 (EX_SOFTWARE) -- never a
traceback, unless ``POLICYSCHEDULER_DEBUG=1`` asks for one.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

__all__ = ["main", "EXIT_INTERNAL_ERROR"]

EXIT_INTERNAL_ERROR = 70


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("policyscheduler")
    except Exception:  # not installed (plain source checkout)
        return "0+unknown"


def _parser() -> argparse.ArgumentParser:
    from policyscheduler.cli import simulate

    parser = argparse.ArgumentParser(
        prog="policyscheduler",
        description="A Kubernetes scheduler whose filter and score rules are .policy files.",
    )
    parser.add_argument("--version", action="version", version=f"policyscheduler {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser(
        "lint",
        help="check .policy files (exit 0 clean, 1 errors found)",
        add_help=False,
    )
    sim = commands.add_parser(
        "simulate",
        help="schedule a snapshot's pending pods under a policy set",
        description="Schedule the pending pods of a cluster snapshot one by one under a policy set.",
    )
    simulate.add_arguments(sim)
    from policyscheduler.cli import run as run_command

    live = commands.add_parser(
        "run",
        help="the live scheduler: watch the cluster, decide with the policies, bind",
        description="Schedule the pods whose spec.schedulerName is ours on a live cluster.",
    )
    run_command.add_arguments(live)
    from policyscheduler.cli import policies

    policies.add_arguments(commands.add_parser(
        "policies",
        help="about the bundled default policies ('policies path': where they are)",
        description="Print where the bundled default policy set is (the one every command layers your files on).",
    ))
    from policyscheduler.cli import explain

    explain.add_arguments(commands.add_parser(
        "explain",
        help="why a pod goes where it goes (or fits nowhere): per node, the rule and clause, the scores",
        description="Explain the scheduler's decision for one pod on a snapshot (--cluster) or a live cluster "
        "(--kubeconfig), with the same policies and engine the scheduler uses.",
    ))
    from policyscheduler.cli import policytest

    policytest.add_arguments(commands.add_parser(
        "test",
        help="run policy tests (YAML cases next to the policies); exit 1 on failure",
        description="Run the policy test cases found under PATH (YAML files with a pod and expectations).",
    ))
    from policyscheduler.cli import fmt

    fmt.add_arguments(commands.add_parser(
        "fmt",
        help="format .policy files in the canonical layout (--check, --diff)",
        description="Format .policy files in place in the one canonical layout, keeping every comment.",
    ))
    from policyscheduler.cli import docs

    docs.add_arguments(commands.add_parser(
        "docs",
        help="write (or --check) the generated language reference grammar/REFERENCE.md",
        description="Generate the language reference from the schema, the builtins and the lint catalogue.",
    ))
    return parser


def _dispatch(argv: list[str]) -> int:
    if argv and argv[0] == "lint":
        from policyscheduler.cli import lint

        return int(lint.main(argv[1:]))
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "simulate":
        from policyscheduler.cli import simulate

        return simulate.run(args)
    if args.command == "run":
        from policyscheduler.cli import run as run_command

        return run_command.run(args)
    if args.command == "explain":
        from policyscheduler.cli import explain

        return explain.run(args)
    if args.command == "test":
        from policyscheduler.cli import policytest

        return policytest.run(args)
    if args.command == "fmt":
        from policyscheduler.cli import fmt

        return fmt.run(args)
    if args.command == "docs":
        from policyscheduler.cli import docs

        return docs.run(args)
    if args.command == "policies":
        from policyscheduler.cli import policies

        return policies.run(args)
    parser.print_help(sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        status = _dispatch(args)
        sys.stdout.flush()  # surface a closed pipe here, not in the interpreter's shutdown
        return status
    except SystemExit as exc:  # argparse usage errors (2), --help/--version (0)
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 2)
    except KeyboardInterrupt:
        sys.stderr.write("policyscheduler: interrupted\n")
        return 130
    except BrokenPipeError:
        # The reader went away (`... | head`): stop quietly, and keep Python from complaining at exit.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 0
    except Exception as exc:
        if os.environ.get("POLICYSCHEDULER_DEBUG") == "1":
            raise
        sys.stderr.write(f"policyscheduler: internal error: {type(exc).__name__}: {exc}\n")
        sys.stderr.write(
            "hint: this is a bug in policyscheduler, not in your input; rerun with "
            "POLICYSCHEDULER_DEBUG=1 for a traceback and report it\n"
        )
        return EXIT_INTERNAL_ERROR
