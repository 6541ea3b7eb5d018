"""Expressions back to policy text, for messages that suggest a fix in the user's own terms
(``int(node.labels["gpu-count"], default 0) >= 4``). The text is the formatter's own rendering (one
printer for ``fmt`` and for hints), on one line; a hint only needs to be recognisable, so a long one is
shown as ``...``."""

from __future__ import annotations

from policyscheduler.syntax import ast

__all__ = ["to_source"]

_MAX = 60


def to_source(e: ast.Expr) -> str:
    """A short policy-text rendering of ``e`` (``...`` when it would be longer than a hint should be)."""
    from policyscheduler.syntax.format import expression_text  # format imports the parser: load it late

    text = expression_text(e)
    return text if len(text) <= _MAX else "..."
