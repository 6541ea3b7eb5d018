"""Diagnostics are data: every problem with a policy is a ``Diagnostic`` with a stable code.

Stages never raise for bad input; they return diagnostics. ``lint``, hot reload and tests all render
them with :func:`render_text` / :func:`render_json`, so what CI shows is what the scheduler logs.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Mapping

from policyscheduler.source import SourceFile

__all__ = [
    "CODES",
    "close_names",
    "ERROR",
    "WARNING",
    "Diagnostic",
    "PolicyRuntimeError",
    "Span",
    "error",
    "render_json",
    "render_text",
    "sort_key",
    "summary",
    "warning",
]

ERROR = "error"
WARNING = "warning"


@dataclasses.dataclass(frozen=True, order=True, slots=True)
class Span:
    """A 1-based source range; ``end_col`` is exclusive. Slotted: a large policy file has millions."""

    file: str
    line: int
    col: int
    end_line: int
    end_col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclasses.dataclass(frozen=True)
class Diagnostic:
    """One finding: a stable ``code`` (see :data:`CODES`), a severity, a message and where."""

    code: str
    severity: str
    message: str
    span: Span | None

    def __str__(self) -> str:
        where = f"{self.span}: " if self.span else ""
        return f"{where}{self.severity} {self.code}: {self.message}"


class PolicyRuntimeError(Exception):
    """A rule failed while being evaluated (division by zero, a failing builtin...).

    The evaluator turns it into an error verdict for one node; it never crashes the scheduler.
    """

    def __init__(self, rule: str, span: Span | None, message: str) -> None:
        super().__init__(f"{span}: rule {rule}: {message}" if span else f"rule {rule}: {message}")
        self.rule = rule
        self.span = span
        self.message = message


CODES: dict[str, str] = {
    # reading and parsing
    "unreadable-file": "a policy path does not exist, is not readable, is not UTF-8 text, is not a regular file (a FIFO, a device), is over the 16 MiB size limit, or is a symlink loop",
    "symlink-loop": "a directory reached again while searching a policy directory (a symlink loop); it is skipped and the rest loads",
    "too-large": "a literal too large to evaluate safely: an integer outside 64 bits, a quantity with more than 40 digits or an exponent above 60",
    "no-policy-files": "a path given to a command yields no *.policy file (an error for commands, a warning for the library loader)",
    "misplaced-default": "`default D` that is not the last argument of a call",
    "reject-needs-reason": "`reject when C` without the reason between `reject` and `when`",
    "parse-error": "the text is not a policy file (generic parse failure)",
    "unexpected-token": "a token appears where the grammar does not allow it; the message lists what was expected",
    "unexpected-character": "a character that starts no token (e.g. `&&`, `'`)",
    "unexpected-eof": "the file ends in the middle of a rule",
    "unterminated-string": "a string literal is not closed on its line",
    "too-deep": "an expression nested too deeply to analyse (split it with let)",
    "too-many-errors": "the checker's error limit per run was reached; the diagnostics after it (in file and line order) are not shown",
    # names and types
    "unknown-name": "a name that is not a root (pod, node, cluster), a let binding or a loop variable",
    "unknown-field": "a field or method the schema does not declare on that record type",
    "unknown-function": "a call to a function that is neither a generic nor a domain builtin (the message lists the builtins)",
    "bad-conversion": "int(), float() or quantity() of a string literal that can never parse (and has no default)",
    "not-callable": "a call on something that is not a function or method",
    "type-mismatch": "an operand, argument, condition or clause value has the wrong type",
    "bad-arity": "a function or method called with the wrong number of arguments",
    "bad-quantity": "a quantity literal with an unknown unit suffix (e.g. `5Xi`)",
    "bad-string": "a string literal with an unknown escape sequence",
    "shadowed-name": "a let or loop variable reuses a name already bound (roots included)",
    # rules
    "duplicate-rule": "two filters (or two scores) share a name, in one file or across files (reported on the later one: a user's file, never a bundled default)",
    "unknown-rule": "a replace, override or disable statement names a rule that is not in the policy set",
    "conflicting-statements": "a rule is the target of more than one replace, override or disable statement",
    "empty-override": "an override statement that changes nothing",
    "unknown-use": "a `use defaults` statement with another word than `none`",
    "no-filters": "a command's policy set has no filter rule (every pod would fit everywhere); allowed with --allow-empty",
    "score-range": "a score `value` (or one of its if/else branches) that is a constant its normalisation cannot take",
    "division-by-zero": "`/` or `%` by a constant zero",
    "empty-aggregate": "`max`/`min` over a list that may be empty, without `default` (warning)",
    "weight-range": "a score weight that is not an integer in 1..100",
    "unknown-normalize": "a normalize mode other than none, scale, reverse, minmax, spread",
    "missing-reason": "a `require` without `else` in a filter that has no `reason` clause",
    "missing-value": "a score rule without a `value` clause",
    "missing-victim": "a preempt rule without a `victim` clause",
    "missing-check": "a filter without any require/reject clause",
    "duplicate-clause": "a clause that may appear once appears twice (reason, applies, ignore, value)",
    "clause-order": "`applies when` is not the first clause, `reject pod` follows a node-level clause, or `value` is not the last",
    "clause-not-allowed": "a clause that the rule kind does not have (e.g. `value` in a filter)",
    "applies-uses-node": "a pod-level clause (`applies when`, `reject pod`) refers to `node` (it is evaluated once per pod, not per node)",
    "applies-uses-target": "a preempt rule's `applies when` refers to `target` (it is evaluated once per preemptor, not per victim)",
    "unused-binding": "a let binding that is never used (warning; loop variables may go unused)",
    "cost-limit": "a rule's static cost bound exceeds the limit",
    "overflow": "an int expression over constants whose result is outside 64 bits (it would fail on every node)",
    "bidi-control": "a string literal holding an invisible bidirectional control character (U+202A..U+202E, U+2066..U+2069, U+200E, U+200F, U+061C) that can make the text display differently from what it is (warning)",
    # the implementation itself
    "internal-error": "a bug in policyscheduler while loading; the policy set is not activated",
}


def error(code: str, message: str, span: Span | None) -> Diagnostic:
    """An error-severity diagnostic."""
    return Diagnostic(code, ERROR, message, span)


def warning(code: str, message: str, span: Span | None) -> Diagnostic:
    """A warning-severity diagnostic."""
    return Diagnostic(code, WARNING, message, span)


def edit_distance(a: str, b: str) -> int:
    """Edits (insert, delete, substitute, swap two neighbours) from ``a`` to ``b``, case ignored."""
    a, b = a.lower(), b.lower()
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[len(b)]


def close_names(name: str, options: Iterable[str], n: int = 3) -> list[str]:
    """The ``options`` closest to ``name`` (at most ``n``, ties only): within ``max(1, len(name) // 3)``
    edits, so a suggestion is a likely slip of the keyboard and never a different word that happens to
    share letters (``startswith`` is not close to ``taint``). A short prefix word in front of an option
    counts as one edit (``to_int`` is close to ``int``)."""
    limit = max(1, len(name) // 3)
    head, _, bare = name.partition("_")
    bare = bare if 0 < len(head) <= 3 else ""
    scored = []
    for option in dict.fromkeys(options):
        if option == name:
            continue
        if bare and option.lower() == bare.lower():
            scored.append((1, option))
            continue
        if abs(len(option) - len(name)) > limit:
            continue
        d = edit_distance(name, option)
        if d <= limit:
            scored.append((d, option))
    best = min((d for d, _ in scored), default=0)
    return [o for d, o in sorted(scored) if d == best][:n]  # only the closest: a farther one is noise


def sort_key(d: Diagnostic) -> tuple[str, int, int, int, str]:
    """File, line, column, errors before warnings, code."""
    if d.span is None:
        return ("", 0, 0, 0 if d.severity == ERROR else 1, d.code)
    return (d.span.file, d.span.line, d.span.col, 0 if d.severity == ERROR else 1, d.code)


_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_CONTROL_OR_TAB = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape_one(m: re.Match[str]) -> str:
    c = m.group(0)
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def escape_controls(text: str, *, keep_tabs: bool = False) -> str:
    """``text`` with control characters (C0, DEL, C1, line/paragraph separators, bidi overrides) written as
    escapes (``\\x1b``, ``\\n``, ``\\u202e``): text from inputs and policies never drives the terminal, and
    one line of output stays one line. ``keep_tabs`` keeps tabs (source excerpts align carets with them)."""
    pattern = _CONTROL if keep_tabs else _CONTROL_OR_TAB
    if pattern.search(text) is None:
        return text
    return pattern.sub(_escape_one, text)


def render_text(diagnostics: Iterable[Diagnostic], sources: Mapping[str, SourceFile] | None = None) -> str:
    """``file:line:col: severity code: message`` plus the source line and a caret, one block each
    (control characters escaped: see :func:`escape_controls`)."""
    blocks: list[str] = []
    for d in diagnostics:
        block = escape_controls(str(d))
        src = sources.get(d.span.file) if (sources is not None and d.span is not None) else None
        if src is not None and d.span is not None:
            excerpt = src.excerpt(d.span.line, d.span.col, d.span.end_line, d.span.end_col)
            if excerpt:
                text, caret = ([*excerpt.split("\n", 1), ""])[:2]
                if _CONTROL.search(text):  # escaping widens the line: the caret cannot line up, so leave it out
                    block += "\n    " + escape_controls(text, keep_tabs=True)
                else:
                    block += "\n" + "\n".join("    " + ln for ln in (text, caret))
        blocks.append(block)
    return "\n".join(blocks)


def diagnostic_dict(d: Diagnostic) -> dict[str, object]:
    """The JSON shape of one diagnostic (positions null when it has no span)."""
    s = d.span
    return {
        "code": d.code,
        "severity": d.severity,
        "message": d.message,
        "file": s.file if s else None,
        "line": s.line if s else None,
        "col": s.col if s else None,
        "end_line": s.end_line if s else None,
        "end_col": s.end_col if s else None,
    }


def render_json(diagnostics: Iterable[Diagnostic], **extra: object) -> str:
    """``{"diagnostics": [...], **extra}`` as indented JSON."""
    doc: dict[str, object] = {"diagnostics": [diagnostic_dict(d) for d in diagnostics]}
    doc.update(extra)
    return json.dumps(doc, indent=2)


def summary(diagnostics: Iterable[Diagnostic], files: int) -> str:
    """"3 errors, 1 warning in 2 files"."""
    ds = list(diagnostics)
    errors = sum(1 for d in ds if d.severity == ERROR)
    warnings = len(ds) - errors

    def plural(n: int, word: str) -> str:
        return f"{n} {word}{'' if n == 1 else 's'}"

    return f"{plural(errors, 'error')}, {plural(warnings, 'warning')} in {plural(files, 'file')}"


# ------------------------------------------------------------------------------------- the catalogue

CODES.update({
    # lint-only checks (policyscheduler lint; they never stop a set from loading)
    "duplicate-rule-body": "two rules of the same kind with the same clauses under different names",
    "unreachable": "a rule or clause that can never run: `applies when` is constantly false, or a clause follows a `require` that always fails",
    "constant-filter": "a filter whose checks are all constants: it accepts every node or rejects every node",
    "require-never-fails": "a `require` whose condition always holds (a constant true, `len(x) >= 0`, `x == x`)",
    "score-range-unproven": "a `normalize none` score whose value cannot be shown to lie in 0..100 (each node outside fails)",
    "cost-budget": "a rule whose static cost bound is above the lint budget (default 100,000; --cost-budget N)",
    "pod-only-filter": "a filter without `applies when` whose checks read no node: write it as `reject pod ... when ...`",
    "label-key-typo": "a string that is one typo away from a well-known Kubernetes label key (`kubernetes.io/hostnmae`)",
    "unknown-taint-effect": "a taint effect that is not NoSchedule, PreferNoSchedule or NoExecute (`NoSchedul`)",
    "suppression-needs-reason": "a `# lint: ignore[code]` comment without `because JUSTIFICATION`: it suppresses nothing",
    "unused-suppression": "a `# lint: ignore[code] because ...` comment that suppresses no diagnostic",
    "victim-always-true": "a preempt rule whose `victim` clause is constantly true: it protects no pod",
    "possible-division-by-zero": "`/` or `%` by a value that is 0 on some nodes and is not guarded: a conversion with `default 0`, `len(...)`, `count(...)`, or a let bound to one",
})

LINT_ONLY_WARNINGS = frozenset({
    "duplicate-rule-body", "unreachable", "constant-filter", "require-never-fails", "score-range-unproven",
    "cost-budget", "pod-only-filter", "label-key-typo", "unknown-taint-effect", "suppression-needs-reason",
    "unused-suppression", "victim-always-true", "possible-division-by-zero",
})

_WARNING_CODES = frozenset({"unused-binding", "empty-aggregate", "no-policy-files", "symlink-loop", "bidi-control"}) | LINT_ONLY_WARNINGS

RATIONALE: dict[str, str] = {
    "possible-division-by-zero": "A divisor read from the cluster is 0 on some nodes (a missing label converted "
    "with `default 0`, an empty list, a count that matches nothing); there the rule fails at run time: a filter "
    "rejects the node, a score gives it 0 and reports the error. Guard the division (`if d == 0 then 0 else n / d`, "
    "`d > 0 and n / d > 2`) or use a default that cannot divide by zero (`default 1`).",
    "victim-always-true": "A preempt rule only ever narrows the victims kube's DefaultPreemption would pick; one "
    "whose `victim` clause always holds narrows nothing, which is almost always a condition written the wrong way "
    "round (`victim target.namespace == \"payments\"` instead of `!=`).",
    "symlink-loop": "A policy directory whose symlinks lead back into itself would be searched forever; the loop is "
    "cut where it closes and reported, and every file reached before it still loads.",
    "too-large": "The API server keeps quantities and integers in 64 bits; a literal beyond that range (a 5,000-digit "
    "quantity) cannot be compared with any real value and would make every evaluation slow, so it is refused.",
    "duplicate-rule-body": "Two rules that say the same thing under two names double the work and, for scores, "
    "silently double the weight. Usually one was copied and never changed; delete one, or change what it checks.",
    "unreachable": "Code that cannot run is either dead (remove it) or a bug (a condition inverted, a `require false` "
    "left from debugging). A filter whose `applies when` is always false never protects anything.",
    "constant-filter": "A filter that does not look at the pod or the node gives the same answer for every node: "
    "it either does nothing (accepts all) or makes every pod unschedulable (rejects all). Neither is a policy.",
    "require-never-fails": "A check that cannot fail protects nothing and suggests a mistake (a comparison the "
    "wrong way round, `>= 0` on a count).",
    "score-range-unproven": "With `normalize none` a raw value outside 0..100 is a runtime error on that node (the "
    "node gets 0 for the rule). Show the range (clamp with min/max, or use a normalisation) or suppress with a "
    "justification when you know better than the analysis.",
    "cost-budget": "The load-time cost bound is the most expression nodes one evaluation may visit; a rule near the "
    "hard limit (cost-limit) is slow on large clusters. The budget is a review threshold, not a limit.",
    "pod-only-filter": "A filter that never reads `node` gives every node the same verdict: as a per-node check it "
    "costs one evaluation per node and reports N identical reasons. `reject pod REASON when CONDITION` decides "
    "once per pod and gives kube-scheduler's PreFilter message.",
    "label-key-typo": "A misspelt label key reads as a missing label (the empty string): the rule then silently "
    "matches nothing or everything. Well-known keys: kubernetes.io/hostname, topology.kubernetes.io/zone, ...",
    "unknown-taint-effect": "Kubernetes taints have three effects; a comparison with anything else is never true, "
    "so the rule silently ignores every taint.",
    "suppression-needs-reason": "A suppression is a decision someone must be able to review: say why with "
    "`# lint: ignore[code] because ...`.",
    "unused-suppression": "A suppression that silences nothing is stale (the code changed) and would hide a future "
    "finding on that line.",
}


@dataclasses.dataclass(frozen=True)
class LintCode:
    """One entry of the catalogue: ``policyscheduler lint --explain CODE``."""

    code: str
    severity: str
    summary: str
    rationale: str


def catalogue() -> dict[str, LintCode]:
    """Every diagnostic code with its default severity, summary and rationale, in a stable order."""
    out: dict[str, LintCode] = {}
    for code, summary in CODES.items():
        severity = WARNING if code in _WARNING_CODES else ERROR
        rationale = RATIONALE.get(code) or (
            "A policy set with this problem is refused as a whole (the scheduler keeps the last good set), so "
            "the problem is caught in CI rather than in a running cluster." if severity == ERROR else
            "The set loads; the finding points at something that is probably not what was meant.")
        out[code] = LintCode(code, severity, summary, rationale)
    return out
