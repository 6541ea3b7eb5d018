"""Stage 3: checked rules -> closures -> PolicySet."""

from __future__ import annotations

from policyscheduler.compiler.program import (
    FilterRule,
    PolicySet,
    ScoreRule,
    compile_rule,
    digest_of,
)

__all__ = ["FilterRule", "PolicySet", "ScoreRule", "compile_rule", "digest_of"]
