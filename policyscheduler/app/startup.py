"""Putting a live scheduler together from :class:`~policyscheduler.app.options.RunSettings`, in the order
that fails early and cheaply: policy files first (a broken file fails before any connection is made), then
the connection, then the ConfigMap sources through it, then the engine, the logs and the scheduler itself.
Every failure is one line on stderr and ``None`` (``run`` exits 2), never a traceback.

A ConfigMap source that cannot be used (broken, no ``*.policy`` key, missing, forbidden) does not stop the
start when the last good set of that source was saved (:mod:`.lastgood`, in the lease namespace): the
problem is printed as a warning and the scheduler starts with the saved set.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TextIO

from policyscheduler.app.lastgood import LastGoodStore
from policyscheduler.app.options import RunProfile, RunSettings
from policyscheduler.app.scheduler import LiveScheduler
from policyscheduler.app.sources import PolicySourceError, PolicySources
from policyscheduler.diagnostics import render_text
from policyscheduler.evaluation import Evaluator, make_evaluator
from policyscheduler.kube import ConfigError, Connection, RestClient, load_connection
from policyscheduler.kube.logs import configure
from policyscheduler.kube.ratelimit import RateLimiter

__all__ = ["Started", "choose_evaluator", "start_scheduler"]


@dataclasses.dataclass
class Started:
    """A scheduler built and ready to :meth:`~LiveScheduler.start`, with what ``run`` reports about it."""

    scheduler: LiveScheduler
    connection: Connection
    client: RestClient
    sources: dict[str, PolicySources]
    profiles: list[RunProfile]
    engine: str


def choose_evaluator(name: str | None, err: TextIO) -> tuple[Evaluator, str]:
    """The engine ``name``, or the vector engine when it can be built (else the reference one, with a note)."""
    if name is not None:
        return make_evaluator(name), name
    try:
        return make_evaluator("vector"), "vector"
    except (ImportError, ValueError) as exc:
        err.write(f"note: vector engine unavailable ({exc}); using the reference engine\n")
        return make_evaluator("reference"), "reference"


def _load_policies(sources: PolicySources, client: RestClient | None, err: TextIO, profile: str = "") -> Any:
    """The start-up set of ``sources`` (None after printing why not); its diagnostics go to ``err``."""
    try:
        loaded = sources.load_initial(client, profile)
    except PolicySourceError as exc:
        err.write(f"policyscheduler run: {exc}\n")
        return None
    fallback = sources.fallback
    if fallback is not None:
        if fallback.diagnostics:
            err.write(render_text(list(fallback.diagnostics), {}).rstrip("\n") + "\n")
        err.write(f"policyscheduler run: warning: {fallback.note(sources.description)}\n")
    if loaded.diagnostics:
        err.write(render_text(loaded.diagnostics, loaded.sources).rstrip("\n") + "\n")
    return loaded.policy_set


def start_scheduler(settings: RunSettings, err: TextIO) -> Started | None:
    """Load every profile's policies, connect and build the scheduler; None after printing why not."""
    plans = settings.profiles
    several = len(plans) > 1
    sources = {plan.name: PolicySources(list(plan.paths), plan.configmap, poll_interval=settings.poll_interval)
               for plan in plans}
    policy_sets: dict[str, Any] = {}
    for plan in plans:  # files first: a broken file fails before any connection is made
        if plan.configmap is None:
            loaded = _load_policies(sources[plan.name], None, err)
            if loaded is None:
                err.write(f"policyscheduler run: the policies of profile {plan.name} have errors; not starting\n"
                          if several else "policyscheduler run: the policies have errors; not starting\n")
                return None
            policy_sets[plan.name] = loaded
    try:
        connection = load_connection(settings.kubeconfig)
    except ConfigError as exc:
        err.write(f"policyscheduler run: {exc}\n")
        return None
    client = RestClient(connection)
    if settings.qps is not None:
        burst = settings.burst
        client.limiter = RateLimiter(settings.qps, burst if burst is not None else max(1, int(settings.qps * 2)))
    store = LastGoodStore(client, settings.options.lease_namespace)
    for plan in plans:
        if plan.configmap is not None:
            sources[plan.name].last_good = store
            loaded = _load_policies(sources[plan.name], client, err, plan.name)
            if loaded is None:
                err.write(f"policyscheduler run: the policies of profile {plan.name} do not load; not starting\n"
                          if several else "policyscheduler run: the policies do not load; not starting\n")
                return None
            policy_sets[plan.name] = loaded
    evaluator, engine = choose_evaluator(settings.engine, err)
    configure(settings.verbosity, err)
    profiles = [RunProfile(plan.name, policy_sets[plan.name], sources[plan.name], plan.shadows) for plan in plans]
    try:
        scheduler = LiveScheduler(client, None, evaluator, settings.options, engine=engine, profiles=profiles)
    except (OSError, ValueError) as exc:  # the status port is taken, the TLS files do not load, ...
        err.write(f"policyscheduler run: cannot serve on {settings.bind_address_text}: {exc}\n")
        return None
    store.may_write = lambda: scheduler.leading
    return Started(scheduler, connection, client, sources, profiles, engine)
