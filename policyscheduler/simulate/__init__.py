"""Replay a cluster snapshot: schedule its pending pods one by one under a PolicySet."""

from __future__ import annotations

from policyscheduler.simulate.queue import is_pending, queue_order
from policyscheduler.simulate.run import Simulation, simulate

__all__ = ["Simulation", "is_pending", "queue_order", "simulate"]
