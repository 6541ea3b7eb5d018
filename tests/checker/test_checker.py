"""Checker: schema building, names, types, rule-level checks, cost bound, no cascades."""

from __future__ import annotations

import dataclasses

import pytest

from policyscheduler.checker.env import Schema, build_schema
from policyscheduler.checker.types import (
    BOOL,
    FLOAT,
    INT,
    QUANTITY,
    STRING,
    ListT,
    MapT,
    RecordT,
    join,
)
from policyscheduler.diagnostics import Diagnostic
from policyscheduler.loader import load_policy_texts


def codes(schema: Schema, text: str) -> list[tuple[str, int, int]]:
    r = load_policy_texts([("t.policy", text)], schema=schema)
    return [(d.code, d.span.line, d.span.col) for d in r.diagnostics if d.span]


def diags(schema: Schema, text: str) -> list[Diagnostic]:
    return load_policy_texts([("t.policy", text)], schema=schema).diagnostics


def test_schema_from_annotations(schema: Schema) -> None:
    pod = schema.records["Pod"]
    assert pod.fields["labels"] == MapT(STRING)
    assert pod.fields["containers"] == ListT(RecordT("Container"))
    assert pod.fields["containers"].bound == 16
    assert "_secret" not in pod.fields and "not_exposed" not in pod.methods
    assert pod.methods["tolerates"].params == (RecordT("Taint"),) and pod.methods["tolerates"].ret == BOOL
    assert schema.records["Container"].fields["requests"] == MapT(QUANTITY)
    assert schema.builtins["scaled"].min_args == 1
    assert schema.roots["node"] == RecordT("Node")
    assert schema.problems == ()


def test_schema_reports_bad_annotations() -> None:
    @dataclasses.dataclass(frozen=True)
    class Weird:
        x: set[int]

    s = build_schema({"Weird": Weird}, {}, {})
    assert s.problems and "Weird.x" in s.problems[0]


def test_type_join() -> None:
    assert join(INT, FLOAT) == FLOAT and join(INT, QUANTITY) == QUANTITY and join(FLOAT, QUANTITY) == FLOAT
    assert join(STRING, INT) is None
    assert join(ListT(INT), ListT(FLOAT)) == ListT(FLOAT)


def test_valid_rules_are_clean(schema: Schema) -> None:
    text = (
        "filter f\n  reason \"r\"\n  applies when pod.priority > 0 and cluster.zones != []\n"
        "  let z = node.labels[\"zone\"]\n  require z in cluster.zones\n"
        "score s weight 100 normalize spread\n  value trunc(node.allocatable[\"cpu\"] * 1.5)\n"
    )
    assert diags(schema, text) == []


def test_no_cascade(schema: Schema) -> None:
    # one unknown name, used in a chain of operations: exactly one diagnostic
    text = "filter f\n  reason \"r\"\n  require (nope.x + 1) * 2 > len(nope.y) and nope\n"
    got = codes(schema, text)
    assert [c for c, _, _ in got] == ["unknown-name"] * 3


def test_suggestions(schema: Schema) -> None:
    (d,) = diags(schema, "filter f\n  reason \"r\"\n  require node.lables[\"a\"] == \"\"\n")
    assert d.code == "unknown-field" and "did you mean 'labels'" in d.message
    (d,) = diags(schema, "score s weight 1\n  value lenght(node.labels)\n")
    assert d.code == "unknown-function" and "use len(x)" in d.message  # the near alias 'length' says which builtin


@pytest.mark.parametrize(("text", "code"), [
    ("score s weight 1\n  value node.labels.zone == \"\"\n", "type-mismatch"),
    ("score s weight 1\n  value len(node)\n", "type-mismatch"),
    ("score s weight 1\n  value sum(t in node.taints: t.key)\n", "type-mismatch"),
    ("score s weight 1\n  value count(x in 3)\n", "type-mismatch"),
    ("score s weight 1\n  value len\n", "type-mismatch"),
    ("score s weight 1\n  value pod.tolerates\n", "type-mismatch"),
    ("score s weight 1\n  value node.name(1)\n", "not-callable"),
    ("score s weight 1\n  value len([1, \"a\"])\n", "type-mismatch"),
    ("score s weight 1\n  value 1 < \"a\"\n", "type-mismatch"),
    ("score s weight 1\n  value -\"a\"\n", "type-mismatch"),
    ("filter f\n  reject each [1]\n", "type-mismatch"),
    ("filter f\n  reject 1 when true\n", "type-mismatch"),
    ("filter f\n  reason \"a\\q\"\n  require true\n", "bad-string"),
    ("score s weight 1\n  value min(1)\n", "bad-arity"),
    ("score s weight 1\n  value scaled(1, 2, 3)\n", "bad-arity"),
    ("score s weight 1\n  value len(taint(\"a\", \"b\"))\n", "bad-arity"),
    ("score s weight 1\n  value count(t in node.taints where all t in node.taints: true)\n", "shadowed-name"),
    ("score s weight 1\n  ignore node when true\n  ignore node when false\n  value 1\n", "duplicate-clause"),
    ("score s weight 1\n  let a = 1\n  applies when true\n  value a\n", "clause-order"),
    ("filter f\n  reason \"r\"\n  ignore node when true\n  require true\n", "clause-not-allowed"),
])
def test_errors(schema: Schema, text: str, code: str) -> None:
    found = [d.code for d in diags(schema, text) if d.severity == "error"]
    assert code in found, found


def test_unused_binding_is_a_warning(schema: Schema) -> None:
    r = load_policy_texts([("t.policy", "score s weight 1\n  let a = 1\n  let b = a\n  value 1\n")], schema=schema)
    assert [(d.code, d.severity, d.span.line) for d in r.diagnostics if d.span] == [("unused-binding", "warning", 3)]
    assert r.policy_set is not None  # warnings do not block activation


def test_duplicates_across_files_and_namespaces(schema: Schema) -> None:
    a = ("10-a.policy", "filter x\n  reason \"r\"\n  require true\nscore x weight 1\n  value 1\n")
    b = ("20-b.policy", "score x weight 2\n  value 2\n")
    r = load_policy_texts([b, a], schema=schema)
    (d,) = r.diagnostics
    assert d.code == "duplicate-rule" and d.span is not None and d.span.file == "20-b.policy"
    assert "10-a.policy:4:7" in d.message and r.policy_set is None


def test_cost_bound_uses_schema_bounds(schema: Schema) -> None:
    ok = "score s weight 1\n  value count(n in cluster.nodes where any p in n.pods: p.priority > 0)\n"
    assert diags(schema, ok) == []  # 5000 * 110 * a few nodes < limit
    heavy = ("score s weight 1\n  value count(n in cluster.nodes where any p in n.pods: "
             "any c in p.containers: c.name != \"\")\n")  # 5000 * 110 * 16 * ...
    assert [d.code for d in diags(schema, heavy)] == ["cost-limit"]


def test_diagnostics_sorted(schema: Schema) -> None:
    text = "score b weight 0\n  value x\nfilter a\n  require y\n"
    got = codes(schema, text)
    assert got == sorted(got, key=lambda c: (c[1], c[2]))
    assert {c for c, _, _ in got} >= {"weight-range", "unknown-name", "missing-reason"}
