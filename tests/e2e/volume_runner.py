"""``policyscheduler run`` with a volume planner that reads its plan from the pod (for the e2e tests).

Until the storage rules plan a pod's claims (issue #20's planning side), the live scheduler's executor
(policyscheduler/app/volumes.py) is tested with plans the test writes: the pod's annotation
:data:`PLAN_ANNOTATION` holds ``{"static": {"<claim>": "<pv>"}, "provision": ["<claim>"]}`` and
:func:`annotated_plan` turns it into the :class:`~policyscheduler.state.volumeplan.VolumePlan` for the node
the scheduler chose (a pod without the annotation is planned as ``run`` plans it). Everything else is ``policyscheduler run`` itself: the same argument parsing,
settings, start-up and shutdown (``python -m tests.e2e.volume_runner --kubeconfig ... [run flags]``).
``POLICYSCHEDULER_TEST_BIND_TIMEOUT`` sets the bind timeout (seconds; kube's VolumeBindingArgs
``bindTimeoutSeconds``, 600 by default).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from policyscheduler.app.volumes import default_planner
from policyscheduler.state import ClusterSnapshot
from policyscheduler.state.volumeplan import StaticBinding, VolumePlan

PLAN_ANNOTATION = "test.policyscheduler.io/volume-plan"
TIMEOUT_ENV = "POLICYSCHEDULER_TEST_BIND_TIMEOUT"


def annotated_plan(pod: Mapping[str, Any], node: str, snapshot: ClusterSnapshot, /) -> VolumePlan:
    """The plan written on the pod (:data:`PLAN_ANNOTATION`), for ``node``; a pod without one gets the
    scheduler's own planner's (``policyscheduler.app.volumes.default_planner``)."""
    meta = pod.get("metadata") or {}
    text = (meta.get("annotations") or {}).get(PLAN_ANNOTATION)
    if not text:
        return default_planner()(pod, node, snapshot)
    doc = json.loads(text)
    namespace = str(meta.get("namespace") or "default")
    static = tuple(StaticBinding(namespace, claim, pv) for claim, pv in sorted((doc.get("static") or {}).items()))
    provision = tuple((namespace, claim) for claim in doc.get("provision") or ())
    return VolumePlan(node=node, static=static, provision=provision)


def plan_annotation(static: Mapping[str, str] | None = None, provision: Sequence[str] = ()) -> dict[str, str]:
    """The pod annotation for a plan (claim -> PV to bind; claims to provision)."""
    return {PLAN_ANNOTATION: json.dumps({"static": dict(static or {}), "provision": list(provision)})}


def main(argv: Sequence[str] | None = None) -> int:
    from policyscheduler.app import run as run_app
    from policyscheduler.cli.config import run_profiles
    from policyscheduler.cli.run import add_arguments, settings_from

    parser = argparse.ArgumentParser(prog="python -m tests.e2e.volume_runner")
    add_arguments(parser)
    args = parser.parse_args(argv)
    settings = settings_from(args, run_profiles(args))
    settings.options.volume_planner = annotated_plan
    timeout = os.environ.get(TIMEOUT_ENV)
    if timeout:
        settings.options.volume_bind_timeout = float(timeout)
    return run_app(settings, sys.stderr, exit_process=True)


if __name__ == "__main__":
    sys.exit(main())
