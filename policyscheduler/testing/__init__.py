"""Policy tests: YAML cases next to the policies, run through the scheduler's own evaluation.

See :mod:`policyscheduler.testing.runner` for the file format; ``policyscheduler test`` is the command.
"""

from __future__ import annotations

from policyscheduler.testing.runner import (
    Case,
    CaseResult,
    Coverage,
    Failure,
    Suite,
    TestRun,
    collect,
    run_tests,
)

__all__ = ["Case", "CaseResult", "Coverage", "Failure", "Suite", "TestRun", "collect", "run_tests"]
