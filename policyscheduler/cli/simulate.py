"""``policyscheduler simulate``: replay a cluster snapshot under a policy set.

Exit status: 0 when the run completed (even if some pods fit nowhere), 2 for bad input or bad
policies, with the problems on stderr. Bad input is a missing or unreadable file, a YAML/JSON syntax
error, a document that is not a Kubernetes object, or a malformed field the API server would have
refused (an invalid quantity, a selector of the wrong shape): the object model would replace such a
field by an empty value, which would silently change the placements, so nothing is simulated.
Warnings and notes go to stderr and do not change the status: skipped kinds, policy warnings, a node
without allocatable pods, a pod bound to a node missing from the input.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

__all__ = ["add_arguments", "main", "run"]

EXIT_OK = 0
EXIT_BAD_INPUT = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``simulate`` options (shared by the top-level CLI and :func:`main`)."""
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="YAML/JSON files or folders of Kubernetes objects ('-' for stdin); default: the bundled demo cluster",
    )
    parser.add_argument(
        "--policies",
        metavar="DIR",
        action="append",
        help="policy folder or file (repeatable); default: the bundled default policy set",
    )
    parser.add_argument("--output", "-o", choices=("table", "json"), default="table", help="output format (default: table)")
    parser.add_argument("--seed", type=int, default=0, help="seed for breaking score ties (default: 0)")


def _render_diagnostics(loaded: Any) -> str:
    """Diagnostics exactly as ``lint`` prints them (location, severity, code, source line, caret)."""
    from policyscheduler.diagnostics import render_text, sort_key

    return str(render_text(sorted(loaded.diagnostics, key=sort_key), getattr(loaded, "sources", None)))


def _progress(stream: TextIO) -> Any:
    """A progress callback drawing ``scheduling: placed 57 of 200`` on a TTY, else None."""
    if not stream.isatty():
        return None
    state = {"calls": 0}

    def report(placed: int, total: int) -> None:
        state["calls"] += 1
        if state["calls"] % 10 == 0:
            stream.write(f"\rsimulating: {placed}/{total} pods placed ")
            stream.flush()

    return report


def run(args: argparse.Namespace, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Execute ``simulate`` with parsed ``args``; returns the exit status."""
    from policyscheduler.inputs import read_objects
    from policyscheduler.loader import load_policy_set
    from policyscheduler.simulate import simulate
    from policyscheduler.simulate.defaults import default_policies_dir, demo_cluster_dir
    from policyscheduler.simulate.output import render_json, render_table
    from policyscheduler.simulate.run import prepare

    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr

    policy_paths: list[str | Path] = list(args.policies or [default_policies_dir()])
    loaded = load_policy_set(policy_paths)
    if loaded.diagnostics:
        err.write(_render_diagnostics(loaded).rstrip("\n") + "\n")
    if loaded.policy_set is None:
        err.write("policyscheduler simulate: the policies have errors; nothing was simulated\n")
        return EXIT_BAD_INPUT

    paths: list[str | Path] = list(args.paths) or [demo_cluster_dir()]
    read = read_objects(paths)
    for warning in read.warnings:
        err.write(f"warning: {warning}\n")
    if read.errors:
        for problem in read.errors:
            err.write(f"error: {problem}\n")
        err.write("policyscheduler simulate: bad input; nothing was simulated\n")
        return EXIT_BAD_INPUT

    prepared = prepare(read.objects)
    snapshot = prepared[0]
    for note in snapshot.notes:
        err.write(f"note: {note}\n")
    # The object model never raises on malformed objects: it degrades bad fields to empty values and
    # says so. The scheduler must keep going on them; a simulation would give silently wrong answers.
    if snapshot.warnings:
        for problem in snapshot.warnings:
            err.write(f"error: {problem}\n")
        err.write("policyscheduler simulate: malformed objects (fix them or leave them out); nothing was simulated\n")
        return EXIT_BAD_INPUT
    progress = _progress(err)
    try:
        sim = simulate(loaded.policy_set, read.objects, seed=args.seed, progress=progress, prepared=prepared)
    finally:
        if progress is not None:
            err.write("\r\033[K")
            err.flush()
    if args.output == "json":
        out.write(render_json(sim) + "\n")
    else:
        out.write(render_table(sim, seed=args.seed))
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry point (``policyscheduler simulate`` goes through ``policyscheduler.cli``)."""
    parser = argparse.ArgumentParser(prog="policyscheduler simulate", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))
