"""Compiled expressions and rules: Go integer semantics, short-circuit, loops, quantities, runtime errors."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from policyscheduler.checker import check
from policyscheduler.checker.env import Schema
from policyscheduler.compiler.closures import ExprCompiler, Located
from policyscheduler.diagnostics import PolicyRuntimeError
from policyscheduler.loader import load_policy_texts
from policyscheduler.source import SourceFile
from policyscheduler.syntax import ast, parse
from tests.schema_fixture import sample_env


def ev(schema: Schema, expr: str, env: dict[str, Any] | None = None) -> Any:
    """Check and compile one expression (as a let), then evaluate it against the sample env."""
    module, diags = parse(SourceFile("t.policy", f"score s weight 1\n  let v = {expr}\n  value len([v])\n"))
    assert module is not None and not diags, diags
    checked, diags = check([module], schema)
    assert checked and not [d for d in diags if d.severity == "error"], diags
    let = checked[0].rule.clauses[0]
    assert isinstance(let, ast.Let)
    fn = ExprCompiler(checked[0].info).compile(let.value)
    return fn(dict(env or sample_env()))


@pytest.mark.parametrize(("expr", "want"), [
    ("7 / 2", 3), ("-7 / 2", -3), ("7 / -2", -3), ("-7 / -2", 3),
    ("7 % 3", 1), ("-7 % 3", -1), ("7 % -3", 1), ("-7 % -3", -1),
    ("round(2.5)", 3), ("round(-2.5)", -3), ("round(0.49999999999999994)", 0), ("round(1.4)", 1),
    ("trunc(-2.7)", -2), ("trunc(2.7)", 2), ("round(5m * 100)", 1), ("round(-1500m)", -2),
    ("7 / 2.0", 3.5), ("2 * 3 + 1", 7), ("abs(-3)", 3), ("min(3, 1, 2)", 1), ("max(1, 2.5)", 2.5),
    ("float(1 / 3)", 0.0), ("float(1 / 3.0)", 1 / 3), ("float(1Ki / 3)", 1024 / 3), ("sqrt(16)", 4.0), ("ln(1)", 0.0),
    ("len(\"abc\")", 3), ("first([4, 5])", (4,)), ("len(first([]))", 0),
])
def test_arithmetic(schema: Schema, expr: str, want: Any) -> None:
    got = ev(schema, expr)
    assert got == want and type(got) is type(want)


def test_quantities_are_exact(schema: Schema) -> None:
    assert ev(schema, "500m + 1") == Fraction(3, 2)
    assert ev(schema, "2Gi") == 2 * 2**30
    assert ev(schema, "1e3") == 1000
    assert ev(schema, "1.5Gi / 3") == Fraction(2**29)
    assert ev(schema, 'node.allocatable["cpu"] - sum(c in pod.containers: c.requests["cpu"])') == Fraction(34, 10)
    assert ev(schema, "100m * 3 == 300m") is True
    assert ev(schema, "0.5 + 500m") == 1.0  # float with quantity is float


def test_strings_lists_maps(schema: Schema) -> None:
    assert ev(schema, '"a" + "b"') == "ab"
    assert ev(schema, "[1, 2] + [3]") == (1, 2, 3)
    assert ev(schema, '"zone" in node.labels') is True
    assert ev(schema, '"gpu" not in node.labels') is True
    assert ev(schema, 'node.labels["missing"]') == ""
    assert ev(schema, 'node.allocatable["gpu"]') == 0
    assert ev(schema, '"ss" in "class"') is True
    assert ev(schema, "2 in [1, 2]") is True
    assert ev(schema, "[1, 2] == [1, 2]") is True


def test_quantifiers_comprehensions_aggregates(schema: Schema) -> None:
    assert ev(schema, "all t in node.taints where t.effect == \"NoSchedule\": pod.tolerates(t)") is True
    assert ev(schema, "all t in node.taints: pod.tolerates(t)") is False
    assert ev(schema, "any t in node.taints: t.key == \"spot\"") is True
    assert ev(schema, "all x in []: false") is True
    assert ev(schema, "any x in []: true") is False
    assert ev(schema, "[k + \"=\" + v for k, v in node.labels]") == ("disk=ssd", "zone=a")  # sorted keys
    assert ev(schema, "[i * 10 for i, t in node.taints where t.key != \"\"]") == (0, 10)
    assert ev(schema, "count(t in node.taints where t.effect == \"PreferNoSchedule\")") == 1
    assert ev(schema, "sum(c in pod.containers: len(c.name))") == 4
    assert ev(schema, "sum(c in pod.containers where false: 1.5)") == 0.0
    assert ev(schema, "max(c in pod.containers: c.requests[\"cpu\"], default 0)") == Fraction(1, 2)
    assert ev(schema, "min(c in pod.containers where false: 1, default -1)") == -1
    assert ev(schema, "max(k, v in node.labels: v)") == "ssd"
    assert ev(schema, "scaled(2, 3) + scaled(1)") == 7


def test_loop_variables_share_the_rule_frame_safely(schema: Schema) -> None:
    # loops bind their variables in the rule's frame (no copy per loop): a name reused by a sibling loop,
    # by a loop inside another loop's iterable, or by a later let must still read the right value
    assert ev(schema, "count(x in [1, 2] where x > 1) + count(x in [3, 4, 5] where x > 3)") == 3
    assert ev(schema, "[x * 10 for x in [x + 1 for x in [1, 2]]]") == (20, 30)
    assert ev(schema, "all x in [1, 2]: any y in [x, 5]: y == x") is True
    assert ev(schema, "sum(i, x in [5, 6]: i * x) == 6 and max(k, v in node.labels: k, default \"\") == \"zone\"") is True
    text = ("score s weight 1\n  let a = count(x in [1, 2] where x > 1)\n  let x = 10\n"
            "  value a + x + len([y for y in [7]])\n")
    r = load_policy_texts([("t.policy", text)], schema=schema)
    assert r.policy_set is not None, r.diagnostics
    env = sample_env()
    assert r.policy_set.scores[0].raw(env) == 12
    assert set(env) == {"pod", "node", "cluster"}  # neither lets nor loop variables leak


def test_constant_list_literals(schema: Schema) -> None:
    assert ev(schema, "[1, 2.5]") == (1.0, 2.5) and type(ev(schema, "[1, 2.5]")[0]) is float
    assert ev(schema, "[1, 500m]") == (1, Fraction(1, 2))
    assert ev(schema, "[]") == ()
    assert ev(schema, "[node.name, \"b\"]") == ("n1", "b")


def test_short_circuit(schema: Schema) -> None:
    # the right operands would fail at runtime if they were evaluated
    zero = "(len(node.name) - 2)"  # 0 at run time ("n1"); a literal 0 would be a lint error (division-by-zero)
    assert ev(schema, f"false and 1 / {zero} == 0") is False
    assert ev(schema, f"true or 1 / {zero} == 0") is True
    assert ev(schema, f"if true then 1 else 1 / {zero}") == 1
    assert ev(schema, "any x in [1, 0]: 10 / x == 10") is True
    assert ev(schema, "all x in [0, 1]: x != 0 and 10 / x > 0") is False


@pytest.mark.parametrize("expr", ["1 / (len(node.name) - 2)", "1 % (len(node.name) - 2)", "[1][3]", "ln(0)",
                                  "sqrt(-1.0)", "1.0 / (len(node.name) - 2)", "int(node.name)",
                                  "max(x in []: 1)", "pod.explode()", "pod.containers[2].name"])
def test_runtime_errors_are_located(schema: Schema, expr: str) -> None:
    with pytest.raises(Located) as info:
        ev(schema, expr)
    assert info.value.span.line == 2


def test_compiled_rules(schema: Schema) -> None:
    text = (
        "## Fit.\n"
        "filter fit\n"
        "  reason \"default reason\"\n"
        "  applies when pod.priority > 1\n"
        "  let cpu = sum(c in pod.containers: c.requests[\"cpu\"])\n"
        "  reject \"Insufficient cpu\" when cpu > 100m\n"
        "  reject each [\"Insufficient \" + k for k, v in node.allocatable where v < 5]\n"
        "  require node.unschedulable\n"
        "  reject \"never reached\" when true\n"
        "score sc weight 7 normalize minmax\n"
        "  let n = len(node.taints)\n"
        "  ignore node when n > 1\n"
        "  value n * 2\n"
        "filter boom\n"
        "  reason \"x\"\n"
        "  require pod.explode() > 0\n"
    )
    r = load_policy_texts([("t.policy", text)], schema=schema)
    assert r.policy_set is not None, r.diagnostics
    fit, boom = r.policy_set.filters
    (sc,) = r.policy_set.scores
    env = sample_env()
    assert fit.doc == "Fit." and fit.reason == "default reason" and fit.span.line == 2
    assert fit.applies(env) is True
    assert fit.reasons(env) == ["Insufficient cpu", "Insufficient cpu", "default reason"]
    assert (sc.weight, sc.normalize, sc.ignored(env), sc.raw(env)) == (7, "minmax", True, 4)
    assert "cpu" not in env  # lets never leak into the caller's env
    with pytest.raises(PolicyRuntimeError) as info:
        boom.reasons(env)
    assert info.value.rule == "boom" and info.value.span is not None and info.value.span.line == 16
    again = load_policy_texts([("t.policy", text)], schema=schema).policy_set
    assert again is not None and r.policy_set.digest == again.digest


def test_policy_set_order_and_digest(schema: Schema) -> None:
    a = ("b/20-b.policy", "filter two\n  reason \"r\"\n  require true\nfilter three\n  reason \"r\"\n  require true\n")
    b = ("a/10-a.policy", "filter one\n  reason \"r\"\n  require true\nscore one weight 1\n  value 1\n")
    r1 = load_policy_texts([a, b], schema=schema)
    r2 = load_policy_texts([b, a], schema=schema)
    assert r1.policy_set is not None and r2.policy_set is not None
    assert [f.name for f in r1.policy_set.filters] == ["one", "two", "three"]
    assert r1.policy_set.digest == r2.policy_set.digest
    r3 = load_policy_texts([a, (b[0], b[1] + "\n")], schema=schema)
    assert r3.policy_set is not None and r3.policy_set.digest != r1.policy_set.digest


def test_reject_pod_is_decided_once_per_pod(schema: Schema) -> None:
    text = (
        "filter pinned\n"
        "  reason \"node-level reason\"\n"
        "  reject pod \"too low: \" + pod.name when pod.priority < 10\n"
        "  reject pod \"never: second clause\" when true\n"
        "  require node.unschedulable\n"
        "filter open\n"
        "  reason \"r\"\n"
        "  reject pod pod.name when pod.priority > 10\n"
        "  require true\n"
    )
    r = load_policy_texts([("t.policy", text)], schema=schema)
    assert r.policy_set is not None, r.diagnostics
    pinned, open_ = r.policy_set.filters
    env = sample_env()
    # first matching pod-level clause wins; `pod.name` right after `reject pod` still reads as an expression
    assert pinned.pod_rejection({"pod": env["pod"], "cluster": env["cluster"]}) == "too low: web"
    assert open_.pod_rejection({"pod": env["pod"], "cluster": env["cluster"]}) is None
    assert pinned.reasons(env) == ["node-level reason"]  # node-level clauses are separate


def test_digest_depends_on_content_not_location(schema: Schema, tmp_path: Path) -> None:
    """lint in CI, simulate from the wheel and the ConfigMap in the cluster must agree on the digest."""
    text = "filter one\n  reason \"r\"\n  require true\n"
    for d in ("a", "b/c"):
        (tmp_path / d).mkdir(parents=True)
        (tmp_path / d / "10-one.policy").write_text(text)
    from policyscheduler.loader import load_policy_set

    first = load_policy_set([tmp_path / "a"], schema=schema).policy_set
    second = load_policy_set([tmp_path / "b" / "c"], schema=schema).policy_set
    from_configmap = load_policy_texts([("10-one.policy", text)], schema=schema).policy_set
    renamed = load_policy_texts([("20-one.policy", text)], schema=schema).policy_set
    assert first is not None and second is not None and from_configmap is not None and renamed is not None
    assert first.digest == second.digest == from_configmap.digest
    assert renamed.digest != first.digest


@pytest.mark.parametrize(("expr", "want"), [
    ('int("10")', 10), ('int("+5")', 5), ('int("-3")', -3), ('int(" 5", default 7)', 7), ('int("5.0", default 7)', 7),
    ('int("0x10", default -1)', -1), ("int(2.9)", 2), ("int(-2.9)", -2), ('float(".5")', 0.5),
    ('float("-2e3")', -2000.0), ('float("Inf", default 0.0)', 0.0), ('quantity("500m")', Fraction(1, 2)),
    ('quantity("2Gi") == 2Gi', True), ('quantity("5Xi", default 0)', Fraction(0)), ('is_int("12")', True),
    ('is_int("1.5")', False), ('is_float("1.5")', True), ('is_quantity("1Ki")', True), ("str(42)", "42"),
    ("str(0.5)", "0.5"), ("str(1000000.0)", "1e+06"), ("str(1.0)", "1"), ("str(500m)", "500m"),
    ("str(2Gi)", "2147483648"), ("str(true)", "true"), ('str("x")', "x"), ('starts_with("gpu-1", "gpu")', True),
    ('ends_with("gpu-1", "-1")', True), ('split("a,b,,c", ",")', ("a", "b", "", "c")), ('split("", ",")', ("",)),
    ('split("ab", "")', ("a", "b")), ('lower("EU-West")', "eu-west"),
])
def test_conversion_and_string_builtins(schema: Schema, expr: str, want: object) -> None:
    got = ev(schema, expr)
    assert got == want and type(got) is type(want)
