"""Render a :class:`Simulation` as an aligned table (for people) or JSON (for tools)."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Sequence
from pathlib import PurePath

from policyscheduler.diagnostics import escape_controls
from policyscheduler.simulate.compare import Comparison, Move
from policyscheduler.simulate.run import Simulation

__all__ = ["render_compare_json", "render_compare_table", "render_json", "render_nodes", "render_table", "summary_line"]

_HEADERS = ("POD", "NODE", "SCORE", "TIES", "MESSAGE")


def render_json(sim: Simulation, *, now: str | None = None) -> str:
    """The documented JSON schema: ``{"policy_digest", "placements": [{pod, node, score, top, message}]}``,
    and ``now`` (the decision time rules read, RFC 3339) when given."""
    doc = sim.to_json()
    if now is not None:
        doc["now"] = now
    return _escape_json(json.dumps(doc, indent=2))


def _escape_json(text: str) -> str:
    """JSON escapes C0 controls itself; DEL, C1 and bidi overrides are escaped as ``\\uXXXX`` here (same value)."""
    return _JSON_EXTRA.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


_JSON_EXTRA = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def summary_line(sim: Simulation, *, seed: int | None = None, now: str | None = None) -> str:
    """``placed 187/200 pods on 36 nodes; 13 pending`` plus passes, digest, seed and ``now``."""
    placed = sim.placed
    used = len({d.node for d in placed})
    total = len(sim.decisions)
    extra = [f"{sim.passes} pass" + ("" if sim.passes == 1 else "es"), f"policies {sim.policy_digest[:12]}"]
    evicted = sum(len(victims) for _, victims in sim.preemptions.values())
    if evicted:
        extra.insert(1, f"{evicted} pod{'' if evicted == 1 else 's'} preempted")
    if seed is not None:
        extra.append(f"seed {seed}")
    if now is not None:
        extra.append(f"now {now}")
    node_word = "node" if used == 1 else "nodes"
    return (
        f"placed {len(placed)}/{total} pods on {used} {node_word} (of {sim.node_count}); "
        f"{total - len(placed)} pending ({', '.join(extra)})"
    )


def render_nodes(sim: Simulation) -> list[str]:
    """Per-node utilisation at the end of the run: pods added, pods / max, cpu and memory requested %."""
    headers = ("NODE", "ZONE", "NEW", "PODS", "CPU", "MEMORY")
    rows = [
        (escape_controls(u.name), escape_controls(u.zone or "-"), f"+{u.placed}" if u.placed else "0", f"{u.pods}/{u.max_pods}",
         f"{u.cpu_percent}%", f"{u.memory_percent}%")
        for u in sim.nodes
    ]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    return [
        "  ".join(cell.ljust(w) if i < 2 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))).rstrip()
        for row in [headers, *rows]
    ]


def _truncate(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    return text[: max(width - 3, 0)] + "..."


def _with_preemption(sim: Simulation, pod: str, message: str | None) -> str:
    """The MESSAGE cell: the FailedScheduling text, plus what the pod's preemption evicted and where."""
    preempted = sim.preemptions.get(pod)
    if preempted is None:
        return message or ""
    node, victims = preempted
    note = f"preempted {', '.join(victims)} on {node}"
    return f"{message} [{note}]" if message else note


def render_table(sim: Simulation, *, seed: int | None = None, width: int | None = None,
                 now: str | None = None) -> str:
    """One aligned row per pod (settled order), the nodes' utilisation, then the summary line.

    ``TIES`` is how many feasible nodes shared the best score (the chosen one was drawn among them);
    messages are cut to the terminal width (``--output json`` has them in full).
    """
    rows = [
        (
            escape_controls(d.pod),
            escape_controls(d.node) if d.node is not None else "<pending>",
            str(d.score) if d.score is not None else "-",
            str(len(d.top)) if d.node is not None else "-",
            escape_controls(_with_preemption(sim, d.pod, d.message)),
        )
        for d in sim.decisions
    ]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(_HEADERS[:-1])]
    total_width = width if width is not None else shutil.get_terminal_size((160, 24)).columns
    message_width = max(total_width - sum(widths) - 2 * len(widths), 40)
    lines = []
    for row in [_HEADERS, *rows]:
        cells = [cell.ljust(w) if i != 2 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))]
        lines.append(("  ".join(cells) + "  " + _truncate(row[-1], message_width)).rstrip())
    if sim.nodes:
        lines.append("")
        lines.extend(render_nodes(sim))
    lines.append("")
    lines.append(summary_line(sim, seed=seed, now=now))
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------- --compare


def render_compare_json(result: Comparison, *, old_source: str = "", new_source: str = "") -> str:
    """``simulate --compare -o json``: :meth:`Comparison.to_json` (shape in the README's "Policy tools")."""
    return _escape_json(json.dumps(result.to_json(old_source=old_source, new_source=new_source), indent=2))


def _short_location(location: str | None) -> str:
    """``file:line`` with the file's base name (the JSON keeps the full ``file:line:col``)."""
    if not location:
        return ""
    file, line, _col = location.rsplit(":", 2)
    return f"{PurePath(file).name}:{line}"


def _moves_table(moves: Sequence[Move]) -> list[str]:
    headers = ("POD", "FROM", "TO", "WHY")
    rows = []
    for m in moves:
        where = _short_location(m.cause.location)
        rows.append((escape_controls(m.pod), escape_controls(m.old or "<unschedulable>"),
                     escape_controls(m.new or "<unschedulable>"),
                     escape_controls(m.cause.text + (f" [{where}]" if where else ""))))
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers[:-1])]
    return ["  ".join([*(cell.ljust(w) for cell, w in zip(row, widths)), row[-1]]).rstrip() for row in [headers, *rows]]


def render_compare_table(result: Comparison, *, old_source: str = "", new_source: str = "") -> str:
    """The two sets (source, digest, pods placed), the counts, then the moved pods in two groups: those a
    rule difference explains (with the rule and its ``file:line``) and the knock-ons of earlier moves."""
    sides = [("OLD", escape_controls(old_source), result.old), ("NEW", escape_controls(new_source), result.new)]
    width = max(len(source) for _, source, _ in sides)
    lines = [f"{label}  {source.ljust(width)}  digest {sim.policy_digest[:12]}  placed {len(sim.placed)}/{len(sim.decisions)}"
             for label, source, sim in sides]
    moved, by_rules, knock_ons = len(result.moves), result.by_rules, result.knock_ons
    both = result.unschedulable_in_both
    lines.append(
        f"{result.pods} pending pod{'' if result.pods == 1 else 's'} on {result.new.node_count} nodes, seed {result.seed}: "
        f"{result.kept} kept their node" + (f" ({both} unschedulable under both)" if both else "")
        + f", {moved} moved" + (f" ({len(by_rules)} by a rule difference, {len(knock_ons)} as a knock-on of earlier moves)"
                                if moved else ""))
    if by_rules:
        lines += ["", "moved by a rule difference (judged on the cluster as NEW found it when it placed the pod):"]
        lines += _moves_table(by_rules)
    if knock_ons:
        lines += ["", "moved as a knock-on of earlier moves (both sets rank the two nodes alike there):"]
        lines += _moves_table(knock_ons)
    return "\n".join(lines) + "\n"
