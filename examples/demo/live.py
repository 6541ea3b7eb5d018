"""The live demo (``make demo``): the bundled demo cluster scheduled by ``policyscheduler run`` on a real
API server.

1. builds (first time, with progress on stderr) or reuses etcd + kube-apiserver from
   ``tests/controlplane`` and starts them on loopback;
2. starts ``policyscheduler run --kubeconfig <that cluster>`` as a child process;
3. creates the demo cluster from ``policyscheduler/data/demo`` (namespaces, nodes, Services / ReplicaSets /
   StatefulSets, the running pods) and then its pending pods, every one with
   ``schedulerName: policy-scheduler`` (forced, so the demo's pods are always ours);
4. prints each placement as the watch shows it, and each ``FailedScheduling`` reason as our scheduler
   posts it; then a summary: bound, unschedulable with reasons, pods/s;
5. prints how to look with kubectl, and stops everything cleanly (exit 0) -- or, with ``--keep``, leaves
   the cluster and the scheduler running until Ctrl-C.

Run it as ``make demo`` or ``.venv/bin/python examples/demo/live.py [--keep] [--quiet]``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

SCHEDULER = "policy-scheduler"
_DROP_META = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink")


def _say(text: str = "") -> None:
    print(text, flush=True)


def load_demo() -> list[dict[str, Any]]:
    """The demo cluster's objects in file order (``List`` kinds expanded)."""
    import yaml

    from policyscheduler.simulate.defaults import demo_cluster_dir

    objects: list[dict[str, Any]] = []
    for path in sorted(demo_cluster_dir().glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not isinstance(doc, dict):
                continue
            objects.extend(doc.get("items") or [] if doc.get("kind") == "List" else [doc])
    return objects


def _clean(obj: dict[str, Any]) -> dict[str, Any]:
    obj = json.loads(json.dumps(obj))
    meta = obj.setdefault("metadata", {})
    for key in _DROP_META:
        meta.pop(key, None)
    if obj.get("kind") == "Pod":
        obj.pop("status", None)
        obj["spec"]["terminationGracePeriodSeconds"] = 0
        for c in obj["spec"].get("containers", []) + obj["spec"].get("initContainers", []):
            res = c.get("resources") or {}
            for name, value in (res.get("requests") or {}).items():
                if name not in ("cpu", "memory", "ephemeral-storage"):  # extended resources: limit == request
                    res.setdefault("limits", {}).setdefault(name, value)
    elif obj.get("kind") in ("ReplicaSet", "StatefulSet", "ReplicationController"):
        # The snapshot keeps only what spreading reads (the selector); the API wants a pod template.
        # replicas 0: no controller-manager runs here, and the demo's pods are created as they are.
        spec = obj.setdefault("spec", {})
        selector = spec.get("selector") or {}
        labels = dict(selector.get("matchLabels") or {}) if obj["kind"] != "ReplicationController" else dict(selector)
        spec["replicas"] = 0
        template = spec.setdefault("template", {})
        template.setdefault("metadata", {}).setdefault("labels", labels)
        template.setdefault("spec", {}).setdefault("containers", [
            {"name": "main", "image": "registry.k8s.io/pause:3.10"}])
    return obj


def _path(obj: dict[str, Any]) -> str:
    kind, ns = obj["kind"], obj["metadata"].get("namespace") or "default"
    if kind == "PriorityClass":
        return "/apis/scheduling.k8s.io/v1/priorityclasses"
    plural = {"Namespace": "namespaces", "Node": "nodes", "Pod": "pods", "Service": "services",
              "ReplicaSet": "replicasets", "StatefulSet": "statefulsets",
              "ReplicationController": "replicationcontrollers"}[kind]
    group = "/apis/apps/v1" if kind in ("ReplicaSet", "StatefulSet") else "/api/v1"
    return f"{group}/{plural}" if kind in ("Namespace", "Node") else f"{group}/namespaces/{ns}/{plural}"


def build_binaries() -> Any:
    """Build or reuse the control plane; the build's progress goes to stderr as it happens."""
    from tests.controlplane.harness import BIN_ENV, BUILD_SCRIPT, Binaries, ensure_binaries

    if os.environ.get(BIN_ENV):
        return ensure_binaries()
    proc = subprocess.run(["bash", str(BUILD_SCRIPT)], stdout=subprocess.PIPE, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"building the control plane failed (exit {proc.returncode}); see the output above")
    return Binaries.in_dir(Path(proc.stdout.strip().splitlines()[-1]))


class Watcher:
    """Prints placements (pod watch) and FailedScheduling reasons (event watch) as they happen."""

    def __init__(self, client: Any, pending: dict[str, float], quiet: bool) -> None:
        self.client, self.pending, self.quiet = client, pending, quiet
        self.bound: dict[str, tuple[str, float]] = {}
        self.failed: dict[str, str] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.rv = {kind: client.get(path)["metadata"]["resourceVersion"] for kind, path in self._paths().items()}
        self.threads = [threading.Thread(target=self._run, args=(kind,), daemon=True) for kind in self._paths()]
        for t in self.threads:
            t.start()

    @staticmethod
    def _paths() -> dict[str, str]:
        return {"pods": "/api/v1/pods", "events": "/apis/events.k8s.io/v1/events"}

    def _run(self, kind: str) -> None:
        while not self.stop.is_set():
            try:
                for event in self.client.stream(self._paths()[kind], {"watch": "true", "resourceVersion": self.rv[kind]},
                                                read_timeout=2):
                    obj = event.get("object") or {}
                    self.rv[kind] = (obj.get("metadata") or {}).get("resourceVersion") or self.rv[kind]
                    (self._pod if kind == "pods" else self._event)(obj)
            except Exception:  # noqa: BLE001 - read timeout on a quiet watch: watch again
                continue

    def _pod(self, pod: dict[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        node = (pod.get("spec") or {}).get("nodeName")
        with self.lock:
            if key not in self.pending or key in self.bound or not node:
                return
            self.bound[key] = (node, time.time())
            was_failed = self.failed.pop(key, None)
            n = len(self.bound)
        if not self.quiet:
            after = " (after an earlier FailedScheduling)" if was_failed else ""
            _say(f"  [{n:3}] {key:45} -> {node}{after}")

    def _event(self, ev: dict[str, Any]) -> None:
        if ev.get("reason") != "FailedScheduling" or ev.get("reportingController") != SCHEDULER:
            return
        reg = ev.get("regarding") or {}
        key = f"{reg.get('namespace')}/{reg.get('name')}"
        with self.lock:
            if key not in self.pending or key in self.bound:
                return
            first = key not in self.failed
            self.failed[key] = str(ev.get("note") or "")
        if first and not self.quiet:
            _say(f"  [ - ] {key:45} unschedulable: {ev.get('note')}")

    def settled(self) -> bool:
        with self.lock:
            return len(self.bound) + len(self.failed) >= len(self.pending)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="examples/demo/live.py", description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true",
                        help="leave the cluster and the scheduler running until Ctrl-C (to look with kubectl)")
    parser.add_argument("--quiet", action="store_true", help="only the summary, not every placement")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the pods to settle")
    args = parser.parse_args(argv)

    from policyscheduler.kube import RestClient, load_connection
    from tests.controlplane import procs
    from tests.controlplane.harness import ControlPlane

    t0 = time.monotonic()
    _say("policyscheduler live demo: the bundled demo cluster, scheduled by `policyscheduler run` on a real API server")
    _say("step 1/4: control plane (etcd + kube-apiserver v1.35, built from Go modules on first use) ...")
    binaries = build_binaries()
    with ControlPlane.start(binaries) as cp:
        _say(f"          up at {cp.server} after {time.monotonic() - t0:.1f}s")
        client = RestClient(load_connection(str(cp.kubeconfig)))
        log_file = cp.workdir / "policyscheduler.log"
        _say("step 2/4: starting `policyscheduler run` ...")
        argv_run = [sys.executable, "-m", "policyscheduler", "run", "--kubeconfig", str(cp.kubeconfig),
                    "--scheduler-name", SCHEDULER, "--bind-address", "127.0.0.1:0"]
        run = procs.Child("policyscheduler-run", argv_run, log_file, env={**os.environ, "PYTHONPATH": str(REPO)})
        started = _wait_log(run, log_file, "started", 120)
        status = started.get("status_address")
        _say(f"          policy digest {started.get('policy_digest')}, engine {started.get('engine')}, "
             f"{started.get('rules')} rules; /metrics /healthz /readyz on http://{status}")

        objects = [_clean(o) for o in load_demo()]
        pending = [o for o in objects if o["kind"] == "Pod" and not o["spec"].get("nodeName")]
        setup = [o for o in objects if o not in pending]
        _say(f"step 3/4: creating the demo cluster: {sum(o['kind'] == 'Node' for o in setup)} nodes, "
             f"{sum(o['kind'] == 'Pod' for o in setup)} running pods, "
             f"{sum(o['kind'] not in ('Node', 'Pod') for o in setup)} other objects ...")
        for obj in _priority_classes(objects) + setup:
            _create(client, obj)
        sent: dict[str, float] = {}
        for pod in pending:
            pod["spec"]["schedulerName"] = SCHEDULER
            sent[f"{pod['metadata'].get('namespace') or 'default'}/{pod['metadata']['name']}"] = 0.0
        watcher = Watcher(client, sent, args.quiet)
        _say(f"step 4/4: creating {len(pending)} pending pods; placements as the scheduler binds them:")
        first = time.time()
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda o: _create(client, o), pending))
        deadline = time.monotonic() + args.timeout
        while not watcher.settled() and time.monotonic() < deadline:
            if not run.alive():
                _say("policyscheduler run exited:\n" + run.log_tail(20))
                return 1
            time.sleep(0.1)
        time.sleep(0.5)  # let late FailedScheduling events of pods retried meanwhile arrive
        watcher.stop.set()
        _summary(watcher, first)
        _say("")
        _say("look with kubectl (any kubectl >= 1.33):")
        _say(f"  export KUBECONFIG={cp.kubeconfig}")
        _say("  kubectl get pods -A -o wide --field-selector spec.schedulerName=policy-scheduler")
        _say("  kubectl get events -A --field-selector reason=FailedScheduling")
        _say("  kubectl describe pod -n <namespace> <pod>      # Events: Scheduled / FailedScheduling")
        _say(f"  curl -s http://{status}/metrics | grep -E '^(scheduler|policyscheduler)_'")
        if args.keep:
            _say("the cluster and the scheduler stay up (--keep); Ctrl-C stops them")
            try:
                signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
                while run.alive():
                    time.sleep(0.5)
            except KeyboardInterrupt:
                pass
        else:
            _say("(rerun with --keep, or `make demo DEMO_ARGS=--keep`, to keep the cluster up and look)")
        _say("stopping: policyscheduler run (SIGTERM: finish binds, flush events), then the control plane ...")
        code = _terminate(run)
        if code != 0:
            _say(f"policyscheduler run exited with status {code}:\n" + run.log_tail(20))
            return 1
    _say(f"done in {time.monotonic() - t0:.1f}s")
    return 0


def _priority_classes(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Priority admission plugin takes a class name, not ``spec.priority``: give every pod a class
    with its value (``demo-priority-<value>``; the built-in system classes for theirs)."""
    system = {2000000000: "system-cluster-critical", 2000001000: "system-node-critical"}
    classes: dict[int, str] = {}
    for obj in objects:
        spec = obj.get("spec") or {}
        if obj.get("kind") != "Pod" or "priority" not in spec:
            continue
        value = int(spec.pop("priority"))
        name = system.get(value) or f"demo-priority-{value}".replace("-priority--", "-priority-minus-")
        spec["priorityClassName"] = name
        if value not in system:
            classes[value] = name
    return [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
             "value": value} for value, name in sorted(classes.items())]


def _create(client: Any, obj: dict[str, Any]) -> None:
    from policyscheduler.kube.rest import ApiError

    try:
        client.post(_path(obj), obj)
    except ApiError as err:
        if err.status != 409:  # default / kube-system namespaces exist already
            meta = obj.get("metadata") or {}
            raise SystemExit(f"creating {obj.get('kind')} {meta.get('namespace') or ''}/{meta.get('name')}: {err}") from err


def _wait_log(child: Any, log_file: Path, msg: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not child.alive():
            raise SystemExit("policyscheduler run exited:\n" + child.log_tail(20))
        for line in log_file.read_text(errors="replace").splitlines():
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            if doc.get("msg") == msg:
                return dict(doc)
        time.sleep(0.1)
    raise SystemExit(f"policyscheduler run: no {msg!r} log line after {timeout:.0f}s")


def _terminate(child: Any) -> int:
    if child.alive():
        child.popen.send_signal(signal.SIGTERM)
        try:
            child.popen.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pass
    child.stop()
    return int(child.popen.returncode or 0)


def _summary(watcher: Watcher, first: float) -> None:
    bound, failed = dict(watcher.bound), dict(watcher.failed)
    pending = len(watcher.pending)
    last = max((t for _, t in bound.values()), default=first)
    rate = len(bound) / (last - first) if last > first else 0.0
    _say("")
    _say(f"summary: {len(bound)}/{pending} pods bound, {len(failed)} unschedulable, "
         f"{pending - len(bound) - len(failed)} undecided; {rate:.0f} pods/s from first creation to last bind")
    per_node = Counter(node for node, _ in bound.values())
    if per_node:
        busiest = ", ".join(f"{n} ({c})" for n, c in per_node.most_common(3))
        _say(f"  spread over {len(per_node)} nodes; busiest: {busiest}")
    reasons = Counter(failed.values())
    for note, count in reasons.most_common():
        _say(f"  {count} pod(s) unschedulable: {note}")
        for key in sorted(k for k, v in failed.items() if v == note)[:5]:
            _say(f"      {key}")


if __name__ == "__main__":
    sys.exit(main())
