"""The text of ``policyscheduler explain``: a short summary first, then the per-node detail asked for.

The summary is what an on-call engineer reads first on a cluster of any size, so its length does not
grow with the node count (at most a dozen lines): the pod, the engine and policy digest, which view of
the pending pods the decision was made on (the default is stated, never implied), kube-scheduler's
grouped counts of the rejected nodes (``6/1000 nodes are available: 28 node(s) didn't match ...``), the
chosen node, the runner-up and the score rule that separates them, and how many score rules failed.

The detail follows under a ``details:`` line: per node (``--nodes all|feasible|rejected``, ``--node N``)
the rejecting filter and every failing clause with its whole source text (a clause spanning several
lines is printed in full), or the table of score rules, where a rule that failed on the node is shown
as ``failed`` with its location and error -- never as a plain 0 that reads like a real score.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["render_table", "summary_lines", "pending_line"]

FAILED_MARK = "!"



def select_nodes(nodes: Sequence[dict[str, Any]], *, node: str | None = None, which: str = "all") -> list[dict[str, Any]]:
    """The nodes ``--node`` / ``--nodes all|feasible|rejected`` asks for."""
    if node is not None:
        return [n for n in nodes if n["name"] == node]
    if which == "feasible":
        return [n for n in nodes if n["feasible"]]
    if which == "rejected":
        return [n for n in nodes if not n["feasible"]]
    return list(nodes)


def pending_line(pending: dict[str, Any] | None) -> str:
    """How the other pending pods were treated (``--with-pending`` or the default)."""
    if not pending:
        return "pending pods: not placed first (running pods only)"
    if pending["with_pending"]:
        return (f"pending pods: --with-pending: decided as simulate decides it (same queue order, seed "
                f"{pending['seed']}), after {pending['placed_before']} of the {pending['others']} other pending "
                "pods were placed")
    others = pending["others"]
    if not others:
        return "pending pods: no other pending pods (the cluster as it is)"
    return (f"pending pods: the {others} other pending pod{'s are' if others != 1 else ' is'} not placed first "
            "(default; --with-pending places them as simulate does)")


def summary_lines(doc: dict[str, Any], *, which: str = "all", node: str | None = None) -> list[str]:
    """The summary (a bounded number of lines, whatever the node count)."""
    summary = doc["summary"]
    lines = [f"pod {doc['pod']}: {summary['nodes']} nodes, {summary['feasible']} feasible, {summary['rejected']} "
             f"rejected (engine {doc['engine']}, policy digest {doc['policy_digest'][:12]}"
             + (f", now {doc['now']})" if doc.get("now") else ")")]
    if doc.get("policy_source"):
        lines.append(f"policies: {doc['policy_source']} (digest {doc['policy_digest']})")
    lines.append(pending_line(doc.get("pending")))
    if doc["node"] is None:
        lines.append(f"fits nowhere: {doc['message']}")
    else:
        lines.append(summary["available"])
        ties = [t for t in doc["top"] if t != doc["node"]]
        tie = f", tied with {len(ties)} other node(s): seeded tie-break" if ties else ""
        lines.append(f"chosen: {doc['node']} (total {doc['score']}{tie})")
        runner = summary["runner_up"]
        if runner is not None:
            if runner["margin"] == 0:
                why = "same total; the seeded tie-break chose"
            elif runner["rule"] is not None:
                a, b = runner["points"]
                why = f"{runner['rule']} separates them most: {a:+d} against {b:+d} points"
            else:
                why = "no single rule gives the chosen node more points"
            lines.append(f"runner-up: {runner['node']} (total {runner['total']}, {runner['margin']} behind): {why}")
    from policyscheduler.cli.explain_preempt import preemption_lines

    lines += preemption_lines(doc.get("preemption"))
    if doc["score_errors"]:
        rules = sorted({e["rule"] for e in doc["score_errors"]})
        lines.append(f"score errors: {len(rules)} rule(s) failed ({', '.join(rules)}), marked "
                     f"'{FAILED_MARK} failed' in the table (a failed rule gives the node 0 points)")
    shown = "node " + node if node is not None else f"{which} nodes"
    lines.append(f"details: {shown} (--nodes all|feasible|rejected, --node NAME)")
    return lines


def _rejected(n: dict[str, Any], lines: list[str], used: set[str]) -> None:
    lines.append(f"{n['name']}: rejected by filter {n['rule']}" + (f" ({n['location']})" if n.get("location") else ""))
    used.add(f"filter {n['rule']}")
    if n.get("held"):
        lines.append("    held: pods nominated to this node (priority >= this pod's) hold its room; with them "
                     "placed there: " + "; ".join(n["reasons"]))
        return
    if n["error"]:
        lines.append(f"    error: {n['error']}")
    for c in n["clauses"]:
        lines.append(f"    {c['location']}: {c['keyword']}: " + "; ".join(c["reasons"]))
        for text in (c["source"] or "").splitlines():
            lines.append(f"        {text}")
    if not n["clauses"] and not n["error"]:
        lines.append("    reasons: " + "; ".join(n["reasons"]))


def _feasible(n: dict[str, Any], doc: dict[str, Any], lines: list[str], used: set[str]) -> None:
    star = " (chosen)" if n["name"] == doc["node"] else " (best, tied)" if n["name"] in doc["top"] else ""
    lines.append(f"{n['name']}: feasible, total {n['total']}{star}")
    width = max((len(r) for r in n["scores"]), default=4)
    lines.append(f"    {'rule':<{width}}  {'raw':>8}  {'norm':>4}  {'weight':>6}  {'points':>6}")
    for rule, s in n["scores"].items():
        used.add(f"score {rule}")
        failed = s.get("failed")
        if failed:
            lines.append(f"    {rule:<{width}}  {FAILED_MARK + ' failed':>8}  {'-':>4}  {s['weight'] or '':>6}  "
                         f"{s['weighted']:>6}  {failed['location'] or ''}: {failed['message']}")
            continue
        note = "  (ignored)" if s["ignored"] else ""
        lines.append(f"    {rule:<{width}}  {s['raw']:>8}  {s['normalized']:>4}  {s['weight'] or '':>6}  "
                     f"{s['weighted']:>6}{note}")


def render_table(doc: dict[str, Any], *, node: str | None = None, docs: bool = False, nodes: str = "all") -> str:
    """The human-readable explanation: the summary, then the chosen nodes' details."""
    lines = summary_lines(doc, which=nodes, node=node)
    used: set[str] = set()
    for n in select_nodes(doc["nodes"], node=node, which=nodes):
        lines.append("")
        if n["rule"] is not None:
            _rejected(n, lines, used)
        else:
            _feasible(n, doc, lines, used)
    if docs:
        lines.append("")
        lines.append("rules:")
        for key, info in doc["rules"].items():
            if key not in used:
                continue
            lines.append(f"  {key} ({info['location']})")
            for d in (info["doc"] or "(no ## documentation)").splitlines():
                lines.append(f"      {d}")
    return "\n".join(lines) + "\n"
