"""What the policy sources and the scheduler know of each other: two small protocols, no imports between them.

The scheduler starts and stops a profile's sources (:class:`PolicyWatch`); the sources swap a reloaded set
into the scheduler and report through its metrics and event recorders (:class:`SchedulerHost`). Written
as protocols so that :mod:`.scheduler` and :mod:`.sources` need not import each other (they once did).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from policyscheduler.compiler import PolicySet
    from policyscheduler.cycle import Cycle
    from policyscheduler.kube.events import EventRecorder
    from policyscheduler.kube.metrics import SchedulerMetrics
    from policyscheduler.kube.rest import RestClient

__all__ = ["PolicyWatch", "SchedulerHost"]


class SchedulerHost(Protocol):
    """The running scheduler, as a profile's policy sources use it."""

    @property
    def client(self) -> RestClient: ...

    @property
    def cycle(self) -> Cycle: ...

    @property
    def metrics(self) -> SchedulerMetrics: ...

    @property
    def recorders(self) -> Mapping[str, EventRecorder]: ...

    @property
    def recorder(self) -> EventRecorder: ...

    @property
    def profile_names(self) -> Sequence[str]: ...

    @property
    def leading(self) -> bool: ...

    def policy_set_of(self, profile: str) -> PolicySet:
        """The set in force for ``profile``."""
        ...

    def set_profile_policy(self, profile: str, policy_set: PolicySet) -> int:
        """Swap ``profile``'s set; how many pods moved."""
        ...


class PolicyWatch(Protocol):
    """A profile's watched policy sources, as the scheduler drives them."""

    def attach(self, scheduler: SchedulerHost, profile: str | None = None) -> None:
        """Wire the watches and the reload to ``scheduler``'s ``profile``."""
        ...

    def start(self) -> None:
        """Start watching (with the scheduler)."""
        ...

    def stop(self) -> None:
        """Stop watching (at shutdown, before the loop stops)."""
        ...
