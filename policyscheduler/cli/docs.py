"""``policyscheduler docs [--check] [--output FILE]``: the generated language reference (grammar/REFERENCE.md).

Generated from what the checker itself uses -- the schema (records, fields, methods, domain builtins),
the generic builtins, the clause keywords and the lint catalogue with its examples -- so it cannot drift;
a test fails when the committed file is stale and runs every example in it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

__all__ = ["CONSTRUCTS", "GENERIC_EXAMPLES", "add_arguments", "field_examples", "generate", "run", "wrap"]

DEFAULT_OUTPUT = Path(__file__).resolve().parents[2] / "grammar" / "REFERENCE.md"

CONSTRUCTS: list[tuple[str, str, str]] = [
    ("filter NAME", "a yes/no rule per node", 'filter cordoned\n  reason "node(s) were cordoned"\n'
     "  require not node.unschedulable\n"),
    ("score NAME weight N [normalize MODE]", "a number per node, weighted and normalised",
     "score few_taints weight 2 normalize reverse\n  value len(node.taints)\n"),
    ("reason STRING", "the filter's default reason", 'filter f1\n  reason "node(s) are not ready"\n'
     '  require node.labels["ready"] == "true"\n'),
    ("applies when EXPR", "pod-level: the rule runs only for pods where EXPR holds",
     'filter f2\n  reason "r"\n  applies when "gpu" in pod.labels\n  require "gpu" in node.labels\n'),
    ("reject pod STRING when EXPR", "pod-level rejection on every node (PreFilter)",
     'filter f3\n  reject pod "pod(s) of team x are paused" when pod.labels["team"] == "x"\n'),
    ("let NAME = EXPR", "a named value", 'filter f4\n  reason "r"\n  let zone = node.labels["zone"]\n'
     '  require zone != ""\n'),
    ("require EXPR [else STRING]", "false: emit the reason and stop", 'filter f5\n'
     '  require node.labels["os"] == "linux" else "node(s) are not linux"\n'),
    ("reject STRING when EXPR", "true: emit the reason and go on", 'filter f6\n'
     '  reject "Too many pods" when node.pod_count + 1 > node.allocatable["pods"]\n'),
    ("reject each LIST", "emit every string of the list and go on", 'filter f7\n'
     '  reject each ["label " + k + " missing" for k in ["a", "b"] where not (k in node.labels)]\n'),
    ("ignore node when EXPR", "the node gets 0 and is left out of normalisation",
     "score s1 weight 1 normalize scale\n  ignore node when node.unschedulable\n  value len(node.labels)\n"),
    ("value EXPR", "a score's raw value (an int)", "score s2 weight 1\n  value 50\n"),
    ("preempt NAME", "which pods preemption may evict (narrows kube's DefaultPreemption; `applies when` picks "
     "the preemptors, reading `pod`)", 'preempt p1\n  reason "pods of namespace payments are never preempted"\n'
     '  victim target.namespace != "payments"\n'),
    ("victim EXPR", "a preempt rule's last clause: `target` (the candidate victim, a Pod) may be evicted for "
     "`pod` (the preemptor) on `node` only when EXPR holds", 'preempt p2\n  applies when pod.labels["tier"] == '
     '"batch"\n  victim target.labels["tier"] == "batch"\n'),
    ("use defaults none", "start from an empty set", None),  # type: ignore[list-item]
    ("disable filter|score|preempt NAME", "leave a rule out", "disable score image_locality\n"),
    ("override score NAME weight N normalize MODE skip when EXPR", "change a rule's settings",
     'override score taint_toleration weight 1 skip when pod.labels["x"] == "y"\n'),
    ("replace filter|score NAME ...", "your rule in the place of a default one",
     'replace filter node_unschedulable\n  reason "node(s) were cordoned"\n  require not node.unschedulable\n'),
    ("all/any x in L [where C]: B", "quantifiers", 'filter f8\n  reason "r"\n'
     '  require all t in node.taints where t.effect == "NoSchedule": pod.tolerates(t)\n'),
    ("count/sum/max/min(x in L ...)", "aggregates", "score s3 weight 1 normalize scale\n"
     "  value count(t in node.taints) + sum(i in pod.images: 1) + max(t in node.taints: 1, default 0)\n"),
    ("[V for x in L where C]", "comprehension", 'filter f9\n  reason "r"\n'
     '  require len([t.key for t in node.taints where t.effect == "NoExecute"]) == 0\n'),
    ("if C then A else B", "conditional", "score s4 weight 1\n  value if node.unschedulable then 0 else 100\n"),
    ("and or not, == != < <= > >=, in, not in, + - * / %", "operators", 'filter f10\n  reason "r"\n'
     '  require not (node.pod_count * 2 % 3 >= 7 - 1) or "a" in node.labels and "b" not in node.labels\n'),
    ("500m, 2Gi, 1e3", "quantity literals", 'filter f11\n  reason "r"\n'
     '  require node.allocatable["memory"] >= 2Gi and node.allocatable["cpu"] > 500m\n'),
    ("now, timestamp(s), duration(s)", "time: `now` is the decision time (the wall clock in `run`; fixed, printed "
     "and set by `--now` in `simulate`, `explain`, `test`); timestamp - timestamp is a duration, timestamp ± "
     "duration a timestamp; `seconds(d)` gives an int (LANGUAGE.md, \"Time\")",
     'filter f12\n  reason "node(s) are about to be drained"\n'
     '  require now < timestamp(node.labels["drain-at"], default now + duration("2h")) - duration("1h")\n'),
    ("cluster.count_in_cluster(sel)", "the whole-cluster count of a pod selector, for shares of a domain",
     'filter f13\n  let app = cluster.pods_with("app", pod.labels["app"])\n'
     '  require cluster.count_in_domain(app, "topology.kubernetes.io/zone", node) * 100\n'
     '    < 40 * (cluster.count_in_cluster(app) + 1) else "node(s) are in a zone at 40% of the app"\n'),
]
CONSTRUCTS[[c[0] for c in CONSTRUCTS].index("use defaults none")] = ("use defaults none", "start from an empty set (then add filters)",
                  'use defaults none\n\nfilter only\n  reason "r"\n  require not node.unschedulable\n')

GENERIC_EXAMPLES: dict[str, str] = {
    "len": "len(node.labels)", "abs": "abs(-3)", "min": "min(1, 2)", "max": "max(1, 2)",
    "trunc": "trunc(2.5)", "round": "round(2.5)", "float": 'float("1.5", default 0.0)',
    "int": 'int(node.labels["gpus"], default 0)', "quantity": 'quantity("2Gi", default 0)',
    "is_int": 'is_int("5")', "is_float": 'is_float("5.5")', "is_quantity": 'is_quantity("5Gi")',
    "str": "str(node.pod_count)", "starts_with": 'starts_with(node.name, "gpu-")',
    "ends_with": 'ends_with(node.name, "-1")', "split": 'split(node.name, "-")', "lower": "lower(node.name)",
    "ln": "ln(2.0)", "sqrt": "sqrt(4.0)", "first": "first(node.taints)",
    "timestamp": 'timestamp(node.annotations["example.com/provisioned-at"], default node.created)',
    "duration": 'duration("1h30m")', "seconds": "seconds(now - node.created)",
}


def wrap(expr: str) -> str:
    """A policy file that type-checks ``expr`` (used to execute the examples)."""
    return f'filter example\n  reason "r"\n  let v = {expr}\n  require len([v]) > 0\n'


def field_examples(schema: object) -> dict[tuple[str, str], str]:
    """An expression reading each field reachable from a root (through at most one list)."""
    from policyscheduler.checker.types import ListT, RecordT

    out: dict[tuple[str, str], str] = {}
    paths: dict[str, tuple[str, bool]] = {}  # record -> (path, through a list)
    queue: list[tuple[str, str, bool]] = []
    for root, t in schema.roots.items():  # type: ignore[attr-defined]
        if isinstance(t, RecordT):
            queue.append((t.name, root, False))
    while queue:
        rec, path, listed = queue.pop(0)
        if rec in paths:
            continue
        paths[rec] = (path, listed)
        info = schema.records.get(rec)  # type: ignore[attr-defined]
        if info is None:
            continue
        for fname, ft in info.fields.items():
            out.setdefault((rec, fname), f"[x.{fname} for x in {path}]" if listed else f"{path}.{fname}")
            if isinstance(ft, RecordT) and not listed:
                queue.append((ft.name, f"{path}.{fname}", False))
            elif isinstance(ft, ListT) and isinstance(ft.elem, RecordT) and not listed:
                queue.append((ft.elem.name, f"{path}.{fname}", True))
    return out


def generate() -> str:
    """The whole reference, as markdown."""
    from policyscheduler.checker import global_schema
    from policyscheduler.checker.env import GENERIC_DOCS
    from policyscheduler.checker.examples import EXAMPLES
    from policyscheduler.diagnostics import catalogue
    from policyscheduler.loader import _ensure_object_model

    _ensure_object_model()
    schema = global_schema()
    out: list[str] = [
        "# Policy language reference",
        "",
        "<!-- Generated by `policyscheduler docs` from the schema, the builtins and the lint catalogue. "
        "Do not edit: a test fails when this file is stale, and every example below is executed by the "
        "test suite (tests/cli/test_docs.py). -->",
        "",
        "The readable guide is [LANGUAGE.md](LANGUAGE.md); the formal grammar is [policy.lark](policy.lark).",
        "",
        "## Constructs",
        "",
    ]
    for title, what, example in CONSTRUCTS:
        out += [f"### `{title}`", "", what + ".", "", "```policy", example.rstrip("\n"), "```", ""]
    out += ["## Generic builtins", ""]
    for name, doc in GENERIC_DOCS.items():
        out += [f"### `{name}`", "", doc, "", "```policy", f"{GENERIC_EXAMPLES[name]}", "```", ""]
    out += ["## Domain builtins", ""]
    for name, sig in sorted(schema.builtins.items()):
        params = ", ".join(str(p) for p in sig.params)
        out += [f"### `{name}({params}) -> {sig.ret}`", "", (sig.doc or "").strip() or "(no documentation)", ""]
    examples = field_examples(schema)
    out += ["## Records, fields and methods", "",
            "Roots: " + ", ".join(f"`{r}`: {t}" for r, t in schema.roots.items())
            + ", `now`: timestamp (the decision time); a preempt rule also has `target`: Pod.", ""]
    for rname, info in sorted(schema.records.items()):
        out += [f"### {rname}", ""]
        if info.doc:
            out += [info.doc.strip().splitlines()[0], ""]
        if info.fields:
            out += ["| field | type | example |", "|---|---|---|"]
            for fname, ft in info.fields.items():
                ex = examples.get((rname, fname))
                out.append(f"| `{fname}` | `{ft}` | {f'`{ex}`' if ex else ''} |")
            out.append("")
        if info.methods:
            out += ["| method | returns | |", "|---|---|---|"]
            for mname, sig in info.methods.items():
                params = ", ".join(str(p) for p in sig.params)
                doc = (sig.doc or "").strip().splitlines()[0] if sig.doc else ""
                out.append(f"| `{mname}({params})` | `{sig.ret}` | {doc.replace('|', '/')} |")
            out.append("")
    out += ["## Lint codes", "",
            "`policyscheduler lint --explain CODE` prints the same text. Warnings can be silenced on their line "
            "with `# lint: ignore[CODE] because JUSTIFICATION`.", ""]
    for code, entry in catalogue().items():
        shown = EXAMPLES[code]
        out += [f"### `{code}` ({entry.severity})", "", entry.summary + ".", "", entry.rationale, ""]
        if shown.text is not None and len(shown.text) < 400:
            out += ["```policy", shown.text.rstrip("\n"), "```", ""]
        elif shown.how:
            out += [f"Triggered by: {shown.how}.", ""]
    return "\n".join(out).rstrip("\n") + "\n"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output", metavar="FILE", default=str(DEFAULT_OUTPUT),
                        help=f"where to write (default: {DEFAULT_OUTPUT})")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when FILE is stale")


def _unwritable(target: Path) -> str | None:
    """Why ``target`` cannot be written (None when it can): checked before the reference is generated."""
    parent = target.parent
    if not parent.is_dir():
        return f"{parent} is not a directory" if parent.exists() else f"no directory {parent}"
    if target.is_dir():
        return "it is a directory"
    if target.exists():
        try:
            os.close(os.open(target, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK))
        except OSError as exc:
            return exc.strerror or str(exc)
    elif not os.access(parent, os.W_OK):
        return f"{parent} is not writable"
    return None


def run(args: argparse.Namespace) -> int:
    target = Path(args.output)
    if not args.check:
        why = _unwritable(target)
        if why is not None:
            sys.stderr.write(f"policyscheduler docs: cannot write {target}: {why}\n")
            return 2
    text = generate()
    if args.check:
        current = target.read_text(encoding="utf-8") if target.is_file() else ""
        if current != text:
            sys.stderr.write(f"{target} is stale: run 'policyscheduler docs'\n")
            return 1
        print(f"ok: {target} is up to date")
        return 0
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        sys.stderr.write(f"policyscheduler docs: cannot write {target}: {exc.strerror or exc}\n")
        return 2
    print(f"wrote {target}")
    return 0
