"""Stage 1: policy text -> AST. The lark tree never leaves this package."""

from __future__ import annotations

from policyscheduler.syntax.parser import parse

__all__ = ["parse"]
