"""Stage 1: policy text -> AST, built while lark parses (no parse tree); lark never leaves this package."""

from __future__ import annotations

from policyscheduler.syntax.parser import parse

__all__ = ["parse"]
