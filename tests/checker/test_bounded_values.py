"""Issue 24: load-time computation on bounded values, and the probes about literals and locations."""

from __future__ import annotations

import pytest

from policyscheduler.diagnostics import ERROR, WARNING
from policyscheduler.loader import load_policy_texts
from policyscheduler.syntax.transformer import MAX_DEPTH
from tests.schema_fixture import sample_env, test_schema

SCHEMA = test_schema()


def _score(value: str, *lets: str) -> str:
    return "score s weight 1 normalize minmax\n" + "".join(f"  let {x}\n" for x in lets) + f"  value {value}\n"


def test_int64_min_is_a_literal() -> None:
    result = load_policy_texts([("m.policy", _score("(if lo < 0 then 1 else 0) + len(node.name) % 2",
                                                     "lo = -9223372036854775808"))], schema=SCHEMA)
    assert result.policy_set is not None, result.diagnostics
    assert not result.diagnostics
    (rule,) = result.policy_set.scores
    assert rule.raw(sample_env()) in (1, 2)
    # one further is still out of range, as is INT64_MAX + 1 without the minus
    for text in ("-9223372036854775809", "9223372036854775808"):
        diags = load_policy_texts([("m.policy", _score(f"({text} + len(node.name)) % 2"))], schema=SCHEMA).diagnostics
        assert [d.code for d in diags] == ["too-large"]


def test_negating_int64_min_is_an_overflow() -> None:
    diags = load_policy_texts([("m.policy", _score("(-lo + len(node.name)) % 2", "lo = -9223372036854775808"))],
                              schema=SCHEMA).diagnostics
    assert [(d.code, d.span.line, d.span.col) for d in diags if d.span] == [("overflow", 3, 10)]


@pytest.mark.parametrize(("lets", "value", "where"), [
    (("a = 3037000500",), "(a * a + len(node.name)) % 2", (3, 12)),  # at the operator
    (("a = 9223372036854775807", "b = a + 1"), "(b + len(node.name)) % 2", (3, 13)),
    (("a = 9223372036854775807",), "(len(node.name) + (a - -1)) % 2", (3, 30)),
    ((), "(len(node.name) + 4611686018427387904 * 2) % 2", (2, 47)),
])
def test_a_constant_int_beyond_64_bits_is_an_overflow_where_it_arises(
        lets: tuple[str, ...], value: str, where: tuple[int, int]) -> None:
    diags = load_policy_texts([("o.policy", _score(value, *lets))], schema=SCHEMA).diagnostics
    assert [(d.code, d.severity) for d in diags] == [("overflow", ERROR)]
    assert diags[0].span is not None and (diags[0].span.line, diags[0].span.col) == where


def test_folding_stays_within_64_bits_and_in_range_constants_fold_silently() -> None:
    lets = ["a0 = 2"] + [f"a{i} = a{i - 1} * 2" for i in range(1, 62)]
    result = load_policy_texts([("f.policy", _score("(a61 / 2 + len(node.name)) % 100", *lets))], schema=SCHEMA)
    assert result.policy_set is not None, result.diagnostics
    lets.append("a62 = a61 * 2")  # 2^63: one past INT64_MAX
    diags = load_policy_texts([("f.policy", _score("(a62 + len(node.name)) % 100", *lets))], schema=SCHEMA).diagnostics
    assert [d.code for d in diags] == ["overflow"]


def test_bidi_control_characters_in_strings_are_reported() -> None:
    text = 'filter f\n  reason "r"\n  require node.name != "admin\u202e\u2066 // check\u2069"\n'
    diags = load_policy_texts([("b.policy", text)], schema=SCHEMA).diagnostics
    assert [(d.code, d.severity, d.span.line if d.span else 0) for d in diags] == [("bidi-control", WARNING, 3)]
    assert "U+202E" in diags[0].message
    plain = 'filter f\n  reason "r"\n  require node.name != "admin // check"\n'
    assert not load_policy_texts([("b.policy", plain)], schema=SCHEMA).diagnostics


def test_a_deeply_nested_expression_is_too_deep_with_a_location() -> None:
    expr = "(" * 300 + "len(node.name)" + " + 1)" * 300
    text = 'filter ok\n  reason "r"\n  require true\n' + _score(expr)
    diags = load_policy_texts([("d.policy", text)], schema=SCHEMA).diagnostics
    assert [d.code for d in diags] == ["too-deep"]
    assert diags[0].span is not None and diags[0].span.file == "d.policy" and diags[0].span.line == 5
    # a little less than the limit loads and compiles (the compiler recurses four frames per operator)
    n = MAX_DEPTH - 10
    ok = load_policy_texts([("d.policy", _score("(" * n + "len(node.name)" + " + 1)" * n + " % 2"))], schema=SCHEMA)
    assert ok.policy_set is not None, ok.diagnostics
