"""Moved: ``ClusterSnapshot`` now lives in :mod:`policyscheduler.state` (the incremental cluster state).

This module only forwards the name for code written before the move. The state package sits *above*
objects (it imports the records and the Cluster), so the forward is resolved lazily, at first use,
never at import time; new code imports ``from policyscheduler.state import ClusterSnapshot``.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["ClusterSnapshot"]


def __getattr__(name: str) -> Any:
    if name == "ClusterSnapshot":
        return importlib.import_module("policyscheduler.state").ClusterSnapshot
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
