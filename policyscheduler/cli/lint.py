"""``policyscheduler lint PATH ... [--format text|json]``: check policy files the way the scheduler will.

The files are loaded exactly as ``simulate`` (and ``run``) load ``--policies``: layered on the bundled
defaults (:func:`policyscheduler.loader.load_layered`), directories searched recursively, so a file that
overrides or replaces a default rule lints clean, a name clash with a default is reported in *your*
file, and the digest printed is the one the scheduler will report for the same inputs.

Exit 0 when there are no errors (warnings allowed), 1 when some diagnostic is an error (an unreadable
path, a path without policy files and a set without filters included), 2 for bad usage (argparse).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from policyscheduler.diagnostics import render_json, render_text, summary
from policyscheduler.loader import LoadResult, load_layered


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="policyscheduler lint", description="Check .policy files.")
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="policy files or directories of *.policy files (searched recursively); checked on top of "
                        "the bundled defaults, as simulate and run load them")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    p.add_argument("--allow-empty", action="store_true",
                   help="accept paths without policy files and a set without filter rules (errors otherwise)")
    p.add_argument("--costs", action="store_true",
                   help="also print each rule's static cost bound and evaluation path (vector or per-node "
                        "reference, with the reason), text format")
    return p


def report_text(result: LoadResult, costs: bool = False) -> str:
    """Diagnostics with excerpts, then one summary line."""
    out: list[str] = []
    if result.diagnostics:
        out.append(render_text(result.diagnostics, result.sources))
    if costs:
        paths = _paths(result)
        for rule, cost in result.costs.items():
            path = paths.get(rule)
            how = "" if path is None else f", {path[0]}" + (f" ({path[1]})" if path[0] != "vector" else "")
            out.append(f"cost {rule}: {cost:,}{how}")
    layered = bool(result.user_files or result.default_files)
    files = len(result.user_files) if layered else len(result.sources)
    if result.policy_set is not None:
        warn = "" if not result.diagnostics else f" ({summary(result.diagnostics, files)})"
        out.append(f"ok: {_rules_in_force(result)}, digest {result.policy_set.digest[:12]}{warn}")
    else:
        out.append(summary(result.diagnostics, files))
    return "\n".join(out)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _rules_in_force(result: LoadResult) -> str:
    """``2 rules in 1 file + 15 bundled default rules`` -- what the scheduler will run, and whose."""
    ps = result.policy_set
    assert ps is not None
    users = set(result.user_files)
    mine = sum(1 for r in ps.rules if r.span.file in users)
    defaults = len(ps.rules) - mine
    if not result.default_files and not result.user_files:
        return f"{_plural(len(ps.rules), 'rule')} in {_plural(len(result.sources), 'file')}"
    if not result.user_files:
        return f"{_plural(defaults, 'bundled default rule')} in {_plural(len(result.default_files), 'file')}"
    text = f"{_plural(mine, 'rule')} in {_plural(len(result.user_files), 'file')}"
    if result.default_files:
        return text + f" + {_plural(defaults, 'bundled default rule')}"
    return text + " (no defaults: 'use defaults none')"


def _paths(result: LoadResult) -> dict[str, tuple[str, str]]:
    """Per rule, the path the vectorised engine takes: ("vector", why) or ("reference", why)."""
    if result.policy_set is None:
        return {}
    from policyscheduler.evaluation.vector import lowering_report

    return lowering_report(result.policy_set)


def report_json(result: LoadResult) -> str:
    """The diagnostics as JSON, with the file count, the rule count and the digest (null when rejected)."""
    ps = result.policy_set
    return render_json(
        result.diagnostics,
        files=len(result.user_files) if result.user_files else len(result.sources),
        rules=(len(ps.filters) + len(ps.scores)) if ps is not None else len(result.costs),
        digest=ps.digest if ps is not None else None,
        default_files=len(result.default_files),
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run lint; returns the exit status (0 clean, 1 errors, 2 bad usage)."""
    parser = _parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:
        return 2 if exc.code not in (0, None) else 0
    result = load_layered(args.paths, allow_empty=args.allow_empty)
    if args.format == "json":
        print(report_json(result))
    else:
        print(report_text(result, args.costs))
    return 1 if result.errors else 0


if __name__ == "__main__":
    sys.exit(main())
