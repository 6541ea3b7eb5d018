"""Reading policy test files: find them, check their shape strictly, and locate every mistake.

A test file is hand-written, and a mistake in it must never pass silently or crash the runner: every
key is known (a typo such as ``feasable`` is an error, not an expectation that is never checked), every
value has the documented shape and type, and each error names ``file:line:col`` of the offending key or
value. Files are read through :func:`policyscheduler.inputs.read_documents` (safe, positioned YAML);
the Kubernetes objects of a case -- its pod, its inline objects and ``objects_from`` files -- through
:func:`policyscheduler.inputs.read_texts` / :func:`~policyscheduler.inputs.read_objects`, so they are
validated exactly like the objects of a snapshot. The format itself is documented in the README
("Testing policies") and checked against :mod:`policyscheduler.testing.runner`'s use of it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from policyscheduler.inputs import KEPT_KINDS, Document, DocumentError, read_documents, read_objects, read_texts
from policyscheduler.times import parse_timestamp

__all__ = ["Case", "Suite", "TestInputError", "collect", "read_suite", "is_test_document", "shape_problems",
           "SUITE_KEYS", "CASE_KEYS", "WANT_KEYS"]

SUITE_KEYS = frozenset({"policies", "objects_from", "objects", "cases", "now"})
CASE_KEYS = frozenset({"name", "note", "objects", "objects_from", "pod", "pod_from", "want", "now"})
SINGLE_KEYS = CASE_KEYS | {"policies"}
WANT_KEYS = frozenset({"feasible", "rejected", "filters", "scores", "raw", "weighted", "totals", "chosen", "message",
                       "absent", "preemption"})
PREEMPTION_KEYS = frozenset({"node", "victims", "protected", "message"})
"""``want.preemption``: for a pod that fits nowhere, the node preemption nominates (null: none), the
victims and the pods preempt rules protected (``namespace/name`` lists, any order), the whole message."""
REJECTED_KEYS = frozenset({"rule", "reasons", "line"})
RANGE_KEYS = frozenset({"min", "max"})


class TestInputError(Exception):
    """Test files that cannot be used (exit 2); ``problems`` are located messages, one per mistake."""

    __test__ = False

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = list(problems)


@dataclasses.dataclass
class Case:
    """One case: its expectations (``data``), objects and pod, the extra policies it layers, and its file's
    positions (``doc`` and ``at``, the path of the case inside it) to locate what is wrong with it later."""

    file: str
    name: str
    data: dict[str, Any]
    objects: list[dict[str, Any]]
    pod: dict[str, Any] | None
    policies: tuple[str, ...]
    doc: Document | None = None
    at: tuple[Any, ...] = ()
    now: int | None = None
    """The decision time rules read as ``now`` (epoch ns): the case's ``now:``, else its file's; None: the
    runner's (``--now``, else the fixed default)."""

    @property
    def id(self) -> str:
        return f"{self.file}::{self.name}"

    def where(self, *path: Any) -> str:
        """``file:line:col`` of ``path`` inside the case (e.g. ``("want", "scores", "x")``)."""
        return self.doc.where(*self.at, *path) if self.doc is not None else self.file


@dataclasses.dataclass
class Suite:
    file: str
    cases: list[Case]


# ------------------------------------------------------------------------------------------- shapes


def _type_name(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number", type(None): "nothing (null)"}.get(type(value), type(value).__name__)


class _Checker:
    """Collects located problems while the shapes of one document are checked."""

    def __init__(self, doc: Document) -> None:
        self.doc = doc
        self.problems: list[str] = []

    def bad(self, path: tuple[Any, ...], message: str) -> None:
        self.problems.append(f"{self.doc.where(*path)}: {message}")

    def keys(self, value: dict[str, Any], path: tuple[Any, ...], known: frozenset[str], what: str) -> None:
        for key in value:
            if key not in known:
                self.bad((*path, key), f"unknown key {key!r} in {what} (known: {', '.join(sorted(known))})")

    def mapping(self, value: Any, path: tuple[Any, ...], what: str) -> bool:
        if isinstance(value, dict):
            return True
        self.bad(path, f"{what} must be a mapping, not {_type_name(value)}")
        return False

    def strings(self, value: Any, path: tuple[Any, ...], what: str, *, empty: bool = True) -> bool:
        if not isinstance(value, list):
            self.bad(path, f"{what} must be a list of strings, not {_type_name(value)}")
            return False
        ok = True
        for i, item in enumerate(value):
            if not isinstance(item, str) or not item:
                self.bad((*path, i), f"{what}[{i}] must be a non-empty string, not {_type_name(item)}")
                ok = False
        if not value and not empty:
            self.bad(path, f"{what} must not be empty")
            ok = False
        return ok

    def number(self, value: Any, path: tuple[Any, ...], what: str) -> None:
        if isinstance(value, int) and not isinstance(value, bool):
            return
        if isinstance(value, dict) and value and set(value) <= RANGE_KEYS and all(
                isinstance(v, int) and not isinstance(v, bool) for v in value.values()):
            if "min" in value and "max" in value and value["min"] > value["max"]:
                self.bad(path, f"{what}: min {value['min']} is above max {value['max']}")
            return
        self.bad(path, f"{what} must be an integer or a range {{min: N, max: M}} (either bound optional), "
                       f"not {_type_name(value) if not isinstance(value, dict) else 'that mapping'}")

    def per_node(self, value: Any, path: tuple[Any, ...], what: str) -> dict[str, Any]:
        if not self.mapping(value, path, f"{what} (node name -> expectation)"):
            return {}
        return dict(value)

    def preemption(self, pre: Any, path: tuple[Any, ...]) -> None:
        if not isinstance(pre, dict) or not pre:
            self.bad(path, "want.preemption must be a non-empty mapping {node: NAME or null, victims: [ns/name ...], "
                           f"protected: [ns/name ...], message: TEXT}}, not {_type_name(pre)}")
            return
        self.keys(pre, path, PREEMPTION_KEYS, "want.preemption")
        if "node" in pre and pre["node"] is not None and (not isinstance(pre["node"], str) or not pre["node"]):
            self.bad((*path, "node"), f"want.preemption.node must be a node name or null, not {_type_name(pre['node'])}")
        for key in ("victims", "protected"):
            if key in pre and pre[key] != []:
                self.strings(pre[key], (*path, key), f"want.preemption.{key}")
        if "message" in pre and not isinstance(pre["message"], str):
            self.bad((*path, "message"), f"want.preemption.message must be a string, not {_type_name(pre['message'])}")

    def want(self, want: Any, path: tuple[Any, ...]) -> None:
        if not isinstance(want, dict) or not want:
            self.bad(path, "want must be a non-empty mapping of expectations (feasible, rejected, filters, scores, "
                           "raw, weighted, totals, chosen, message, absent, preemption), "
                     + ("but it is empty" if isinstance(want, dict) else f"not {_type_name(want)}"))
            return
        self.keys(want, path, WANT_KEYS, "want")
        if "feasible" in want:
            self.strings(want["feasible"], (*path, "feasible"), "want.feasible")
        if "absent" in want:
            self.strings(want["absent"], (*path, "absent"), "want.absent", empty=False)
        if "rejected" in want:
            for node, exp in self.per_node(want["rejected"], (*path, "rejected"), "want.rejected").items():
                at = (*path, "rejected", node)
                if not isinstance(exp, dict):
                    self.bad(at, f"want.rejected.{node} must be a mapping {{rule: NAME, reasons: [...], line: N}}, "
                                 f"not {_type_name(exp)}")
                    continue
                self.keys(exp, at, REJECTED_KEYS, f"want.rejected.{node}")
                if not isinstance(exp.get("rule"), str) or not exp.get("rule"):
                    self.bad(at, f"want.rejected.{node} needs rule: the name of the filter that rejects the node")
                if "reasons" in exp:
                    self.strings(exp["reasons"], (*at, "reasons"), f"want.rejected.{node}.reasons")
                if "line" in exp and (not isinstance(exp["line"], int) or isinstance(exp["line"], bool)
                                      or exp["line"] < 1):
                    self.bad((*at, "line"), f"want.rejected.{node}.line must be a line number (1 or more)")
        if "filters" in want:
            for rule, nodes in self.per_node(want["filters"], (*path, "filters"), "want.filters").items():
                at = (*path, "filters", rule)
                for node, v in self.per_node(nodes, at, f"want.filters.{rule}").items():
                    if v in ("pass", "skip"):
                        continue
                    if not isinstance(v, list) or not v:
                        self.bad((*at, node), f"want.filters.{rule}.{node} must be pass, skip or a non-empty list "
                                              f"of reasons, not {v!r}")
                    else:
                        self.strings(v, (*at, node), f"want.filters.{rule}.{node}")
        for key in ("scores", "raw", "weighted"):
            if key in want:
                for rule, nodes in self.per_node(want[key], (*path, key), f"want.{key}").items():
                    for node, v in self.per_node(nodes, (*path, key, rule), f"want.{key}.{rule}").items():
                        self.number(v, (*path, key, rule, node), f"want.{key}.{rule}.{node}")
        if "totals" in want:
            for node, v in self.per_node(want["totals"], (*path, "totals"), "want.totals").items():
                self.number(v, (*path, "totals", node), f"want.totals.{node}")
        if "chosen" in want:
            c = want["chosen"]
            if isinstance(c, list):
                self.strings(c, (*path, "chosen"), "want.chosen", empty=False)
            elif not isinstance(c, str) or not c:
                self.bad((*path, "chosen"), f"want.chosen must be a node name or a list of the nodes tying for "
                                            f"the best score, not {_type_name(c)}")
        if "preemption" in want:
            self.preemption(want["preemption"], (*path, "preemption"))
        if "message" in want and not isinstance(want["message"], str):
            self.bad((*path, "message"), f"want.message must be a string, not {_type_name(want['message'])}")


def shape_problems(doc: Document, want: Any, path: tuple[Any, ...]) -> list[str]:
    """The located shape problems of a ``want`` block at ``path`` of ``doc``."""
    check = _Checker(doc)
    check.want(want, path)
    return check.problems


# ------------------------------------------------------------------------------------------- objects


def _k8s_objects(check: _Checker, base: Path, case_path: tuple[Any, ...], raw: dict[str, Any]) -> list[dict[str, Any]]:
    """The objects of ``objects_from`` files and inline ``objects`` of a suite or case, validated like a
    snapshot's (problems located at the key that brought them in)."""
    out: list[dict[str, Any]] = []
    if "objects_from" in raw and check.strings(raw["objects_from"], (*case_path, "objects_from"), "objects_from"):
        read = read_objects([base / r for r in raw["objects_from"]])
        for e in read.errors:
            check.bad((*case_path, "objects_from"), f"objects_from: {e}")
        out += read.objects
    if "objects" in raw:
        objects = raw["objects"]
        if not isinstance(objects, list):
            check.bad((*case_path, "objects"), f"objects must be a list of Kubernetes objects, not {_type_name(objects)}")
        else:
            for i, obj in enumerate(objects):
                out += _validated(check, (*case_path, "objects", i), obj, f"objects[{i}]")
    return out


def _validated(check: _Checker, path: tuple[Any, ...], obj: Any, what: str) -> list[dict[str, Any]]:
    """``obj`` (and a List's items) through the snapshot reader's validation; [] after reporting a problem."""
    if not isinstance(obj, dict):
        check.bad(path, f"{what} must be a Kubernetes object (a mapping with kind), not {_type_name(obj)}")
        return []
    where = check.doc.where(*path)
    read = read_texts([(f"{where} ({what}).json", json.dumps(obj))])
    for e in read.errors:
        check.problems.append(e.replace(f"{where} ({what}).json: document 1", f"{where}: {what}"))
    if read.warnings:  # a kind the scheduler does not read: in a hand-written case, a mistake
        items = obj.get("items") if str(obj.get("kind", "")).endswith("List") else None
        members = [i for i in items if isinstance(i, dict)] if isinstance(items, list) else [obj]
        kinds = sorted({str(o.get("kind")) for o in members if o.get("kind") not in KEPT_KINDS})
        check.bad(path, f"{what}: kind {', '.join(kinds)} is not one the scheduler reads (known: "
                        f"{', '.join(sorted(KEPT_KINDS))}, or a List of them with items)")
    return [] if read.errors or read.warnings else list(read.objects)


def _pod(check: _Checker, base: Path, path: tuple[Any, ...], raw: dict[str, Any]) -> dict[str, Any] | None:
    if ("pod" in raw) == ("pod_from" in raw):
        check.bad(path, "a case needs exactly one of pod (a Pod object) and pod_from (a file holding one Pod)")
        return None
    if "pod_from" in raw:
        ref = raw["pod_from"]
        if not isinstance(ref, str) or not ref:
            check.bad((*path, "pod_from"), f"pod_from must be a path, not {_type_name(ref)}")
            return None
        read = read_objects([base / ref])
        for e in read.errors:
            check.bad((*path, "pod_from"), f"pod_from: {e}")
        pods = [o for o in read.objects if o.get("kind") == "Pod"]
        if not read.errors and len(pods) != 1:
            check.bad((*path, "pod_from"), f"pod_from must name a file holding exactly one Pod ({len(pods)} found)")
        return pods[0] if len(pods) == 1 and not read.errors else None
    pod = raw["pod"]
    if isinstance(pod, dict) and pod.get("kind") != "Pod":
        check.bad((*path, "pod"), f"pod must be a Pod object (kind: Pod), not kind {pod.get('kind')!r}")
        return None
    found = _validated(check, (*path, "pod"), pod, "pod")
    return found[0] if found else None


# ------------------------------------------------------------------------------------------- files


def is_test_document(doc: Any) -> bool:
    """A suite (``cases:``) or a single case (``pod``/``pod_from`` and ``want``)."""
    return isinstance(doc, dict) and ("cases" in doc or (("pod" in doc or "pod_from" in doc) and "want" in doc))


def _now(check: _Checker, at: tuple[Any, ...], raw: dict[str, Any]) -> int | None:
    """A ``now:`` key: an RFC 3339 time (YAML may have read an unquoted one as a datetime already)."""
    if "now" not in raw:
        return None
    value = raw["now"]
    if isinstance(value, datetime):
        value = value.isoformat().replace("+00:00", "Z") if value.tzinfo is not None else value.isoformat() + "Z"
    parsed = parse_timestamp(value) if isinstance(value, str) else None
    if parsed is None:
        check.bad((*at, "now"), f"now must be an RFC 3339 time such as \"2026-12-04T10:15:00Z\", not {value!r}")
    return parsed


def _case(check: _Checker, path: Path, shared: list[dict[str, Any]], at: tuple[Any, ...], raw: Any, name: str,
          policies: tuple[str, ...], allowed: frozenset[str], suite_now: int | None = None) -> Case | None:
    if not isinstance(raw, dict):
        check.bad(at, f"a case must be a mapping (name, pod, want ...), not {_type_name(raw)}")
        return None
    before = len(check.problems)
    check.keys(raw, at, allowed, "a case")
    if "name" in raw and (not isinstance(raw["name"], str) or not raw["name"]):
        check.bad((*at, "name"), f"name must be a non-empty string, not {_type_name(raw['name'])}")
    if "note" in raw and not isinstance(raw["note"], str):
        check.bad((*at, "note"), f"note must be a string, not {_type_name(raw['note'])}")
    objects = shared + _k8s_objects(check, path.parent, at, raw)
    pod = _pod(check, path.parent, at, raw)
    check.want(raw.get("want"), (*at, "want"))
    now = _now(check, at, raw)
    if len(check.problems) > before:
        return None
    return Case(str(path), name, raw, objects, pod, policies, check.doc, at, now if now is not None else suite_now)


def _policies(check: _Checker, path: Path, doc: dict[str, Any]) -> tuple[str, ...]:
    if "policies" not in doc:
        return ()
    if not check.strings(doc["policies"], ("policies",), "policies"):
        return ()
    return tuple(str(path.parent / p) for p in doc["policies"])


def read_suite(path: Path) -> Suite | None:
    """The cases of one test file (None when the YAML file is not a test file); TestInputError listing every
    located problem when it is one but malformed."""
    try:
        docs = read_documents(path)
    except DocumentError as exc:
        raise TestInputError([str(exc)]) from None
    if len(docs) != 1 or not is_test_document(docs[0].value):
        return None  # several documents or no test keys: a snapshot or other YAML, not a test file
    doc = docs[0]
    value: dict[str, Any] = doc.value
    check = _Checker(doc)
    if "cases" not in value:
        policies = _policies(check, path, value)
        case = _case(check, path, [], (), value, path.stem, policies, SINGLE_KEYS)
        if check.problems or case is None:
            raise TestInputError(check.problems)
        return Suite(str(path), [case])
    check.keys(value, (), SUITE_KEYS, "a test file")
    policies = _policies(check, path, value)
    shared = _k8s_objects(check, path.parent, (), value)
    suite_now = _now(check, (), value)
    cases = value["cases"]
    out: list[Case] = []
    if not isinstance(cases, list) or not cases:
        check.bad(("cases",), "cases must be a non-empty list of cases, "
                  + ("but it is empty" if isinstance(cases, list) else f"not {_type_name(cases)}"))
        cases = []
    seen: dict[str, int] = {}
    for k, raw in enumerate(cases):
        name = raw.get("name") if isinstance(raw, dict) else None
        name = name if isinstance(name, str) and name else f"case {k + 1}"
        if name in seen:
            check.bad((*("cases", k), "name"), f"two cases are named {name!r} (the other is case {seen[name] + 1})")
        seen.setdefault(name, k)
        case = _case(check, path, shared, ("cases", k), raw, name, policies, CASE_KEYS, suite_now)
        if case is not None:
            out.append(case)
    if check.problems:
        raise TestInputError(check.problems)
    return Suite(str(path), out)


def _files(paths: Sequence[str | Path]) -> tuple[list[Path], list[Path], list[str]]:
    """(YAML files, .policy files, missing paths) under ``paths``."""
    yamls: list[Path] = []
    policies: list[Path] = []
    missing: list[str] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                if any(part.startswith(".") for part in f.relative_to(p).parts) or not f.is_file():
                    continue
                if f.suffix in (".yaml", ".yml"):
                    yamls.append(f)
                elif f.suffix == ".policy":
                    policies.append(f)
        elif p.is_file():
            (policies if p.suffix == ".policy" else yamls).append(p)
        else:
            missing.append(str(raw))
    return yamls, policies, missing


def collect(paths: Sequence[str | Path]) -> tuple[list[Suite], list[Path], list[str]]:
    """(test suites, policy files under test, missing paths) for ``paths``; TestInputError with the problems
    of every malformed test file (all of them, not only the first)."""
    yamls, policies, missing = _files(paths)
    suites: list[Suite] = []
    problems: list[str] = []
    for f in yamls:
        try:
            suite = read_suite(f)
        except TestInputError as exc:
            problems += exc.problems
            continue
        if suite is not None:
            suites.append(suite)
    if problems:
        raise TestInputError(problems)
    return suites, policies, missing
