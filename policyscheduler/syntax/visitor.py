"""One way to walk expressions: exhaustive dispatch over the AST's expression classes.

Every pass over expressions (the checker, the closure compiler, the vectorised lowering, the
analyses, later ``fmt`` and ``explain``) subclasses :class:`ExprVisitor` and defines one method per
expression class, named ``_<ClassName>``. The set is checked when the subclass is *defined*: a new
expression class added to :mod:`.ast` without a method in every pass fails at import time, not on the
first policy that happens to use it.

:func:`children` gives the direct sub-expressions of any expression, for passes that only need to
look at everything below a node (dependency analysis, field reads).
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, Generic, TypeVar

from policyscheduler.syntax import ast

__all__ = ["EXPR_CLASSES", "ExprVisitor", "children", "walk", "loop_children"]

EXPR_CLASSES: tuple[type, ...] = typing.get_args(ast.Expr)
"""Every expression class of the AST, from the ``ast.Expr`` union."""

R = TypeVar("R")


class ExprVisitor(Generic[R]):
    """Base of every expression pass: ``visit(e, *args)`` calls ``self._<type(e).__name__>(e, *args)``.

    Set ``partial = True`` on an abstract intermediate class to skip the exhaustiveness check.
    """

    partial: ClassVar[bool] = False
    _dispatch: ClassVar[dict[type, str]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("partial", False):
            return
        missing = [c.__name__ for c in EXPR_CLASSES if not callable(getattr(cls, "_" + c.__name__, None))]
        if missing:
            raise TypeError(f"{cls.__name__} does not handle expression classes: {', '.join(missing)}")
        cls._dispatch = {c: "_" + c.__name__ for c in EXPR_CLASSES}

    def visit(self, e: ast.Expr, *args: Any) -> R:
        """Dispatch on the expression's class."""
        method: Callable[..., R] = getattr(self, self._dispatch[type(e)])
        return method(e, *args)


def loop_children(loop: ast.Loop) -> tuple[ast.Expr, ...]:
    """The expressions of a loop header: the iterable, then the ``where`` filter if any."""
    return (loop.iterable,) if loop.where is None else (loop.iterable, loop.where)


def children(e: ast.Expr) -> tuple[ast.Expr, ...]:
    """The direct sub-expressions of ``e`` in source order (loop headers before bodies)."""
    if isinstance(e, (ast.IntLit, ast.FloatLit, ast.QuantityLit, ast.StringLit, ast.BoolLit, ast.Name)):
        return ()
    if isinstance(e, ast.ListLit):
        return e.items
    if isinstance(e, ast.Attr):
        return (e.obj,)
    if isinstance(e, ast.Call):
        return (e.func, *e.args) if e.default is None else (e.func, *e.args, e.default)
    if isinstance(e, ast.Index):
        return (e.obj, e.index)
    if isinstance(e, ast.Unary):
        return (e.operand,)
    if isinstance(e, ast.Binary):
        return (e.left, e.right)
    if isinstance(e, ast.IfExpr):
        return (e.cond, e.then, e.else_)
    if isinstance(e, ast.Quantifier):
        return (*loop_children(e.loop), e.body)
    if isinstance(e, ast.Comprehension):
        return (*loop_children(e.loop), e.value)
    if isinstance(e, ast.Aggregate):
        parts = loop_children(e.loop)
        if e.value is not None:
            parts = (*parts, e.value)
        return parts if e.default is None else (*parts, e.default)
    raise TypeError(f"not an expression: {type(e).__name__}")


def walk(e: ast.Expr) -> Iterator[ast.Expr]:
    """``e`` and every expression below it, depth first, parents before children."""
    stack = [e]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(children(node)))
