"""Free functions callable from policies (registered with ``@builtin``)."""

from __future__ import annotations

from policyscheduler.objects.records import Taint
from policyscheduler.schema import builtin

__all__ = ["taint"]


@builtin
def taint(key: str, value: str, effect: str) -> Taint:
    """A taint value, e.g. ``taint("node.kubernetes.io/unschedulable", "", "NoSchedule")``."""
    return Taint(key, value, effect)
