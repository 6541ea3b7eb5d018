"""Stage 2: AST -> checked rules (names resolved, types checked, cost bounded)."""

from __future__ import annotations

from policyscheduler.checker.checker import check
from policyscheduler.checker.env import Schema, build_schema, global_schema
from policyscheduler.checker.passes import COST_LIMIT, CheckedRule

__all__ = ["COST_LIMIT", "CheckedRule", "Schema", "build_schema", "check", "global_schema"]
