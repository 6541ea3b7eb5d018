"""Runs the checker passes over all files of a policy set; accumulates and sorts diagnostics."""

from __future__ import annotations

from collections.abc import Sequence

from policyscheduler.checker.env import Schema
from policyscheduler.checker.expressions import Info
from policyscheduler.checker.passes import (
    CheckedRule,
    check_clauses,
    check_duplicates,
    check_header,
    check_structure,
)
from policyscheduler.diagnostics import ERROR, Diagnostic, error, sort_key
from policyscheduler.syntax import ast

MAX_ERRORS = 100
"""Errors reported per run; beyond it one `too-many-errors` diagnostic says the rest were dropped."""


def check(modules: Sequence[ast.Module], schema: Schema) -> tuple[list[CheckedRule], list[Diagnostic]]:
    """Check every rule of every module (in order). Returns the rules without errors, and all diagnostics."""
    diags, dups = check_duplicates(modules)
    good: list[CheckedRule] = []
    for m in modules:
        for r in m.rules:
            rule_diags: list[Diagnostic] = []
            checked = CheckedRule(r, Info(), 0)
            check_structure(r, rule_diags)
            check_header(r, checked, rule_diags)
            check_clauses(r, schema, checked, rule_diags)
            diags.extend(rule_diags)
            if id(r) not in dups and not any(d.severity == ERROR for d in rule_diags):
                good.append(checked)
    return good, limit(sorted(diags, key=sort_key))


def limit(diags: list[Diagnostic]) -> list[Diagnostic]:
    """Keep the first MAX_ERRORS errors (and the warnings among them)."""
    out: list[Diagnostic] = []
    errors = 0
    for d in diags:
        if d.severity == ERROR:
            errors += 1
            if errors > MAX_ERRORS:
                out.append(error("too-many-errors", f"more than {MAX_ERRORS} errors; the rest are not shown", d.span))
                break
        out.append(d)
    return out
