"""The policy AST: frozen dataclasses, every node with the ``span`` it came from.

Slotted (no per-instance ``__dict__``): a 100k-rule file holds millions of nodes, and slots make each
about a third smaller and quicker to build.

Stages after parsing (checker, compiler, explain) work only on these classes; they never see lark.
"""

from __future__ import annotations

import dataclasses

from policyscheduler.diagnostics import Span

# --------------------------------------------------------------------------------------------- exprs


@dataclasses.dataclass(frozen=True, slots=True)
class IntLit:
    value: int
    span: Span


@dataclasses.dataclass(frozen=True, slots=True)
class FloatLit:
    value: float
    span: Span


@dataclasses.dataclass(frozen=True, slots=True)
class QuantityLit:
    """Kept as text: the checker validates the unit and the compiler converts it."""

    text: str
    span: Span


@dataclasses.dataclass(frozen=True, slots=True)
class StringLit:
    """``raw`` is the literal between the quotes, escapes not yet decoded (the checker does that)."""

    raw: str
    span: Span


@dataclasses.dataclass(frozen=True, slots=True)
class BoolLit:
    value: bool
    span: Span


@dataclasses.dataclass(frozen=True, slots=True)
class ListLit:
    items: tuple[Expr, ...]
    span: Span


@dataclasses.dataclass(frozen=True, slots=True)
class Name:
    id: str
    span: Span


@dataclasses.dataclass(frozen=True, slots=True)
class Attr:
    obj: Expr
    name: str
    name_span: Span
    span: Span


@dataclasses.dataclass(frozen=True, slots=True)
class Call:
    """``func(args)``; ``default`` is the ``default D`` argument of a conversion (``int(s, default 0)``)."""

    func: Expr
    args: tuple[Expr, ...]
    span: Span
    default: Expr | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Index:
    obj: Expr
    index: Expr
    span: Span


@dataclasses.dataclass(frozen=True, slots=True)
class Unary:
    op: str  # "not" | "-"
    operand: Expr
    span: Span


@dataclasses.dataclass(frozen=True, slots=True)
class Binary:
    """Arithmetic, comparison, membership and boolean operators."""

    op: str  # + - * / % == != < <= > >= in "not in" and or
    left: Expr
    right: Expr
    span: Span
    op_span: Span | None = dataclasses.field(default=None, compare=False)
    """Where the operator itself is written (the ``/`` of ``a / b``): diagnostics and runtime errors about
    the operation point there rather than at the start of the left operand. Derived from the text, so it
    takes no part in equality (None for nodes built by the loader, e.g. ``skip when`` conditions)."""


@dataclasses.dataclass(frozen=True, slots=True)
class IfExpr:
    cond: Expr
    then: Expr
    else_: Expr
    span: Span


@dataclasses.dataclass(frozen=True, slots=True)
class Binder:
    name: str
    span: Span


@dataclasses.dataclass(frozen=True, slots=True)
class Loop:
    """``x in L where C`` / ``k, v in M where C``: shared by quantifiers, aggregates, comprehensions."""

    binders: tuple[Binder, ...]
    iterable: Expr
    where: Expr | None
    span: Span


@dataclasses.dataclass(frozen=True, slots=True)
class Quantifier:
    kind: str  # "all" | "any"
    loop: Loop
    body: Expr
    span: Span


@dataclasses.dataclass(frozen=True, slots=True)
class Aggregate:
    kind: str  # "count" | "sum" | "max" | "min"
    loop: Loop
    value: Expr | None  # None for count
    default: Expr | None
    span: Span


@dataclasses.dataclass(frozen=True, slots=True)
class Comprehension:
    value: Expr
    loop: Loop
    span: Span


Expr = (
    IntLit | FloatLit | QuantityLit | StringLit | BoolLit | ListLit | Name | Attr | Call | Index | Unary | Binary
    | IfExpr | Quantifier | Aggregate | Comprehension
)

# ------------------------------------------------------------------------------------------- clauses


@dataclasses.dataclass(frozen=True, slots=True)
class Reason:
    text: StringLit
    span: Span


@dataclasses.dataclass(frozen=True, slots=True)
class Applies:
    cond: Expr
    span: Span


@dataclasses.dataclass(frozen=True, slots=True)
class Let:
    name: str
    name_span: Span
    value: Expr
    span: Span


@dataclasses.dataclass(frozen=True, slots=True)
class Require:
    cond: Expr
    else_: Expr | None
    span: Span


@dataclasses.dataclass(frozen=True, slots=True)
class Reject:
    reason: Expr
    when: Expr
    span: Span


@dataclasses.dataclass(frozen=True, slots=True)
class RejectPod:
    """Pod-level rejection: checked once per pod, before any node (kube-scheduler PreFilter)."""

    reason: Expr
    when: Expr
    span: Span


@dataclasses.dataclass(frozen=True, slots=True)
class RejectEach:
    reasons: Expr
    span: Span


@dataclasses.dataclass(frozen=True, slots=True)
class IgnoreWhen:
    cond: Expr
    span: Span


@dataclasses.dataclass(frozen=True, slots=True)
class Value:
    value: Expr
    span: Span


@dataclasses.dataclass(frozen=True, slots=True)
class VictimWhen:
    """``victim C`` of a preempt rule: the candidate victim ``target`` may be evicted only when C holds."""

    cond: Expr
    span: Span


Clause = Reason | Applies | RejectPod | Let | Require | Reject | RejectEach | IgnoreWhen | Value | VictimWhen

CLAUSE_KEYWORDS: dict[type, str] = {
    Reason: "reason",
    Applies: "applies when",
    Let: "let",
    Require: "require",
    RejectPod: "reject pod",
    Reject: "reject",
    RejectEach: "reject each",
    IgnoreWhen: "ignore node when",
    Value: "value",
    VictimWhen: "victim",
}

# --------------------------------------------------------------------------------------------- rules


@dataclasses.dataclass(frozen=True, slots=True)
class FilterRule:
    name: str
    name_span: Span
    doc: str
    clauses: tuple[Clause, ...]
    span: Span
    replaces: bool = False
    """Written ``replace filter NAME``: takes the place of the rule of that name in the set."""

    kind = "filter"


@dataclasses.dataclass(frozen=True, slots=True)
class ScoreRule:
    name: str
    name_span: Span
    doc: str
    weight_text: str  # as written: "3", "-1", "1.5"
    weight_span: Span
    normalize: str | None
    normalize_span: Span | None
    clauses: tuple[Clause, ...]
    span: Span
    replaces: bool = False
    """Written ``replace score NAME``: takes the place of the rule of that name in the set; an empty
    ``weight_text`` / a None ``normalize`` then keep the replaced rule's weight / normalisation."""

    kind = "score"


@dataclasses.dataclass(frozen=True, slots=True)
class PreemptRule:
    """``preempt NAME``: narrows the pods preemption may evict (kube's DefaultPreemption picks among all
    lower-priority pods; a pod an applicable preempt rule's ``victim`` clause rejects is never a victim)."""

    name: str
    name_span: Span
    doc: str
    clauses: tuple[Clause, ...]
    span: Span
    replaces: bool = False

    kind = "preempt"


Rule = FilterRule | ScoreRule | PreemptRule
RULE_TYPES = (FilterRule, ScoreRule, PreemptRule)
"""Every rule class: for ``isinstance`` checks that separate rules from layering statements."""

# ----------------------------------------------------------------------------------------- statements


@dataclasses.dataclass(frozen=True, slots=True)
class UseDefaults:
    """``use defaults none``: the set starts empty instead of from the bundled defaults."""

    mode: str
    mode_span: Span
    span: Span


@dataclasses.dataclass(frozen=True, slots=True)
class Disable:
    """``disable filter|score NAME``: the named rule is left out of the set."""

    kind: str
    name: str
    name_span: Span
    span: Span


@dataclasses.dataclass(frozen=True, slots=True)
class Override:
    """``override score NAME [weight N] [normalize MODE] [skip when C]`` (filters: ``skip when`` only).

    ``skip`` holds the ``skip when`` conditions: the rule then applies only to pods for which none holds.
    """

    kind: str
    name: str
    name_span: Span
    weight_text: str | None
    weight_span: Span | None
    normalize: str | None
    normalize_span: Span | None
    skip: tuple[Expr, ...]
    settings: tuple[tuple[str, Span], ...]
    """Every setting as written (``("weight", span)`` ...), so the loader can report repeats."""
    span: Span


Statement = UseDefaults | Disable | Override


@dataclasses.dataclass(frozen=True, slots=True)
class Module:
    """One parsed file (possibly partial when the file has parse errors)."""

    file: str
    rules: tuple[Rule, ...]
    span: Span
    statements: tuple[Statement, ...] = ()
    """Layering statements, in file order (``use defaults``, ``disable``, ``override``)."""
