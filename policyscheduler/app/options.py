"""What a running scheduler is started with: the ``run`` flags (:class:`Options`) and its profiles."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from policyscheduler.kube.binder import DEFAULT_LANES
from policyscheduler.kube.secure import SecureServing

if TYPE_CHECKING:
    from policyscheduler.app.host import PolicyWatch
    from policyscheduler.app.volumes import VolumePlanner
    from policyscheduler.compiler import PolicySet

__all__ = ["Options", "ProfileSettings", "RunProfile", "RunSettings"]


@dataclasses.dataclass
class Options:
    """What ``policyscheduler run`` flags set (kube-scheduler's names and defaults)."""

    scheduler_name: str = "policy-scheduler"
    leader_elect: bool = False
    lease_namespace: str = "kube-system"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    bind_address: tuple[str, int] | None = ("127.0.0.1", 10259)
    """Plain HTTP status endpoints (development, loopback only); ``secure_serving`` wins when both are set."""
    secure_serving: SecureServing | None = None
    """HTTPS with delegated authn/authz (``--bind-address IP --secure-port N``, kube/secure.py)."""
    bind_lanes: int = DEFAULT_LANES  # kube/binder.py: why 16
    seed: int | None = None
    lease_name: str | None = None
    """The Lease's name (``--leader-elect-resource-name``); default: the (first) profile's scheduler name."""
    volume_bind_timeout: float = 600.0
    """Seconds a pod waits for its claims to bind before it is retried (VolumeBindingArgs
    ``bindTimeoutSeconds``, kube's default 600)."""
    volume_planner: VolumePlanner | None = None
    """Who plans a pod's claim work on its node (app/volumes.py); None: nothing is written, the pod still
    waits for all its claims. Not a flag: set by whoever builds the scheduler."""


@dataclasses.dataclass
class RunProfile:
    """One profile of a running process: its scheduler name, the set it starts with, its watched sources
    (:class:`policyscheduler.app.sources.PolicySources`); ``shadows`` set: a shadow profile judging that
    scheduler's placements (it never binds)."""

    name: str
    policy_set: PolicySet
    sources: PolicyWatch | None = None
    shadows: str | None = None


@dataclasses.dataclass(frozen=True)
class ProfileSettings:
    """One profile as ``run``'s flags or configuration file name it (nothing loaded yet): the scheduler name,
    policy paths (watched), the ConfigMap ``(namespace, name)`` and, for a shadow profile, whom it shadows."""

    name: str
    paths: tuple[str, ...] = ()
    configmap: tuple[str, str] | None = None
    shadows: str | None = None


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """Everything ``policyscheduler run`` starts from, checked by the command line (:mod:`policyscheduler.cli.run`).

    ``options.scheduler_name`` is the first profile's name; ``bind_address_text`` is the address as given
    (for the message when it cannot be listened on); ``qps``/``burst``: the client-side rate limit (none
    without ``qps``; ``burst`` defaults to twice ``qps``).
    """

    profiles: tuple[ProfileSettings, ...]
    options: Options
    bind_address_text: str = "127.0.0.1:10259"
    kubeconfig: str | None = None
    poll_interval: float = 1.0
    qps: float | None = None
    burst: int | None = None
    verbosity: int = 0
    engine: str | None = None
