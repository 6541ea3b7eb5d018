"""Parser: AST shape, spans, docs, precedence and error recovery."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from policyscheduler.diagnostics import Span
from policyscheduler.source import SourceFile
from policyscheduler.syntax import ast, parse
from policyscheduler.syntax.grammar import get_parser, grammar_text


def _parse(text: str) -> tuple[ast.Module | None, list[Any]]:
    return parse(SourceFile("t.policy", text))


def _value(text: str) -> ast.Expr:
    module, diags = _parse(f"score s weight 1\n  value {text}\n")
    assert not diags, diags
    assert module is not None
    clause = module.rules[0].clauses[-1]
    assert isinstance(clause, ast.Value)
    return clause.value


def test_grammar_is_strict_lalr() -> None:
    p = get_parser()
    assert p.options.parser == "lalr" and p.options.strict
    assert get_parser() is p  # built once
    assert "start:" in grammar_text()


def test_rules_docs_and_spans() -> None:
    text = (
        "# a comment\n"
        "## Line one.\n"
        "## Line two.\n"
        "filter taint_toleration\n"
        '  reason "node(s) had untolerated taint(s)"\n'
        "  require all t in node.taints where t.effect in [\"NoSchedule\"]: pod.tolerates(t)\n"
        "\n"
        "score taint_toleration weight 3 normalize reverse\n"
        "  value 1\n"
    )
    module, diags = _parse(text)
    assert diags == []
    assert module is not None
    f, s = module.rules
    assert isinstance(f, ast.FilterRule) and isinstance(s, ast.ScoreRule)
    assert f.doc == "Line one.\nLine two."
    assert s.doc == ""
    assert f.name_span == Span("t.policy", 4, 8, 4, 24)
    assert s.weight_text == "3" and s.normalize == "reverse"
    req = f.clauses[1]
    assert isinstance(req, ast.Require) and isinstance(req.cond, ast.Quantifier)
    assert req.cond.loop.where is not None
    assert req.span.line == 6 and req.span.col == 3


def test_precedence() -> None:
    e = _value("1 + 2 * 3 - -4 % 5")
    assert isinstance(e, ast.Binary) and e.op == "-"
    assert isinstance(e.left, ast.Binary) and e.left.op == "+"
    assert isinstance(e.left.right, ast.Binary) and e.left.right.op == "*"
    assert isinstance(e.right, ast.Binary) and e.right.op == "%"
    assert isinstance(e.right.left, ast.Unary)
    b = _value("if not a and b or c in d then 1 else 2")
    assert isinstance(b, ast.IfExpr)
    assert isinstance(b.cond, ast.Binary) and b.cond.op == "or"
    assert isinstance(b.cond.left, ast.Binary) and b.cond.left.op == "and"
    assert isinstance(b.cond.left.left, ast.Unary) and b.cond.left.left.op == "not"
    assert isinstance(b.cond.right, ast.Binary) and b.cond.right.op == "in"


def test_loops_and_aggregates() -> None:
    e = _value("max(k, v in node.labels where k != \"\": len(v), default 0) + max(1, 2) + count(x in l)")
    assert isinstance(e, ast.Binary)
    left = e.left
    assert isinstance(left, ast.Binary)
    agg = left.left
    assert isinstance(agg, ast.Aggregate) and agg.kind == "max"
    assert [b.name for b in agg.loop.binders] == ["k", "v"] and agg.default is not None
    call = left.right
    assert isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "max"
    assert isinstance(e.right, ast.Aggregate) and e.right.kind == "count"
    comp = _value("[x * 2 for x in l where x > 1]")
    assert isinstance(comp, ast.Comprehension)
    q = _value("all k, v in m: v == \"\"")
    assert isinstance(q, ast.Quantifier) and len(q.loop.binders) == 2


def test_literals() -> None:
    e = _value('[1, 2.5, 500m, 2Gi, "a\\"b", true, false,]')
    assert isinstance(e, ast.ListLit)
    kinds = [type(i).__name__ for i in e.items]
    assert kinds == ["IntLit", "FloatLit", "QuantityLit", "QuantityLit", "StringLit", "BoolLit", "BoolLit"]
    assert isinstance(e.items[4], ast.StringLit) and e.items[4].raw == 'a\\"b'


def test_keyword_named_fields_are_names() -> None:
    e = _value("x.reason + x.weight + x.value")
    assert isinstance(e, ast.Binary)


def test_error_recovery_reports_each_broken_rule() -> None:
    text = (
        "filter a\n  require x = 1\n"
        "filter b\n  require true\n"
        "score c weight 1\n  value (1 +\n"
        "score d weight 1\n  value 2\n"
    )
    module, diags = _parse(text)
    assert [(d.code, d.span.line) for d in diags] == [("unexpected-token", 2), ("unexpected-token", 7)]
    assert module is not None
    assert [r.name for r in module.rules] == ["b", "d"]
    assert "'=='" in diags[0].message


def test_messages_say_what_was_expected() -> None:
    _, diags = _parse("score s weight 1\n  value\n")
    assert diags[0].code == "unexpected-eof" and "expression" in diags[0].message
    _, diags = _parse("filter f\n  require a &\n")
    assert diags[0].code == "unexpected-character" and "'and'" in diags[0].message
    _, diags = _parse('filter f\n  reason "abc\n')
    assert diags[0].code == "unterminated-string" and diags[0].span.col == 10


def test_empty_and_comment_only_files() -> None:
    assert _parse("") == (ast.Module("t.policy", (), Span("t.policy", 1, 1, 1, 1)), [])
    module, diags = _parse("# nothing here\n## not attached\n")
    assert diags == [] and module is not None and module.rules == ()


def test_grammar_prefers_the_packaged_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An installed wheel carries policyscheduler/grammar/policy.lark; a checkout falls back to grammar/."""
    import importlib.resources

    from policyscheduler.syntax import grammar

    (tmp_path / "grammar").mkdir()
    (tmp_path / "grammar" / "policy.lark").write_text("// packaged\nstart: NAME\n")
    monkeypatch.setattr(importlib.resources, "files", lambda pkg: tmp_path)
    assert grammar.grammar_text().startswith("// packaged")
    monkeypatch.setattr(importlib.resources, "files", lambda pkg: tmp_path / "nowhere")
    assert "filter_rule" in grammar.grammar_text()


def test_layering_statements_and_replace_rules() -> None:
    module, diags = _parse(
        "use defaults none\n"
        "disable score image_locality\n"
        "override score taint_toleration weight 1 normalize scale skip when pod.name == \"x\"\n"
        "replace filter node_ports\n  reason \"r\"\n  require true\n"
        "replace score node_affinity\n  value 1\n"
    )
    assert diags == [] and module is not None
    use, disable, override = module.statements
    assert isinstance(use, ast.UseDefaults) and use.mode == "none"
    assert isinstance(disable, ast.Disable) and (disable.kind, disable.name) == ("score", "image_locality")
    assert isinstance(override, ast.Override) and (override.weight_text, override.normalize) == ("1", "scale")
    assert len(override.skip) == 1 and [w for w, _ in override.settings] == ["weight", "normalize", "skip when"]
    f, s = module.rules
    assert f.replaces and s.replaces and isinstance(s, ast.ScoreRule) and s.weight_text == ""


def test_default_argument_and_its_place() -> None:
    e = _value('int(node.labels["x"], default 0)')
    assert isinstance(e, ast.Call) and len(e.args) == 1 and isinstance(e.default, ast.IntLit)
    _, diags = _parse("score s weight 1\n  value int(default 0, \"1\")\n")
    assert [d.code for d in diags] == ["misplaced-default"]


def test_statement_words_are_reserved_and_recovery_blames_the_broken_rule() -> None:
    _, diags = _parse("score s weight 1\n  let use = 1\n  value use\n")
    assert diags and "'use' is a keyword" in diags[0].message
    module, diags = _parse("score s weight 1\n  value 1 +\ndisable score x\n")
    assert [d.span.line for d in diags] == [3] and module is not None and len(module.statements) == 1


def test_parse_errors_never_show_grammar_internal_names() -> None:
    for text in ("filter f 42\n", "filter f\n  reason \"x\"\n  reason\n", "filter f\n  reject pod\n"):
        _, diags = _parse(text)
        assert diags
        for d in diags:
            assert "reject_pod" not in d.message and "__ANON" not in d.message and "_clause" not in d.message, d.message


def test_reject_without_reason_says_so() -> None:
    _, diags = _parse("filter f\n  reject when node.unschedulable\n")
    assert [(d.code, d.span.line, d.span.col) for d in diags] == [("reject-needs-reason", 2, 3)]


def test_a_binary_operation_knows_where_its_operator_is() -> None:
    """``op_span`` is the operator as written (both words of ``not in``), inside parentheses too; it takes
    no part in equality (the same expression elsewhere is the same AST)."""
    text = "score s weight 1\n  value (1 + 2) / node.pod_count + len([3]) * (3 not  in [1])\n"
    module, diags = parse(SourceFile("x.policy", text))
    assert not diags and module is not None
    value = module.rules[0].clauses[0]
    assert isinstance(value, ast.Value)
    top = value.value
    assert isinstance(top, ast.Binary) and isinstance(top.left, ast.Binary) and isinstance(top.right, ast.Binary)
    assert isinstance(top.left.left, ast.Binary) and isinstance(top.right.right, ast.Binary)
    ops = [(b.op, b.op_span) for b in (top, top.left, top.left.left, top.right, top.right.right)]
    assert ops == [("+", Span("x.policy", 2, 34, 2, 35)), ("/", Span("x.policy", 2, 17, 2, 18)),
                   ("+", Span("x.policy", 2, 12, 2, 13)), ("*", Span("x.policy", 2, 45, 2, 46)),
                   ("not in", Span("x.policy", 2, 50, 2, 57))]
    assert top.left.left == ast.Binary("+", top.left.left.left, top.left.left.right, top.left.left.span)
