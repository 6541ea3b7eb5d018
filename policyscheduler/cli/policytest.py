"""``policyscheduler test [PATH...]``: run policy tests (the format: the README's "Testing policies").

PASS/FAIL per case, a diff of expected and actual for each failing expectation, then coverage of the
policies under test: filters and score rules counted apart, clauses, and what "covered" means
(:mod:`policyscheduler.testing.coverage`). Exit 0 when every case passes, 1 when one fails, 2 for bad
input: a missing path, a malformed test file (every mistake reported as ``file:line:col: ...``, nothing
run), a case naming rules or nodes that do not exist or holding an invalid object, policies that do not
load, no test found.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any, TextIO

from policyscheduler.cli.now import add_now_argument, chosen_now

__all__ = ["add_arguments", "run", "render_text"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH", default=["."],
                        help="folders or files: YAML test files and the .policy files under test (default: .)")
    parser.add_argument("--policies", metavar="DIR", action="append", default=[],
                        help="more policy files or folders, layered like simulate's --policies")
    parser.add_argument("--run", metavar="REGEX", help="only the cases whose FILE::NAME matches REGEX")
    parser.add_argument("--output", "-o", choices=("text", "json"), default="text")
    parser.add_argument("--engine", choices=("vector", "reference"), default="vector")
    parser.add_argument("--coverage", action="store_true", help="list every uncovered clause (text output)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print passing cases too")
    add_now_argument(parser)


def _show(x: Any) -> str:
    return json.dumps(x, sort_keys=True)


def _nows(results: Any) -> str:
    """``, now 2026-01-01T00:00:00Z``: the decision time(s) the cases ran at (a test file's ``now:``, else
    ``--now``, else the fixed default)."""
    nows = sorted({r.now for r in results if r.now})
    if not nows:
        return ""
    return f", now {nows[0]}" if len(nows) == 1 else f", now {nows[0]} and {len(nows) - 1} other instant(s)"


def render_text(run: Any, *, verbose: bool = False, clauses: bool = False) -> str:
    lines: list[str] = []
    for r in run.results:
        if r.status == "pass":
            if verbose:
                lines.append(f"PASS {r.case.id}")
            continue
        if r.status == "error":
            lines.append(f"ERROR {r.case.id}: {r.error}")
            continue
        lines.append(f"FAIL {r.case.id}")
        for f in r.failures:
            lines.append(f"  {f.path}:")
            lines.append(f"    - expected: {_show(f.expected)}")
            lines.append(f"    + actual:   {_show(f.actual)}")
    from policyscheduler.testing.coverage import MEANING

    cov = run.coverage
    passed = sum(1 for r in run.results if r.status == "pass")
    failed = sum(1 for r in run.results if r.status == "fail")
    errors = sum(1 for r in run.results if r.status == "error")
    lines.append(f"{passed}/{len(run.results)} cases passed"
                 + (f", {failed} failed" if failed else "") + (f", {errors} with errors" if errors else "")
                 + f" (policy digest {', '.join(d[:12] for d in run.digests)}{_nows(run.results)})")
    lines.append(cov.summary())
    if cov.rules:
        lines.append(f"  ({MEANING})")
    for rule, loc in cov.rules.items():
        if rule not in cov.rules_hit:
            lines.append(f"  not covered: {rule} ({loc})")
    uncovered = [(loc, what) for loc, what in cov.clauses.items() if loc not in cov.clauses_hit]
    if clauses:
        for loc, what in uncovered:
            lines.append(f"  clause not covered: {loc}: {what}")
    elif uncovered:
        lines.append(f"  {len(uncovered)} clause(s) not covered (--coverage lists them)")
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    from policyscheduler.testing.runner import run_tests

    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    if args.run:
        try:
            re.compile(args.run)
        except re.error as exc:
            err.write(f"policyscheduler test: bad --run pattern: {exc}\n")
            return 2
    from policyscheduler.cycle.preemption import preempt

    result, errors = run_tests(args.paths or ["."], extra_policies=args.policies, run=args.run, engine=args.engine,
                               preempt=preempt, now=chosen_now(args))
    if result is None:
        for e in errors:
            err.write(f"error: {e}\n")
        err.write("policyscheduler test: nothing was run\n")
        return 2
    if args.output == "json":
        out.write(json.dumps(result.to_json(), indent=2) + "\n")
    else:
        out.write(render_text(result, verbose=args.verbose, clauses=args.coverage))
    if any(r.status == "error" for r in result.results):
        return 2  # bad input in some case: the run cannot be trusted
    return 1 if result.failed else 0
