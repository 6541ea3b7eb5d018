"""One way to walk expressions: exhaustive dispatch over the AST's expression classes.

Every pass that computes something per expression class subclasses :class:`ExprVisitor` and defines one
method per class, named ``_<ClassName>``: the checker (``checker/expressions.py``), the closure compiler
(``compiler/closures.py``), the vectorised lowering and its free-name analysis
(``evaluation/vector/lower.py``, ``scope.py``) and ``fmt``'s printer (``syntax/format.py``). The set is
checked when the subclass is *defined*: a new expression class added to the ``ast.Expr`` union without
a method in every pass fails at import time, not on the first policy that happens to use it. Methods
are looked up once, at that point; ``visit`` is a lookup by exact class in a table of functions.

:func:`children` (the one definition of an expression's direct sub-expressions) and :func:`walk` serve
the passes that only need to look at everything below a node: the checker's analyses and lint checks,
and the vectorised backend's equivalence cache (``evaluation/vector/reuse.py``).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, Generic, TypeVar

from policyscheduler.syntax import ast

__all__ = ["EXPR_CLASSES", "ExprVisitor", "children", "walk", "loop_children"]

EXPR_CLASSES: tuple[type, ...] = typing.get_args(ast.Expr)
"""Every expression class of the AST, from the ``ast.Expr`` union."""

R = TypeVar("R")


class ExprVisitor(Generic[R]):
    """Base of every expression pass: ``visit(e, *args)`` calls the method ``_<ClassName>(e, *args)`` of
    the expression's class (``_Call`` for an :class:`~.ast.Call`).

    Set ``partial = True`` on an abstract intermediate class (a mixin holding some of the methods) to
    skip the exhaustiveness check; the concrete class combining them is checked.
    """

    partial: ClassVar[bool] = False
    _dispatch: ClassVar[dict[type, Callable[..., Any]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("partial", False):
            return
        methods = {c: inspect.getattr_static(cls, "_" + c.__name__, None) for c in EXPR_CLASSES}
        missing = [c.__name__ for c, m in methods.items() if not inspect.isfunction(m)]
        if missing:
            raise TypeError(f"{cls.__name__} does not handle expression classes: {', '.join(missing)} "
                            "(a plain method named _<ClassName> each)")
        cls._dispatch = {c: typing.cast(Callable[..., Any], m) for c, m in methods.items()}

    def visit(self, e: ast.Expr, *args: Any) -> R:
        """Dispatch on the expression's exact class."""
        method = self._dispatch.get(type(e))
        if method is None:
            raise TypeError(f"not an expression: {type(e).__name__}")
        result: R = method(self, e, *args)
        return result


def loop_children(loop: ast.Loop) -> tuple[ast.Expr, ...]:
    """The expressions of a loop header: the iterable, then the ``where`` filter if any."""
    return (loop.iterable,) if loop.where is None else (loop.iterable, loop.where)


def _no_children(e: Any) -> tuple[ast.Expr, ...]:
    return ()


def _call_children(e: ast.Call) -> tuple[ast.Expr, ...]:
    return (e.func, *e.args) if e.default is None else (e.func, *e.args, e.default)


def _aggregate_children(e: ast.Aggregate) -> tuple[ast.Expr, ...]:
    parts = loop_children(e.loop)
    if e.value is not None:
        parts = (*parts, e.value)
    return parts if e.default is None else (*parts, e.default)


_CHILDREN: dict[type, Callable[[Any], tuple[ast.Expr, ...]]] = {
    ast.IntLit: _no_children, ast.FloatLit: _no_children, ast.QuantityLit: _no_children,
    ast.StringLit: _no_children, ast.BoolLit: _no_children, ast.Name: _no_children,
    ast.ListLit: lambda e: e.items,
    ast.Attr: lambda e: (e.obj,),
    ast.Call: _call_children,
    ast.Index: lambda e: (e.obj, e.index),
    ast.Unary: lambda e: (e.operand,),
    ast.Binary: lambda e: (e.left, e.right),
    ast.IfExpr: lambda e: (e.cond, e.then, e.else_),
    ast.Quantifier: lambda e: (*loop_children(e.loop), e.body),
    ast.Comprehension: lambda e: (*loop_children(e.loop), e.value),
    ast.Aggregate: _aggregate_children,
}
"""Per expression class, its direct sub-expressions (a lookup by exact class: lint walks every node of
every rule of a file, and a chain of isinstance tests was a visible part of that)."""
assert set(_CHILDREN) == set(EXPR_CLASSES), "every expression class needs its children"


def children(e: ast.Expr) -> tuple[ast.Expr, ...]:
    """The direct sub-expressions of ``e`` in source order (loop headers before bodies)."""
    get = _CHILDREN.get(type(e))
    if get is None:
        raise TypeError(f"not an expression: {type(e).__name__}")
    return get(e)


def walk(e: ast.Expr) -> Iterator[ast.Expr]:
    """``e`` and every expression below it, depth first, parents before children."""
    stack = [e]
    table = _CHILDREN
    while stack:
        node = stack.pop()
        yield node
        get = table.get(type(node))
        if get is None:
            raise TypeError(f"not an expression: {type(node).__name__}")
        below = get(node)
        if below:
            stack.extend(reversed(below))
