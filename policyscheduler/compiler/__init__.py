"""Stage 3: checked rules -> closures -> PolicySet."""

from __future__ import annotations

from policyscheduler.compiler.program import (
    FilterRule,
    PolicySet,
    PreemptRule,
    ScoreRule,
    compile_rule,
    digest_of,
)

__all__ = ["FilterRule", "PolicySet", "PreemptRule", "ScoreRule", "compile_rule", "digest_of"]
