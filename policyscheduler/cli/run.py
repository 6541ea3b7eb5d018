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
                        help="a PolicySchedulerConfiguration file (profile: the one --scheduler-name names, or the "
                             "only one); flags given explicitly override it")
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
                        help="namespace of the Lease named after the scheduler (default: kube-system)")
    parser.add_argument("--leader-elect-lease-duration", type=float, default=15.0, metavar="SECONDS")
    parser.add_argument("--leader-elect-renew-deadline", type=float, default=10.0, metavar="SECONDS")
    parser.add_argument("--leader-elect-retry-period", type=float, default=2.0, metavar="SECONDS")
    parser.add_argument("--bind-address", default="127.0.0.1:10259", metavar="HOST:PORT",
                        help="serve /metrics, /healthz and /readyz here (default: 127.0.0.1:10259; port 0 picks one)")
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
    from policyscheduler.kube.policysource import PolicySources, parse_configmap_ref
    from policyscheduler.kube.server import parse_bind_address

    err = stderr if stderr is not None else sys.stderr
    if getattr(args, "config", None):
        from policyscheduler.cli.config import apply_run_config

        if not apply_run_config(args, err):
            return EXIT_USAGE
    try:
        bind_address = parse_bind_address(args.bind_address)
        if not 0 < args.leader_elect_retry_period < args.leader_elect_renew_deadline < args.leader_elect_lease_duration:
            raise ValueError("leader election needs 0 < retry period < renew deadline < lease duration")
        configmap = parse_configmap_ref(args.policies_configmap) if args.policies_configmap else None
        if not args.policies_poll_interval > 0:
            raise ValueError("--policies-poll-interval must be positive")
    except ValueError as exc:
        err.write(f"policyscheduler run: {exc}\n")
        return EXIT_USAGE
    sources = PolicySources(list(args.policies or []), configmap, poll_interval=args.policies_poll_interval)
    policy_set: Any = _load_policies(sources, None, err) if configmap is None else None
    if configmap is None and policy_set is None:
        err.write("policyscheduler run: the policies have errors; not starting\n")
        return EXIT_USAGE
    try:
        connection = load_connection(args.kubeconfig)
    except ConfigError as exc:
        err.write(f"policyscheduler run: {exc}\n")
        return EXIT_USAGE
    client = RestClient(connection)
    if configmap is not None:
        policy_set = _load_policies(sources, client, err)
        if policy_set is None:
            err.write("policyscheduler run: the policies do not load; not starting\n")
            return EXIT_USAGE
    evaluator, engine = _evaluator(args.engine, err)
    configure(args.verbosity, err)
    options = Options(scheduler_name=args.scheduler_name, leader_elect=args.leader_elect,
                      lease_namespace=args.leader_elect_lease_namespace,
                      lease_duration=args.leader_elect_lease_duration,
                      renew_deadline=args.leader_elect_renew_deadline,
                      retry_period=args.leader_elect_retry_period, bind_address=bind_address, seed=args.seed)
    try:
        scheduler = LiveScheduler(client, policy_set, evaluator, options, engine=engine, policies=sources)
    except OSError as exc:  # the status port is taken, for instance
        err.write(f"policyscheduler run: cannot listen on {args.bind_address}: {exc}\n")
        return EXIT_USAGE

    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()

    def on_hup(signum: int, frame: object) -> None:
        sources.reload("SIGHUP")

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    previous[signal.SIGHUP] = signal.signal(signal.SIGHUP, on_hup)
    import logging

    log = logging.getLogger("policyscheduler.run")
    try:
        scheduler.start()
        address = scheduler.server.address if scheduler.server is not None else None
        log.info("started", extra={"fields": {
            "scheduler_name": options.scheduler_name, "policy_digest": policy_set.digest[:12], "engine": engine,
            "rules": len(policy_set.filters) + len(policy_set.scores), "policy_sources": sources.description,
            "server": connection.server,
            "status_address": f"{address[0]!s}:{address[1]}" if address else None,
            "leader_elect": options.leader_elect}})
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
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry point (``policyscheduler run`` goes through ``policyscheduler.cli``)."""
    parser = argparse.ArgumentParser(prog="policyscheduler run", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))
