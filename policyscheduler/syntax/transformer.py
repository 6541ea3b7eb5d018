"""Policy text -> AST in one pass: the AST is built inside lark's LALR parser, as it reduces each rule.

lark's usual route builds a parse tree first (a ``Tree`` and a ``Meta`` per rule reduction, positions
propagated by a wrapper per reduction) and a ``Transformer`` then walks it to make our AST. On a
100k-rule file that tree was the larger part of ``lint``'s time and memory. lark's own inline
``transformer=`` option cannot be used: it does not pass positions (``v_args(meta=True)`` is refused for
it) and it only sees the children left after anonymous tokens are filtered out, so a rule's span could
not start at its ``filter`` keyword. Here every reduction runs a callback of ours instead (installed on
the parser state of one ``parse_interactive`` session, so the shared parser is not modified and
concurrent parses do not share state), which:

* computes the node's position the way lark's ``propagate_positions`` does: from the first and last
  child *as written* that has a position (a token, or a reduced value with its extent), where an
  inlined rule (``?rule`` with one child, e.g. ``( expr )``) keeps its own span but lends its parent
  the extent of everything it matched (the parentheses included);
* filters the children as lark's tree builder does (anonymous tokens dropped unless the rule keeps
  them, ``[optional]`` placeholders as None, ``_helper`` lists spliced into the parent);
* calls the :class:`_Build` method named like the rule (or its alias) with the span and the children.

Every value on the parser's stack is a tuple ``(value, line, col, end_line, end_col, depth)``;
``depth`` is the nesting depth of the AST built so far, so an expression nested deeper than the later
stages can recurse is refused here with a located ``too-deep`` error (``TooDeep``) instead of failing
in the checker. Problems found while building (``DefaultMisplaced``, ``TooDeep``) are raised only once
the whole text has parsed, so a syntax error anywhere in the text is still reported first, as before.

tests/syntax/test_inline_ast.py checks that this gives exactly the AST (spans included) that lark's
tree with ``propagate_positions`` gives, for every policy file of the repository.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lark import Lark, Token

from policyscheduler.diagnostics import Span
from policyscheduler.syntax import ast

__all__ = ["MAX_DEPTH", "DefaultMisplaced", "TooDeep", "parse_text"]

MAX_DEPTH = 200
"""Deepest AST accepted (rule and clause levels included). The checker and the compilers recurse once
or more per level (the closure compiler four frames per binary operator); Python's default recursion
limit of 1000 gave out at about 250 levels of ``(a + 1)`` in the compiler, after the checker had accepted
them, with a ``too-deep`` error that had no location. 200 leaves every later stage room."""

_BINARY = {
    "or_": "or", "and_": "and", "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
    "in_": "in", "not_in": "not in", "add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%",
}


class _Build:
    """Builds AST nodes bottom-up (one instance per parse); ``file`` names the spans. Each method is
    called with the node's span and its filtered children, as a lark transformer method would be."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.deferred: Exception | None = None

    def _defer(self, exc: Exception) -> None:
        """Remember the first problem found while building; raised when the parse has ended."""
        if self.deferred is None:
            self.deferred = exc

    def _tok(self, tok: Token) -> Span:
        return Span(self.file, tok.line or 1, tok.column or 1, tok.end_line or tok.line or 1,
                    tok.end_column or (tok.column or 1) + len(tok))

    # -- file and rules
    def start(self, span: Span, children: list[Any]) -> ast.Module:
        rules = tuple(c for c in children if isinstance(c, ast.RULE_TYPES))
        statements = tuple(c for c in children if not isinstance(c, ast.RULE_TYPES))
        return ast.Module(self.file, rules, span, statements)

    # -- layering statements
    def rule_kind(self, span: Span, children: list[Any]) -> str:
        return str(children[0])

    def use_defaults(self, span: Span, children: list[Any]) -> ast.UseDefaults:
        return ast.UseDefaults(str(children[0]), self._tok(children[0]), span)

    def disable_stmt(self, span: Span, children: list[Any]) -> ast.Disable:
        kind, name = children
        return ast.Disable(kind, str(name), self._tok(name), span)

    def override_stmt(self, span: Span, children: list[Any]) -> ast.Override:
        kind, name, *settings = children
        weight: tuple[str, Span] | None = None
        norm: Any = None
        skip: list[ast.Expr] = []
        written: list[tuple[str, Span]] = []
        for what, value, setting_span in settings:
            written.append((what, setting_span))
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
            tuple(skip), tuple(written), span,
        )

    def override_weight(self, span: Span, children: list[Any]) -> tuple[str, Any, Span]:
        return ("weight", children[0], span)

    def override_normalize(self, span: Span, children: list[Any]) -> tuple[str, Any, Span]:
        return ("normalize", children[0], span)

    def override_skip(self, span: Span, children: list[Any]) -> tuple[str, Any, Span]:
        return ("skip when", children[0], span)

    def replace_filter(self, span: Span, children: list[Any]) -> ast.FilterRule:
        rule = self.filter_rule(span, children)
        return ast.FilterRule(rule.name, rule.name_span, rule.doc, rule.clauses, rule.span, replaces=True)

    def replace_score(self, span: Span, children: list[Any]) -> ast.ScoreRule:
        name, weight, norm, *clauses = children
        wtext, wspan = weight if weight is not None else ("", self._tok(name))
        return ast.ScoreRule(
            str(name), self._tok(name), "", wtext, wspan,
            str(norm) if norm is not None else None, self._tok(norm) if norm is not None else None,
            tuple(clauses), span, replaces=True,
        )

    def filter_rule(self, span: Span, children: list[Any]) -> ast.FilterRule:
        name, *clauses = children
        return ast.FilterRule(str(name), self._tok(name), "", tuple(clauses), span)

    def preempt_rule(self, span: Span, children: list[Any]) -> ast.PreemptRule:
        name, *clauses = children
        return ast.PreemptRule(str(name), self._tok(name), "", tuple(clauses), span)

    def score_rule(self, span: Span, children: list[Any]) -> ast.ScoreRule:
        name, (wtext, wspan), norm, *clauses = children
        return ast.ScoreRule(
            str(name), self._tok(name), "", wtext, wspan,
            str(norm) if norm is not None else None, self._tok(norm) if norm is not None else None,
            tuple(clauses), span,
        )

    def weight(self, span: Span, children: list[Any]) -> tuple[str, Span]:
        sign, num = children
        return (("-" if sign is not None else "") + str(num), span)

    # -- clauses
    def reason_clause(self, span: Span, children: list[Any]) -> ast.Reason:
        return ast.Reason(self._string(children[0]), span)

    def applies_clause(self, span: Span, children: list[Any]) -> ast.Applies:
        return ast.Applies(children[0], span)

    def let_clause(self, span: Span, children: list[Any]) -> ast.Let:
        name, value = children
        return ast.Let(str(name), self._tok(name), value, span)

    def require_clause(self, span: Span, children: list[Any]) -> ast.Require:
        return ast.Require(children[0], children[1], span)

    def reject_clause(self, span: Span, children: list[Any]) -> ast.Reject:
        return ast.Reject(children[0], children[1], span)

    def reject_pod_clause(self, span: Span, children: list[Any]) -> ast.RejectPod:
        return ast.RejectPod(children[1], children[2], span)

    def reject_each_clause(self, span: Span, children: list[Any]) -> ast.RejectEach:
        return ast.RejectEach(children[0], span)

    def ignore_clause(self, span: Span, children: list[Any]) -> ast.IgnoreWhen:
        return ast.IgnoreWhen(children[0], span)

    def value_clause(self, span: Span, children: list[Any]) -> ast.Value:
        return ast.Value(children[0], span)

    def victim_clause(self, span: Span, children: list[Any]) -> ast.VictimWhen:
        return ast.VictimWhen(children[0], span)

    # -- loops
    def binders(self, span: Span, children: list[Any]) -> tuple[ast.Binder, ...]:
        return tuple(ast.Binder(str(t), self._tok(t)) for t in children if t is not None)

    def _loop(self, span: Span, binders: tuple[ast.Binder, ...], iterable: Any, where: Any) -> ast.Loop:
        return ast.Loop(binders, iterable, where, span)

    def all_q(self, span: Span, children: list[Any]) -> ast.Quantifier:
        b, it, where, body = children
        return ast.Quantifier("all", self._loop(span, b, it, where), body, span)

    def any_q(self, span: Span, children: list[Any]) -> ast.Quantifier:
        b, it, where, body = children
        return ast.Quantifier("any", self._loop(span, b, it, where), body, span)

    def count_agg(self, span: Span, children: list[Any]) -> ast.Aggregate:
        b, it, where = children
        return ast.Aggregate("count", self._loop(span, b, it, where), None, None, span)

    def sum_agg(self, span: Span, children: list[Any]) -> ast.Aggregate:
        b, it, where, value = children
        return ast.Aggregate("sum", self._loop(span, b, it, where), value, None, span)

    def minmax_agg(self, span: Span, children: list[Any]) -> ast.Aggregate:
        kw, b, it, where, value, default = children
        return ast.Aggregate(str(kw), self._loop(span, b, it, where), value, default, span)

    def comprehension(self, span: Span, children: list[Any]) -> ast.Comprehension:
        value, b, it, where = children
        return ast.Comprehension(value, self._loop(span, b, it, where), span)

    # -- operators
    def conditional(self, span: Span, children: list[Any]) -> ast.IfExpr:
        return ast.IfExpr(children[0], children[1], children[2], span)

    def not_(self, span: Span, children: list[Any]) -> ast.Unary:
        return ast.Unary("not", children[0], span)

    def neg(self, span: Span, children: list[Any]) -> ast.Unary:
        return ast.Unary("-", children[0], span)

    def attr(self, span: Span, children: list[Any]) -> ast.Attr:
        obj, name = children
        return ast.Attr(obj, str(name), self._tok(name), span)

    def call(self, span: Span, children: list[Any]) -> ast.Call:
        func, args = children
        plain = tuple(a for a in (args or ()) if not isinstance(a, _Default))
        defaults = [a for a in (args or ()) if isinstance(a, _Default)]
        if defaults and (len(defaults) > 1 or not isinstance(args[-1], _Default)):
            self._defer(DefaultMisplaced(defaults[-1].span))
        return ast.Call(func, plain, span, defaults[0].value if defaults else None)

    def default_arg(self, span: Span, children: list[Any]) -> _Default:
        return _Default(children[0], span)

    def index(self, span: Span, children: list[Any]) -> ast.Index:
        return ast.Index(children[0], children[1], span)

    def args(self, span: Span, children: list[Any]) -> tuple[Any, ...]:
        return tuple(c for c in children if c is not None)

    # -- atoms
    def int_lit(self, span: Span, children: list[Any]) -> ast.IntLit:
        text = str(children[0])
        # Beyond 64 bits the checker reports `too-large`; a 5,000-digit literal must not reach int() (Python
        # refuses strings of more than 4,300 digits), so anything that long stands for "too large".
        value = int(text) if len(text) <= 40 else 10**40
        return ast.IntLit(value, span)

    def float_lit(self, span: Span, children: list[Any]) -> ast.FloatLit:
        return ast.FloatLit(float(children[0]), span)

    def quantity_lit(self, span: Span, children: list[Any]) -> ast.QuantityLit:
        return ast.QuantityLit(str(children[0]), span)

    def string_lit(self, span: Span, children: list[Any]) -> ast.StringLit:
        return self._string(children[0])

    def _string(self, tok: Token) -> ast.StringLit:
        return ast.StringLit(str(tok)[1:-1], self._tok(tok))

    def true_lit(self, span: Span, children: list[Any]) -> ast.BoolLit:
        return ast.BoolLit(True, span)

    def false_lit(self, span: Span, children: list[Any]) -> ast.BoolLit:
        return ast.BoolLit(False, span)

    def name(self, span: Span, children: list[Any]) -> ast.Name:
        return ast.Name(str(children[0]), span)

    def list_lit(self, span: Span, children: list[Any]) -> ast.ListLit:
        items = tuple(children[0] or ())
        for item in items:
            if isinstance(item, _Default):
                self._defer(DefaultMisplaced(item.span))
                break
        return ast.ListLit(items, span)



class _Default:
    """``default D`` in an argument list, before :meth:`_Build.call` folds it into ``Call.default``."""

    def __init__(self, value: ast.Expr, span: Span) -> None:
        self.value = value
        self.span = span


class DefaultMisplaced(Exception):
    """``default D`` that is not the single last argument of a call, or outside a call."""

    def __init__(self, span: Span) -> None:
        super().__init__("'default' must be the last argument of a call, and appear once")
        self.span = span


class TooDeep(Exception):
    """An expression nested more than :data:`MAX_DEPTH` levels deep; ``line`` is where it was found."""

    def __init__(self, line: int) -> None:
        super().__init__(f"nested more than {MAX_DEPTH} levels deep")
        self.line = line


def _binary(op: str) -> Callable[..., ast.Binary]:
    def method(self: _Build, span: Span, children: list[Any], op_span: Span | None = None) -> ast.Binary:
        return ast.Binary(op, children[0], children[1], span, op_span)

    return method


for _rule, _op in _BINARY.items():
    setattr(_Build, _rule, _binary(_op))


# ----------------------------------------------------------------------------------- the reductions

_Plan = tuple[str, bool, tuple[tuple[int, bool, int], ...], int]
"""Per grammar rule: the callback name, whether it is inlined when one child is left (``?rule``), the
children kept (index in the expansion, spliced ``_helper`` or not, placeholders to insert before it), and
the placeholders to append."""

_PLANS: dict[int, tuple[Lark, dict[Any, _Plan]]] = {}


def _plans(parser: Lark) -> dict[Any, _Plan]:
    """What lark's ParseTreeBuilder would do for each rule (``lark.parse_tree_builder``'s child filter),
    worked out once per parser."""
    known = _PLANS.get(id(parser))
    if known is not None and known[0] is parser:
        return known[1]
    plans: dict[Any, _Plan] = {}
    for rule in parser.rules:
        opts = rule.options
        name = rule.alias or opts.template_source or rule.origin.name
        n = len(rule.expansion)
        if opts.empty_indices:  # maybe_placeholders: how many Nones go before each kept symbol
            marks = "".join("1" if e else "0" for e in opts.empty_indices)
            nones = [len(ones) for ones in marks.split("0")]
        else:
            nones = [0] * (n + 1)
        keep: list[tuple[int, bool, int]] = []
        pending = 0
        for i, sym in enumerate(rule.expansion):
            pending += nones[i]
            if opts.keep_all_tokens or not (sym.is_term and getattr(sym, "filter_out", False)):
                keep.append((i, not sym.is_term and sym.name.startswith("_"), pending))
                pending = 0
        pending += nones[n]
        expand1 = bool(opts.expand1 and not rule.alias)
        helper = name.startswith("_")
        if not helper and not callable(getattr(_Build, name, None)) and not (expand1 and len(keep) == 1 and not pending):
            raise TypeError(f"the grammar rule {name!r} has no AST builder")  # a grammar change needs one
        plans[rule] = (name, expand1, tuple(keep), pending)
    _PLANS[id(parser)] = (parser, plans)
    return plans


def _first(s: list[Any]) -> Any:
    return s[0]


def _callback(plan: _Plan, method: Callable[..., Any] | None, build: _Build
              ) -> Callable[[list[Any]], Any]:
    """The reduction callback of one grammar rule."""
    _name, expand1, keep, after = plan
    file = build.file
    binary = _name in _BINARY
    if expand1 and len(keep) == 1 and keep[0][0] == 0 and not keep[0][2] and not after:
        # `?sum: term` and the like: the value, its extent and depth pass through unchanged, unless the
        # rule wraps one child in tokens it drops (`( expr )`), handled below
        return _first

    def reduce(s: list[Any]) -> Any:
        line: Any = None
        col: Any = None
        end_line: Any = None
        end_col: Any = None
        for c in s:
            if c.__class__ is tuple:
                if c[1] is not None:
                    line, col = c[1], c[2]
                    break
            else:
                line, col = c.line, c.column
                break
        for c in reversed(s):
            if c.__class__ is tuple:
                if c[3] is not None:
                    end_line, end_col = c[3], c[4]
                    break
            else:
                end_line, end_col = c.end_line, c.end_column
                break
        children: list[Any] = []
        depth = 0
        for i, splice, nones in keep:
            if nones:
                children += [None] * nones
            c = s[i]
            if c.__class__ is tuple:
                if c[5] > depth:
                    depth = c[5]
                if splice:  # a `_helper` list: reused when it comes first (left recursion stays linear)
                    if children:
                        children += c[0]
                    else:
                        children = c[0]
                else:
                    children.append(c[0])
            else:
                children.append(c)
        if after:
            children += [None] * after
        if expand1 and len(children) == 1:
            value = children[0]
            if isinstance(value, Token):  # lark passes a lone token on as it is, with its own position
                return (value, value.line, value.column, value.end_line, value.end_column, 0)
            return (value, line, col, end_line, end_col, depth)
        if method is None:  # a `_helper` list, spliced into its parent
            return (children, line, col, end_line, end_col, depth)
        span = Span(file, line, col, end_line, end_col) if line is not None else Span(file, 1, 1, 1, 1)
        if depth >= MAX_DEPTH and build.deferred is None:
            build._defer(TooDeep(line or 1))
        if binary:  # the operator's own tokens (`/`, `not in`) sit between the two operands
            ops = [c for c in s if c.__class__ is not tuple]
            if ops:
                first, last = ops[0], ops[-1]
                op_span = Span(file, first.line, first.column, last.end_line, last.end_column)
                return (method(span, children, op_span), line, col, end_line, end_col, depth + 1)
        return (method(span, children), line, col, end_line, end_col, depth + 1)

    return reduce


def parse_text(parser: Lark, text: str, file: str) -> ast.Module:
    """Parse ``text`` straight to a Module whose spans name ``file``.

    Raises lark's ``UnexpectedInput`` for a syntax error, else :class:`DefaultMisplaced` or
    :class:`TooDeep` for the first such problem in the text.
    """
    build = _Build(file)
    callbacks = {rule: _callback(plan, getattr(build, plan[0], None) if not plan[0].startswith("_") else None,
                                 build)
                 for rule, plan in _plans(parser).items()}
    session = parser.parse_interactive(text)
    session.parser_state.parse_conf.callbacks = callbacks
    result = session.resume_parse()  # type: ignore[no-untyped-call]  # lark leaves it unannotated
    if build.deferred is not None:
        raise build.deferred
    module = result[0]
    assert isinstance(module, ast.Module)
    return module
