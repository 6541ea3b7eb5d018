"""``policyscheduler run``: the live scheduler (watch, decide with the policies, bind).

Flags are named as kube-scheduler users know them. Exit status: 0 after SIGTERM/SIGINT and a clean
hand-over (in-flight binds finished, events posted, lease released), 1 when the lease was lost (like
kube-scheduler, a replica that cannot renew stops at once and lets its Deployment restart it), 2 for bad
flags, a policy set that does not load (and no last good set to fall back on) or no usable cluster
configuration -- with the reason on stderr --, 3 after SIGTERM when the hand-over could not complete
within its 4 s budget (an unreachable API server: the last log line counts the binds and events dropped).
SIGTERM always ends the process within 5 s (:mod:`policyscheduler.app.handover`).

Policies: the bundled defaults, ``--policies`` paths and the ``--policies-configmap`` ConfigMap's
``*.policy`` keys, layered as ``lint`` layers them. The paths and the ConfigMap are watched and reloaded
live (:mod:`policyscheduler.app.sources`); SIGHUP reloads at once. A set that loads replaces the
running one between two scheduling cycles (unschedulable pods get another chance); a broken one -- or a
ConfigMap left without any ``*.policy`` key -- is reported (event, log, metrics) and the last good set
stays in force. The last good ConfigMap set is also saved in the ConfigMap ``policyscheduler-last-good``
of the lease namespace (:mod:`policyscheduler.app.lastgood`): a restart while the ConfigMap is broken,
missing or forbidden starts from it, with a Warning. ``--policies-configmap`` names one ConfigMap;
given twice it is refused (exit 2): put several ``*.policy`` keys in one ConfigMap, or use profiles.

Profiles (``--config FILE``): every profile of the file runs in this one process (only the one
``--scheduler-name`` names, when given), sharing one cache, one queue and one lease; each has its own
policy sources, reloads, events, log field and metric label; a shadow profile (``mode: shadow``) only judges
the placements of the scheduler it shadows (:mod:`policyscheduler.app.shadow`). ``--kube-api-qps`` /
``--kube-api-burst`` (``clientConnection.qps`` / ``burst``) rate-limit API requests
(:mod:`policyscheduler.kube.ratelimit`).

This module only parses and checks the flags; the scheduler is :mod:`policyscheduler.app`.
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from policyscheduler.app import RunSettings
    from policyscheduler.cli.config import RunProfilePlan
    from policyscheduler.kube.secure import SecureServing

__all__ = ["add_arguments", "main", "run", "settings_from"]

EXIT_OK = 0
EXIT_LOST_LEASE = 1
EXIT_USAGE = 2
EXIT_INCOMPLETE = 3
"""The exit statuses (the same as :mod:`policyscheduler.app.lifecycle`'s)."""


class _Once(argparse.Action):
    """A flag that takes one value and refuses a second one (exit 2, with both values), rather than letting
    the last silently win: ``--policies-configmap`` given twice would otherwise run half the policies."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        previous = getattr(namespace, self.dest, None)
        if previous is not None:
            raise argparse.ArgumentError(self, f"given twice ({previous}, {values}); a scheduler reads one "
                                               "ConfigMap: put several *.policy keys in it, or run one profile "
                                               "per ConfigMap (--config)")
        setattr(namespace, self.dest, values)


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
    parser.add_argument("--policies-configmap", metavar="NAMESPACE/NAME", action=_Once,
                        help="a ConfigMap whose *.policy keys are policy files (in key order); watched and "
                             "reloaded live; its last good set is kept in ConfigMap policyscheduler-last-good "
                             "(lease namespace). Once only: several policy files go in one ConfigMap")
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
    parser.add_argument("--bind-address", default="0.0.0.0", metavar="IP",
                        help="serve the status endpoints (/metrics, /configz, /healthz, ...) over HTTPS on this IP "
                             "and --secure-port (default: 0.0.0.0), as kube-scheduler does; for development, a "
                             "loopback HOST:PORT (e.g. 127.0.0.1:10251; port 0 picks one) serves plain HTTP "
                             "without authentication instead")
    parser.add_argument("--secure-port", type=int, default=10259, metavar="PORT",
                        help="HTTPS port with delegated authentication/authorization for /metrics and /configz "
                             "(default: 10259; 0 serves nothing)")
    parser.add_argument("--tls-cert-file", metavar="PATH",
                        help="serving certificate (default: a self-signed one made at start, kept in memory)")
    parser.add_argument("--tls-private-key-file", metavar="PATH", help="the key of --tls-cert-file")
    parser.add_argument("--kube-api-qps", type=float, default=None, metavar="QPS",
                        help="client-side limit of API requests per second (token bucket; watches are not limited; "
                             "default: no limit -- kube-scheduler uses 50)")
    parser.add_argument("--kube-api-burst", type=int, default=None, metavar="N",
                        help="requests allowed at once above --kube-api-qps (default: 2 x qps; kube-scheduler: 100)")
    parser.add_argument("-v", "--v", dest="verbosity", type=int, default=0, metavar="N", help="log verbosity")
    parser.add_argument("--engine", choices=("vector", "reference"), default=None,
                        help="rule evaluation backend (default: vector when available)")
    parser.add_argument("--seed", type=int, default=None, help="seed for score tie-breaks (default: random)")


def serving_from(args: argparse.Namespace) -> tuple[tuple[str, int] | None, SecureServing | None]:
    """(plain HTTP address, secure serving) from ``--bind-address`` / ``--secure-port`` / ``--tls-*``;
    ValueError naming the flag. A HOST:PORT ``--bind-address`` is the development mode (loopback only)."""
    import ipaddress

    from policyscheduler.kube.secure import SecureServing
    from policyscheduler.kube.server import is_loopback, parse_bind_address

    value = str(args.bind_address)
    cert, key = getattr(args, "tls_cert_file", None), getattr(args, "tls_private_key_file", None)
    if bool(cert) != bool(key):
        raise ValueError("--tls-cert-file and --tls-private-key-file go together")
    try:
        host = str(ipaddress.ip_address(value.strip("[]")))
    except ValueError:
        host = ""
    if not host and value != "localhost":
        address = parse_bind_address(value)
        if not is_loopback(address[0]):
            raise ValueError(f"--bind-address {value}: plain HTTP (HOST:PORT) is for loopback addresses only; "
                             f"use --bind-address {address[0]} --secure-port {address[1] or 10259} for HTTPS")
        return address, None
    port = int(getattr(args, "secure_port", 10259))
    if not 0 <= port <= 65535:
        raise ValueError(f"--secure-port {port}: expected 0..65535")
    if port == 0:
        return None, None
    return None, SecureServing(host or "127.0.0.1", port, cert, key)


def settings_from(args: argparse.Namespace, plans: Sequence[RunProfilePlan]) -> RunSettings:
    """The flags, checked and parsed, as the app takes them; ValueError naming the flag that is wrong."""
    from policyscheduler.app import Options, ProfileSettings, RunSettings
    from policyscheduler.app.sources import parse_configmap_ref
    bind_address, secure = serving_from(args)
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
    options = Options(scheduler_name=plans[0].name, leader_elect=args.leader_elect,
                      lease_namespace=args.leader_elect_lease_namespace,
                      lease_duration=args.leader_elect_lease_duration,
                      renew_deadline=args.leader_elect_renew_deadline,
                      retry_period=args.leader_elect_retry_period, bind_address=bind_address, seed=args.seed,
                      lease_name=args.leader_elect_resource_name, secure_serving=secure)
    profiles = tuple(ProfileSettings(plan.name, tuple(plan.paths), configmaps[plan.name], plan.shadows)
                     for plan in plans)
    shown = args.bind_address if secure is None else f"{secure.host}:{secure.port}"
    return RunSettings(profiles, options, bind_address_text=shown, kubeconfig=args.kubeconfig,
                       poll_interval=args.policies_poll_interval, qps=qps, burst=burst, verbosity=args.verbosity,
                       engine=args.engine)


def run(args: argparse.Namespace, *, stderr: TextIO | None = None, ready: threading.Event | None = None) -> int:
    """Execute ``run`` with parsed ``args``; blocks until SIGTERM/SIGINT or a lost lease."""
    from policyscheduler.app import run as run_app
    from policyscheduler.cli.config import apply_run_config, run_profiles

    err = stderr if stderr is not None else sys.stderr
    if getattr(args, "config", None) and not apply_run_config(args, err):
        return EXIT_USAGE
    try:
        settings = settings_from(args, run_profiles(args))
    except ValueError as exc:
        err.write(f"policyscheduler run: {exc}\n")
        return EXIT_USAGE
    # the command line itself (no caller waiting on ``ready``): the process ends with the last log line
    return run_app(settings, err, ready=ready, exit_process=ready is None and stderr is None)


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry point (``policyscheduler run`` goes through ``policyscheduler.cli``)."""
    parser = argparse.ArgumentParser(prog="policyscheduler run", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))
