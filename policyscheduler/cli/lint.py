"""``policyscheduler lint PATH ... [--format text|json]``: check policy files the way the scheduler will.

Exit 0 when there are no errors (warnings allowed), 1 when some diagnostic is an error (an unreadable
path included), 2 for bad usage (argparse).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from policyscheduler.diagnostics import render_json, render_text, summary
from policyscheduler.loader import LoadResult, load_policy_set


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="policyscheduler lint", description="Check .policy files.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="policy files or directories of *.policy files")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    p.add_argument("--costs", action="store_true", help="also print each rule's static cost bound (text format)")
    return p


def report_text(result: LoadResult, costs: bool = False) -> str:
    """Diagnostics with excerpts, then one summary line."""
    out: list[str] = []
    if result.diagnostics:
        out.append(render_text(result.diagnostics, result.sources))
    if costs:
        for rule, cost in result.costs.items():
            out.append(f"cost {rule}: {cost:,}")
    files = len(result.sources)
    if result.policy_set is not None:
        n = len(result.policy_set.filters) + len(result.policy_set.scores)
        warn = "" if not result.diagnostics else f" ({summary(result.diagnostics, files)})"
        out.append(f"ok: {n} rule{'' if n == 1 else 's'} in {files} file{'' if files == 1 else 's'}, "
                   f"digest {result.policy_set.digest[:12]}{warn}")
    else:
        out.append(summary(result.diagnostics, files))
    return "\n".join(out)


def report_json(result: LoadResult) -> str:
    """The diagnostics as JSON, with the file count, the rule count and the digest (null when rejected)."""
    ps = result.policy_set
    return render_json(
        result.diagnostics,
        files=len(result.sources),
        rules=(len(ps.filters) + len(ps.scores)) if ps is not None else len(result.costs),
        digest=ps.digest if ps is not None else None,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run lint; returns the exit status (0 clean, 1 errors, 2 bad usage)."""
    parser = _parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:
        return 2 if exc.code not in (0, None) else 0
    result = load_policy_set(args.paths)
    if args.format == "json":
        print(report_json(result))
    else:
        print(report_text(result, args.costs))
    return 1 if result.errors else 0


if __name__ == "__main__":
    sys.exit(main())
