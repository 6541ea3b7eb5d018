"""Engine benchmark: pods/s of the evaluation backends on scheduler_perf-like workloads, no API server.

Usage (from the repository root)::

    .venv/bin/python bench/engine.py [--nodes 500,1000,5000] [--engines vector,reference] [--pods N]
                                     [--reference-sample N] [--budget SECONDS] [--out bench/results]

For each node count a cluster with ten running pods per node is built (:mod:`workloads`), and for each
workload and engine the pending pods are scheduled one at a time the way ``simulate`` does it --
``evaluator.evaluate`` then ``snapshot.assume`` of the chosen node, so each placement is visible to the
next pod -- on a fresh snapshot, timing only the scheduling (building the snapshot is reported apart).
A pod that fits nowhere counts as an attempt and is not retried. The reference engine is slow (a few
hundred microseconds per node and pod), so it schedules only ``--reference-sample`` pods; every cell
also stops after ``--budget`` seconds. The first pods of both engines start from the same state with the
same tie-break seed, so their decisions are compared too ("agree" column); only those decisions are
kept (a scheduler drops a decision once the pod is bound, and each one holds its per-node arrays).

The collector is handled as ``policyscheduler run`` handles it (``policyscheduler/app/heap.py``): its
relaxed thresholds from the start, and each cell's fresh snapshot collected and frozen before its first
pod, as ``run`` does once its caches have synced. Without that, a full collection walking the two
150,000-pod clusters the benchmark keeps (about a second) landed inside whichever cell's steady window the
allocation count happened to reach it in -- a pause the scheduler itself never takes.

Each cell reports pods/s over every pod and the *steady* rate without the first pod, whose time is
reported apart (``first_pod_ms``): the first pod builds the engine's node tables and per-rule caches,
which a long-lived scheduler pays once. Issue 6's targets are compared with the steady rate. The steady
rate per CPU second of the process is reported beside it (``steady_pods_per_cpu_s``): on a machine shared
with other work the wall-clock rates of two cells of one run can differ by the load alone.

The ``het-*`` workloads (``bench/workloads.py``'s ``HET_WORKLOADS``) are scheduler_perf's cases with
heterogeneous pods: every pod a distinct shape of one of many apps, on the cluster whose running pods carry
inter-pod terms, with churn. Each is compared with the scheduler_perf threshold of its case, and with the
machine's *bind ceiling* (``--ceiling``: pods/s the API server binds with no decision at all, from
``bench/e2e.py --runs ours,ceiling``; a number, or the e2e.json such a run wrote), since absolute rates
differ ~2.5x between machines.

Each node count runs in a child process so its peak RSS (``resource.getrusage``) is its own. Results go
to ``OUT/engine.json``, ``OUT/engine.md`` and ``OUT/engine.png``; a markdown table is printed at the end.

numpy's BLAS is printed first. On some of these machines OPENBLAS_CORETYPE (and OPENBLAS_L2_SIZE) are
set in the environment because older OpenBLAS builds crash on their processors; it pins a slower kernel
for current numpy. Benchmarks may unset both for that one command (``env -u OPENBLAS_CORETYPE -u
OPENBLAS_L2_SIZE .venv/bin/python bench/engine.py``); tests and CI must leave them alone.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import json
import os
import platform
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
if str(ROOT) not in sys.path:  # run from a checkout without installing: policyscheduler from the repo
    sys.path.append(str(ROOT))

# bench/ is a folder of scripts, not a package: its siblings are imported as bench.* (ROOT is on sys.path)
from bench.pngchart import Bar, bar_chart  # noqa: E402
from bench.workloads import (  # noqa: E402
    HET_WORKLOADS,
    SCHEDULER_PERF_THRESHOLDS,
    TARGETS,
    TERMED_WORKLOADS,
    WORKLOADS,
    base_cluster,
    churn_plan,
    pending_pods,
    scheduler_perf_threshold,
)

ENGINES = ("vector", "reference")
COLORS = {"vector": (40, 110, 200), "reference": (240, 150, 40)}


# -- environment ----------------------------------------------------------------------------------------


def blas_info() -> dict[str, Any]:
    """Which BLAS numpy runs and with which kernel: threadpoolctl when installed, else numpy's build
    config plus the kernel name asked from the bundled OpenBLAS itself."""
    import numpy as np

    info: dict[str, Any] = {"numpy": np.__version__,
                            "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"),
                            "OPENBLAS_L2_SIZE": os.environ.get("OPENBLAS_L2_SIZE")}
    try:
        import threadpoolctl  # type: ignore[import-not-found]

        pools = threadpoolctl.threadpool_info()
        info["threadpoolctl"] = [{k: p.get(k) for k in ("internal_api", "version", "architecture", "num_threads")}
                                 for p in pools]
        return info
    except ImportError:
        info["threadpoolctl"] = None
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        info["blas"] = f"{blas.get('name')} {blas.get('version')}"
    except Exception as err:  # noqa: BLE001 - old numpy: report, never fail the benchmark on it
        info["blas"] = f"unknown ({type(err).__name__})"
    libs = sorted(glob.glob(os.path.join(os.path.dirname(np.__file__) + ".libs", "*openblas*")))
    for lib_path in libs:
        try:
            lib = ctypes.CDLL(lib_path)
        except OSError:
            continue
        for prefix, suffix in (("scipy_", "64_"), ("scipy_", ""), ("", "64_"), ("", "")):
            fn = getattr(lib, f"{prefix}openblas_get_corename{suffix}", None)
            if fn is not None:
                fn.restype = ctypes.c_char_p
                info["openblas_kernel"] = fn().decode()
                break
    return info


def blas_lines(blas: dict[str, Any]) -> list[str]:
    """What a benchmark prints about :func:`blas_info`: the kernel that ran, and a note when
    ``OPENBLAS_CORETYPE`` pinned it (every numpy benchmark says which kernel its numbers come from)."""
    kernel = blas.get("openblas_kernel") or blas.get("threadpoolctl")
    lines = [f"numpy {blas['numpy']}, BLAS {blas.get('blas', '?')}, kernel {kernel}; "
             f"OPENBLAS_CORETYPE={blas['OPENBLAS_CORETYPE'] or '(unset)'} "
             f"OPENBLAS_L2_SIZE={blas['OPENBLAS_L2_SIZE'] or '(unset)'}"]
    if blas["OPENBLAS_CORETYPE"]:
        lines.append("note: OPENBLAS_CORETYPE is set on this machine (older OpenBLAS builds misbehave on its CPU); it "
                     "pins that kernel. To measure current numpy, unset OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE for "
                     "this command only.")
    return lines


def machine_info() -> dict[str, Any]:
    """What the numbers were measured on (they are only comparable on the same kind of machine)."""
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"python": platform.python_version(), "cpu": cpu, "cores": os.cpu_count(),
            "platform": platform.platform()}


def make_engine(name: str) -> tuple[Any, str]:
    """The named evaluator and the backend actually running.

    Falls back to the reference backend while ``make_evaluator`` or the vector backend is missing,
    so the benchmark runs (and says so) before the vectorised backend lands.
    """
    from policyscheduler.evaluation import ReferenceEvaluator

    try:
        from policyscheduler.evaluation import make_evaluator
    except ImportError:
        return ReferenceEvaluator(), "reference"
    try:
        return make_evaluator(name), name
    except ImportError:
        return ReferenceEvaluator(), "reference"


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- one node count (runs in a child process) ----------------------------------------------------------


def _say(message: str) -> None:
    print(message, flush=True)


def run_size(nodes: int, engines: list[str], workloads: list[str], pods: int, sample: int, budget: float,
             policies: Path, seed: int, pods_per_node: int = 10, profile: str | None = None) -> dict[str, Any]:
    """Every (workload, engine) cell at one node count; see the module docstring."""
    import gc

    from policyscheduler.app.heap import freeze_heap, relax_collector
    from policyscheduler.loader import load_policy_set
    from policyscheduler.simulate.run import prepare

    relax_collector()

    loaded = load_policy_set([policies])
    if loaded.policy_set is None:
        raise SystemExit("policies do not load:\n" + "\n".join(map(str, loaded.diagnostics)))
    policy_set = loaded.policy_set
    clusters: dict[bool, list[dict[str, Any]]] = {}

    def cluster_for(workload: str) -> list[dict[str, Any]]:
        terms = workload in TERMED_WORKLOADS
        if terms not in clusters:
            t0 = time.perf_counter()
            clusters[terms] = base_cluster(nodes, pods_per_node, seed=seed, terms=terms)
            _say(f"[{nodes} nodes] generated {len(clusters[terms])} objects{' (running pods with terms)' if terms else ''} "
                 f"in {time.perf_counter() - t0:.1f} s")
        return clusters[terms]

    cells: list[dict[str, Any]] = []
    for workload in workloads:
        cluster = cluster_for(workload)
        queue_pods = pending_pods(workload, pods)
        churn = churn_plan(workload, cluster, pods, seed)
        decisions: dict[str, list[Any]] = {}
        for engine in engines:
            evaluator, backend = make_engine(engine)
            count = pods if engine == "vector" else min(sample, pods)
            gc.unfreeze()  # the previous cell's objects go back to the collector (its snapshot is gone)
            t0 = time.perf_counter()
            snapshot, queue = prepare(cluster + queue_pods)
            build = time.perf_counter() - t0
            freeze_heap(first=True)  # as run does before its first attempt (module docstring)
            rng = random.Random(seed)
            made: list[Any] = []  # only the decisions compared across engines are kept, as a scheduler
            keep = min(sample, count)  # drops a decision once the pod is bound (each holds its per-node arrays)
            done = placed = deleted = 0
            first = first_cpu = 0.0
            profiler = _profiler(profile, workload, engine)
            started = time.perf_counter()
            started_cpu = time.process_time()
            for pod in queue[:count]:
                decision = evaluator.evaluate(policy_set, snapshot, pod, rng=rng)
                if decision.node is not None:
                    snapshot.assume(pod, decision.node)
                    placed += 1
                gone = churn.get(done)
                if gone is not None:  # churn: a running pod is deleted between two scheduling cycles
                    snapshot.remove_pod(gone)
                    deleted += 1
                done += 1
                if done <= keep:
                    made.append(decision)
                if done == 1:
                    first = time.perf_counter() - started
                    first_cpu = time.process_time() - started_cpu
                if time.perf_counter() - started > budget:
                    break
            elapsed = time.perf_counter() - started
            cpu = time.process_time() - started_cpu
            if profiler is not None:
                _profile_report(profiler, profile, nodes, workload, engine)
            decisions[engine] = made
            rate = done / elapsed if elapsed > 0 else 0.0
            # steady state: without the first pod, which builds the engine's per-snapshot tables (a
            # long-lived scheduler pays that once); reported apart as first_pod_ms
            steady_n, steady_s = done - 1, elapsed - first
            steady = steady_n / steady_s if steady_n > 0 and steady_s > 0 else rate
            # the same per CPU second of this process: what other work on a shared machine disturbs least
            steady_cpu_s = cpu - first_cpu
            steady_cpu = steady_n / steady_cpu_s if steady_n > 0 and steady_cpu_s > 0 else steady
            cell = {"workload": workload, "nodes": nodes, "engine": engine, "backend": backend,
                    "pods": done, "placed": placed, "seconds": round(elapsed, 4),
                    "pods_per_s": round(rate, 2), "ms_per_pod": round(1000 * elapsed / max(1, done), 3),
                    "steady_pods_per_s": round(steady, 2), "first_pod_ms": round(1000 * first, 1),
                    "steady_pods_per_cpu_s": round(steady_cpu, 2),
                    "build_s": round(build, 3), "budget_hit": done < count, "deleted": deleted,
                    "running_with_terms": workload in TERMED_WORKLOADS}
            cells.append(cell)
            note = "" if backend == engine else f" (runs the {backend} backend: {engine} is not available)"
            _say(f"[{nodes} nodes] {workload:<22} {engine:<9} {done:>4} pods in {elapsed:7.2f} s = "
                 f"{rate:9.1f} pods/s ({steady:9.1f} after the first pod, which took {1000 * first:.0f} ms; "
                 f"{steady_cpu:.1f} per CPU second), "
                 f"{placed} placed, {deleted} running pods deleted, snapshot {build:.1f} s{note}")
            del snapshot
        if len(decisions) == 2:
            a, b = (decisions[e] for e in engines)
            k = min(len(a), len(b))
            same = sum(1 for x, y in zip(a[:k], b[:k]) if x == y)
            for cell in cells[-2:]:
                cell["agree"] = f"{same}/{k}"
            if same != k:
                _say(f"[{nodes} nodes] {workload}: the engines disagree on {k - same} of the first {k} pods")
    return {"nodes": nodes, "running_pods": nodes * pods_per_node, "peak_rss_mb": round(peak_rss_mb(), 1),
            "cells": cells}


def _gap(cells: list[dict[str, Any]]) -> str:
    """The heterogeneous workload's steady rate as a fraction of basic's, per engine, in this run (the
    ratio is what survives a loaded machine; issue 25 wants it at least 0.5)."""
    parts = []
    for engine in ENGINES:
        rates = {c["workload"]: c["steady_pods_per_s"] for c in cells if c["engine"] == engine}
        cpu = {c["workload"]: c.get("steady_pods_per_cpu_s") for c in cells if c["engine"] == engine}
        if rates.get("basic") and "heterogeneous" in rates:
            part = f"{engine}: heterogeneous / basic steady = {rates['heterogeneous'] / rates['basic']:.2f}"
            if cpu.get("basic") and cpu.get("heterogeneous"):
                part += f" (per CPU second {cpu['heterogeneous'] / cpu['basic']:.2f})"  # type: ignore[operator]
            parts.append(part)
    return "; ".join(parts)


def _profiler(profile: str | None, workload: str, engine: str) -> Any:
    """A started cProfile profiler for the vector engine's cells when ``--profile`` is given, else None."""
    if profile is None or engine != "vector":
        return None
    import cProfile

    profiler = cProfile.Profile()
    profiler.enable()
    return profiler


def _profile_report(profiler: Any, profile: str | None, nodes: int, workload: str, engine: str) -> None:
    """Stop the profiler, save its stats under the ``--profile`` folder and print the top entries."""
    import io
    import pstats

    profiler.disable()
    folder = Path(profile or ".")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"engine-{nodes}-{workload}-{engine}.prof"
    profiler.dump_stats(str(path))
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(12)
    _say(f"[{nodes} nodes] {workload} {engine} profile ({path}), top by own time:\n{text.getvalue()}")


# -- reporting ------------------------------------------------------------------------------------------


def _target(workload: str, nodes: int) -> str:
    return f"{TARGETS[workload]:,}" if workload in TARGETS and nodes == 5000 else ""


def markdown(results: dict[str, Any]) -> str:
    """The results as markdown: one row per (workload, nodes), engines side by side, then memory."""
    sizes = results["sizes"]
    engines = results["engines"]
    lines = ["| workload | nodes | " + " | ".join(f"{e} pods/s" for e in engines)
             + (" | speed-up" if len(engines) == 2 else "") + " | target (5,000 nodes) | scheduler_perf | agree |",
             "|---|---:|" + "---:|" * len(engines) + ("---:|" if len(engines) == 2 else "") + "---:|---:|---:|"]
    for workload in results["workloads"]:
        for size in sizes:
            cells = {c["engine"]: c for c in size["cells"] if c["workload"] == workload}
            if not cells:
                continue
            rates = []
            for e in engines:
                c = cells.get(e)
                if c is None:
                    rates.append("")
                    continue
                tag = "" if c["backend"] == e else f" ({c['backend']})"
                steady = c.get("steady_pods_per_s")
                extra = (f" / **{steady:,.1f}** steady <sub>first pod {c.get('first_pod_ms', 0):,.0f} ms</sub>"
                         if steady is not None and c["pods"] > 1 else "")
                rates.append(f"{c['pods_per_s']:,.1f}{extra}{tag} <sub>n={c['pods']}</sub>")
            speed = ""
            if len(engines) == 2 and all(e in cells and cells[e]["pods_per_s"] > 0 for e in engines):
                speed = f"{cells[engines[0]]['pods_per_s'] / cells[engines[1]]['pods_per_s']:,.1f}x"
            threshold = scheduler_perf_threshold(workload)
            perf = f"{threshold:,}" if threshold is not None and size["nodes"] == 5000 else ""
            agree = next((c.get("agree", "") for c in cells.values()), "")
            lines.append(f"| {workload} | {size['nodes']:,} | " + " | ".join(rates)
                         + (f" | {speed}" if len(engines) == 2 else "")
                         + f" | {_target(workload, size['nodes'])} | {perf} | {agree} |")
    lines += ["", "| nodes | running pods | peak RSS (MiB) | snapshot build (s, median) |", "|---:|---:|---:|---:|"]
    for size in sizes:
        builds = sorted(c["build_s"] for c in size["cells"])
        median = builds[len(builds) // 2] if builds else 0.0
        lines.append(f"| {size['nodes']:,} | {size['running_pods']:,} | {size['peak_rss_mb']:,.0f} | {median:.2f} |")
    gaps = [f"- {size['nodes']:,} nodes: {_gap(size['cells'])}" for size in sizes if _gap(size["cells"])]
    if gaps:
        lines += ["", "Heterogeneous vs identical pods in the same run (steady pods/s ratio):", *gaps]
    lines += _het_table(results)
    return "\n".join(lines) + "\n"


def _het_table(results: dict[str, Any]) -> list[str]:
    """The heterogeneous scheduler_perf-like workloads (vector engine) beside the threshold of their
    scheduler_perf case and the machine's bind ceiling: pods placed, steady pods/s (and per CPU second, and
    that as a fraction of the same kind's identical-pod workload when it ran too),
    steady / threshold (and per CPU second / threshold: on a shared machine the wall-clock rate is also the
    other jobs' load) and steady / ceiling. Empty when no such workload ran on the vector engine."""
    ceiling = results.get("bind_ceiling") or {}
    rate = ceiling.get("pods_per_s")
    rows = []
    for size in results["sizes"]:
        identical = {c["workload"]: c.get("steady_pods_per_cpu_s") for c in size["cells"] if c["engine"] == "vector"}
        for cell in size["cells"]:
            if cell["workload"] not in HET_WORKLOADS or cell["engine"] != "vector":
                continue
            threshold = scheduler_perf_threshold(cell["workload"])
            steady, per_cpu = cell["steady_pods_per_s"], cell.get("steady_pods_per_cpu_s", 0.0)
            same_kind = identical.get(HET_WORKLOADS[cell["workload"]])
            vs_identical = f"{per_cpu / same_kind:.2f}" if same_kind else ""
            vs_perf = f"{steady / threshold:.2f} / {per_cpu / threshold:.2f}" if threshold else ""
            vs_ceiling = f"{steady / rate:.2f}" if rate else ""
            rows.append(f"| {cell['workload']} | {HET_WORKLOADS[cell['workload']]} | {size['nodes']:,} | "
                        f"{cell['placed']}/{cell['pods']} | {cell['deleted']} | {steady:,.1f} | {per_cpu:,.1f} | "
                        f"{vs_identical} | {threshold if threshold is not None else ''} | {vs_perf} | "
                        f"{f'{rate:,.0f}' if rate else 'not measured'} | {vs_ceiling} |")
    if not rows:
        return []
    where = (f"bind ceiling {rate:,.0f} pods/s ({ceiling.get('source', '?')})" if rate else
             "bind ceiling not measured (--ceiling)")
    return ["", f"Heterogeneous scheduler_perf-like workloads, vector engine; {where}; scheduler_perf's thresholds "
                "are for 5,000 nodes:", "",
            "| workload | kind of | nodes | placed / pods | running pods deleted | steady pods/s | per CPU second "
            "| per CPU second / its kind's identical pods | scheduler_perf threshold | steady / threshold (per CPU second / threshold) | bind ceiling pods/s "
            "| steady / ceiling |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|", *rows]


def read_ceiling(value: str) -> dict[str, Any]:
    """The machine's bind ceiling from ``--ceiling``: a number (pods/s), or an e2e.json of a run with
    ``ceiling`` in ``--runs`` (the median over its ceiling runs). A clear error for anything else."""
    try:
        return {"pods_per_s": float(value), "source": "given on the command line"}
    except ValueError:
        pass
    path = Path(value)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise SystemExit(f"--ceiling {value}: neither a number nor a readable e2e.json ({err})") from None
    rates = sorted(r["pods_per_s"] for r in data.get("runs", []) if r.get("run") == "ceiling" and r.get("pods_per_s"))
    if not rates:
        raise SystemExit(f"--ceiling {value}: that e2e.json has no ceiling run (bench/e2e.py --runs ours,ceiling)")
    return {"pods_per_s": rates[len(rates) // 2], "runs": len(rates), "nodes": data.get("nodes"),
            "workloads": data.get("workloads"), "source": f"bench/e2e.py ceiling, median of {len(rates)} run(s) "
            f"at {data.get('nodes')} nodes: {path}"}


def chart(results: dict[str, Any]) -> bytes:
    """A PNG of the steady pods/s (the rate the targets apply to: without the first pod, which builds the
    engine's tables) per (workload, nodes, engine), log scale, with the 5,000-node targets marked."""
    bars: list[Bar] = []
    gaps: list[int] = []
    for workload in results["workloads"]:
        for size in results["sizes"]:
            for cell in size["cells"]:
                if cell["workload"] != workload:
                    continue
                target = TARGETS.get(workload) if size["nodes"] == 5000 else None
                label = f"{workload} {size['nodes']} {cell['engine']}"
                rate = cell.get("steady_pods_per_s", cell["pods_per_s"])
                bars.append(Bar(label, rate, COLORS.get(cell["engine"], (120, 120, 120)),
                                float(target) if target else None))
        if bars:
            gaps.append(len(bars) - 1)
    legend = [(e, COLORS.get(e, (120, 120, 120))) for e in results["engines"]]
    return bar_chart("policyscheduler engine benchmark: steady pods/s (log scale)", bars, legend=legend,
                     gap_after=gaps)


# -- command line ---------------------------------------------------------------------------------------


def _csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", default="500,1000,5000", help="comma-separated node counts (default 500,1000,5000)")
    p.add_argument("--engines", default="vector,reference", help="comma-separated engines (default vector,reference)")
    p.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated workloads (default: all)")
    p.add_argument("--pods", type=int, default=300, help="pending pods per workload for the vector engine (300)")
    p.add_argument("--reference-sample", type=int, default=5, help="pods per workload for the reference engine (5)")
    p.add_argument("--budget", type=float, default=30.0, help="seconds per (workload, engine, nodes) cell (30)")
    p.add_argument("--seed", type=int, default=0, help="cluster and tie-break seed (0)")
    p.add_argument("--pods-per-node", type=int, default=10, help="running pods per node (10)")
    p.add_argument("--ceiling", default=None, metavar="PODS_PER_S|E2E_JSON",
                   help="the machine's bind ceiling shown beside the heterogeneous workloads: pods/s, or the "
                        "e2e.json of a bench/e2e.py run with the ceiling run kind")
    p.add_argument("--profile", default=None, metavar="DIR",
                   help="run the vector engine's cells under cProfile; stats to DIR, top entries printed")
    p.add_argument("--policies", default=str(ROOT / "policies"), help="policy folder (default: policies/)")
    p.add_argument("--out", default=str(HERE / "results"), help="output folder (default bench/results)")
    p.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)  # one node count, in a child
    p.add_argument("--worker-out", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.engines = _csv(args.engines)
    args.workloads = _csv(args.workloads)
    bad = [e for e in args.engines if e not in ENGINES] + [w for w in args.workloads if w not in WORKLOADS]
    if bad or not args.engines or not args.workloads:
        p.error(f"unknown engine or workload: {', '.join(bad) or '(none given)'}; engines: {', '.join(ENGINES)}; "
                f"workloads: {', '.join(WORKLOADS)}")
    try:
        args.sizes = [int(n) for n in _csv(args.nodes)]
    except ValueError:
        p.error(f"--nodes takes integers, got {args.nodes!r}")
    if not args.sizes or min(args.sizes) < 1 or args.pods < 1 or args.reference_sample < 1 or args.pods_per_node < 0:
        p.error("--nodes, --pods and --reference-sample must be positive, --pods-per-node not negative")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker is not None:
        result = run_size(args.worker, args.engines, args.workloads, args.pods, args.reference_sample, args.budget,
                          Path(args.policies), args.seed, args.pods_per_node, args.profile)
        Path(args.worker_out).write_text(json.dumps(result))
        return 0

    ceiling = read_ceiling(args.ceiling) if args.ceiling else None
    blas = blas_info()
    machine = machine_info()
    _say(f"machine: {machine['cpu']}, {machine['cores']} cores, Python {machine['python']}")
    kernel = blas.get("openblas_kernel") or blas.get("threadpoolctl")
    for line in blas_lines(blas):
        _say(line)
    _say("targets at 5,000 nodes (pods/s): " + ", ".join(f"{w} {t:,}" for w, t in TARGETS.items()))
    if ceiling:
        _say(f"bind ceiling of this machine: {ceiling['pods_per_s']:,.0f} pods/s ({ceiling['source']})")

    sizes: list[dict[str, Any]] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="policyscheduler-bench-") as tmp:
        for nodes in args.sizes:
            _say(f"== {nodes:,} nodes, {nodes * args.pods_per_node:,} running pods ==")
            out = Path(tmp) / f"{nodes}.json"
            cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", str(nodes), "--worker-out", str(out),
                   "--engines", ",".join(args.engines), "--workloads", ",".join(args.workloads),
                   "--pods", str(args.pods), "--reference-sample", str(args.reference_sample),
                   "--budget", str(args.budget), "--seed", str(args.seed), "--policies", args.policies,
                   "--pods-per-node", str(args.pods_per_node)] + (["--profile", args.profile] if args.profile else [])
            done = subprocess.run(cmd, check=False)
            if done.returncode != 0:
                _say(f"the {nodes}-node run failed (exit {done.returncode})")
                return 1
            size = json.loads(out.read_text())
            _say(f"[{nodes} nodes] peak RSS {size['peak_rss_mb']:,.0f} MiB")
            gap = _gap(size["cells"])
            if gap:
                _say(f"[{nodes} nodes] {gap}")
            sizes.append(size)
    results = {"machine": machine, "blas": blas, "engines": args.engines, "workloads": args.workloads,
               "pods": args.pods, "reference_sample": args.reference_sample, "budget_s": args.budget,
               "seed": args.seed, "pods_per_node": args.pods_per_node, "targets_5000_nodes": TARGETS,
               "scheduler_perf_thresholds_5000_nodes": SCHEDULER_PERF_THRESHOLDS, "bind_ceiling": ceiling,
               "command": "python bench/engine.py " + " ".join(sys.argv[1:]), "sizes": sizes}
    table = markdown(results)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "engine.json").write_text(json.dumps(results, indent=2) + "\n")
    header = (f"# Engine benchmark\n\n{machine['cpu']}, {machine['cores']} cores, Python {machine['python']}, "
              f"numpy {blas['numpy']} (BLAS kernel {kernel}, OPENBLAS_CORETYPE={blas['OPENBLAS_CORETYPE'] or 'unset'}). "
              f"{args.pods_per_node} running pods per node; {args.pods} pending pods per workload for the vector engine, "
              f"{args.reference_sample} for the reference; at most {args.budget:g} s per cell. A rate cell reads "
              f"'pods/s over every pod / **pods/s without the first pod** (steady state; the first pod builds the "
              f"engine's node tables and caches, a long-lived scheduler pays it once), first pod's time'; the "
              f"targets apply to the steady rate.\n\nCommand: `{results['command']}`\n\n")
    (out_dir / "engine.md").write_text(header + table)
    (out_dir / "engine.png").write_bytes(chart(results))
    _say("")
    _say(table)
    _say(f"wrote {out_dir / 'engine.json'}, {out_dir / 'engine.md'}, {out_dir / 'engine.png'} "
         f"in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
