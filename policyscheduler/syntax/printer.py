"""Expressions back to policy text, for messages that suggest a fix in the user's own terms
(``int(node.labels["gpu-count"], default 0) >= 4``). Not a formatter: long or exotic forms are
abbreviated to ``...``, since a hint only needs to be recognisable."""

from __future__ import annotations

from policyscheduler.syntax import ast

__all__ = ["to_source"]

_MAX = 60


def to_source(e: ast.Expr) -> str:
    """A short policy-text rendering of ``e`` (``...`` for parts too long or too complex to show)."""
    text = _show(e, 0)
    return text if len(text) <= _MAX else "..."


def _show(e: ast.Expr, depth: int) -> str:
    if depth > 6:
        return "..."
    if isinstance(e, ast.IntLit):
        return str(e.value)
    if isinstance(e, ast.FloatLit):
        return repr(e.value)
    if isinstance(e, ast.QuantityLit):
        return e.text
    if isinstance(e, ast.StringLit):
        return f'"{e.raw}"'
    if isinstance(e, ast.BoolLit):
        return "true" if e.value else "false"
    if isinstance(e, ast.Name):
        return e.id
    if isinstance(e, ast.Attr):
        return f"{_show(e.obj, depth + 1)}.{e.name}"
    if isinstance(e, ast.Index):
        return f"{_show(e.obj, depth + 1)}[{_show(e.index, depth + 1)}]"
    if isinstance(e, ast.Call):
        args = [_show(a, depth + 1) for a in e.args]
        if e.default is not None:
            args.append("default " + _show(e.default, depth + 1))
        return f"{_show(e.func, depth + 1)}({', '.join(args)})"
    if isinstance(e, ast.ListLit):
        return "[" + ", ".join(_show(i, depth + 1) for i in e.items) + "]"
    if isinstance(e, ast.Unary):
        return ("not " if e.op == "not" else "-") + _show(e.operand, depth + 1)
    if isinstance(e, ast.Binary):
        return f"({_show(e.left, depth + 1)} {e.op} {_show(e.right, depth + 1)})"
    return "..."
