"""Policy tests: YAML cases next to the policies, run through the scheduler's own evaluation.

The file format is documented in the README ("Testing policies"); :mod:`.casefile` reads and checks test
files, :mod:`.runner` runs the cases, :mod:`.coverage` says what they exercised. ``policyscheduler test``
is the command.
"""

from __future__ import annotations

from policyscheduler.testing.casefile import Case, Suite, TestInputError, collect
from policyscheduler.testing.coverage import Coverage
from policyscheduler.testing.runner import CaseResult, Failure, TestRun, run_tests

__all__ = ["Case", "CaseResult", "Coverage", "Failure", "Suite", "TestInputError", "TestRun", "collect", "run_tests"]
