"""CPU and thread wake-ups of the REST client's binds and watch streams against a real API server.

``python bench/http_bench.py [--pods N] [--lanes L ...]`` starts the test harness's etcd and
kube-apiserver, creates one node and pending pods (no scheduler picks them up), then measures:

* ``seq``: N binds (``pods/binding`` POSTs) one after another from one thread: process CPU per bind
  (``time.process_time``) and voluntary context switches per bind (``/proc/self/status``);
* ``binder-LxD``: N binds through :class:`Binder` (its pipeline on L connections, at most D waiting on
  each; ``--lanes 16x1 4x4``, a bare L keeps the default depth) while a producer thread spends ~0.7 ms of
  Python CPU per pod (a stand-in for the scheduling loop): wall time, CPU per bind, switches per bind of
  the bind threads and of the producer, and the API server's + etcd's CPU per bind (from /proc);
  ``--rounds R`` repeats the binder runs R times, the settings interleaved;
* ``watch replay``: a watch from before the N pods were created (the API server sends them back to back):
  CPU (``time.thread_time`` of the reading thread) and voluntary switches of that thread per event;
* ``watch live``: a watch open while another process creates N pods: the same per event.

Baselines, measured in the same run and interleaved with ours over ``--rounds`` (``--baselines`` picks them):

* ``seq-urllib3``: the same binds through a urllib3 ``PoolManager`` (one kept connection, the same
  client certificate), body read and ``json.loads``-ed as ours does: what the transport would cost
  if we used urllib3 directly;
* ``seq-kubernetes``: the same binds through the official client's REST layer
  (``CoreV1Api.create_namespaced_pod_binding(..., _preload_content=False)`` and ``json.loads``): its
  request building and urllib3, without its model classes;
* ``watch-urllib3``: the replay watch read with urllib3 (``preload_content=False``, ``read_chunked``, one
  ``json.loads`` per line), as the official client's ``watch`` reads it minus the models.

``--out PREFIX`` writes PREFIX.json (every round) and PREFIX.md (medians and the ratios baseline / ours).

Why a separate script from bench/e2e.py: that one measures the whole scheduler; this one isolates the
HTTP path so a change to it can be compared in seconds.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def switches(tid: int | None = None) -> int:
    """Voluntary context switches of the process (or of thread ``tid``)."""
    path = "/proc/self/status" if tid is None else f"/proc/self/task/{tid}/status"
    for line in Path(path).read_text().splitlines():
        if line.startswith("voluntary_ctxt_switches"):
            return int(line.split()[1])
    return 0


def pod(name: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace,
                                                            "labels": {"app": "bench"}},
            "spec": {"schedulerName": "nobody", "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9",
                                     "resources": {"requests": {"cpu": "1m", "memory": "1Mi"}}}]}}


def _create(server: str, tls: tuple[str, str, str], namespace: str, names: list[str]) -> None:
    import urllib3

    ca, cert, key = tls
    http = urllib3.PoolManager(maxsize=4, cert_reqs="CERT_REQUIRED", ca_certs=ca, cert_file=cert, key_file=key)
    for name in names:
        resp = http.request("POST", f"{server}/api/v1/namespaces/{namespace}/pods",
                            body=json.dumps(pod(name, namespace)).encode(),
                            headers={"Content-Type": "application/json"})
        assert resp.status == 201, resp.data


def create_elsewhere(cp: Any, namespace: str, names: list[str]) -> multiprocessing.process.BaseProcess:
    """Create pods from another process (its CPU is not ours)."""
    tls = (str(cp.ca.pair.cert_file), str(cp.admin.cert_file), str(cp.admin.key_file))
    proc = multiprocessing.get_context("forkserver").Process(target=_create, args=(cp.server, tls, namespace, names))
    proc.start()
    return proc


def create_pods(client: Any, namespace: str, prefix: str, n: int) -> list[dict[str, Any]]:
    return [client.post(f"/api/v1/namespaces/{namespace}/pods", pod(f"{prefix}-{i}", namespace)) for i in range(n)]


def bench_seq(client: Any, namespace: str, n: int, tag: str = "") -> dict[str, float]:
    from policyscheduler.kube.rest import pod_path

    bodies = binding_bodies(client, namespace, f"seq{tag}", n)
    return _measure(lambda name, body: client.post(pod_path(namespace, name, "binding"), body), bodies)


class _Cycle:
    def __init__(self) -> None:
        self.ok = self.failed = 0

    def binding_succeeded(self, attempt: Any) -> None:
        self.ok += 1

    def binding_failed(self, attempt: Any, retry: bool, reason: str) -> None:
        self.failed += 1


def binding_bodies(client: Any, namespace: str, prefix: str, n: int) -> list[tuple[str, dict[str, Any]]]:
    """N new pending pods and the Binding of each to node-0."""
    return [(p["metadata"]["name"], {"apiVersion": "v1", "kind": "Binding",
                                      "metadata": {"name": p["metadata"]["name"], "namespace": namespace,
                                                   "uid": p["metadata"]["uid"]},
                                      "target": {"apiVersion": "v1", "kind": "Node", "name": "node-0"}})
            for p in create_pods(client, namespace, prefix, n)]


def _measure(bind: Any, bodies: list[tuple[str, dict[str, Any]]]) -> dict[str, float]:
    """CPU, switches and wall time per bind of ``bind(name, body)`` over ``bodies`` (one thread)."""
    n = len(bodies)
    sw, cpu, wall = switches(), time.process_time(), time.perf_counter()
    for name, body in bodies:
        bind(name, body)
    cpu, wall, sw = time.process_time() - cpu, time.perf_counter() - wall, switches() - sw
    return {"cpu_us_per_bind": cpu / n * 1e6, "switches_per_bind": sw / n, "wall_ms_per_bind": wall / n * 1e3}


def tls_files(cp: Any) -> tuple[str, str, str]:
    return str(cp.ca.pair.cert_file), str(cp.admin.cert_file), str(cp.admin.key_file)


def bench_seq_urllib3(cp: Any, client: Any, namespace: str, n: int, tag: str) -> dict[str, float]:
    """The binds of :func:`bench_seq` through urllib3 directly (kept connection, same client certificate)."""
    import urllib3

    ca, cert, key = tls_files(cp)
    http = urllib3.PoolManager(maxsize=1, cert_reqs="CERT_REQUIRED", ca_certs=ca, cert_file=cert, key_file=key)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    bodies = binding_bodies(client, namespace, f"u3{tag}", n)
    http.request("GET", f"{cp.server}/api/v1/namespaces/{namespace}")  # warm: the connection

    def bind(name: str, body: dict[str, Any]) -> None:
        resp = http.request("POST", f"{cp.server}/api/v1/namespaces/{namespace}/pods/{name}/binding",
                            body=json.dumps(body, separators=(",", ":")).encode(), headers=headers)
        assert resp.status == 201, resp.data
        json.loads(resp.data)

    out = _measure(bind, bodies)
    http.clear()
    return out


def bench_seq_kubernetes(cp: Any, client: Any, namespace: str, n: int, tag: str) -> dict[str, float]:
    """The binds of :func:`bench_seq` through the official client's REST layer, models off."""
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config

    cfg = k8s_client.Configuration()
    k8s_config.load_kube_config(config_file=str(cp.kubeconfig), client_configuration=cfg)  # type: ignore[no-untyped-call,unused-ignore]
    api: Any = k8s_client.CoreV1Api(k8s_client.ApiClient(cfg))
    bodies = binding_bodies(client, namespace, f"k8s{tag}", n)
    api.read_namespace(namespace, _preload_content=False)  # warm: the connection

    def bind(name: str, body: dict[str, Any]) -> None:
        resp = api.create_namespaced_pod_binding(name, namespace, body, _preload_content=False)
        assert resp.status == 201, resp.data
        json.loads(resp.data)

    return _measure(bind, bodies)


def bench_watch_urllib3(cp: Any, client: Any, namespace: str, n: int) -> dict[str, float]:
    """The replay watch of :func:`bench_watch`, read with urllib3 as the official client reads a watch."""
    import urllib3

    ca, cert, key = tls_files(cp)
    http = urllib3.PoolManager(maxsize=1, cert_reqs="CERT_REQUIRED", ca_certs=ca, cert_file=cert, key_file=key)
    rv = client.get(f"/api/v1/namespaces/{namespace}/pods", limit=1)["metadata"]["resourceVersion"]
    create_pods(client, namespace, "replay-u3", n)
    resp = http.request("GET", f"{cp.server}/api/v1/namespaces/{namespace}/pods?watch=true&resourceVersion={rv}"
                        "&timeoutSeconds=300", preload_content=False, headers={"Accept": "application/json"})
    assert resp.status == 200
    me = threading.get_native_id()
    sw, cpu = switches(me), time.thread_time()
    seen, buffer = 0, b""
    for chunk in resp.read_chunked(decode_content=False):
        lines = (buffer + chunk).split(b"\n")
        buffer = lines.pop()
        for line in lines:
            if line.strip():
                json.loads(line)
                seen += 1
        if seen >= n:
            break
    out = {"cpu_us_per_event": (time.thread_time() - cpu) / n * 1e6, "switches_per_event": (switches(me) - sw) / n}
    resp.release_conn()
    http.clear()
    return out


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def write_results(prefix: Path, report: dict[str, Any], argv: list[str]) -> None:
    """PREFIX.json (everything) and PREFIX.md (medians of CPU per bind / event, ratios to ours)."""
    prefix.parent.mkdir(parents=True, exist_ok=True)
    prefix.with_suffix(".json").write_text(json.dumps({"command": " ".join(argv), **report}, indent=1) + "\n")
    load = report.get("load_average_at_start", [0.0])[0], report.get("load_average_at_end", [0.0])[0]
    lines = [f"# `{' '.join(argv)}`", "",
             f"{report.get('cpus')} CPUs, 1-minute load average {load[0]:.1f} at the start, {load[1]:.1f} at the end.", "", "| path | CPU per bind/event (median, us) | rounds | baseline / ours |",
             "|---|---|---|---|"]
    rounds = report.get("rounds", {})
    ours = {"seq": "seq", "seq-urllib3": "seq", "seq-kubernetes": "seq", "watch-replay": "watch-replay",
            "watch-urllib3": "watch-replay"}
    metric = {name: ("cpu_us_per_event" if name.startswith("watch") else "cpu_us_per_bind") for name in ours}
    medians = {name: _median([r[metric[name]] for r in runs]) for name, runs in rounds.items() if runs}
    for name, value in medians.items():
        base = medians.get(ours.get(name, ""), 0.0)
        ratio = f"{value / base:.2f}x" if base and ours.get(name) != name else "(ours)"
        lines.append(f"| {name} | {value:.1f} | {len(rounds[name])} | {ratio} |")
    prefix.with_suffix(".md").write_text("\n".join(lines) + "\n")


def _spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    x = 0
    while time.thread_time() < end:
        for i in range(50):
            x += i


def server_cpu(cp: Any) -> float:
    """CPU seconds of the harness's API server and etcd so far."""
    from bench.e2e import cpu_seconds

    return cpu_seconds(cp.apiserver.pid) + cpu_seconds(cp.etcd.pid)


def lane_setting(text: str) -> tuple[int, int | None]:
    """``L`` or ``LxD`` (lanes, depth; None: the binder's default depth)."""
    lanes, _, depth = text.partition("x")
    try:
        out = int(lanes), (int(depth) if depth else None)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LANES or LANESxDEPTH, got {text!r}") from None
    if out[0] < 1 or (out[1] is not None and out[1] < 1):
        raise argparse.ArgumentTypeError(f"lanes and depth must be >= 1, got {text!r}")
    return out


def bench_binder(cp: Any, client: Any, namespace: str, n: int, lanes: int, depth: int | None,
                 work_ms: float, tag: str) -> dict[str, float]:
    from policyscheduler.kube.binder import DEFAULT_DEPTH, Binder

    pods = create_pods(client, namespace, f"b{tag}", n)
    cycle = _Cycle()
    binder = Binder(client, lambda: cycle, lanes=lanes,
                    depth=DEFAULT_DEPTH if depth is None else depth)
    binder.bind(SimpleNamespace(pod=pods[0], node="node-0", key="warm"))  # warm: a connection
    binder.drain(10)
    before = {t.native_id: switches(t.native_id) for t in threading.enumerate()}
    producer: dict[str, float] = {}

    def produce() -> None:
        me = threading.get_native_id()
        sw, cpu = switches(me), time.thread_time()
        for p in pods[1:]:
            _spin(work_ms / 1e3)
            binder.bind(SimpleNamespace(pod=p, node="node-0", key=p["metadata"]["name"]))
        producer["cpu"] = time.thread_time() - cpu
        producer["switches"] = switches(me) - sw

    cpu, wall, server = time.process_time(), time.perf_counter(), server_cpu(cp)
    thread = threading.Thread(target=produce)
    thread.start()
    thread.join()
    binder.drain(60)
    cpu, wall, server = time.process_time() - cpu, time.perf_counter() - wall, server_cpu(cp) - server
    bind_threads = [t for t in threading.enumerate() if t.name.startswith("bind")]
    bind_switches = sum(switches(t.native_id) - before.get(t.native_id or 0, 0) for t in bind_threads)
    binder.shutdown()
    m = n - 1
    assert cycle.ok == m + 1 and cycle.failed == 0, (cycle.ok, cycle.failed)
    return {"wall_ms_per_bind": wall / m * 1e3, "cpu_us_per_bind": (cpu - producer["cpu"]) / m * 1e6,
            "bind_thread_switches_per_bind": bind_switches / m, "producer_switches_per_bind": producer["switches"] / m,
            "server_cpu_us_per_bind": server / m * 1e6, "threads": len(bind_threads)}


def watch(client: Any, namespace: str, rv: str, n: int, out: dict[str, float], ready: threading.Event) -> None:
    me = threading.get_native_id()
    stream = client.stream(f"/api/v1/namespaces/{namespace}/pods", {"watch": "true", "resourceVersion": rv,
                                                                      "timeoutSeconds": 300}, read_timeout=330)
    ready.set()
    sw, cpu = switches(me), time.thread_time()
    first = 0.0
    for seen, _event in enumerate(stream, 1):
        if seen == 1:
            first = time.thread_time()
        if seen == n:
            break
    out["cpu_us_per_event"] = (time.thread_time() - cpu) / n * 1e6
    out["cpu_us_per_event_after_first"] = (time.thread_time() - first) / max(1, n - 1) * 1e6
    out["switches_per_event"] = (switches(me) - sw) / n
    stream.close()


def bench_watch(cp: Any, client: Any, namespace: str, n: int) -> dict[str, dict[str, float]]:
    results: dict[str, dict[str, float]] = {}
    rv = client.get(f"/api/v1/namespaces/{namespace}/pods", limit=1)["metadata"]["resourceVersion"]
    create_pods(client, namespace, "replay", n)
    out: dict[str, float] = {}
    ready = threading.Event()
    watch(client, namespace, rv, n, out, ready)
    results["replay"] = out
    rv = client.get(f"/api/v1/namespaces/{namespace}/pods", limit=1)["metadata"]["resourceVersion"]
    out = {}
    ready = threading.Event()
    thread = threading.Thread(target=watch, args=(client, namespace, rv, n, out, ready))
    thread.start()
    ready.wait(30)
    proc = create_elsewhere(cp, namespace, [f"live-{i}" for i in range(n)])
    thread.join()
    proc.join()
    results["live"] = out
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--lanes", type=lane_setting, nargs="*", default=[(16, None), (4, 4)],
                        help="the bind pipeline's connections, LANES or LANESxDEPTH (default: 16 4x4)")
    parser.add_argument("--rounds", type=int, default=1, help="repeat the binder runs, settings interleaved")
    parser.add_argument("--work-ms", type=float, default=0.7, help="producer CPU per pod (the scheduling loop)")
    parser.add_argument("--skip", nargs="*", default=[], choices=["seq", "binder", "watch"])
    parser.add_argument("--baselines", nargs="*", default=["urllib3", "kubernetes"], choices=["urllib3", "kubernetes"],
                        help="the other clients measured beside ours, interleaved (default: both)")
    parser.add_argument("--out", type=Path, default=None, help="write PREFIX.json and PREFIX.md")
    args = parser.parse_args()
    from policyscheduler.kube import RestClient, load_connection
    from tests.controlplane.harness import ControlPlane

    with ControlPlane.start() as cp:
        client = RestClient(load_connection(str(cp.kubeconfig)))
        client.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}})
        client.post("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-0"}})
        report: dict[str, Any] = {"load_average_at_start": list(os.getloadavg()), "cpus": os.cpu_count()}
        rounds: dict[str, list[dict[str, float]]] = {}
        report["rounds"] = rounds
        if "seq" not in args.skip:
            for round_ in range(args.rounds):  # ours and each baseline in turn, so load drifts hit all alike
                tag = f"r{round_}"
                runs = ["seq"] + [f"seq-{name}" for name in ("urllib3", "kubernetes") if name in args.baselines]
                for label in runs:
                    if label == "seq":
                        out = bench_seq(client, "bench", args.pods, tag)
                    elif label == "seq-urllib3":
                        out = bench_seq_urllib3(cp, client, "bench", args.pods, tag)
                    else:
                        out = bench_seq_kubernetes(cp, client, "bench", args.pods, tag)
                    rounds.setdefault(label, []).append(out)
                    print(label, json.dumps(out), flush=True)
            report["seq"] = rounds["seq"][-1]
        if "binder" not in args.skip:
            for round_ in range(args.rounds):
                for lanes, depth in args.lanes:
                    label = f"binder-{lanes}x{'default' if depth is None else depth}"
                    tag = f"{lanes}x{depth or 0}r{round_}"
                    out = bench_binder(cp, client, "bench", args.pods, lanes, depth, args.work_ms, tag)
                    report.setdefault(label, []).append(out)
                    print(label, json.dumps({k: round(v, 3) for k, v in out.items()}), flush=True)
        if "watch" not in args.skip:
            client.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "watch"}})
            report["watch"] = bench_watch(cp, client, "watch", args.pods)
            print("watch", json.dumps(report["watch"]), flush=True)
            rounds.setdefault("watch-replay", []).append(report["watch"]["replay"])
            for round_ in range(args.rounds):
                if "urllib3" in args.baselines:
                    ns = f"watch-u3-{round_}"
                    client.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
                    out = bench_watch_urllib3(cp, client, ns, args.pods)
                    rounds.setdefault("watch-urllib3", []).append(out)
                    print("watch-urllib3", json.dumps(out), flush=True)
                if round_:
                    ns = f"watch-{round_}"
                    client.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
                    again = bench_watch(cp, client, ns, args.pods)
                    rounds["watch-replay"].append(again["replay"])
                    print("watch", json.dumps(again), flush=True)
        report["load_average_at_end"] = list(os.getloadavg())  # the machine may be shared: say how busy
        if args.out is not None:
            write_results(args.out, report, ["python", "bench/http_bench.py", *sys.argv[1:]])


if __name__ == "__main__":
    main()
