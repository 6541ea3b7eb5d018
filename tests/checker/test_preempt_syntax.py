"""``preempt`` rules in the language: parsing, formatting, checking, loading (the victim filtering itself
is tested in tests/cycle/test_preempt_rules.py)."""

from __future__ import annotations

import pytest

from policyscheduler.loader import load_layered, load_policy_texts
from policyscheduler.source import SourceFile
from policyscheduler.syntax import ast
from policyscheduler.syntax.format import format_source
from policyscheduler.syntax.parser import parse

RULE = """\
## Payments pods are never evicted.
preempt protect_payments
  reason "pods of namespace payments are never preempted"
  applies when pod.priority > 100  # the important ones only
  let ns = target.namespace
  victim ns != "payments" and node.name != ""
"""


def codes(text: str) -> list[str]:
    return [d.code for d in load_policy_texts([("a.policy", text)]).diagnostics]


def test_a_preempt_rule_parses_with_its_doc_and_clauses() -> None:
    module, diags = parse(SourceFile("a.policy", RULE))
    assert not diags and module is not None
    [rule] = module.rules
    assert isinstance(rule, ast.PreemptRule) and rule.kind == "preempt" and rule.name == "protect_payments"
    assert rule.doc == "Payments pods are never evicted."
    assert [type(c) for c in rule.clauses] == [ast.Reason, ast.Applies, ast.Let, ast.VictimWhen]


def test_victim_is_a_keyword_only_where_a_clause_starts() -> None:
    text = 'preempt p\n  let victim_count = 1\n  victim target.labels["victim"] == "yes" and victim_count == 1\n'
    assert codes(text) == []


def test_fmt_round_trips_and_is_idempotent() -> None:
    messy = 'preempt   p\n    victim   target.namespace!="payments"\n\n\n\ndisable preempt  q\n'
    once = format_source(SourceFile("a.policy", messy))
    assert once == 'preempt p\n  victim target.namespace != "payments"\n\ndisable preempt q\n'
    assert format_source(SourceFile("a.policy", once)) == once
    assert format_source(SourceFile("a.policy", RULE)) == RULE


@pytest.mark.parametrize(("text", "code"), [
    ('preempt p\n  reason "r"\n', "missing-victim"),
    ("preempt p\n  applies when target.priority > 1\n  victim true\n", "applies-uses-target"),
    ("preempt p\n  applies when node.name == \"a\"\n  victim true\n", "applies-uses-node"),
    ("preempt p\n  victim true\n  let x = 1\n", "clause-order"),
    ("preempt p\n  victim true\n  victim false\n", "duplicate-clause"),
    ("preempt p\n  require true\n  victim true\n", "clause-not-allowed"),
    ('filter f\n  reason "r"\n  victim true\n  require true\n', "clause-not-allowed"),
    ("preempt p\n  victim target.priority\n", "type-mismatch"),
    ("score s weight 1\n  value len(target.labels)\n", "unknown-name"),
    ("preempt p\n  victim true\npreempt p\n  victim false\n", "duplicate-rule"),
])
def test_checker_diagnostics(text: str, code: str) -> None:
    assert code in codes(text)


def test_clause_not_allowed_names_the_kind_the_clause_belongs_to() -> None:
    diags = load_policy_texts([("a.policy", 'filter f\n  reason "r"\n  victim true\n  require true\n')]).diagnostics
    assert any("'victim' belongs in a preempt rule, not in a filter rule" in d.message for d in diags)


def test_a_preempt_rule_is_compiled_apart_from_filters_and_scores() -> None:
    result = load_policy_texts([("a.policy", RULE)])
    ps = result.policy_set
    assert ps is not None and ps.filters == () and ps.scores == ()
    [rule] = ps.preempts
    assert rule.reason == "pods of namespace payments are never preempted" and rule.span.line == 2
    assert rule in ps.every_rule and rule.name not in {r.name for r in ps.rules}


def test_no_bundled_preempt_rules_and_disable_finds_a_users_rule() -> None:
    assert load_layered(texts=[("a.policy", "")], allow_empty=True).policy_set.preempts == ()  # type: ignore[union-attr]
    both = load_layered(texts=[("a.policy", "preempt p\n  victim false\n"), ("b.policy", "disable preempt p\n")])
    assert both.policy_set is not None and both.policy_set.preempts == ()
    missing = load_layered(texts=[("a.policy", "disable preempt nope\n")])
    assert "unknown-rule" in [d.code for d in missing.diagnostics]


def test_override_preempt_skip_when_and_no_weight() -> None:
    ok = load_layered(texts=[("a.policy", "preempt p\n  victim false\n"),
                             ("b.policy", "override preempt p skip when pod.priority > 5\n")])
    assert ok.policy_set is not None and not ok.diagnostics
    [rule] = ok.policy_set.preempts
    assert isinstance(rule.checked.rule.clauses[0], ast.Applies)  # type: ignore[union-attr]
    bad = load_layered(texts=[("a.policy", "preempt p\n  victim false\n"), ("b.policy", "override preempt p weight 3\n")])
    assert [d.code for d in bad.diagnostics] == ["clause-not-allowed"]
