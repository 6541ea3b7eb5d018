"""End-to-end benchmark: ``policyscheduler run`` against the real kube-scheduler on a live API server.

One command (``python bench/e2e.py``; ``--help`` for sizes) starts the test harness's etcd and
kube-apiserver, registers 1,000 fake nodes in three zones (bench/workloads.py's node shapes: labels,
a few taints, images) and, for every workload -- basic, node affinity, required pod anti-affinity,
required pod affinity, topology spreading, mixed (taints, host ports, priorities, soft spreading) --
runs the same pending pods under:

* ``ours``: ``policyscheduler run --engine vector`` (our client has no QPS limit);
* ``kube-100``: the harness's kube-scheduler (same release as the API server) with
  ``percentageOfNodesToScore: 100`` (scores every node, as we do), client QPS/burst 5000;
* ``kube-default``: the same with its default adaptive node sampling;
* ``ceiling``: no decision at all: a process that watches the pods and binds each to the node ``ours``
  chose (its ``pods/binding`` POSTs on 16 threads, no events) -- what the API server allows.

Each run has two phases, so neither the pod creator nor the start-up is what gets measured (on this
2-core machine the API server creates only ~150-200 pods/s, less than the schedulers bind):

1. **throughput**: the workload's pods are created first (raw JSON, bodies encoded up front, two creator
   processes x 16 threads), *then* the scheduler is started; a watch records when each pod shows up
   bound; throughput = (bound - 1) / (last bound - first bound);
2. **latency**: 5 s after the burst (so its after-effects, e.g. event writes, are over for every
   scheduler), with the scheduler warm, 200 more pods of the same workload are created at a steady
   50 pods/s (below every scheduler's capacity); p50/p99 creation-to-bound latency on the client clock
   (create sent -> bound seen by the watch).

``--workloads heterogeneous`` (on its own) is what a real cluster looks like instead (:class:`Cluster`):
bench/workloads.py's cluster with inter-pod terms, on nodes in 40 racks of four sizes, its running pods
(``--pods-per-node``) bound before the runs, and pending pods of 40 apps in its namespaces, every one a
distinct shape (random requests, ~50% with pod (anti-)affinity terms, ~30% zone spreading, node affinity
or tolerations; ``--seed``); running pods are deleted while each run's pods are scheduled (churn), and
the cluster is restored after every run so each scheduler starts from the same one.

Also per run: scheduler CPU seconds over the throughput phase and peak RSS (from /proc), the creation
rate, and hard-constraint violations (tests/kube/live.py's independent checker, plus required pod
affinity; must be 0).

Output (``--out``, default bench/results/): ``e2e.json``, ``e2e.md`` (table with ours/kube-100,
ours/kube-default and ours/ceiling ratios) and ``e2e.png``.

``--pin``: the same runs with the cores split: the API server, etcd and this process (its bound-pod watch)
on CPU 0, the scheduler under test (ours, kube-scheduler or the ceiling's binder) alone on CPU 1 --
the shape of a cluster where the scheduler does not share its cores with the API server. On the
shared 2-core machine each scheduler's CPU per pod slows the API server down as well; pinned, a
scheduler's rate is bounded by its own core and by the API server's, whichever is lower. Written as
``e2e-pinned.{json,md,png}``.

``--repeat N``: N rounds per workload, the run kinds interleaved within each round (so a slow minute of
the shared VM hits every kind alike); the tables show each measure's median over the rounds and the
range of pods/s. ``e2e.json`` keeps every round.

Where our CPU goes: ``--profile DIR`` runs ``ours`` under cProfile in every thread (thread CPU time as
the timer) and writes ``DIR/<workload>-ours.prof.txt`` for the throughput phase: CPU seconds per thread
(scheduling loop, binders, watches, event writers) and the functions by own and cumulative time. The
profiler slows ours down several times, so only the shares mean something; with
``POLICYSCHEDULER_PROFILE=threads`` only the per-thread CPU is recorded, at full speed.
"""

from __future__ import annotations

import argparse
import copy
import json
import multiprocessing
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import workloads as wl  # noqa: E402
from policyscheduler.kobjects import is_bound, node_name  # noqa: E402

WORKLOADS = ("basic", "node-affinity", "required-anti-affinity", "required-affinity", "spreading", "mixed")
"""The identical-pod workloads, run by default (one namespace per run, no running pods)."""
HETEROGENEOUS = "heterogeneous"
"""The realistic workload (:class:`Cluster`): its own nodes and running pods, so it runs on its own."""
PENDING_SELECTOR = "release"
"""Only the heterogeneous workload's pending pods carry this label (its running pods do not)."""
RUNS = ("ours", "kube-100", "kube-default", "ceiling")
OURS = "policy-scheduler"
CEILING = "bench-ceiling"
PRIORITIES = {0: "bench-low", 100: "bench-mid", 1000: "bench-high"}
_TICK = os.sysconf("SC_CLK_TCK")


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- pods -------------------------------------------------------------------------------------------------


def workload_pods(workload: str, count: int, namespace: str, scheduler: str) -> list[dict[str, Any]]:
    """The workload's pending pods (bench/workloads.py's templates) ready to POST in ``namespace``."""
    pods = []
    for pod in wl.pending_pods(workload, count):
        pod = copy.deepcopy(pod)
        pod.pop("status", None)
        meta = pod["metadata"]
        meta.pop("uid", None)
        meta["namespace"] = namespace
        spec = pod["spec"]
        spec["schedulerName"] = scheduler
        spec["terminationGracePeriodSeconds"] = 0
        if "priority" in spec:  # the Priority admission plugin wants a class, not a number
            spec["priorityClassName"] = PRIORITIES[spec.pop("priority")]
        pods.append(pod)
    return pods


def pod_count(workload: str, pods: int, nodes: int) -> int:
    """Anti-affinity by hostname fits at most one pod per untainted node (1 in 20 is tainted)."""
    if workload == "required-anti-affinity":
        return min(pods, nodes * 19 // 20 // 2)
    return pods


# -- creation (separate processes: the creator must not be the bottleneck) -------------------------------


def _creator(server: str, tls: tuple[str, str, str], bodies: list[tuple[int, str, bytes]], out: Any) -> None:
    import urllib3

    ca, cert, key = tls
    http = urllib3.PoolManager(maxsize=16, block=True, cert_reqs="CERT_REQUIRED", ca_certs=ca, cert_file=cert,
                               key_file=key, retries=urllib3.Retry(total=5, backoff_factor=0.2,
                                                                   status_forcelist=(429, 500, 503),
                                                                   allowed_methods=None))
    headers = {"Content-Type": "application/json", "Accept": "application/json"}

    def one(item: tuple[int, str, bytes]) -> tuple[int, float, int]:
        sent = time.time()
        resp = http.request("POST", f"{server}/api/v1/namespaces/{item[1]}/pods", body=item[2], headers=headers,
                            preload_content=True)
        return item[0], sent, resp.status

    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(one, bodies))
    out.put(results)


def create_pods(cp: Any, namespace: str | None, pods: list[dict[str, Any]], processes: int = 2) -> tuple[dict[str, float], float]:
    """POST ``pods`` (into ``namespace``, or each into its own when ``namespace`` is None) from
    ``processes`` processes; name -> wall time sent, and the seconds it took."""
    bodies = [json.dumps(p, separators=(",", ":")).encode() for p in pods]
    spaces = [namespace or p["metadata"]["namespace"] for p in pods]
    names = [p["metadata"]["name"] for p in pods]
    tls = (str(cp.ca.pair.cert_file), str(cp.admin.cert_file), str(cp.admin.key_file))
    # forkserver, not fork: this process has threads (the bound-pod watch, mid-TLS-read); a fork copies
    # the locks they hold (OpenSSL's, the import lock) and a creator then hung forever on one of them
    ctx = multiprocessing.get_context("forkserver")
    queue = ctx.Queue()
    slices = [list(range(i, len(bodies), processes)) for i in range(processes)]
    started = time.time()
    procs = [ctx.Process(target=_creator, args=(cp.server, tls, [(i, spaces[i], bodies[i]) for i in idx], queue))
             for idx in slices]
    for p in procs:
        p.start()
    results = [queue.get() for _ in procs]
    for p in procs:
        p.join()
    sent: dict[str, float] = {}
    failed = 0
    for r in results:
        for i, t, status in r:
            sent[names[i]] = t
            failed += status >= 300
    if failed:
        raise RuntimeError(f"{failed} pod creations failed")
    return sent, time.time() - started


# -- watching for bound pods ------------------------------------------------------------------------------


def pods_path(namespace: str | None) -> str:
    """The pods of ``namespace``, or of every namespace (the heterogeneous workload's) for None."""
    return f"/api/v1/namespaces/{namespace}/pods" if namespace else "/api/v1/pods"


class BoundWatch:
    """Watches a namespace's pods (every namespace's pods with ``selector`` when ``namespace`` is None);
    records the wall time each is first seen with ``spec.nodeName``."""

    def __init__(self, client: Any, namespace: str | None, selector: str | None = None) -> None:
        self.client, self.path, self.selector = client, pods_path(namespace), selector
        self.bound: dict[str, float] = {}
        self.nodes: dict[str, str] = {}
        self._stop = threading.Event()
        lst = client.get(self.path, labelSelector=selector, limit=1)
        self._rv = lst["metadata"]["resourceVersion"]
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                stream = self.client.stream(self.path, {"watch": "true", "resourceVersion": self._rv,
                                                        "labelSelector": self.selector,
                                                        "allowWatchBookmarks": "true"}, read_timeout=5)
                self._stream = stream
                for event in stream:
                    obj = event.get("object") or {}
                    meta = obj.get("metadata") or {}
                    if meta.get("resourceVersion"):
                        self._rv = meta["resourceVersion"]
                    node = node_name(obj)
                    name = meta.get("name")
                    if node and name and name not in self.bound:
                        self.bound[name] = time.time()
                        self.nodes[name] = node
                    if self._stop.is_set():
                        break
            except Exception:  # noqa: BLE001 - read timeouts on a quiet watch: watch again
                if self._stop.is_set():
                    return

    def stop(self) -> None:
        self._stop.set()


# -- process probes -----------------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU of ``pid`` and its reaped children so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / _TICK


SERVER_CPUS = {0}
SCHEDULER_CPUS = {1}
"""``--pin``: where the API server, etcd and the bench go, and where the scheduler under test goes."""


def pin(pid: int, cpus: set[int]) -> None:
    """Pin every thread of ``pid`` to ``cpus`` (threads it starts later inherit it from their creator)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            os.sched_setaffinity(int(task.name), cpus)
        except (ProcessLookupError, PermissionError):  # a thread that just ended
            pass


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


# -- the schedulers under test ------------------------------------------------------------------------------


class Ours:
    scheduler_name = OURS

    def __init__(self, cp: Any, logdir: Path, tag: str, engine: str, profile: str | None = None) -> None:
        from tests.kube.live import RunProcess

        (logdir / f"{tag}.log").unlink(missing_ok=True)
        if profile:  # the same child under this file's profiling wrapper (see profiled_run)
            Path(profile).mkdir(parents=True, exist_ok=True)
            self.run = RunProcess.__new__(RunProcess)
            self.run.log_file = logdir / f"{tag}.log"
            argv = [sys.executable, str(Path(__file__).resolve()), "--profiled-run", str(Path(profile) / tag),
                    "run", "--kubeconfig", str(cp.kubeconfig), "--scheduler-name", OURS,
                    "--bind-address", "127.0.0.1:0", "--engine", engine, "--seed", "1"]
            from tests.controlplane import procs

            self.run.child = procs.Child("policyscheduler-run", argv, self.run.log_file,
                                         env={**os.environ, "PYTHONPATH": str(REPO)})
        else:
            self.run = RunProcess(cp, logdir / f"{tag}.log", "--engine", engine, "--seed", "1")
        started = self.run.wait_log("started", timeout=120)
        address = started["status_address"]
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://{address}/readyz", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError("policyscheduler run never became ready")
            time.sleep(0.1)
        self.pid = self.run.pid

    def stop(self) -> None:
        self.run.terminate()


class Kube:
    scheduler_name = "default-scheduler"

    def __init__(self, cp: Any, percentage: int | None) -> None:
        config: dict[str, Any] = {"profiles": [{"schedulerName": "default-scheduler"}]}
        if percentage is not None:
            config["percentageOfNodesToScore"] = percentage
        self.cp = cp
        self.sched = cp.start_scheduler(config)
        self.pid = self.sched.pid

    def stop(self) -> None:
        self.cp.stop_scheduler(self.sched)


class Ceiling:
    scheduler_name = CEILING

    def __init__(self, cp: Any, logdir: Path, tag: str, namespace: str | None, placements: dict[str, str]) -> None:
        import subprocess

        from tests.controlplane import procs

        plan = logdir / f"{tag}.plan.json"
        plan.write_text(json.dumps(placements))
        self.log = logdir / f"{tag}.log"
        self.log.unlink(missing_ok=True)
        self.child = procs.Child("bench-ceiling", [sys.executable, str(Path(__file__).resolve()), "--ceiling-worker",
                                                   str(cp.kubeconfig), namespace or "*", str(plan)], self.log,
                                 env={**os.environ, "PYTHONPATH": str(REPO)})
        deadline = time.monotonic() + 60
        while "ready" not in self.log.read_text(errors="replace"):
            if not self.child.alive() or time.monotonic() > deadline:
                raise RuntimeError("ceiling worker did not start:\n" + self.child.log_tail())
            time.sleep(0.05)
        self.pid = self.child.pid
        del subprocess

    def stop(self) -> None:
        self.child.stop()


def ceiling_worker(kubeconfig: str, namespace: str, plan_file: str) -> int:
    """Bind every pod of ``namespace`` (``*``: the heterogeneous workload's pending pods, in every
    namespace) to its planned node as soon as the watch shows it (no decision)."""
    from policyscheduler.kube import RestClient, load_connection
    from policyscheduler.kube.rest import ApiError, pod_path

    plan: dict[str, str] = json.loads(Path(plan_file).read_text())
    client = RestClient(load_connection(kubeconfig), maxsize=64)
    pool = ThreadPoolExecutor(32)
    seen: set[str] = set()

    def bind(ns: str, name: str, uid: str) -> None:
        body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "namespace": ns, "uid": uid},
                "target": {"apiVersion": "v1", "kind": "Node", "name": plan[name]}}
        try:
            client.post(pod_path(ns, name, "binding"), body)
        except ApiError as err:
            print(f"bind {name}: {err}", flush=True)

    path, selector = (pods_path(None), PENDING_SELECTOR) if namespace == "*" else (pods_path(namespace), None)
    listed = client.get(path, labelSelector=selector)
    rv = listed["metadata"]["resourceVersion"]
    print("ready", flush=True)
    for obj in listed["items"]:
        meta = obj["metadata"]
        if meta["name"] in plan and not is_bound(obj):
            seen.add(meta["name"])
            pool.submit(bind, meta["namespace"], meta["name"], meta["uid"])
    while True:
        try:
            for event in client.stream(path, {"watch": "true", "resourceVersion": rv, "labelSelector": selector},
                                       read_timeout=600):
                obj = event.get("object") or {}
                meta = obj.get("metadata") or {}
                rv = meta.get("resourceVersion") or rv
                name = meta.get("name")
                if event.get("type") == "ADDED" and name in plan and name not in seen and not is_bound(obj):
                    seen.add(name)
                    pool.submit(bind, str(meta.get("namespace") or ""), name, str(meta.get("uid") or ""))
        except Exception as err:  # noqa: BLE001
            print(f"watch: {err}", flush=True)
            time.sleep(0.2)


def profiled_run(prefix: str, argv: list[str]) -> int:
    """``policyscheduler <argv>`` with cProfile (timer: thread CPU time) in every thread; SIGUSR1 marks the
    start of the measured phase, SIGUSR2 its end: ``<prefix>.prof.txt`` gets the functions' CPU time in
    between (tottime and cumtime summed over threads; the profiler slows calls down, so read shares, not
    seconds) and the CPU seconds of each thread (from /proc); ``<prefix>.loop.prof`` is the scheduling
    loop thread's whole profile (it starts working with the measured phase) for ``pstats`` (callers and
    callees). ``POLICYSCHEDULER_PROFILE=threads``: thread CPU only, no cProfile (no slow-down)."""
    import cProfile
    import signal

    profiles: dict[int, tuple[str, cProfile.Profile]] = {}
    lock = threading.Lock()

    threads_only = os.environ.get("POLICYSCHEDULER_PROFILE") == "threads"

    def per_thread(*_: Any) -> None:
        prof = cProfile.Profile(time.thread_time)  # CPU time: a thread blocked on I/O or a lock costs nothing
        if threads_only:
            with lock:
                profiles[threading.get_native_id()] = (threading.current_thread().name, prof)
            sys.setprofile(None)  # named once; no hook on every call
            return
        with lock:
            profiles[threading.get_native_id()] = (threading.current_thread().name, prof)
        prof.enable()

    def thread_cpu() -> dict[int, float]:
        out = {}
        for task in Path("/proc/self/task").iterdir():
            try:
                fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            out[int(task.name)] = (int(fields[11]) + int(fields[12])) / _TICK
        return out

    def raw() -> dict[tuple[str, int, str], tuple[int, float, float]]:
        totals: dict[tuple[str, int, str], tuple[int, float, float]] = {}
        with lock:
            items = list(profiles.values())
        for _, prof in items:
            for entry in prof.getstats():
                code = entry.code
                key = ((code.co_filename, code.co_firstlineno, code.co_name) if not isinstance(code, str)
                       else ("~", 0, code))
                n, tot, cum = totals.get(key, (0, 0.0, 0.0))
                totals[key] = (n + entry.callcount, tot + entry.inlinetime, cum + entry.totaltime)
        return totals

    Raw = dict[tuple[str, int, str], tuple[int, float, float]]
    marks: dict[str, tuple[Raw, dict[int, float], float]] = {}

    def start(*_: Any) -> None:
        marks["start"] = (raw(), thread_cpu(), time.process_time())

    def stop(*_: Any) -> None:
        empty: Raw = {}
        before, cpu0, proc0 = marks.get("start") or (empty, {}, 0.0)
        after, cpu1, proc1 = raw(), thread_cpu(), time.process_time()
        with lock:
            names = {tid: name for tid, (name, _) in profiles.items()}
        rows: list[tuple[float, float, int, tuple[str, int, str]]] = []
        for key, (n, tot, cum) in after.items():
            n0, tot0, cum0 = before.get(key, (0, 0.0, 0.0))
            if n - n0:
                rows.append((tot - tot0, cum - cum0, n - n0, key))
        total = sum(r[0] for r in rows) or 1.0
        lines = [f"process CPU {proc1 - proc0:.2f}s; per thread (CPU s):"]
        by_name: dict[str, float] = {}
        for tid, seconds in cpu1.items():
            name = names.get(tid, "main" if tid == os.getpid() else f"tid-{tid}")
            name = name.rsplit("_", 1)[0] if name.startswith(("bind", "events")) else name
            by_name[name] = by_name.get(name, 0.0) + seconds - cpu0.get(tid, 0.0)
        lines += [f"  {s:7.2f}  {n}" for n, s in sorted(by_name.items(), key=lambda x: -x[1])]
        for title, idx in (("by tottime", 0), ("by cumtime", 1)):
            lines += ["", f"top 150 {title} (share of profiled tottime; calls):"]
            for tot, cum, n, key in sorted(rows, key=lambda r: -(r[1] if idx else r[0]))[:150]:
                where = f"{Path(key[0]).name}:{key[1]}({key[2]})" if key[0] != "~" else key[2]
                lines.append(f"  {100 * tot / total:6.2f}%  cum {100 * cum / total:7.2f}%  {n:9d}  {where}")
        Path(prefix + ".prof.txt").write_text("\n".join(lines) + "\n")
        if not threads_only:  # the scheduling loop's own profile, for pstats (callers, callees)
            loop = [prof for name, prof in profiles.values() if name == "scheduling-loop"]
            if loop:  # snapshot_stats, not dump_stats: that would disable this (the main) thread's profiler
                import marshal

                loop[0].snapshot_stats()
                Path(prefix + ".loop.prof").write_bytes(marshal.dumps(loop[0].stats))

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    threading.setprofile(per_thread)
    per_thread()
    from policyscheduler.cli import main as cli_main

    return cli_main(argv)


# -- the heterogeneous workload's cluster -------------------------------------------------------------------


class Cluster:
    """The heterogeneous workload's starting cluster on the API server, created once per invocation and
    restored after every run, so that every scheduler of every round starts from the same cluster.

    It is bench/workloads.py's ``base_cluster`` with inter-pod terms and varied nodes (the engine
    benchmark's generator, deterministic in (nodes, pods per node, seed)): its five namespaces, the
    ReplicaSets and Services default spreading looks up, nodes in 40 racks of four sizes over three
    zones, and running pods bound to those nodes (about 2% with required hostname anti-affinity, 5% with
    preferred pod affinity). No kubelet runs them: they stay bound and count as scheduled pods. The
    pending pods are ``workloads.pending_pods("heterogeneous", ..., seed)`` in the same namespaces, so the
    running pods' terms apply to them; only they carry the ``release`` label, which is how a run's pods
    are watched and deleted. Churn is ``workloads.churn_plan``: one running pod deleted after every fourth
    pod bound (every other time one with terms); the deleted pods are created again after the run."""

    def __init__(self, cp: Any, client: Any, nodes: int, pods_per_node: int, seed: int,
                 progress: Callable[[str], None]) -> None:
        self.cp, self.client, self.seed = cp, client, seed
        self.objects = wl.base_cluster(nodes, pods_per_node, seed, terms=True, varied=True)
        by_kind: dict[str, list[dict[str, Any]]] = {}
        for obj in self.objects:
            by_kind.setdefault(obj["kind"], []).append(obj)
        for ns in by_kind["Namespace"]:
            client.post("/api/v1/namespaces", ns)
        self.owners: dict[tuple[str, str], str] = {}  # (namespace, ReplicaSet name) -> its uid on the server
        for rs in by_kind["ReplicaSet"]:
            meta, selector = rs["metadata"], rs["spec"]["selector"]
            body = {**rs, "spec": {"replicas": 0, "selector": selector, "template": {
                "metadata": {"labels": selector["matchLabels"]},
                "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]}}}}
            made = client.post(f"/apis/apps/v1/namespaces/{meta['namespace']}/replicasets", body)
            self.owners[(meta["namespace"], meta["name"])] = made["metadata"]["uid"]
        for svc in by_kind["Service"]:
            body = {**svc, "spec": {**svc["spec"], "ports": [{"port": 80}]}}
            client.post(f"/api/v1/namespaces/{svc['metadata']['namespace']}/services", body)
        progress(f"creating {len(by_kind['Node'])} nodes (40 racks, 4 sizes, 3 zones) ...")
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(lambda n: client.post("/api/v1/nodes", n), by_kind["Node"]))
        self.running = {(p["metadata"]["namespace"], p["metadata"]["name"]): self._body(p, None)
                        for p in by_kind["Pod"]}
        self.with_terms = sum(1 for p in by_kind["Pod"] if p["spec"].get("affinity"))
        progress(f"creating {len(self.running)} running pods ({self.with_terms} with inter-pod terms) ...")
        _, seconds = create_pods(cp, None, list(self.running.values()))
        progress(f"  {len(self.running) / seconds:.0f} pods/s")
        self.baseline: set[str] = set()
        self.baseline = set(self.violations(client.get("/api/v1/pods")["items"], client.get("/api/v1/nodes")["items"]))

    def _body(self, pod: dict[str, Any], scheduler: str | None) -> dict[str, Any]:
        """``pod`` ready to POST: the generator's uid and status dropped, its owner's real uid."""
        pod = copy.deepcopy(pod)
        pod.pop("status", None)
        meta = pod["metadata"]
        meta.pop("uid", None)
        for ref in meta.get("ownerReferences") or []:
            ref["uid"] = self.owners[(meta["namespace"], ref["name"])]
        pod["spec"]["terminationGracePeriodSeconds"] = 0
        if scheduler:
            pod["spec"]["schedulerName"] = scheduler
        return pod

    def pending(self, count: int, latency: int, scheduler: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The throughput phase's ``count`` pods and the latency phase's next ``latency`` (distinct pods):
        the same bodies for every scheduler but for ``schedulerName``."""
        pods = [self._body(p, scheduler) for p in wl.pending_pods(HETEROGENEOUS, count + latency, self.seed)]
        return pods[:count], pods[count:]

    def churn(self, count: int) -> list[tuple[int, dict[str, Any]]]:
        """(bound pods after which, running pod to delete), in order."""
        plan = wl.churn_plan(HETEROGENEOUS, self.objects, count, self.seed)
        return [(i, self.running[(p["metadata"]["namespace"], p["metadata"]["name"])]) for i, p in sorted(plan.items())]

    def violations(self, all_pods: list[dict[str, Any]], nodes: list[dict[str, Any]]) -> list[str]:
        """Hard constraints broken that the starting cluster did not already break (its running pods were
        put on nodes without a scheduler: some sit on tainted nodes or beside pods their anti-affinity
        repels). Topology spreading's end-state skew is left out: with pods of the same selector that do
        not carry the constraint, ScheduleAnyway ones and churn, kube does not keep it below maxSkew."""
        from tests.kube.live import violations

        found = {v for v in violations(all_pods, nodes) if not v.startswith("spread ")}
        mine = [p for p in all_pods if p["metadata"]["namespace"] in wl.NAMESPACES]
        found.update(affinity_violations(mine, {n["metadata"]["name"]: n for n in nodes}))
        return sorted(found - self.baseline)

    def restore(self, deleted: list[dict[str, Any]]) -> None:
        """Delete the run's pending pods and create the running pods churn deleted again."""
        for ns in wl.NAMESPACES:
            self.client.request("DELETE", pods_path(ns), query={"labelSelector": PENDING_SELECTOR,
                                                                 "gracePeriodSeconds": 0})
        deadline = time.monotonic() + 120
        while (self.client.get(pods_path(None), labelSelector=PENDING_SELECTOR, limit=1)["items"]
               and time.monotonic() < deadline):
            time.sleep(0.2)
        if deleted:
            names = {p["metadata"]["name"] for p in deleted}
            while time.monotonic() < deadline:  # deleted with grace 0: gone at once, but make sure
                if not names & {p["metadata"]["name"] for p in self.client.get(pods_path(None))["items"]}:
                    break
                time.sleep(0.2)
            create_pods(self.cp, None, deleted)


class Churn:
    """Deletes running pods while a run's pods are scheduled: ``plan[k] = (i, pod)`` is deleted once more
    than ``i`` of the run's pods are bound (so every scheduler sees the same deletions at the same point
    of its progress)."""

    def __init__(self, client: Any, watch: BoundWatch, plan: list[tuple[int, dict[str, Any]]]) -> None:
        self.client, self.watch, self.plan = client, watch, plan
        self.deleted: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for after, pod in self.plan:
            while len(self.watch.bound) <= after:  # stopped: the deletions already due still happen
                if self._stop.wait(0.005) and len(self.watch.bound) <= after:
                    return
            meta = pod["metadata"]
            self.client.request("DELETE", f"{pods_path(meta['namespace'])}/{meta['name']}",
                                query={"gracePeriodSeconds": 0})
            self.deleted.append(pod)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


# -- one run --------------------------------------------------------------------------------------------------


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def affinity_violations(pods: list[dict[str, Any]], nodes: dict[str, dict[str, Any]]) -> list[str]:
    """Required pod affinity: some pod matching the term (itself included, kube's first-pod rule) shares
    the term's topology domain."""
    from tests.kube.live import _matches

    problems = []
    placed = [p for p in pods if node_name(p) in nodes]
    for p in placed:
        terms = (((p["spec"].get("affinity") or {}).get("podAffinity") or {})
                 .get("requiredDuringSchedulingIgnoredDuringExecution") or [])
        for term in terms:
            key = term["topologyKey"]
            mine = (nodes[p["spec"]["nodeName"]]["metadata"].get("labels") or {}).get(key)
            if mine is None:
                problems.append(f"{p['metadata']['name']}: node has no {key}")
                continue
            ok = any(q["metadata"]["namespace"] == p["metadata"]["namespace"]
                     and (nodes[q["spec"]["nodeName"]]["metadata"].get("labels") or {}).get(key) == mine
                     and _matches(q["metadata"].get("labels") or {}, term["labelSelector"]) for q in placed)
            if not ok:
                problems.append(f"{p['metadata']['name']}: required affinity unmatched")
    return problems


def wait_bound(watch: BoundWatch, names: set[str], timeout: float) -> None:
    """Until every pod of ``names`` is bound, ``timeout`` passed, or nothing was bound for 30 s."""
    deadline, last_progress, last_count = time.monotonic() + timeout, time.monotonic(), -1
    while time.monotonic() < deadline:
        done = sum(1 for n in names if n in watch.bound)
        if done == len(names):
            return
        if done != last_count:
            last_count, last_progress = done, time.monotonic()
        elif time.monotonic() - last_progress > 30:
            return
        time.sleep(0.05)


def paced_create(client: Any, namespace: str | None, pods: list[dict[str, Any]], rate: float) -> dict[str, float]:
    """Create ``pods`` (in ``namespace``, or each in its own for None) at ``rate`` per second (below every
    scheduler's capacity); name -> wall time sent."""
    sent: dict[str, float] = {}

    def one(pod: dict[str, Any]) -> None:
        sent[pod["metadata"]["name"]] = time.time()
        client.post(pods_path(namespace or pod["metadata"]["namespace"]), pod)

    start = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        for i, pod in enumerate(pods):
            delay = start + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            pool.submit(one, pod)
    return sent


def one_run(cp: Any, client: Any, workload: str, kind: str, count: int, logdir: Path, engine: str,
            placements: dict[str, dict[str, str]], timeout: float, latency_count: int = 200,
            latency_rate: float = 50.0, settle: float = 5.0, profile: str | None = None,
            pinned: bool = False, round_: int = 0, cluster: Cluster | None = None) -> dict[str, Any]:
    """One scheduler's run of a workload; ``cluster`` for the heterogeneous workload (its pods go to the
    cluster's namespaces, running pods are deleted while they are scheduled, the cluster is restored)."""
    from tests.kube.live import violations

    tag = (f"{workload}-{kind}" + (f"-{round_}" if round_ else ""))[:63]
    namespace: str | None = None if cluster else tag  # None: the cluster's namespaces, its pods by label
    if namespace:
        client.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    start: Callable[[], Any]
    if kind == "ours":
        scheduler_name, start = OURS, lambda: Ours(cp, logdir, tag, engine, profile)
    elif kind == "kube-100":
        scheduler_name, start = "default-scheduler", lambda: Kube(cp, 100)
    elif kind == "kube-default":
        scheduler_name, start = "default-scheduler", lambda: Kube(cp, None)
    else:
        scheduler_name, start = CEILING, lambda: Ceiling(cp, logdir, tag, namespace, placements[workload])
    if cluster:
        pods, latency_pods = cluster.pending(count, latency_count, scheduler_name)
    else:
        assert namespace
        pods = workload_pods(workload, count, namespace, scheduler_name)
        latency_pods = workload_pods(workload, latency_count, namespace, scheduler_name)
        for pod in latency_pods:
            pod["metadata"]["name"] = "lat-" + pod["metadata"]["name"]
    watch = BoundWatch(client, namespace, PENDING_SELECTOR if cluster else None)
    _, create_seconds = create_pods(cp, namespace, pods)  # all pending before the scheduler starts
    scheduler = start()
    if pinned:
        pin(scheduler.pid, SCHEDULER_CPUS)
    scheduler_cpus = sorted(os.sched_getaffinity(scheduler.pid))
    server_pids = [c.pid for c in (cp.apiserver, cp.etcd) if c is not None]
    cpu0, server0, wall0 = cpu_seconds(scheduler.pid), sum(cpu_seconds(p) for p in server_pids), time.monotonic()
    profiled = kind == "ours" and profile is not None
    if profiled:
        os.kill(scheduler.pid, signal.SIGUSR1)
    churn = Churn(client, watch, cluster.churn(count)) if cluster else None
    try:
        names = {p["metadata"]["name"] for p in pods}
        wait_bound(watch, names, timeout)
        if churn:
            churn.stop()
        cpu = cpu_seconds(scheduler.pid) - cpu0
        server_cpu = sum(cpu_seconds(p) for p in server_pids) - server0
        wall = time.monotonic() - wall0
        if profiled:
            os.kill(scheduler.pid, signal.SIGUSR2)
        time.sleep(settle)  # let the burst's after-effects (event writes, ...) finish for every scheduler
        sent = paced_create(client, namespace, latency_pods, latency_rate)
        wait_bound(watch, set(sent), timeout)
        rss = peak_rss_mb(scheduler.pid)
    finally:
        if churn:
            churn.stop()
        watch.stop()
        scheduler.stop()
    bound = dict(watch.bound)
    throughput_times = sorted(t for n, t in bound.items() if n in names)
    latencies = [bound[n] - sent[n] for n in sent if n in bound]
    span = throughput_times[-1] - throughput_times[0] if len(throughput_times) > 1 else 0.0
    all_pods = client.get("/api/v1/pods")["items"]
    nodes = client.get("/api/v1/nodes")["items"]
    if cluster:
        ns_pods = [p for p in all_pods if PENDING_SELECTOR in (p["metadata"].get("labels") or {})]
        problems = cluster.violations(all_pods, nodes)
    else:
        ns_pods = [p for p in all_pods if p["metadata"]["namespace"] == namespace]
        problems = violations(all_pods, nodes) + affinity_violations(ns_pods, {n["metadata"]["name"]: n for n in nodes})
    if kind == "ours":
        placements[workload] = {p["metadata"]["name"]: node for p in ns_pods if (node := node_name(p))}
    if cluster:
        cluster.restore(churn.deleted if churn else [])
    else:
        client.request("DELETE", f"/api/v1/namespaces/{namespace}/pods", query={"gracePeriodSeconds": 0})
        deadline = time.monotonic() + 120
        while client.get(f"/api/v1/namespaces/{namespace}/pods", limit=1)["items"] and time.monotonic() < deadline:
            time.sleep(0.2)
    result = {
        "workload": workload, "run": kind, "round": round_, "pods": count, "bound": len(throughput_times),
        "pods_per_s": round((len(throughput_times) - 1) / span, 1) if span > 0 else 0.0,
        "latency_pods": latency_count, "latency_bound": len(latencies), "latency_rate": latency_rate,
        "p50_ms": round(_percentile(latencies, 0.5) * 1000, 1),
        "p99_ms": round(_percentile(latencies, 0.99) * 1000, 1),
        "create_pods_per_s": round(count / create_seconds, 1),
        "cpu_s": round(cpu, 2), "peak_rss_mb": round(rss, 1),
        # API server + etcd CPU from scheduler start to the last bind (2 cores: 2 CPU-s per wall second)
        "server_cpu_s": round(server_cpu, 2), "wall_s": round(wall, 2),
        "violations": len(problems), "violation_examples": problems[:5], "scheduler_cpus": scheduler_cpus,
        "load_1m": round(os.getloadavg()[0], 2),
    }
    if churn:
        result["deleted"] = len(churn.deleted)
    _say(f"  {workload:24} {kind:13} {result['bound']}/{count} bound  {result['pods_per_s']:8.1f} pods/s  "
         f"p50 {result['p50_ms']:8.1f} ms  p99 {result['p99_ms']:8.1f} ms  cpu {result['cpu_s']:6.2f}s  "
         f"rss {result['peak_rss_mb']:6.1f} MB  server cpu {result['server_cpu_s']:.2f}s/{result['wall_s']:.1f}s  created {result['create_pods_per_s']:.0f}/s  "
         f"violations {result['violations']}" + (f"  deleted {result['deleted']}" if churn else ""))
    return result


# -- report ------------------------------------------------------------------------------------------------------


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if a and b else "-"


_MEDIAN_FIELDS = ("pods_per_s", "p50_ms", "p99_ms", "cpu_s", "peak_rss_mb", "server_cpu_s", "wall_s")


def summary(results: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """One record per (workload, run kind): with ``--repeat``, the median of each measure over the rounds,
    the fewest pods bound, the violations summed and every round's pods/s (``rounds``)."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in results["runs"]:
        groups.setdefault((r["workload"], r["run"]), []).append(r)
    out = {}
    for key, rs in groups.items():
        record = dict(rs[0])
        for name in _MEDIAN_FIELDS:
            values = [r[name] for r in rs if name in r]
            if values:
                record[name] = statistics.median(values)
        record["bound"] = min(r["bound"] for r in rs)
        record["violations"] = sum(r["violations"] for r in rs)
        record["rounds"] = [r["pods_per_s"] for r in rs]
        out[key] = record
    return out


def markdown(results: dict[str, Any]) -> str:
    by = summary(results)
    runs = results["run_kinds"]
    rounds = max((len(r["rounds"]) for r in by.values()), default=1)
    each = (f" Each cell is the median of {rounds} rounds (run kinds interleaved); pods/s shows the range in "
            f"brackets." if rounds > 1 else "")
    if "running_pods" in results:
        lines = [f"End-to-end, heterogeneous: {results['nodes']} nodes (3 zones, 40 racks of 4 sizes), "
                 f"{results['running_pods']} running pods ({results['running_with_terms']} with inter-pod terms), "
                 f"{results['pods']} pending pods of 40 apps (seed {results['seed']}), a running pod deleted after "
                 f"every {wl.CHURN_EVERY}th bound; violations: new ones only (the starting cluster has "
                 f"{results['baseline_violations']}), zone-skew end state not checked. Throughput in pods/s; "
                 f"latency create->bound.{each}", ""]
    else:
        lines = [f"End-to-end: {results['nodes']} nodes, 3 zones; pods per workload: {results['pods']} "
                 f"(anti-affinity: one per untainted node, halved). Throughput in pods/s; latency create->bound.{each}",
                 ""]
    head = "| workload | " + " | ".join(f"{k} pods/s | {k} p50 / p99 ms | {k} CPU s / RSS MB" for k in runs)
    head += " | ours/kube-100 | ours/kube-default | ours/ceiling | violations |"
    lines += [head, "|" + "---|" * (head.count("|") - 1)]
    for workload in results["workloads"]:
        cells = []
        for k in runs:
            r = by.get((workload, k))
            if r is None:
                cells += ["-", "-", "-"]
                continue
            mark = "" if r["bound"] == r["pods"] else f" ({r['bound']}/{r['pods']} bound)"
            spread = f" [{min(r['rounds']):.0f}-{max(r['rounds']):.0f}]" if len(r["rounds"]) > 1 else ""
            cells += [f"{r['pods_per_s']:.1f}{spread}{mark}", f"{r['p50_ms']:.0f} / {r['p99_ms']:.0f}",
                      f"{r['cpu_s']:.1f} / {r['peak_rss_mb']:.0f}"]
        ours = by.get((workload, "ours"), {}).get("pods_per_s", 0)
        ratios = [_ratio(ours, by.get((workload, k), {}).get("pods_per_s", 0))
                  for k in ("kube-100", "kube-default", "ceiling")]
        bad = sum(by[(workload, k)]["violations"] for k in runs if (workload, k) in by)
        lines.append(f"| {workload} | " + " | ".join(cells) + " | " + " | ".join(ratios) + f" | {bad} |")
    shared = ("each on its own core (--pin)" if results.get("pinned") else
              "the machine's cores are shared by both; 2 cores give 2 CPU-ms per wall ms")
    lines += ["", f"CPU per bound pod over the throughput phase, ms: scheduler process / API server + etcd "
              f"({shared}):", ""]
    lines += ["| workload | " + " | ".join(runs) + " | scheduler CPU ours/kube-100 | ours/kube-default |",
              "|" + "---|" * (len(runs) + 3)]
    for workload in results["workloads"]:
        cells, per_pod = [], {}
        for k in runs:
            r = by.get((workload, k))
            if r is None or not r.get("bound") or "server_cpu_s" not in r:
                cells.append("-")
                continue
            per_pod[k] = 1000 * r["cpu_s"] / r["bound"]
            cells.append(f"{per_pod[k]:.2f} / {1000 * r['server_cpu_s'] / r['bound']:.2f}")
        cells += [_ratio(per_pod.get("ours", 0), per_pod.get(k, 0)) for k in ("kube-100", "kube-default")]
        lines.append(f"| {workload} | " + " | ".join(cells) + " |")
    load = results.get("load_average")
    load_text = f"; load average (1, 5, 15 min) {load['start']} at the start, {load['end']} at the end" if load else ""
    lines += ["", f"Command: `{results['command']}`; machine: {results['machine']}{load_text}."]
    return "\n".join(lines) + "\n"


def chart(results: dict[str, Any]) -> bytes:
    from bench.pngchart import Bar, bar_chart

    colors = {"ours": (40, 110, 200), "kube-100": (240, 150, 40), "kube-default": (250, 200, 90),
              "ceiling": (120, 120, 120)}
    bars, gaps = [], []
    by = summary(results)
    for workload in results["workloads"]:
        for kind in results["run_kinds"]:
            r = by.get((workload, kind))
            if r is not None:
                bars.append(Bar(f"{workload} {kind}", max(r["pods_per_s"], 0.1), colors.get(kind, (0, 0, 0))))
        gaps.append(len(bars) - 1)
    return bar_chart(f"end to end, {results['nodes']} nodes: pods/s (log scale)", bars,
                     legend=list(colors.items()), gap_after=gaps)


# -- main -----------------------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench/e2e.py", description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=1000, help="pending pods per workload (default 1000)")
    parser.add_argument("--workloads", default=",".join(WORKLOADS),
                        help=f"any of {','.join(WORKLOADS)} (the default), or {HETEROGENEOUS} on its own")
    parser.add_argument("--pods-per-node", type=int, default=10,
                        help="heterogeneous: running pods per node, bound before the runs (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="heterogeneous: the generator's seed (default 0)")
    parser.add_argument("--runs", default=",".join(RUNS), help="which of ours,kube-100,kube-default,ceiling")
    parser.add_argument("--engine", default="vector")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per run at most")
    parser.add_argument("--latency-pods", type=int, default=200, help="pods of the latency phase (default 200)")
    parser.add_argument("--latency-rate", type=float, default=50.0, help="their creation rate, pods/s (default 50)")
    parser.add_argument("--out", default=str(REPO / "bench" / "results"), help="where e2e.{json,md,png} go")
    parser.add_argument("--profile", default=None, metavar="DIR",
                        help="run ours under cProfile (all threads); DIR/<namespace>.prof.txt covers the throughput "
                             "phase (slows ours down: throughput numbers of such a run are not comparable)")
    parser.add_argument("--logs", default=None, help="where the schedulers' logs go (default: a temp dir)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="rounds per workload, the run kinds interleaved; the tables show medians (and the "
                             "range of pods/s)")
    parser.add_argument("--pin", action="store_true",
                        help="API server, etcd and the bench on CPU 0, the scheduler under test on CPU 1 "
                             "(writes e2e-pinned.*)")
    return parser.parse_args(argv)


def _runs(args: argparse.Namespace, workloads: list[str], kinds: list[str], logdir: Path,
          progress: Callable[[str], None], info: dict[str, Any]) -> list[dict[str, Any]]:
    """Start the control plane, register the nodes (the heterogeneous workload: its :class:`Cluster`,
    described in ``info``) and do every (workload, run kind)."""
    from policyscheduler.kube import RestClient, load_connection
    from tests.controlplane.harness import ControlPlane

    with ControlPlane.start() as cp:
        if args.pin:
            for pid in [c.pid for c in (cp.apiserver, cp.etcd) if c is not None] + [os.getpid()]:
                pin(pid, SERVER_CPUS)
            progress(f"pinned: API server, etcd and the bench on CPUs {sorted(SERVER_CPUS)}, "
                     f"each scheduler on CPUs {sorted(SCHEDULER_CPUS)}")
        client = RestClient(load_connection(str(cp.kubeconfig)), maxsize=32)
        for value, name in PRIORITIES.items():
            client.post("/apis/scheduling.k8s.io/v1/priorityclasses", {
                "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                "value": value})
        cluster = None
        if workloads == [HETEROGENEOUS]:
            cluster = Cluster(cp, client, args.nodes, args.pods_per_node, args.seed, progress)
            info.update(running_pods=len(cluster.running), running_with_terms=cluster.with_terms,
                        pods_per_node=args.pods_per_node, seed=args.seed, baseline_violations=len(cluster.baseline))
        else:
            import random

            rng = random.Random(args.nodes)
            nodes = [wl._node(i, rng) for i in range(args.nodes)]
            progress(f"creating {len(nodes)} nodes ...")
            with ThreadPoolExecutor(16) as pool:
                list(pool.map(lambda n: client.post("/api/v1/nodes", n), nodes))
        placements: dict[str, dict[str, str]] = {}
        runs = []
        for workload in workloads:
            count = pod_count(workload, args.pods, args.nodes)
            for round_ in range(args.repeat):  # rounds interleave the run kinds: a slow minute hits them all
                for kind in kinds:
                    runs.append(one_run(cp, client, workload, kind, count, logdir, args.engine, placements,
                                        args.timeout, args.latency_pods, args.latency_rate,
                                        profile=args.profile, pinned=args.pin, round_=round_, cluster=cluster))
    return runs


def run_all(args: argparse.Namespace, progress: Callable[[str], None] = _say) -> dict[str, Any]:
    workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    kinds = [k.strip() for k in args.runs.split(",") if k.strip()]
    if "ceiling" in kinds and "ours" not in kinds:
        raise SystemExit("the ceiling run binds to the nodes 'ours' chose: include ours")
    unknown = [k for k in kinds if k not in RUNS] + [w for w in workloads if w not in WORKLOADS + (HETEROGENEOUS,)]
    if unknown:
        raise SystemExit(f"unknown workload or run kind: {', '.join(unknown)}")
    if HETEROGENEOUS in workloads and workloads != [HETEROGENEOUS]:
        raise SystemExit(f"{HETEROGENEOUS} has its own nodes and running pods: run it on its own (--workloads {HETEROGENEOUS})")
    kinds = sorted(kinds, key=RUNS.index)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    logdir = Path(args.logs) if args.logs else Path(tempfile.mkdtemp(prefix="policyscheduler-e2e-logs-"))
    logdir.mkdir(parents=True, exist_ok=True)
    progress(f"scheduler logs in {logdir}")
    t0 = time.monotonic()
    progress("starting etcd + kube-apiserver (building them on first use) ...")
    if args.pin and not os.sched_getaffinity(0) >= (SERVER_CPUS | SCHEDULER_CPUS):
        raise SystemExit(f"--pin needs CPUs {sorted(SERVER_CPUS | SCHEDULER_CPUS)}")
    own_cpus = os.sched_getaffinity(0)
    info: dict[str, Any] = {}
    load0 = [round(x, 2) for x in os.getloadavg()]
    try:
        runs = _runs(args, workloads, kinds, logdir, progress, info)
    finally:
        pin(os.getpid(), own_cpus)  # --pin moved this process: give it its CPUs back
    machine = f"{os.cpu_count()} cores, Python {sys.version.split()[0]}"
    if args.pin:
        machine += (f"; pinned: API server + etcd + bench on CPUs {sorted(SERVER_CPUS)}, the scheduler under "
                    f"test on CPUs {sorted(SCHEDULER_CPUS)}")
    results = {"nodes": args.nodes, "pods": args.pods, "workloads": workloads, "run_kinds": kinds, "runs": runs,
               "engine": args.engine, "seconds": round(time.monotonic() - t0, 1), "machine": machine,
               "command": "python bench/e2e.py " + " ".join(sys.argv[1:]), "pinned": args.pin,
               "load_average": {"start": load0, "end": [round(x, 2) for x in os.getloadavg()]}, **info}
    stem = "e2e-pinned" if args.pin else "e2e"
    (out / f"{stem}.json").write_text(json.dumps(results, indent=2) + "\n")
    (out / f"{stem}.md").write_text(markdown(results))
    (out / f"{stem}.png").write_bytes(chart(results))
    progress(f"done in {results['seconds']:.0f}s: {out / (stem + '.md')}")
    return results


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--ceiling-worker"]:
        return ceiling_worker(*argv[1:4])
    if argv[:1] == ["--profiled-run"]:
        return profiled_run(argv[1], argv[2:])
    args = parse_args(argv)
    results = run_all(args)
    print(markdown(results))
    bad = sum(r["violations"] for r in results["runs"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
