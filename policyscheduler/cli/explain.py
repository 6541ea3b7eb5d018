"""``policyscheduler explain POD``: why a pod goes where it goes, or why it fits nowhere.

The decision is the scheduler's own: the same PolicySet (:func:`policyscheduler.loader.load_layered`,
the same ``--policies``; the digest is printed) evaluated by the same engine
(:func:`policyscheduler.evaluation.make_evaluator`). ``explain`` adds only what a Decision does not
keep: for every rejected node, the *clause* that rejected it, found by re-running the rejecting rule
clause by clause with the reference closures (:func:`policyscheduler.compiler.program.trace_rule`); the
trace's reasons are checked against the verdict's, so the two can never silently disagree; and a
``summary`` (:func:`summarize`: kube-scheduler's grouped counts, the runner-up and the score rule that
separates it from the chosen node). The text (summary first, then ``--nodes``/``--node`` details) is
:mod:`policyscheduler.cli.explain_render`.

Pending pods: by default the pod is decided on the cluster as it is (running pods only), and the output
says so (``pending``); ``--with-pending`` explains the decision ``simulate`` makes for it, inside
simulate's own run (:mod:`policyscheduler.cli.explain_pending`).

Sources: a snapshot (``--cluster PATH...``, read like ``simulate`` reads its inputs; default: the
bundled demo) or a live cluster (``--kubeconfig``; nodes, pods and the objects default spreading reads
are listed with the raw-JSON client). Policies: the bundled defaults, ``--policies`` paths, then the
``*.policy`` keys of ``--policies-configmap NAMESPACE/NAME`` (the ConfigMap ``run --policies-configmap``
reads), layered exactly as ``run`` layers them, so the digest printed (and ``policy_source``, which says
where the set came from) is the one the scheduler reports for the same sources. A bound pod is
explained as if it were pending (it is taken out of its node first). Exit 0 when the pod was
explained, 2 for bad input, an unknown pod, an unreadable ConfigMap or bad policies.

``--config FILE`` (a PolicySchedulerConfiguration; the profile ``--scheduler-name`` names, or its only
one): the profile's sources -- paths, inline texts and statements, its ConfigMap read through the file's
``clientConnection.kubeconfig`` -- loaded in the order ``run --config`` loads them (paths, then the inline
files by name, then the ConfigMap's keys), so the digest is the scheduler's; and the file's ``engine``.
Without ``--cluster`` a file that names a kubeconfig means the live cluster, as for ``run``. Flags
override the file: ``--policies`` / ``--policies-configmap`` replace the profile's sources, ``--kubeconfig``
and ``--engine`` its settings. A bad file is a located error (exit 2).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, TextIO

from policyscheduler.cli.explain_render import select_nodes
from policyscheduler.cli.now import add_now_argument, chosen_now
from policyscheduler.kobjects import DEFAULT_NAMESPACE, is_bound, join_key, node_name, pod_key
from policyscheduler.times import format_timestamp

__all__ = ["add_arguments", "explain", "run"]

EXIT_OK = 0
EXIT_BAD_INPUT = 2

_LIVE_LISTS = (
    ("/api/v1/nodes", "Node"),
    ("/api/v1/pods", "Pod"),
    ("/api/v1/namespaces", "Namespace"),
    ("/api/v1/services", "Service"),
    ("/api/v1/replicationcontrollers", "ReplicationController"),
    ("/apis/apps/v1/replicasets", "ReplicaSet"),
    ("/apis/apps/v1/statefulsets", "StatefulSet"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``explain`` options."""
    parser.add_argument("pod", metavar="POD", help="the pod: NAMESPACE/NAME (or NAME in namespace default)")
    parser.add_argument("--cluster", nargs="+", metavar="PATH", action="extend",
                        help="snapshot: YAML/JSON files or folders of Kubernetes objects (default: the bundled demo)")
    parser.add_argument("--kubeconfig", metavar="PATH",
                        help="explain against the live cluster this kubeconfig reaches (read only)")
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context (live mode)")
    parser.add_argument("--policies", metavar="DIR", action="append",
                        help="policy folder or file (repeatable), layered on the bundled defaults exactly as "
                        "simulate and run layer them")
    parser.add_argument("--policies-configmap", metavar="NAMESPACE/NAME",
                        help="the policies of this ConfigMap (every *.policy key), as 'run --policies-configmap' "
                        "loads them: layered after the bundled defaults and --policies; read through "
                        "--kubeconfig/--context (else in-cluster or ~/.kube/config)")
    parser.add_argument("--allow-empty", action="store_true", help="accept a policy set without filters")
    parser.add_argument("--node", metavar="NAME", help="details of this node only")
    parser.add_argument("--nodes", choices=("all", "feasible", "rejected"), default="all",
                        help="which nodes the details list after the summary (default: all)")
    parser.add_argument("--with-pending", action="store_true",
                        help="decide as simulate does: place the other pending pods first (queue order, each "
                        "placement visible to the next, one seeded tie-break generator) and explain this pod where "
                        "simulate's run decides it. Default: the cluster as it is (running pods only)")
    parser.add_argument("--include-default-scheduler", action="store_true",
                        help="with --with-pending: also place pending pods of default-scheduler (as simulate's flag)")
    parser.add_argument("--docs", action="store_true", help="print the ## documentation of the rules involved")
    parser.add_argument("--output", "-o", choices=("table", "json"), default="table")
    parser.add_argument("--engine", choices=("vector", "reference"), default=None,
                        help="the engine deciding (the scheduler's default: vector); clauses are always "
                        "traced with the reference closures")
    parser.add_argument("--config", metavar="FILE",
                        help="a PolicySchedulerConfiguration file: the policies of its profile (the one "
                        "--scheduler-name names, or the only one) as 'run --config' loads them; flags override it")
    parser.add_argument("--scheduler-name", metavar="NAME", default=None,
                        help="with --config: the profile (when the file has several)")
    parser.add_argument("--seed", type=int, default=0, help="seed for breaking score ties (default: 0)")
    add_now_argument(parser)


# ---------------------------------------------------------------------------------------------- core


def _location(span: Any) -> str:
    return f"{span.file}:{span.line}:{span.col}"


def _clause_source(sources: dict[str, Any], span: Any) -> str:
    """The clause's whole text (every line of a multi-line clause), indentation relative to its first line."""
    import textwrap

    src = sources.get(span.file)
    if src is None:
        return ""
    lines = [src.line(n) for n in range(span.line, max(span.line, span.end_line) + 1)]
    return textwrap.dedent("\n".join(lines)).strip("\n")


def explain(policy_set: Any, snapshot: Any, pod: dict[str, Any], *, engine: str = "vector",
            sources: dict[str, Any] | None = None, seed: int = 0,
            rng_state: Any = None, held: Mapping[int, Any] | None = None) -> dict[str, Any]:
    """The explanation of ``pod`` on ``snapshot`` as a JSON-ready dict (see the module docstring).

    ``rng_state`` (a ``random.Random().getstate()``), when given, replaces ``seed``: ``--with-pending``
    explains the pod with the tie-break generator exactly where ``simulate``'s run had it.
    ``held`` (slot -> verdict): nodes whose room pods nominated there hold (the cycle's "filters with
    nominated pods"), rejected as the cycle rejected them; such a node is marked ``held`` and not traced
    again (the trace would run without the nominated pods and pass).
    ``decision`` (the evaluator's :class:`Decision`) is kept under the private key ``"_decision"`` for
    callers that want to compare; :func:`to_json` drops it.
    """
    from policyscheduler.compiler.program import trace_rule
    from policyscheduler.evaluation import make_evaluator

    rng = random.Random(seed)
    if rng_state is not None:
        rng.setstate(rng_state)
    decision = make_evaluator(engine).evaluate(policy_set, snapshot, pod, rng=rng, rejected=held)
    held_names = {snapshot.nodes[slot].name for slot in held or ()}
    sources = sources or {}
    filters = {r.name: r for r in policy_set.filters}
    scores = {r.name: r for r in policy_set.scores}
    failed: dict[tuple[str, str | None], dict[str, Any]] = {
        (e.rule, e.node): {"location": e.location, "message": e.message} for e in decision.score_errors}

    pod_rec = snapshot.pod_record(pod)
    nodes_out: list[dict[str, Any]] = []
    by_name = {n.name: n for n in snapshot.nodes}
    verdicts = decision.verdicts
    feasible = set(decision.feasible)
    for node in snapshot.nodes:
        v = verdicts.get(node.name)
        entry: dict[str, Any] = {"name": node.name, "feasible": node.name in feasible}
        if v is not None and v.rule is not None:
            entry.update(rule=v.rule, reasons=list(v.reasons), error=v.error)
            rule = filters.get(v.rule)
            clauses: list[dict[str, Any]] = []
            if node.name in held_names:
                entry["held"] = True  # rejected with the nominated pods placed there: their room is held
            elif rule is not None and rule.checked is not None:
                env = {"pod": pod_rec, "node": by_name[node.name], "cluster": snapshot.context(pod_rec)}
                tr = trace_rule(rule, env)
                for c in tr.clauses:
                    if c.outcome in ("fail", "error"):
                        clauses.append({"keyword": c.keyword, "location": _location(c.span),
                                        "source": _clause_source(sources, c.span), "reasons": list(c.reasons),
                                        "error": c.outcome == "error"})
                traced = [r for c in tr.clauses if c.outcome == "fail" for r in c.reasons]
                if v.error is None and traced != list(v.reasons):
                    entry["trace_mismatch"] = traced  # never expected: the engines are tested against the reference
                entry["location"] = _location(rule.span)
            entry["clauses"] = clauses
            entry["total"] = None
        else:
            entry.update(rule=None, reasons=[], error=None, clauses=[])
            per_rule: dict[str, Any] = {}
            for name, per_node in decision.scores.items():
                s = per_node.get(node.name)
                if s is not None:
                    per_rule[name] = {"raw": s.raw, "normalized": s.normalized, "weighted": s.weighted,
                                      "weight": scores[name].weight if name in scores else None,
                                      "ignored": s.ignored,
                                      "failed": failed.get((name, node.name)) or failed.get((name, None))}
            entry["scores"] = per_rule
            entry["total"] = decision.totals.get(node.name)
        nodes_out.append(entry)
    rules_doc = {f"{'filter' if r in policy_set.filters else 'score'} {r.name}":
                 {"location": _location(r.span), "doc": r.doc} for r in policy_set.rules}
    rules_doc.update({f"preempt {r.name}": {"location": _location(r.span), "doc": r.doc}
                      for r in getattr(policy_set, "preempts", ())})
    preemption = None
    if decision.node is None:
        from policyscheduler.cli.explain_preempt import explain_preemption

        preemption = explain_preemption(make_evaluator(engine), policy_set, snapshot, pod, decision,
                                        random.Random(seed), sources)
    return {
        "pod": decision.pod,
        "policy_digest": decision.policy_digest,
        "engine": engine,
        "node": decision.node,
        "score": decision.score,
        "top": list(decision.top),
        # the FailedScheduling text, with preemption's part when the pod fits nowhere (as the cycle posts it)
        "message": preemption["message"] if preemption is not None else decision.message,
        "score_errors": [e.to_json() for e in decision.score_errors],
        "summary": summarize(nodes_out, decision.node, list(decision.top)),
        "nodes": nodes_out,
        "rules": rules_doc,
        "preemption": preemption,
        "_decision": decision,
    }


def summarize(nodes: Sequence[dict[str, Any]], chosen: str | None, top: Sequence[str]) -> dict[str, Any]:
    """What the summary says: kube-scheduler's grouped counts of the rejected nodes (the FailedScheduling
    histogram, with the feasible count in front: ``6/1000 nodes are available: ...``) and, when a node was
    chosen, the runner-up and the score rule that separates the two (the largest difference in points)."""
    from policyscheduler.evaluation.message import reason_histogram

    feasible = [n for n in nodes if n["feasible"]]
    reasons = [r for n in nodes if not n["feasible"] for r in (n["reasons"] or [f"rejected by {n['rule']}"])]
    histogram = reason_histogram(reasons)
    available = f"{len(feasible)}/{len(nodes)} nodes are available" + (f": {', '.join(histogram)}." if histogram else ".")
    out: dict[str, Any] = {"nodes": len(nodes), "feasible": len(feasible), "rejected": len(nodes) - len(feasible),
                           "available": available, "histogram": histogram, "runner_up": None}
    by_name = {n["name"]: n for n in feasible}
    if chosen is None or chosen not in by_name:
        return out
    others = [n for n in feasible if n["name"] != chosen]
    if not others:
        return out
    tied = [n for n in others if n["name"] in top]
    runner = tied[0] if tied else max(others, key=lambda n: n["total"] or 0)  # max keeps the first in node order
    best = by_name[chosen]
    diffs = sorted(((best["scores"].get(r, {}).get("weighted", 0) - s["weighted"], r)
                    for r, s in runner["scores"].items()), key=lambda d: (-d[0], d[1]))
    rule = diffs[0] if diffs and diffs[0][0] > 0 else None
    out["runner_up"] = {
        "node": runner["name"], "total": runner["total"], "margin": (best["total"] or 0) - (runner["total"] or 0),
        "tied": bool(tied),
        "rule": None if rule is None else rule[1],
        "points": None if rule is None else [best["scores"][rule[1]]["weighted"], runner["scores"][rule[1]]["weighted"]],
    }
    return out


def to_json(doc: dict[str, Any], *, node: str | None = None, docs: bool = False, nodes: str = "all") -> dict[str, Any]:
    """The ``--output json`` document (``nodes`` narrowed to ``node`` or to the feasible / rejected ones;
    ``rules`` only with ``docs``)."""
    out = {k: v for k, v in doc.items() if not k.startswith("_")}
    out["nodes"] = select_nodes(out["nodes"], node=node, which=nodes)
    if not docs:
        out.pop("rules")
    return out


# ---------------------------------------------------------------------------------------------- inputs


def _split_pod(text: str) -> tuple[str, str]:
    ns, _, name = text.rpartition("/")
    return (ns or DEFAULT_NAMESPACE, name)


def _find_pod(objects: Sequence[dict[str, Any]], wanted: str) -> dict[str, Any] | None:
    key = join_key(*_split_pod(wanted))
    for obj in objects:
        if obj.get("kind") == "Pod" and pod_key(obj) == key:
            return obj
    return None


def _client(kubeconfig: str | None, context: str | None) -> Any:
    from policyscheduler.kube.config import load_connection
    from policyscheduler.kube.rest import RestClient

    return RestClient(load_connection(kubeconfig, context))


def live_objects(kubeconfig: str | None, context: str | None, *, client: Any = None) -> list[dict[str, Any]]:
    """Nodes, pods and the objects default spreading reads, listed from the API server (raw JSON).

    List items carry no ``kind``/``apiVersion``; both are filled in from the list, as in a snapshot file.
    """
    client = client if client is not None else _client(kubeconfig, context)
    objects: list[dict[str, Any]] = []
    for path, kind in _LIVE_LISTS:
        listed = client.get(path) or {}
        for item in listed.get("items") or []:
            item.setdefault("kind", kind)
            if listed.get("apiVersion"):
                item.setdefault("apiVersion", listed["apiVersion"])
            objects.append(item)
    return objects


def configmap_policies(client: Any, ref: tuple[str, str]) -> list[tuple[str, str]]:
    """The (key, text) policy files of the ConfigMap ``ref``, exactly as ``run --policies-configmap`` takes
    them (:func:`policyscheduler.app.sources.policy_texts`); ConfigMapError when it cannot be read."""
    from policyscheduler.app.sources import policy_texts
    from policyscheduler.kube.configmaps import read_configmap

    return policy_texts(read_configmap(client, *ref, wait=0))


def _policy_source(paths: Sequence[str], configmap: tuple[str, str] | None) -> str:
    """Where the policy set came from, worded like the scheduler's ``source`` log field."""
    parts = [f"ConfigMap {configmap[0]}/{configmap[1]}"] if configmap else []
    parts += [str(p) for p in paths]
    return ", ".join(parts) or "the bundled default set"


class _Profile(NamedTuple):
    """The policy sources of a ``--config`` profile, and where they came from."""

    paths: list[str]
    texts: list[tuple[str, str]]
    configmap: tuple[str, str] | None
    kubeconfig: str | None
    describe: str


def _from_config(args: argparse.Namespace, err: TextIO) -> _Profile | None:
    """Apply ``--config`` to ``args`` where no flag was given (engine, kubeconfig); the profile's sources
    (empty when ``--policies``/``--policies-configmap`` replace them). None after printing why not."""
    from policyscheduler.cli.config import apply_profile, read_config

    cfg = read_config(args.config, err)
    if cfg is None:
        return None
    profile = apply_profile(args, cfg, defaults={"scheduler_name": None}, err=err)
    if profile is None:
        return None
    if args.engine is None and cfg.engine is not None:
        args.engine = cfg.engine
    if args.kubeconfig is None and cfg.kubeconfig is not None and not args.cluster:
        args.kubeconfig = cfg.kubeconfig  # the scheduler's cluster, as 'run --config' would reach it
    describe = f"{cfg.file} profile {profile.scheduler_name}"
    if args.policies or getattr(args, "policies_configmap", None):
        return _Profile([], [], None, cfg.kubeconfig, describe)
    configmap = profile.configmaps[0] if profile.configmaps else None
    return _Profile(list(profile.paths), list(profile.texts), configmap, cfg.kubeconfig, describe)


def _load_profile(profile: _Profile, configmap_texts: list[tuple[str, str]], allow_empty: bool) -> tuple[Any, str | None]:
    """Load a profile in ``run --config``'s order: paths, inline files (a folder, so by name), ConfigMap keys.

    ``load_layered`` sorts all its texts by name; when that would interleave inline files with ConfigMap
    keys, the inline files go to a private folder (as ``run`` puts them) so the order -- and the digest --
    stay the scheduler's. Returns the result and that folder (its prefix is dropped from what is printed)."""
    import shutil
    import tempfile

    from policyscheduler.loader import load_layered

    inline = sorted(profile.texts)
    keys = sorted(configmap_texts)
    together = sorted([*inline, *keys])
    names = [n for n, _ in together]
    if [n for n, _ in inline] + [n for n, _ in keys] == names and len(set(names)) == len(names):
        return load_layered(profile.paths, texts=together, allow_empty=allow_empty), None
    folder = tempfile.mkdtemp(prefix="policyscheduler-explain-")
    try:
        for name, text in inline:
            (Path(folder) / name).write_text(text, encoding="utf-8")
        return load_layered([*profile.paths, folder], texts=keys, allow_empty=allow_empty), folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run(args: argparse.Namespace, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Execute ``explain``; returns the exit status."""
    from policyscheduler.app.sources import parse_configmap_ref
    from policyscheduler.cli.explain_render import render_table
    from policyscheduler.diagnostics import render_text
    from policyscheduler.inputs import read_objects
    from policyscheduler.loader import load_layered
    from policyscheduler.simulate.defaults import demo_cluster_dir
    from policyscheduler.simulate.queue import is_pending
    from policyscheduler.simulate.run import prepare

    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    if args.kubeconfig is not None and args.cluster:
        err.write("policyscheduler explain: give --cluster or --kubeconfig, not both\n")
        return EXIT_BAD_INPUT
    profile: _Profile | None = None
    if getattr(args, "config", None):
        profile = _from_config(args, err)
        if profile is None:
            return EXIT_BAD_INPUT
    elif getattr(args, "scheduler_name", None) is not None:
        err.write("policyscheduler explain: --scheduler-name chooses a profile of --config FILE\n")
        return EXIT_BAD_INPUT
    engine = args.engine or "vector"
    context = getattr(args, "context", None)
    configmap: tuple[str, str] | None = None
    if getattr(args, "policies_configmap", None):
        try:
            configmap = parse_configmap_ref(args.policies_configmap)
        except Exception as exc:  # noqa: BLE001 -- a bad reference: a message
            err.write(f"policyscheduler explain: cannot read the policies: {exc}\n")
            return EXIT_BAD_INPUT
    elif profile is not None:
        configmap = profile.configmap
    texts: list[tuple[str, str]] = []
    client: Any = None
    if configmap is not None:
        try:  # through --kubeconfig, else the configuration file's (the scheduler's own connection)
            client = _client(args.kubeconfig or (profile.kubeconfig if profile else None), context)
            texts = configmap_policies(client, configmap)
        except Exception as exc:  # noqa: BLE001 -- a configuration or API error: a message
            err.write(f"policyscheduler explain: cannot read the policies: {exc}\n")
            return EXIT_BAD_INPUT
        if args.kubeconfig is None:
            client = None  # snapshot mode: the connection was for the ConfigMap only
    folder: str | None = None
    if profile is not None and not (args.policies or getattr(args, "policies_configmap", None)):
        loaded, folder = _load_profile(profile, texts, args.allow_empty)
        policy_paths: list[str] = list(profile.paths)
        source = f"{profile.describe}: " + _policy_source(policy_paths + [f"inline {n}" for n, _ in profile.texts],
                                                         configmap)
    else:
        policy_paths = list(args.policies or [])
        loaded = load_layered(policy_paths, texts=texts, allow_empty=args.allow_empty)
        source = _policy_source(policy_paths, configmap) + (
            f" (the flags replace the policies of {profile.describe})" if profile else "")

    def relabel(text: str) -> str:  # inline files loaded from a private folder read as their own names
        return text.replace(folder + "/", "") if folder else text

    if loaded.diagnostics:
        err.write(relabel(render_text(loaded.diagnostics, loaded.sources).rstrip("\n")) + "\n")
    if loaded.policy_set is None:
        err.write("policyscheduler explain: the policies have errors\n")
        return EXIT_BAD_INPUT
    where = "in the input"
    if args.kubeconfig is not None:
        where = "in the cluster"
        try:
            objects = live_objects(args.kubeconfig, context,
                                   client=client if client is not None else _client(args.kubeconfig, context))
        except Exception as exc:  # noqa: BLE001 -- configuration or API errors: a message, not a traceback
            err.write(f"policyscheduler explain: cannot read the cluster: {exc}\n")
            return EXIT_BAD_INPUT
    else:
        paths: list[str | Path] = list(args.cluster or []) or [demo_cluster_dir()]
        read = read_objects(paths)
        for w in read.warnings:
            err.write(f"warning: {escape_controls(w)}\n")
        if read.errors:
            for e in read.errors:
                err.write(f"error: {escape_controls(e)}\n")
            err.write("policyscheduler explain: bad input\n")
            return EXIT_BAD_INPUT
        objects = list(read.objects)
    pod = _find_pod(objects, args.pod)
    if pod is None:
        ns, name = _split_pod(args.pod)
        known = sorted(f"{(o.get('metadata') or {}).get('namespace') or 'default'}/{(o.get('metadata') or {}).get('name')}"
                       for o in objects if o.get("kind") == "Pod")
        import difflib

        close = difflib.get_close_matches(f"{ns}/{name}", known, n=3)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        err.write(f"policyscheduler explain: no pod {ns}/{name} {where} ({len(known)} pods){hint}\n")
        return EXIT_BAD_INPUT
    if is_bound(pod):
        err.write(f"note: pod {args.pod} is bound to {node_name(pod)}; explained as if it were pending\n")
        objects = [o for o in objects if o is not pod]
        pod = json.loads(json.dumps(pod))
        pod["spec"].pop("nodeName", None)
    if args.node is not None and not any(o.get("kind") == "Node" and (o.get("metadata") or {}).get("name") == args.node
                                         for o in objects):
        err.write(f"policyscheduler explain: no node {args.node} {where}\n")
        return EXIT_BAD_INPUT
    now = chosen_now(args)
    if args.kubeconfig is not None and getattr(args, "now", None) is None:
        now = time.time_ns()  # a live cluster: the decision the scheduler would make now
    if getattr(args, "with_pending", False):
        found = _explain_with_pending(args, loaded, objects, pod, engine, now)
        if isinstance(found, str):
            err.write(f"policyscheduler explain: {found}\n")
            return EXIT_BAD_INPUT
        doc, pending = found
    else:
        running = [o for o in objects if not (o.get("kind") == "Pod" and not is_bound(o))]
        pending = {"with_pending": False, "others": sum(1 for o in objects if is_pending(o) and o is not pod)}
        prepared = prepare(running, now)
        doc = explain(loaded.policy_set, prepared.snapshot, pod, engine=engine, sources=loaded.sources,
                      seed=args.seed)
    doc = {"pod": doc["pod"], "policy_digest": doc["policy_digest"], "policy_source": source, "pending": pending,
           "now": format_timestamp(now), **doc}
    which = getattr(args, "nodes", "all") or "all"
    if args.output == "json":
        out.write(relabel(_escape_json(json.dumps(to_json(doc, node=args.node, docs=args.docs, nodes=which),
                                                  indent=2))) + "\n")
    else:
        out.write(relabel(_escape_lines(render_table(doc, node=args.node, docs=args.docs, nodes=which))))
    return EXIT_OK


def _explain_with_pending(args: argparse.Namespace, loaded: Any, objects: list[dict[str, Any]], pod: dict[str, Any],
                          engine: str, now: int) -> tuple[dict[str, Any], dict[str, Any]] | str:
    """``--with-pending``: the pending pods simulate would place (those of ``--scheduler-name``, default
    ``policy-scheduler``; ``--include-default-scheduler`` as in simulate), the explained pod whatever its
    scheduler, through simulate's own run (:mod:`policyscheduler.cli.explain_pending`)."""
    from policyscheduler.cli.explain_pending import explain_in_simulation
    from policyscheduler.cli.simulate import DEFAULT_SCHEDULER_NAME, select_pods

    name = getattr(args, "scheduler_name", None) or DEFAULT_SCHEDULER_NAME
    kept, _skipped = select_pods([o for o in objects if o is not pod], name,
                                 getattr(args, "include_default_scheduler", False))
    return explain_in_simulation(loaded.policy_set, [*kept, pod], pod, engine=engine, seed=args.seed,
                                 sources=loaded.sources, explain=explain, now=now)


def _escape_lines(text: str) -> str:
    """Control characters of names, labels and reasons escaped line by line (the table's own newlines stay)."""
    from policyscheduler.diagnostics import escape_controls

    return "\n".join(escape_controls(line, keep_tabs=True) for line in text.split("\n"))


def _escape_json(text: str) -> str:
    import re

    return re.sub("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]", lambda m: f"\\u{ord(m.group(0)):04x}", text)


def escape_controls(text: str) -> str:
    from policyscheduler.diagnostics import escape_controls as escape

    return escape(str(text))
