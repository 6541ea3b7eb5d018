"""``policyscheduler lint PATH ... [--format text|json|sarif|github]``: check policy files the way the scheduler will.

The files are loaded exactly as ``simulate`` (and ``run``) load ``--policies``: layered on the bundled
defaults (:func:`policyscheduler.loader.load_layered`), directories searched recursively, so a file that
overrides or replaces a default rule lints clean, a name clash with a default is reported in *your*
file, and the digest printed is the one the scheduler will report for the same inputs.

Beyond the loader's diagnostics, lint runs the lint-only checks of :mod:`policyscheduler.checker.lint`
(warnings) on the rules of the files it was given that passed the checker, also when other rules have
errors: the warnings are reported together with the errors. ``--explain CODE`` prints a code's default severity
and rationale. A warning is silenced on its line by ``# lint: ignore[code] because JUSTIFICATION`` (at the
end of that line, or on its own line just above; the justification is required). ``--format sarif``
writes SARIF 2.1.0 for code-scanning UIs, ``--format github`` workflow annotations for CI logs.

Exit 0 when there are no errors (warnings allowed), 1 when some diagnostic is an error (an unreadable
path, a path without policy files and a set without filters included), 2 for bad usage (argparse).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from policyscheduler.diagnostics import Diagnostic, render_json, render_text, summary
from policyscheduler.loader import LoadResult, load_layered


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="policyscheduler lint", description="Check .policy files.")
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="policy files or directories of *.policy files (searched recursively); checked on top of "
                        "the bundled defaults, as simulate and run load them")
    p.add_argument("--format", choices=("text", "json", "sarif", "github"), default="text",
                   help="output format: text, json, sarif (SARIF 2.1.0) or github (workflow annotations)")
    p.add_argument("--explain", metavar="CODE", help="print what a diagnostic code means, its default severity "
                   "and why it matters ('all' lists every code)")
    p.add_argument("--cost-budget", type=int, default=None, metavar="N",
                   help="warn (cost-budget) about rules whose static cost bound exceeds N (default 100,000)")
    p.add_argument("--allow-empty", action="store_true",
                   help="accept paths without policy files and a set without filter rules (errors otherwise)")
    p.add_argument("--config", metavar="FILE",
                   help="check a PolicySchedulerConfiguration file and every policy set its profiles name")
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
    mine = sum(1 for r in ps.every_rule if r.span.file in users)
    defaults = len(ps.every_rule) - mine
    if not result.default_files and not result.user_files:
        return f"{_plural(len(ps.every_rule), 'rule')} in {_plural(len(result.sources), 'file')}"
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
        rules=len(ps.every_rule) if ps is not None else len(result.costs),
        digest=ps.digest if ps is not None else None,
        default_files=len(result.default_files),
    )


def lint_configmaps(args: argparse.Namespace, manifests: list[str]) -> int:
    """``lint`` of ConfigMap manifests (YAML/JSON files) and kustomization directories: one policy set per
    ConfigMap (its ``*.policy`` keys in key order, plus the plain policy paths given), loaded as
    ``run --policies-configmap`` loads it, with diagnostics at the YAML line and column (or in the file a
    ``configMapGenerator`` read). Several ConfigMaps: one report each (JSON: a list)."""
    import dataclasses
    import json

    from policyscheduler.diagnostics import ERROR, Diagnostic, Span
    from policyscheduler.inputs.configmap import PolicyConfigMap, read_manifests
    from policyscheduler.source import SourceFile

    plain = [p for p in args.paths if p not in manifests]
    found = read_manifests(manifests)
    problems = [Diagnostic(p.code, ERROR, p.message, Span(p.file, max(p.line, 1), max(p.col, 1), max(p.line, 1),
                                                          max(p.col, 1) + 1)) for p in found.problems]
    runs: list[tuple[PolicyConfigMap | None, LoadResult]] = []
    for configmap in found.configmaps:
        names = [name for name, _ in configmap.texts()]
        result = load_layered(plain, texts=configmap.texts(), allow_empty=args.allow_empty)
        result = with_lint_checks(result, [*plain, *names], cost_budget=args.cost_budget)
        runs.append((configmap, configmap.relocate(result, SourceFile)))
    if not runs:
        runs = [(None, LoadResult(None, []))]
    if problems:  # reported once, with the first set; they fail the run
        first_cm, first = runs[0]
        runs[0] = (first_cm, dataclasses.replace(first, diagnostics=problems + first.diagnostics, policy_set=None))
    if args.format == "json":
        docs = [{**json.loads(report_json(r)), "configmap": cm.ref if cm else None, "source": cm.source if cm else None}
                for cm, r in runs]
        print(json.dumps(docs[0] if len(docs) == 1 else docs, indent=2))
    for cm, r in runs if args.format != "json" else []:
        if len(runs) > 1 and cm is not None and args.format == "text":
            print(f"configmap {cm.ref} ({cm.source}):")
        if args.format == "sarif":
            print(report_sarif(r))
        elif args.format == "github":
            out = report_github(r)
            if out:
                print(out)
            print(report_text(r, False).splitlines()[-1])
        else:
            print(report_text(r, args.costs))
    return 1 if any(r.errors for _, r in runs) else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run lint; returns the exit status (0 clean, 1 errors, 2 bad usage)."""
    import gc

    # lint builds millions of small acyclic objects (tokens, trees, AST nodes, closures) and exits: the
    # cyclic collector rescanning them was about half the time of a large file
    was_on = gc.isenabled()
    gc.disable()
    try:
        return _main(argv)
    finally:
        if was_on:
            gc.enable()


def _main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:
        return 2 if exc.code not in (0, None) else 0
    if args.explain is not None:
        return explain_code(args.explain)
    if args.config:
        from policyscheduler.cli.config import lint_config

        return lint_config(args)
    if not args.paths:
        parser.print_usage(sys.stderr)
        sys.stderr.write("policyscheduler lint: error: give PATH ... (or --explain CODE)\n")
        return 2
    from policyscheduler.inputs.configmap import is_manifest

    manifests = [p for p in args.paths if is_manifest(p)]
    if manifests:  # ConfigMap manifests or kustomization directories: positions in the YAML
        return lint_configmaps(args, manifests)
    result = load_layered(args.paths, allow_empty=args.allow_empty)
    result = with_lint_checks(result, args.paths, cost_budget=args.cost_budget)
    if args.format == "json":
        print(report_json(result))
    elif args.format == "sarif":
        print(report_sarif(result))
    elif args.format == "github":
        out = report_github(result)
        if out:
            print(out)
        print(report_text(result, False).splitlines()[-1])
    else:
        print(report_text(result, args.costs))
    return 1 if result.errors else 0


def explain_code(code: str) -> int:
    """``--explain CODE``: 0 when the code exists, 2 otherwise (with the close names)."""
    import difflib

    from policyscheduler.diagnostics import catalogue

    cat = catalogue()
    if code == "all":
        for c in cat.values():
            print(f"{c.code} ({c.severity}): {c.summary}")
        return 0
    entry = cat.get(code)
    if entry is None:
        close = difflib.get_close_matches(code, list(cat), n=3)
        hint = f"; did you mean {' or '.join(close)}?" if close else "; 'lint --explain all' lists them"
        sys.stderr.write(f"policyscheduler lint: unknown code {code!r}{hint}\n")
        return 2
    print(f"{entry.code} (default severity: {entry.severity})\n\n{entry.summary}\n\n{entry.rationale}")
    from policyscheduler.checker.examples import EXAMPLES

    example = EXAMPLES.get(code)
    if example is not None and example.text is not None:
        print("\nExample that triggers it:\n\n" + "\n".join("    " + ln for ln in example.text.splitlines()))
    if entry.severity == "warning":
        print(f"\nSilence one finding with a justification: # lint: ignore[{code}] because ...")
    return 0


def _in_scope(result: LoadResult, paths: Sequence[str]) -> set[str]:
    """Resolved paths of the policy files under ``paths`` (the rules lint-only checks look at)."""
    import os
    from pathlib import Path

    found: set[str] = set()
    for raw in paths:
        p = Path(raw)
        try:
            files = sorted(p.rglob("*.policy")) if p.is_dir() else [p]
        except OSError:  # the loader reported the path already
            files = [p]
        found.update(os.path.realpath(f) for f in files)  # realpath: no RuntimeError on a symlink loop
    return found


def with_lint_checks(result: LoadResult, paths: Sequence[str], *, cost_budget: int | None = None) -> LoadResult:
    """The result with the lint-only warnings added and suppressions applied (a new LoadResult)."""
    import bisect
    import dataclasses
    import os

    from policyscheduler.checker.lint import COST_BUDGET, lint_rules
    from policyscheduler.diagnostics import sort_key, warning
    from policyscheduler.syntax.comments import suppressions

    scope = _in_scope(result, paths)
    diags = list(result.diagnostics)
    # the rules that passed the checker, also when others have errors: lint's warnings (cost-budget...)
    # are reported together with the errors, not only once the errors are fixed
    in_scope: dict[str, bool] = {}  # per file name: realpath once per file, not once per rule
    rules = []
    for checked in result.checked:
        file = checked.rule.span.file
        if file not in in_scope:
            in_scope[file] = os.path.realpath(file) in scope
        if in_scope[file]:
            rules.append(checked)
    diags += lint_rules(rules, cost_budget=COST_BUDGET if cost_budget is None else cost_budget)
    kept: list[Diagnostic] = []
    used: set[tuple[str, int, int]] = set()
    by_file = {name: suppressions(src.text) for name, src in result.sources.items()
               if os.path.realpath(name) in scope}
    # per file, the suppressions by target line: a diagnostic looks only at those on its lines (walking
    # every suppression of the file for every diagnostic was quadratic: bench/lint_fuzz.py 'suppressed')
    targets = {name: sorted(range(len(sups)), key=lambda i: sups[i].target_line)
               for name, sups in by_file.items()}
    for d in diags:
        hit = None
        if d.severity == "warning" and d.span is not None and d.span.file in by_file:
            sups = by_file[d.span.file]
            order = targets[d.span.file]
            lo = bisect.bisect_left(order, d.span.line, key=lambda i: sups[i].target_line)
            hi = bisect.bisect_right(order, d.span.end_line, key=lambda i: sups[i].target_line)
            for i in sorted(order[lo:hi]):  # the first matching one in file order, as before
                s = sups[i]
                if d.code in s.codes and s.reason:
                    hit = s
                    break
        if hit is None:
            kept.append(d)
        else:
            used.add((d.span.file if d.span else "", hit.line, hit.col))
    from policyscheduler.diagnostics import Span

    for name, sups in by_file.items():
        for s in sups:
            span = Span(name, s.line, s.col, s.line, s.col + 1)
            if not s.reason:
                kept.append(warning("suppression-needs-reason", "this suppression has no justification, so it "
                                    "suppresses nothing: write '# lint: ignore[" + ", ".join(s.codes)
                                    + "] because WHY'", span))
            elif (name, s.line, s.col) not in used:
                kept.append(warning("unused-suppression", f"nothing to suppress here ({', '.join(s.codes)}); "
                                    "remove the comment", span))
    return dataclasses.replace(result, diagnostics=sorted(kept, key=sort_key))


def report_sarif(result: LoadResult) -> str:
    """SARIF 2.1.0: one run, the catalogue as the tool's rules, one result per diagnostic."""
    import json
    from pathlib import Path

    from policyscheduler.diagnostics import catalogue

    cat = catalogue()
    ids = list(cat)
    rules = [{"id": c.code, "name": c.code, "shortDescription": {"text": c.summary},
              "fullDescription": {"text": c.rationale},
              "help": {"text": f"{c.summary}. {c.rationale} (policyscheduler lint --explain {c.code})"},
              "defaultConfiguration": {"level": "error" if c.severity == "error" else "warning"}} for c in cat.values()]
    results = []
    for d in result.diagnostics:
        item: dict[str, Any] = {"ruleId": d.code, "level": "error" if d.severity == "error" else "warning",
                      "message": {"text": d.message}}
        if d.code in cat:
            item["ruleIndex"] = ids.index(d.code)
        if d.span is not None:
            uri = Path(d.span.file)
            try:
                text_uri = uri.resolve().relative_to(Path.cwd()).as_posix()
            except ValueError:
                text_uri = uri.resolve().as_uri() if uri.is_absolute() else uri.as_posix()
            region = {"startLine": max(1, d.span.line), "startColumn": max(1, d.span.col)}
            if d.span.end_line >= d.span.line:
                region["endLine"] = max(1, d.span.end_line)
                if d.span.end_col > 0:
                    region["endColumn"] = max(1, d.span.end_col)
            item["locations"] = [{"physicalLocation": {"artifactLocation": {"uri": text_uri}, "region": region}}]
        results.append(item)
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "policyscheduler-lint", "informationUri":
                                      "https://github.com/policyscheduler/policyscheduler", "rules": rules}},
                  "results": results}],
    }
    return json.dumps(doc, indent=2)


def _gh_escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def report_github(result: LoadResult) -> str:
    """GitHub Actions workflow commands: one ``::error``/``::warning`` annotation per diagnostic."""
    from policyscheduler.diagnostics import escape_controls

    lines = []
    for d in result.diagnostics:
        props = [f"title={_gh_escape(d.code, True)}"]
        if d.span is not None:
            props = [f"file={_gh_escape(d.span.file, True)}", f"line={d.span.line}", f"col={d.span.col}",
                     f"endLine={d.span.end_line}", f"endColumn={d.span.end_col}", *props]
        message = _gh_escape(escape_controls(d.message))  # no terminal control sequences in a CI log either
        lines.append(f"::{'error' if d.severity == 'error' else 'warning'} {','.join(props)}::{message}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
