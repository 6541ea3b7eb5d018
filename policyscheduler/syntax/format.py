"""The canonical layout of a policy file (``policyscheduler fmt``).

One layout, whatever the input: one blank line between rules; a rule's header on one line and its
clauses two spaces in, one per line; an expression that does not fit in :data:`WIDTH` columns broken at
its outermost operators, arguments and keywords, continuation lines two more spaces in; the minimum of
parentheses the grammar needs. The layout is a function of the AST and the comments only, so formatting
is idempotent. Comments are kept, every one: a comment on its own line stays above the rule, statement
or clause after it (inside a rule it moves above the clause it was in); a comment at the end of a line
stays at the end of the clause, statement or rule header ending on that line. ``##`` documentation stays
directly above its rule, and blank lines between comments and rules are kept (they decide what is a
rule's documentation).

:func:`format_source` re-parses its output and refuses (:class:`FormatError`) unless the AST is the
same modulo positions and every comment is still there: ``fmt`` can never change what a file means.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, assert_never

from policyscheduler.diagnostics import Span
from policyscheduler.source import SourceFile
from policyscheduler.syntax import ast
from policyscheduler.syntax.comments import Comment, scan_comments
from policyscheduler.syntax.parser import parse
from policyscheduler.syntax.visitor import ExprVisitor

__all__ = ["WIDTH", "FormatError", "format_source", "same_meaning", "strip_spans"]

WIDTH = 110
INDENT = 2


class FormatError(Exception):
    """The file cannot be formatted (it does not parse, or formatting would change it)."""


# ------------------------------------------------------------------------------------ a tiny Wadler


@dataclasses.dataclass(frozen=True)
class _Group:
    doc: Any


@dataclasses.dataclass(frozen=True)
class _Nest:
    n: int
    doc: Any


class _Line:
    def __init__(self, flat: str) -> None:
        self.flat = flat


LINE = _Line(" ")
SOFT = _Line("")
_FLAT, _BREAK = 0, 1


def _fits(width: int, items: list[tuple[int, int, Any]]) -> bool:
    while width >= 0:
        if not items:
            return True
        i, mode, d = items.pop()
        if isinstance(d, str):
            width -= len(d)
        elif isinstance(d, list):
            items.extend((i, mode, x) for x in reversed(d))
        elif isinstance(d, _Nest):
            items.append((i + d.n, mode, d.doc))
        elif isinstance(d, _Line):
            if mode == _BREAK:
                return True
            width -= len(d.flat)
        elif isinstance(d, _Group):
            items.append((i, _FLAT, d.doc))
    return False


def render(doc: Any, indent: int, width: int = WIDTH) -> str:
    """Lay ``doc`` out starting at column ``indent`` (already written)."""
    out: list[str] = []
    col = indent
    stack: list[tuple[int, int, Any]] = [(indent, _BREAK, doc)]
    while stack:
        i, mode, d = stack.pop()
        if isinstance(d, str):
            out.append(d)
            col += len(d)
        elif isinstance(d, list):
            stack.extend((i, mode, x) for x in reversed(d))
        elif isinstance(d, _Nest):
            stack.append((i + d.n, mode, d.doc))
        elif isinstance(d, _Line):
            if mode == _FLAT:
                out.append(d.flat)
                col += len(d.flat)
            else:
                out.append("\n" + " " * i)
                col = i
        elif isinstance(d, _Group):
            flat = _fits(width - col, [*stack, (i, _FLAT, d.doc)])
            stack.append((i, _FLAT if flat else _BREAK, d.doc))
    return "".join(out)


# ------------------------------------------------------------------------------------- expressions

EXPR, OR, AND, NOT, CMP, SUM, TERM, UNARY, POSTFIX, ATOM = range(10)
_BIN_LEVEL = {"or": OR, "and": AND, "==": CMP, "!=": CMP, "<": CMP, "<=": CMP, ">": CMP, ">=": CMP,
              "in": CMP, "not in": CMP, "+": SUM, "-": SUM, "*": TERM, "/": TERM, "%": TERM}
_CHAIN = {OR: {"or"}, AND: {"and"}, SUM: {"+", "-"}, TERM: {"*", "/", "%"}}


class _Level(ExprVisitor[int]):
    """The precedence level of an expression's outermost construct (where it needs parentheses)."""

    def _atom(self, e: ast.Expr) -> int:
        return ATOM

    _IntLit = _FloatLit = _QuantityLit = _StringLit = _BoolLit = _Name = _ListLit = _atom
    _Aggregate = _Comprehension = _atom

    def _expr(self, e: ast.Quantifier | ast.IfExpr) -> int:
        return EXPR

    _Quantifier = _IfExpr = _expr

    def _postfix(self, e: ast.Attr | ast.Call | ast.Index) -> int:
        return POSTFIX

    _Attr = _Call = _Index = _postfix

    def _Binary(self, e: ast.Binary) -> int:
        return _BIN_LEVEL[e.op]

    def _Unary(self, e: ast.Unary) -> int:
        return NOT if e.op == "not" else UNARY


_level = _Level().visit


class _Printer(ExprVisitor[Any]):
    """The layout document of expressions (one visitor method per expression class), clauses and items."""

    def __init__(self, src: SourceFile) -> None:
        self.src = src

    def at(self, e: ast.Expr, need: int) -> Any:
        doc = self.expr(e)
        if _level(e) < need:
            return ["(", doc, ")"]
        return doc

    def binders(self, loop: ast.Loop) -> str:
        return ", ".join(b.name for b in loop.binders)

    def args(self, items: Sequence[Any], open_: str, close: str) -> Any:
        if not items:
            return open_ + close
        body: list[Any] = [SOFT]
        for k, item in enumerate(items):
            if k:
                body += [",", LINE]
            body.append(item)
        return _Group([open_, _Nest(INDENT, body), SOFT, close])

    def expr(self, e: ast.Expr) -> Any:
        return self.visit(e)

    def _IntLit(self, e: ast.IntLit) -> Any:
        return str(e.value)

    def _FloatLit(self, e: ast.FloatLit) -> Any:
        s = e.span
        if s.line == s.end_line:
            text = self.src.line(s.line)[s.col - 1:s.end_col - 1]
            if text and text[0].isdigit() and "." in text:
                return text
        return repr(e.value)

    def _QuantityLit(self, e: ast.QuantityLit) -> Any:
        return e.text

    def _StringLit(self, e: ast.StringLit) -> Any:
        return f'"{e.raw}"'

    def _BoolLit(self, e: ast.BoolLit) -> Any:
        return "true" if e.value else "false"

    def _Name(self, e: ast.Name) -> Any:
        return e.id

    def _Attr(self, e: ast.Attr) -> Any:
        return [self.at(e.obj, POSTFIX), ".", e.name]

    def _Index(self, e: ast.Index) -> Any:
        return [self.at(e.obj, POSTFIX), "[", self.expr(e.index), "]"]

    def _Call(self, e: ast.Call) -> Any:
        items = [self.at(a, EXPR) for a in e.args]
        if e.default is None and len(e.args) == 1 and isinstance(
                e.args[0], (ast.ListLit, ast.Comprehension, ast.Aggregate, ast.Call)):
            return [self.at(e.func, POSTFIX), "(", items[0], ")"]  # hug: f([...]), round(sum(...))
        if e.default is not None:
            items.append(["default ", self.at(e.default, EXPR)])
        return [self.at(e.func, POSTFIX), self.args(items, "(", ")")]

    def _ListLit(self, e: ast.ListLit) -> Any:
        return self.args([self.at(i, EXPR) for i in e.items], "[", "]")

    def _Unary(self, e: ast.Unary) -> Any:
        if e.op == "not":
            # readability: `not (a in b)`, `not (a and b)` rather than what precedence allows
            return ["not ", self.at(e.operand, NOT if _level(e.operand) > SUM else ATOM)]
        return ["-", self.at(e.operand, UNARY)]

    def _Binary(self, e: ast.Binary) -> Any:
        level = _BIN_LEVEL[e.op]
        if level in _CHAIN:
            parts: list[tuple[str, ast.Expr]] = []
            cur: ast.Expr = e
            while isinstance(cur, ast.Binary) and cur.op in _CHAIN[level]:
                parts.append((cur.op, cur.right))
                cur = cur.left
            first = self.at(cur, level)
            rest: list[Any] = []
            if level == OR and isinstance(cur, ast.Binary) and cur.op == "and":
                first = ["(", self.expr(cur), ")"]  # readability: `(a and b) or c`
            for op, right in reversed(parts):
                need = level + 1
                if level == OR and isinstance(right, ast.Binary) and right.op == "and":
                    need = NOT
                rest += [LINE, op, " ", self.at(right, need)]
            return _Group([first, _Nest(INDENT, rest)])
        return _Group([self.at(e.left, SUM), _Nest(INDENT, [LINE, e.op, " ", self.at(e.right, SUM)])])

    def _IfExpr(self, e: ast.IfExpr) -> Any:
        return _Group(["if ", self.at(e.cond, OR),
                       _Nest(INDENT, [LINE, "then ", self.at(e.then, EXPR), LINE, "else ", self.at(e.else_, EXPR)])])

    def _Quantifier(self, e: ast.Quantifier) -> Any:
        head: list[Any] = [e.kind, " ", self.binders(e.loop), " in ", self.at(e.loop.iterable, OR)]
        if e.loop.where is not None:
            head.append(_Nest(INDENT, [LINE, "where ", self.at(e.loop.where, EXPR)]))
        return _Group([*head, ":", _Nest(INDENT, [LINE, self.at(e.body, EXPR)])])

    def _Aggregate(self, e: ast.Aggregate) -> Any:
        inner: list[Any] = [SOFT, self.binders(e.loop), " in ", self.at(e.loop.iterable, OR)]
        if e.loop.where is not None:
            inner += [LINE, "where ", self.at(e.loop.where, EXPR)]
        if e.value is not None:
            inner += [":", LINE, self.at(e.value, EXPR)]
        if e.default is not None:
            inner += [",", LINE, "default ", self.at(e.default, EXPR)]
        return _Group([e.kind, "(", _Nest(INDENT, inner), SOFT, ")"])

    def _Comprehension(self, e: ast.Comprehension) -> Any:
        inner = [SOFT, self.at(e.value, EXPR), LINE, "for ", self.binders(e.loop), " in ",
                 self.at(e.loop.iterable, OR)]
        if e.loop.where is not None:
            inner += [LINE, "where ", self.at(e.loop.where, EXPR)]
        return _Group(["[", _Nest(INDENT, inner), SOFT, "]"])

    # -- clauses and items
    def clause(self, c: ast.Clause) -> Any:
        x = self.at
        match c:
            case ast.Reason():
                return ["reason ", self.expr(c.text)]
            case ast.Applies():
                return ["applies when ", x(c.cond, EXPR)]
            case ast.Let():
                return ["let ", c.name, " = ", x(c.value, EXPR)]
            case ast.Require():
                if c.else_ is None:
                    return ["require ", x(c.cond, EXPR)]
                return _Group(["require ", x(c.cond, EXPR), _Nest(INDENT, [LINE, "else ", x(c.else_, EXPR)])])
            case ast.RejectPod():
                return _Group(["reject pod ", x(c.reason, EXPR), _Nest(INDENT, [LINE, "when ", x(c.when, EXPR)])])
            case ast.Reject():
                reason = x(c.reason, EXPR)
                if _leftmost_name(c.reason) in ("pod", "each"):  # `reject pod + 0 when` reads as `reject pod ...`
                    reason = ["(", reason, ")"]
                return _Group(["reject ", reason, _Nest(INDENT, [LINE, "when ", x(c.when, EXPR)])])
            case ast.RejectEach():
                return ["reject each ", x(c.reasons, EXPR)]
            case ast.IgnoreWhen():
                return ["ignore node when ", x(c.cond, EXPR)]
            case ast.Value():
                return ["value ", x(c.value, EXPR)]
            case ast.VictimWhen():
                return ["victim ", x(c.cond, EXPR)]
            case _:
                assert_never(c)

    def header(self, item: ast.Rule | ast.Statement) -> Any:
        match item:
            case ast.FilterRule():
                return ("replace " if item.replaces else "") + f"filter {item.name}"
            case ast.ScoreRule():
                text = ("replace " if item.replaces else "") + f"score {item.name}"
                if item.weight_text:
                    text += f" weight {item.weight_text}"
                if item.normalize is not None:
                    text += f" normalize {item.normalize}"
                return text
            case ast.PreemptRule():
                return f"preempt {item.name}"
            case ast.UseDefaults():
                return f"use defaults {item.mode}"
            case ast.Disable():
                return f"disable {item.kind} {item.name}"
            case ast.Override():
                settings: list[Any] = []
                skips = iter(item.skip)
                for what, _span in item.settings:
                    if what == "weight":
                        settings += [LINE, f"weight {item.weight_text}"]
                    elif what == "normalize":
                        settings += [LINE, f"normalize {item.normalize}"]
                    else:
                        settings += [LINE, "skip when ", self.at(next(skips), EXPR)]
                return _Group([f"override {item.kind} {item.name}", _Nest(INDENT, settings)])
            case _:
                assert_never(item)


# ---------------------------------------------------------------------------------------- comments


@dataclasses.dataclass
class _Slot:
    """Comments attached to one item, clause or rule header."""

    leading: list[Comment] = dataclasses.field(default_factory=list)
    trailing: Comment | None = None


def _clauses(item: Any) -> tuple[ast.Clause, ...]:
    return item.clauses if isinstance(item, ast.RULE_TYPES) else ()


def _overrides_ok(item: Any) -> bool:
    if not isinstance(item, ast.Override):
        return True
    kinds = [w for w, _ in item.settings if w != "skip when"]
    return len(kinds) == len(set(kinds))


def expression_text(e: ast.Expr) -> str:
    """One expression as canonical policy text on a single line (what ``fmt`` prints, never wrapped)."""
    return render(_Printer(SourceFile("", "")).expr(e), 0, width=1 << 30)


def format_source(src: SourceFile, width: int = WIDTH) -> str:
    """``src`` in the canonical layout; :class:`FormatError` when it does not parse or cannot be kept equal."""
    module, diags = parse(src)
    errors = [d for d in diags if d.severity == "error"]
    if errors or module is None:
        first = errors[0] if errors else None
        raise FormatError(f"{first}" if first else f"{src.name}: nothing to format")
    items: list[Any] = sorted([*module.rules, *module.statements], key=lambda r: (r.span.line, r.span.col))
    if not all(_overrides_ok(i) for i in items):
        raise FormatError(f"{src.name}: an override repeats a setting; fix the file first")
    comments = scan_comments(src.text)
    lines = src.lines

    def blank_above(line: int) -> bool:
        return line >= 2 and not lines[line - 2].strip()

    item_slots = [_Slot() for _ in items]
    header_trailing: dict[int, Comment] = {}
    clause_slots: dict[int, _Slot] = {}
    trailer: list[Comment] = []

    def cslot(c: ast.Clause) -> _Slot:
        return clause_slots.setdefault(id(c), _Slot())

    for cm in comments:
        k = next((k for k, it in enumerate(items) if it.span.line <= cm.line <= it.span.end_line), None)
        if k is None:
            k2 = next((k for k, it in enumerate(items) if it.span.line > cm.line), None)
            if cm.standalone and k2 is not None:
                item_slots[k2].leading.append(cm)
            elif k2 is None and cm.standalone:
                trailer.append(cm)
            else:  # code before it on a line with no item: impossible for a file that parses
                raise FormatError(f"{src.name}:{cm.line}: cannot place this comment")
            continue
        item = items[k]
        clauses = _clauses(item)
        if not cm.standalone:
            ending = [c for c in clauses if c.span.end_line == cm.line]
            if ending:
                slot = cslot(ending[-1])
                if slot.trailing is None:
                    slot.trailing = cm
                    continue
            if not clauses and item.span.end_line == cm.line and item_slots[k].trailing is None:
                item_slots[k].trailing = cm
                continue
            if (clauses and cm.line == item.span.line and not any(c.span.line == cm.line for c in clauses)
                    and k not in header_trailing):
                header_trailing[k] = cm
                continue
        after = [c for c in clauses if c.span.line > cm.line]
        if after:
            cslot(after[0]).leading.append(cm)
            continue
        containing = [c for c in clauses if c.span.line <= cm.line <= c.span.end_line]
        if containing:
            cslot(containing[-1]).leading.append(cm)
        elif clauses:
            cslot(clauses[-1]).leading.append(cm)
        else:
            item_slots[k].leading.append(cm)

    printer = _Printer(src)
    out: list[str] = []

    def emit_comment(cm: Comment, indent: int) -> None:
        out.append(" " * indent + cm.text)

    def with_trailing(text: str, cm: Comment | None) -> str:
        return text if cm is None else f"{text}  {cm.text}"

    prev: Any = None
    for k, item in enumerate(items):
        slot = item_slots[k]
        first_line = slot.leading[0].line if slot.leading else item.span.line
        if prev is not None:
            is_rule = isinstance(item, ast.RULE_TYPES)
            prev_rule = isinstance(prev, ast.RULE_TYPES)
            gap = any(not lines[n - 1].strip() for n in range(prev.span.end_line + 1, first_line))
            if is_rule or prev_rule or gap or slot.leading:
                out.append("")
        for j, cm in enumerate(slot.leading):
            if j and blank_above(cm.line):
                out.append("")
            emit_comment(cm, 0)
        if slot.leading and blank_above(item.span.line):
            out.append("")
        header = render(printer.header(item), 0, width)
        if isinstance(item, ast.RULE_TYPES):
            out.append(with_trailing(header, header_trailing.get(k) or slot.trailing))
            for c in item.clauses:
                cs = clause_slots.get(id(c), _Slot())
                for cm in cs.leading:
                    emit_comment(cm, INDENT)
                body = render(printer.clause(c), INDENT, width)
                out.append(with_trailing(" " * INDENT + body, cs.trailing))
        else:
            out.append(with_trailing(header, slot.trailing))
        prev = item
    for j, cm in enumerate(trailer):
        if out and (j == 0 or blank_above(cm.line)) and blank_above(cm.line):
            out.append("")
        emit_comment(cm, 0)
    text = "\n".join(line.rstrip() for line in out).strip("\n")
    text = text + "\n" if text else ""
    _verify(src, module, text)
    return text


# ------------------------------------------------------------------------------------------ checks


_KEPT_FIELDS: dict[type, tuple[str, ...] | None] = {}


def _kept_fields(cls: type) -> tuple[str, ...] | None:
    """The fields of an AST dataclass that carry meaning (None: not a dataclass); cached per class --
    ``dataclasses.fields`` per node was most of lint's time on a large file."""
    names = _KEPT_FIELDS.get(cls, ())
    if names == ():
        if dataclasses.is_dataclass(cls):
            names = tuple(f.name for f in dataclasses.fields(cls)
                          if not (f.name == "span" or f.name.endswith("_span") or f.name == "file"))
        else:
            names = None
        _KEPT_FIELDS[cls] = names
    return names


def strip_spans(obj: Any) -> Any:
    """An AST value without positions (and without the file name), for comparing meaning.

    lint builds this for every rule of a file (duplicate-rule-body), so the per-node work is kept to a
    class lookup and one comprehension."""
    cls = type(obj)
    if cls in _PLAIN or obj is None:
        return obj
    if isinstance(obj, (tuple, list)):
        return tuple([strip_spans(x) for x in obj])
    names = _kept_fields(cls)
    if names is None or isinstance(obj, type):
        return obj
    if cls is Span:
        return None
    return (cls.__name__, tuple([(n, strip_spans(getattr(obj, n))) for n in names]))


_PLAIN = frozenset((str, int, float, bool))


def same_meaning(a: ast.Module, b: ast.Module) -> bool:
    """Same rules (docs included) and statements, in the same order, positions aside."""
    return bool(strip_spans(a) == strip_spans(b))


def _verify(src: SourceFile, before: ast.Module, text: str) -> None:
    after, diags = parse(SourceFile(src.name, text))
    if after is None or any(d.severity == "error" for d in diags) or not same_meaning(before, after):
        raise FormatError(f"{src.name}: formatting would change what the file means (a bug in fmt); "
                          "the file is left as it is")
    if sorted(c.text for c in scan_comments(src.text)) != sorted(c.text for c in scan_comments(text)):
        raise FormatError(f"{src.name}: formatting would lose a comment (a bug in fmt); the file is left as it is")


class _Leftmost(ExprVisitor["str | None"]):
    """The name an expression's text starts with (``pod`` in ``pod.name + "x"``), or None when it starts
    with a literal, a keyword, an operator or a bracket."""

    def _none(self, e: ast.Expr) -> str | None:
        return None

    _IntLit = _FloatLit = _QuantityLit = _StringLit = _BoolLit = _ListLit = _none
    _Unary = _IfExpr = _Quantifier = _Aggregate = _Comprehension = _none

    def _Name(self, e: ast.Name) -> str | None:
        return e.id

    def _Binary(self, e: ast.Binary) -> str | None:
        return self.visit(e.left)

    def _Attr(self, e: ast.Attr | ast.Index) -> str | None:
        return self.visit(e.obj)

    _Index = _Attr

    def _Call(self, e: ast.Call) -> str | None:
        return self.visit(e.func)


_leftmost_name = _Leftmost().visit
