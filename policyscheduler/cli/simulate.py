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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

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


def _refuse(err: TextIO, problems: Sequence[str], why: str) -> int:
    """Print every problem as an ``error:`` line, then why nothing was simulated; the exit status."""
    for problem in problems:
        err.write(f"error: {problem}\n")
    err.write(f"policyscheduler simulate: {why}; nothing was simulated\n")
    return EXIT_BAD_INPUT


def _progress(stream: TextIO) -> Callable[[int, int], None] | None:
    """A callback drawing ``simulating: 57/200 pods placed`` over itself on a TTY (every 10th
    attempt, so the drawing costs nothing next to the evaluation); None when ``stream`` is not a TTY."""
    if not stream.isatty():
        return None
    attempts = 0

    def report(placed: int, total: int) -> None:
        nonlocal attempts
        attempts += 1
        if attempts % 10 == 0:
            stream.write(f"\rsimulating: {placed}/{total} pods placed ")
            stream.flush()

    return report


def run(args: argparse.Namespace, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Execute ``simulate`` with parsed ``args``; returns the exit status."""
    from policyscheduler.diagnostics import render_text
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
    if loaded.diagnostics:  # already sorted; rendered exactly as lint renders them
        err.write(render_text(loaded.diagnostics, loaded.sources).rstrip("\n") + "\n")
    if loaded.policy_set is None:
        return _refuse(err, [], "the policies have errors")

    paths: list[str | Path] = list(args.paths) or [demo_cluster_dir()]
    read = read_objects(paths)
    for warning in read.warnings:
        err.write(f"warning: {warning}\n")
    if read.errors:
        return _refuse(err, read.errors, "bad input")
    if not read.objects:  # e.g. `kubectl get pods -o yaml` against the wrong context: say so, not just 0/0
        err.write("warning: the input holds no Nodes, Pods or other objects simulate looks at\n")

    prepared = prepare(read.objects)
    for note in prepared.snapshot.notes:
        err.write(f"note: {note}\n")
    # The object model never raises on malformed objects: it degrades bad fields to empty values and
    # says so. The scheduler must keep going on them; a simulation would give silently wrong answers.
    if prepared.snapshot.warnings:
        return _refuse(err, prepared.snapshot.warnings, "malformed objects (fix them or leave them out)")
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
