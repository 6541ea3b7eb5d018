"""lark Tree -> AST (policyscheduler.syntax.ast). Internal to the syntax package."""

from __future__ import annotations

from typing import Any

from lark import Token, Transformer, v_args
from lark.exceptions import VisitError

from policyscheduler.diagnostics import Span
from policyscheduler.syntax import ast

_BINARY = {
    "or_": "or", "and_": "and", "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
    "in_": "in", "not_in": "not in", "add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%",
}


@v_args(meta=True)
class _ToAst(Transformer[Token, Any]):
    """Builds AST nodes bottom-up; ``file`` names the spans."""

    def __init__(self, file: str) -> None:
        super().__init__()
        self.file = file

    # -- positions
    def _span(self, meta: Any) -> Span:
        if getattr(meta, "empty", True):
            return Span(self.file, 1, 1, 1, 1)
        return Span(self.file, meta.line, meta.column, meta.end_line, meta.end_column)

    def _tok(self, tok: Token) -> Span:
        return Span(self.file, tok.line or 1, tok.column or 1, tok.end_line or tok.line or 1,
                    tok.end_column or (tok.column or 1) + len(tok))

    # -- file and rules
    def start(self, meta: Any, children: list[Any]) -> ast.Module:
        rules = tuple(c for c in children if isinstance(c, (ast.FilterRule, ast.ScoreRule)))
        statements = tuple(c for c in children if not isinstance(c, (ast.FilterRule, ast.ScoreRule)))
        return ast.Module(self.file, rules, self._span(meta), statements)

    # -- layering statements
    def rule_kind(self, meta: Any, children: list[Any]) -> str:
        return str(children[0])

    def use_defaults(self, meta: Any, children: list[Any]) -> ast.UseDefaults:
        return ast.UseDefaults(str(children[0]), self._tok(children[0]), self._span(meta))

    def disable_stmt(self, meta: Any, children: list[Any]) -> ast.Disable:
        kind, name = children
        return ast.Disable(kind, str(name), self._tok(name), self._span(meta))

    def override_stmt(self, meta: Any, children: list[Any]) -> ast.Override:
        kind, name, *settings = children
        weight: tuple[str, Span] | None = None
        norm: Any = None
        skip: list[ast.Expr] = []
        written: list[tuple[str, Span]] = []
        for what, value, span in settings:
            written.append((what, span))
            if what == "weight":
                weight = value
            elif what == "normalize":
                norm = value
            else:
                skip.append(value)
        return ast.Override(
            kind, str(name), self._tok(name),
            weight[0] if weight else None, weight[1] if weight else None,
            str(norm) if norm is not None else None, self._tok(norm) if norm is not None else None,
            tuple(skip), tuple(written), self._span(meta),
        )

    def override_weight(self, meta: Any, children: list[Any]) -> tuple[str, Any, Span]:
        return ("weight", children[0], self._span(meta))

    def override_normalize(self, meta: Any, children: list[Any]) -> tuple[str, Any, Span]:
        return ("normalize", children[0], self._span(meta))

    def override_skip(self, meta: Any, children: list[Any]) -> tuple[str, Any, Span]:
        return ("skip when", children[0], self._span(meta))

    def replace_filter(self, meta: Any, children: list[Any]) -> ast.FilterRule:
        rule = self.filter_rule(meta, children)
        return ast.FilterRule(rule.name, rule.name_span, rule.doc, rule.clauses, rule.span, replaces=True)

    def replace_score(self, meta: Any, children: list[Any]) -> ast.ScoreRule:
        name, weight, norm, *clauses = children
        wtext, wspan = weight if weight is not None else ("", self._tok(name))
        return ast.ScoreRule(
            str(name), self._tok(name), "", wtext, wspan,
            str(norm) if norm is not None else None, self._tok(norm) if norm is not None else None,
            tuple(clauses), self._span(meta), replaces=True,
        )

    def filter_rule(self, meta: Any, children: list[Any]) -> ast.FilterRule:
        name, *clauses = children
        return ast.FilterRule(str(name), self._tok(name), "", tuple(clauses), self._span(meta))

    def score_rule(self, meta: Any, children: list[Any]) -> ast.ScoreRule:
        name, (wtext, wspan), norm, *clauses = children
        return ast.ScoreRule(
            str(name), self._tok(name), "", wtext, wspan,
            str(norm) if norm is not None else None, self._tok(norm) if norm is not None else None,
            tuple(clauses), self._span(meta),
        )

    def weight(self, meta: Any, children: list[Any]) -> tuple[str, Span]:
        sign, num = children
        return (("-" if sign is not None else "") + str(num), self._span(meta))

    # -- clauses
    def reason_clause(self, meta: Any, children: list[Any]) -> ast.Reason:
        return ast.Reason(self._string(children[0]), self._span(meta))

    def applies_clause(self, meta: Any, children: list[Any]) -> ast.Applies:
        return ast.Applies(children[0], self._span(meta))

    def let_clause(self, meta: Any, children: list[Any]) -> ast.Let:
        name, value = children
        return ast.Let(str(name), self._tok(name), value, self._span(meta))

    def require_clause(self, meta: Any, children: list[Any]) -> ast.Require:
        return ast.Require(children[0], children[1], self._span(meta))

    def reject_clause(self, meta: Any, children: list[Any]) -> ast.Reject:
        return ast.Reject(children[0], children[1], self._span(meta))

    def reject_pod_clause(self, meta: Any, children: list[Any]) -> ast.RejectPod:
        return ast.RejectPod(children[1], children[2], self._span(meta))

    def reject_each_clause(self, meta: Any, children: list[Any]) -> ast.RejectEach:
        return ast.RejectEach(children[0], self._span(meta))

    def ignore_clause(self, meta: Any, children: list[Any]) -> ast.IgnoreWhen:
        return ast.IgnoreWhen(children[0], self._span(meta))

    def value_clause(self, meta: Any, children: list[Any]) -> ast.Value:
        return ast.Value(children[0], self._span(meta))

    # -- loops
    def binders(self, meta: Any, children: list[Any]) -> tuple[ast.Binder, ...]:
        return tuple(ast.Binder(str(t), self._tok(t)) for t in children if t is not None)

    def _loop(self, meta: Any, binders: tuple[ast.Binder, ...], iterable: Any, where: Any) -> ast.Loop:
        return ast.Loop(binders, iterable, where, self._span(meta))

    def all_q(self, meta: Any, children: list[Any]) -> ast.Quantifier:
        b, it, where, body = children
        return ast.Quantifier("all", self._loop(meta, b, it, where), body, self._span(meta))

    def any_q(self, meta: Any, children: list[Any]) -> ast.Quantifier:
        b, it, where, body = children
        return ast.Quantifier("any", self._loop(meta, b, it, where), body, self._span(meta))

    def count_agg(self, meta: Any, children: list[Any]) -> ast.Aggregate:
        b, it, where = children
        return ast.Aggregate("count", self._loop(meta, b, it, where), None, None, self._span(meta))

    def sum_agg(self, meta: Any, children: list[Any]) -> ast.Aggregate:
        b, it, where, value = children
        return ast.Aggregate("sum", self._loop(meta, b, it, where), value, None, self._span(meta))

    def minmax_agg(self, meta: Any, children: list[Any]) -> ast.Aggregate:
        kw, b, it, where, value, default = children
        return ast.Aggregate(str(kw), self._loop(meta, b, it, where), value, default, self._span(meta))

    def comprehension(self, meta: Any, children: list[Any]) -> ast.Comprehension:
        value, b, it, where = children
        return ast.Comprehension(value, self._loop(meta, b, it, where), self._span(meta))

    # -- operators
    def conditional(self, meta: Any, children: list[Any]) -> ast.IfExpr:
        return ast.IfExpr(children[0], children[1], children[2], self._span(meta))

    def not_(self, meta: Any, children: list[Any]) -> ast.Unary:
        return ast.Unary("not", children[0], self._span(meta))

    def neg(self, meta: Any, children: list[Any]) -> ast.Unary:
        return ast.Unary("-", children[0], self._span(meta))

    def attr(self, meta: Any, children: list[Any]) -> ast.Attr:
        obj, name = children
        return ast.Attr(obj, str(name), self._tok(name), self._span(meta))

    def call(self, meta: Any, children: list[Any]) -> ast.Call:
        func, args = children
        plain = tuple(a for a in (args or ()) if not isinstance(a, _Default))
        defaults = [a for a in (args or ()) if isinstance(a, _Default)]
        if defaults and (len(defaults) > 1 or not isinstance(args[-1], _Default)):
            raise DefaultMisplaced(defaults[-1].span)
        return ast.Call(func, plain, self._span(meta), defaults[0].value if defaults else None)

    def default_arg(self, meta: Any, children: list[Any]) -> _Default:
        return _Default(children[0], self._span(meta))

    def index(self, meta: Any, children: list[Any]) -> ast.Index:
        return ast.Index(children[0], children[1], self._span(meta))

    def args(self, meta: Any, children: list[Any]) -> tuple[Any, ...]:
        return tuple(c for c in children if c is not None)

    # -- atoms
    def int_lit(self, meta: Any, children: list[Any]) -> ast.IntLit:
        text = str(children[0])
        # Beyond 64 bits the checker reports `too-large`; a 5,000-digit literal must not reach int() (Python
        # refuses strings of more than 4,300 digits), so anything that long stands for "too large".
        value = int(text) if len(text) <= 40 else 10**40
        return ast.IntLit(value, self._span(meta))

    def float_lit(self, meta: Any, children: list[Any]) -> ast.FloatLit:
        return ast.FloatLit(float(children[0]), self._span(meta))

    def quantity_lit(self, meta: Any, children: list[Any]) -> ast.QuantityLit:
        return ast.QuantityLit(str(children[0]), self._span(meta))

    def string_lit(self, meta: Any, children: list[Any]) -> ast.StringLit:
        return self._string(children[0])

    def _string(self, tok: Token) -> ast.StringLit:
        return ast.StringLit(str(tok)[1:-1], self._tok(tok))

    def true_lit(self, meta: Any, children: list[Any]) -> ast.BoolLit:
        return ast.BoolLit(True, self._span(meta))

    def false_lit(self, meta: Any, children: list[Any]) -> ast.BoolLit:
        return ast.BoolLit(False, self._span(meta))

    def name(self, meta: Any, children: list[Any]) -> ast.Name:
        return ast.Name(str(children[0]), self._span(meta))

    def list_lit(self, meta: Any, children: list[Any]) -> ast.ListLit:
        items = tuple(children[0] or ())
        for item in items:
            if isinstance(item, _Default):
                raise DefaultMisplaced(item.span)
        return ast.ListLit(items, self._span(meta))


class _Default:
    """``default D`` in an argument list, before :meth:`_ToAst.call` folds it into ``Call.default``."""

    def __init__(self, value: ast.Expr, span: Span) -> None:
        self.value = value
        self.span = span


class DefaultMisplaced(Exception):
    """``default D`` that is not the single last argument of a call, or outside a call."""

    def __init__(self, span: Span) -> None:
        super().__init__("'default' must be the last argument of a call, and appear once")
        self.span = span


def _binary(op: str) -> Any:
    def method(self: _ToAst, meta: Any, children: list[Any]) -> ast.Binary:
        return ast.Binary(op, children[0], children[1], self._span(meta))

    return method


for _rule, _op in _BINARY.items():
    setattr(_ToAst, _rule, v_args(meta=True)(_binary(_op)))


def to_ast(tree: Any, file: str) -> ast.Module:
    """Convert a parse tree; exceptions raised by a transformer method come out unwrapped."""
    try:
        result = _ToAst(file).transform(tree)
    except VisitError as exc:
        raise exc.orig_exc from None
    assert isinstance(result, ast.Module)
    return result
