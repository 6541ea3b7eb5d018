"""``policyscheduler run``: the live scheduler (watch, decide with the policies, bind).

Flags are named as kube-scheduler users know them. Exit status: 0 after SIGTERM/SIGINT and a clean
hand-over (in-flight binds finished, lease released), 1 when the lease was lost (like kube-scheduler,
a replica that cannot renew stops and lets its Deployment restart it), 2 for bad flags, a policy set
that does not load or no usable cluster configuration -- with the reason on stderr.

Policies: the bundled defaults, ``--policies`` paths and the ``--policies-configmap`` ConfigMap's
``*.policy`` keys, layered as ``lint`` layers them. The paths and the ConfigMap are watched and reloaded
live (:mod:`policyscheduler.kube.policysource`); SIGHUP reloads at once. A set that loads replaces the
running one between two scheduling cycles (unschedulable pods get another chance); a broken one is
reported (event, log, metrics) and the last good set stays in force.

Profiles (``--config FILE``): every profile of the file runs in this one process (only the one
``--scheduler-name`` names, when given), sharing one cache, one queue and one lease; each has its own
policy sources, reloads, events, log field and metric label; a shadow profile (``mode: shadow``) only judges
the placements of the scheduler it shadows (:mod:`policyscheduler.kube.shadow`). ``--kube-api-qps`` /
``--kube-api-burst`` (``clientConnection.qps`` / ``burst``) rate-limit API requests
(:mod:`policyscheduler.kube.ratelimit`).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any, TextIO

__all__ = ["add_arguments", "main", "run"]

EXIT_OK = 0
EXIT_LOST_LEASE = 1
EXIT_USAGE = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``run`` flags (kube-scheduler's names where one exists)."""
    parser.add_argument("--config", metavar="FILE",
                        help="a PolicySchedulerConfiguration file: every profile runs in this process (or only the "
                             "one --scheduler-name names); flags given explicitly override the file")
    parser.add_argument("--kubeconfig", metavar="PATH", help="kubeconfig file (default: in-cluster, then ~/.kube/config)")
    parser.add_argument("--scheduler-name", default="policy-scheduler",
                        help="schedule the pods whose spec.schedulerName is this (default: policy-scheduler)")
    parser.add_argument("--policies", metavar="DIR", action="append",
                        help="policy folder or file (repeatable), layered on the bundled defaults; "
                             "watched and reloaded live")
    parser.add_argument("--policies-configmap", metavar="NAMESPACE/NAME",
                        help="a ConfigMap whose *.policy keys are policy files (in key order); watched and "
                             "reloaded live")
    parser.add_argument("--policies-poll-interval", type=float, default=1.0, metavar="SECONDS",
                        help="how often --policies paths are checked for changes (default: 1)")
    parser.add_argument("--leader-elect", action="store_true", help="run as one of several replicas behind a Lease")
    parser.add_argument("--leader-elect-lease-namespace", default="kube-system", metavar="NS",
                        help="namespace of the Lease (default: kube-system)")
    parser.add_argument("--leader-elect-resource-name", default=None, metavar="NAME",
                        help="name of the Lease (default: the scheduler name; with several profiles the first one's)")
    parser.add_argument("--leader-elect-lease-duration", type=float, default=15.0, metavar="SECONDS")
    parser.add_argument("--leader-elect-renew-deadline", type=float, default=10.0, metavar="SECONDS")
    parser.add_argument("--leader-elect-retry-period", type=float, default=2.0, metavar="SECONDS")
    parser.add_argument("--bind-address", default="127.0.0.1:10259", metavar="HOST:PORT",
                        help="serve /metrics, /healthz and /readyz here (default: 127.0.0.1:10259; port 0 picks one)")
    parser.add_argument("--kube-api-qps", type=float, default=None, metavar="QPS",
                        help="client-side limit of API requests per second (token bucket; watches are not limited; "
                             "default: no limit -- kube-scheduler uses 50)")
    parser.add_argument("--kube-api-burst", type=int, default=None, metavar="N",
                        help="requests allowed at once above --kube-api-qps (default: 2 x qps; kube-scheduler: 100)")
    parser.add_argument("-v", "--v", dest="verbosity", type=int, default=0, metavar="N", help="log verbosity")
    parser.add_argument("--engine", choices=("vector", "reference"), default=None,
                        help="rule evaluation backend (default: vector when available)")
    parser.add_argument("--seed", type=int, default=None, help="seed for score tie-breaks (default: random)")


def _evaluator(name: str | None, err: TextIO) -> tuple[Any, str]:
    from policyscheduler.evaluation import make_evaluator

    if name is not None:
        return make_evaluator(name), name
    try:
        return make_evaluator("vector"), "vector"
    except (ImportError, ValueError) as exc:
        err.write(f"note: vector engine unavailable ({exc}); using the reference engine\n")
        return make_evaluator("reference"), "reference"


def _load_policies(sources: Any, client: Any, err: TextIO) -> Any:
    from policyscheduler.diagnostics import render_text
    from policyscheduler.kube.policysource import PolicySourceError

    try:
        loaded = sources.load_initial(client)
    except PolicySourceError as exc:
        err.write(f"policyscheduler run: {exc}\n")
        return None
    if loaded.diagnostics:
        err.write(render_text(loaded.diagnostics, loaded.sources).rstrip("\n") + "\n")
    return loaded.policy_set


def run(args: argparse.Namespace, *, stderr: TextIO | None = None, ready: threading.Event | None = None) -> int:
    """Execute ``run`` with parsed ``args``; blocks until SIGTERM/SIGINT or a lost lease."""
    from policyscheduler.kube import ConfigError, LiveScheduler, Options, RestClient, load_connection
    from policyscheduler.kube.logs import configure
    from policyscheduler.kube.logs import flush as flush_logs
    from policyscheduler.kube.policysource import PolicySources, parse_configmap_ref
    from policyscheduler.kube.scheduler import RunProfile
    from policyscheduler.kube.server import parse_bind_address

    err = stderr if stderr is not None else sys.stderr
    from policyscheduler.cli.config import run_profiles

    if getattr(args, "config", None):
        from policyscheduler.cli.config import apply_run_config

        if not apply_run_config(args, err):
            return EXIT_USAGE
    plans = run_profiles(args)
    try:
        bind_address = parse_bind_address(args.bind_address)
        if not 0 < args.leader_elect_retry_period < args.leader_elect_renew_deadline < args.leader_elect_lease_duration:
            raise ValueError("leader election needs 0 < retry period < renew deadline < lease duration")
        configmaps = {plan.name: parse_configmap_ref(plan.configmap) if plan.configmap else None for plan in plans}
        if not args.policies_poll_interval > 0:
            raise ValueError("--policies-poll-interval must be positive")
        qps, burst = args.kube_api_qps, args.kube_api_burst
        if qps is not None and not qps > 0:
            raise ValueError(f"--kube-api-qps must be positive, not {qps}")
        if burst is not None and burst < 1:
            raise ValueError(f"--kube-api-burst must be at least 1, not {burst}")
        if burst is not None and qps is None:
            raise ValueError("--kube-api-burst needs --kube-api-qps (clientConnection.qps)")
        for plan in plans:
            if plan.shadows is not None and plan.shadows == plan.name:
                raise ValueError(f"profile {plan.name} cannot shadow itself")
    except ValueError as exc:
        err.write(f"policyscheduler run: {exc}\n")
        return EXIT_USAGE
    sources = {plan.name: PolicySources(list(plan.paths), configmaps[plan.name],
                                        poll_interval=args.policies_poll_interval) for plan in plans}
    policy_sets: dict[str, Any] = {}
    for plan in plans:  # files first: a broken file fails before any connection is made
        if configmaps[plan.name] is None:
            loaded = _load_policies(sources[plan.name], None, err)
            if loaded is None:
                err.write(f"policyscheduler run: the policies of profile {plan.name} have errors; not starting\n"
                          if len(plans) > 1 else "policyscheduler run: the policies have errors; not starting\n")
                return EXIT_USAGE
            policy_sets[plan.name] = loaded
    try:
        connection = load_connection(args.kubeconfig)
    except ConfigError as exc:
        err.write(f"policyscheduler run: {exc}\n")
        return EXIT_USAGE
    client = RestClient(connection)
    if qps is not None:
        from policyscheduler.kube.ratelimit import RateLimiter

        client.limiter = RateLimiter(qps, burst if burst is not None else max(1, int(qps * 2)))
    for plan in plans:
        if configmaps[plan.name] is not None:
            loaded = _load_policies(sources[plan.name], client, err)
            if loaded is None:
                err.write(f"policyscheduler run: the policies of profile {plan.name} do not load; not starting\n"
                          if len(plans) > 1 else "policyscheduler run: the policies do not load; not starting\n")
                return EXIT_USAGE
            policy_sets[plan.name] = loaded
    evaluator, engine = _evaluator(args.engine, err)
    configure(args.verbosity, err)
    options = Options(scheduler_name=plans[0].name, leader_elect=args.leader_elect,
                      lease_namespace=args.leader_elect_lease_namespace,
                      lease_duration=args.leader_elect_lease_duration,
                      renew_deadline=args.leader_elect_renew_deadline,
                      retry_period=args.leader_elect_retry_period, bind_address=bind_address, seed=args.seed,
                      lease_name=args.leader_elect_resource_name)
    profiles = [RunProfile(plan.name, policy_sets[plan.name], sources[plan.name], plan.shadows) for plan in plans]
    try:
        scheduler = LiveScheduler(client, None, evaluator, options, engine=engine, profiles=profiles)
    except OSError as exc:  # the status port is taken, for instance
        err.write(f"policyscheduler run: cannot listen on {args.bind_address}: {exc}\n")
        return EXIT_USAGE
    policy_set = policy_sets[plans[0].name]
    first_sources = sources[plans[0].name]

    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()

    def on_hup(signum: int, frame: object) -> None:
        for each in sources.values():
            each.reload("SIGHUP")

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    previous[signal.SIGHUP] = signal.signal(signal.SIGHUP, on_hup)
    import logging

    log = logging.getLogger("policyscheduler.run")
    try:
        scheduler.start()
        address = scheduler.server.address if scheduler.server is not None else None
        log.info("started", extra={"fields": {
            "scheduler_name": options.scheduler_name, "policy_digest": policy_set.digest[:12], "engine": engine,
            "rules": len(policy_set.filters) + len(policy_set.scores), "policy_sources": first_sources.description,
            "server": connection.server,
            "status_address": f"{address[0]!s}:{address[1]}" if address else None,
            "leader_elect": options.leader_elect, "lease_name": scheduler.lease_name,
            "kube_api_qps": qps, "kube_api_burst": client.limiter.burst if client.limiter is not None else None,
            "profiles": [{"name": p.name, "mode": "shadow" if p.shadows else "schedule", "shadows": p.shadows,
                          "policy_digest": p.policy_set.digest[:12], "policy_sources": sources[p.name].description}
                         for p in profiles]}})
        if ready is not None:
            ready.set()
        while not stop.wait(0.2):
            if scheduler.wait(0):
                break  # lost the lease
        if scheduler.exit_code == EXIT_LOST_LEASE:
            scheduler.shutdown(bind_timeout=5.0)
            return EXIT_LOST_LEASE
        log.info("stopping: finishing in-flight binds")
        status = scheduler.shutdown()
        log.info("stopped", extra={"fields": {"scheduled": scheduler.scheduled, "binds": scheduler.binder.counts}})
        return status
    finally:
        flush_logs()  # buffered decision lines (kube/logs.py) are written before run() returns
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry point (``policyscheduler run`` goes through ``policyscheduler.cli``)."""
    parser = argparse.ArgumentParser(prog="policyscheduler run", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))
