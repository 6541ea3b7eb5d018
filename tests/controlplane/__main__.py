"""Command line for the test control plane.

    python -m tests.controlplane build          build (or reuse) etcd/kube-apiserver/kube-scheduler/
                                                kube-controller-manager
    python -m tests.controlplane up [options]   start it, print KUBECONFIG=..., run until Ctrl-C

``up`` prints ``KEY=value`` lines on stdout (KUBECONFIG, SERVER, ETCD, PIDS,
WORKDIR), so a script can ``eval`` or parse them, then waits. Ctrl-C or SIGTERM
stops every process and removes the work directory.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import yaml


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def _up(args: argparse.Namespace) -> int:
    from tests.controlplane import fakes
    from tests.controlplane.harness import ControlPlane, ControlPlaneError

    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)
    scheduler_config = None
    if args.scheduler_config:
        try:
            scheduler_config = yaml.safe_load(Path(args.scheduler_config).read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            print(f"error: cannot read scheduler config {args.scheduler_config}: {exc}", file=sys.stderr)
            return 2
    try:
        t0 = time.monotonic()
        print("starting etcd and kube-apiserver ...", file=sys.stderr, flush=True)
        with ControlPlane.start(keep=args.keep) as cp:
            if args.scheduler or scheduler_config is not None:
                cp.start_scheduler(scheduler_config)
            if args.storage:
                cp.start_controller_manager()
            if args.nodes:
                fakes.create_all(cp.api(), fakes.make_nodes(args.nodes))
            print(f"KUBECONFIG={cp.kubeconfig}")
            print(f"SERVER={cp.server}")
            print(f"ETCD={cp.etcd_url}")
            print(f"PIDS={','.join(map(str, cp.pids()))}")
            print(f"WORKDIR={cp.workdir}", flush=True)
            print(f"control plane ready after {time.monotonic() - t0:.1f}s; press Ctrl-C to stop",
                  file=sys.stderr, flush=True)
            while True:
                for child in cp.children():
                    if not child.alive():
                        print(f"error: {child.name} exited:\n{child.log_tail()}", file=sys.stderr)
                        return 1
                time.sleep(0.5)
    except ControlPlaneError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
        return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.controlplane", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="build (or reuse) the control-plane binaries")
    up = sub.add_parser("up", help="start etcd + kube-apiserver and wait")
    up.add_argument("--scheduler", action="store_true", help="also start the real kube-scheduler")
    up.add_argument("--scheduler-config", metavar="FILE",
                    help="KubeSchedulerConfiguration YAML for kube-scheduler (implies --scheduler)")
    up.add_argument("--storage", action="store_true",
                    help="also start kube-controller-manager with the PV binder (claims really bind)")
    up.add_argument("--nodes", type=int, default=0, metavar="N", help="create N fake Ready nodes")
    up.add_argument("--keep", action="store_true", help="keep the work dir (logs, etcd data) on exit")
    args = parser.parse_args(argv)
    if args.command == "build":
        from tests.controlplane.harness import BUILD_SCRIPT

        return subprocess.call(["bash", str(BUILD_SCRIPT)])
    return _up(args)


if __name__ == "__main__":
    sys.exit(main())
