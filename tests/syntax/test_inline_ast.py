"""The AST built inside the LALR parser (syntax/transformer.py) is exactly the AST that lark's own route
gives: a parse tree with ``propagate_positions`` and then a transformer over it.

The reference below is that route, built here from the same grammar and the same node builders, so what
is compared is the part the inline parser reimplements: positions (containers of inlined rules such as
``( expr )``, anonymous keywords at the start and end of a rule), child filtering, ``[optional]``
placeholders and ``_helper`` lists. Spans are part of dataclass equality, so a column off by one fails.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedInput, VisitError

from policyscheduler.checker.examples import EXAMPLES
from policyscheduler.diagnostics import Span
from policyscheduler.source import SourceFile
from policyscheduler.syntax import ast, parse
from policyscheduler.syntax.grammar import _reserve, get_parser, grammar_text
from policyscheduler.syntax.transformer import MAX_DEPTH, DefaultMisplaced, TooDeep, _Build, parse_text

REPO = Path(__file__).resolve().parents[2]


class _Reference(Transformer[Token, Any]):
    """lark's tree -> our AST through the same builder methods, with lark's ``meta`` as the span."""

    def __init__(self, file: str) -> None:
        super().__init__()
        self.build = _Build(file)
        self.file = file

    def __default__(self, data: str, children: list[Any], meta: Any) -> Any:
        span = Span(self.file, 1, 1, 1, 1) if meta.empty else Span(
            self.file, meta.line, meta.column, meta.end_line, meta.end_column)
        return getattr(self.build, data)(span, children)


_TREE_PARSER: list[Lark] = []


def _reference(text: str, file: str) -> tuple[ast.Module, Exception | None]:
    """The tree route's module, and the problem its builders deferred (a misplaced default), if any."""
    if not _TREE_PARSER:
        _TREE_PARSER.append(Lark(grammar_text(), parser="lalr", lexer="contextual", propagate_positions=True,
                                 maybe_placeholders=True, lexer_callbacks={"NAME": _reserve}))
    ref = _Reference(file)
    module = ref.transform(_TREE_PARSER[0].parse(text))
    assert isinstance(module, ast.Module)
    return module, ref.build.deferred


def _texts() -> dict[str, str]:
    found = {str(p.relative_to(REPO)): p.read_text(encoding="utf-8")
             for d in ("policies", "examples", "tests") for p in sorted((REPO / d).rglob("*.policy"))}
    found.update({f"example {code}": ex.text for code, ex in EXAMPLES.items() if ex.text is not None})
    return found


_CASES = {
    "parentheses": "score s weight 1\n  value ((1 + (2)) * (((3))))\n",
    "keywords first and last": 'filter f\n  reason "r"\n  require not (node.unschedulable)\n',
    "placeholders": ("score s weight -2.5 normalize minmax\n  let a = [x for x in [1, 2,] where x > 1]\n"
                     "  value max(y in a: y, default 0) + count(k, v in node.labels) + sum(z in a where true: z)\n"),
    "calls and defaults": 'score s weight 1\n  value int(node.labels["a"], default 0) + max(1, 2) + len([])\n',
    "layering": ('use defaults none\ndisable score image_locality\noverride score x weight 3 normalize scale '
                 'skip when pod.name == "a"\nreplace score y\n  value 1\nreplace filter z reason "r"\n'
                 '  reject pod "no" when true\n  reject each ["a"]\n'),
    "empty": "",
    "comments only": "# nothing\n## here\n",
}


@pytest.mark.parametrize("name", [*_texts(), *_CASES])
def test_inline_ast_is_the_tree_route_ast(name: str) -> None:
    text = {**_texts(), **_CASES}[name]
    try:
        expected, deferred = _reference(text, name)
    except UnexpectedInput as exc:  # a file with syntax errors on purpose: the same error both ways
        with pytest.raises(type(exc)) as raised:
            parse_text(get_parser(), text, name)
        assert (raised.value.line, raised.value.column) == (exc.line, exc.column)
        return
    except (RecursionError, VisitError):  # nested deeper than lark's recursive transformer goes
        with pytest.raises(TooDeep):
            parse_text(get_parser(), text, name)
        return
    if deferred is not None:
        with pytest.raises(type(deferred)):
            parse_text(get_parser(), text, name)
        return
    assert parse_text(get_parser(), text, name) == expected


def test_an_override_keeps_its_own_span_after_its_settings() -> None:
    module = parse_text(get_parser(), "override score s weight 2 normalize none\n", "t.policy")
    (stmt,) = module.statements
    assert isinstance(stmt, ast.Override)
    assert stmt.span == Span("t.policy", 1, 1, 1, 41)
    assert [what for what, _ in stmt.settings] == ["weight", "normalize"]


def test_too_deep_is_refused_while_parsing_with_a_located_error() -> None:
    deep = "score s weight 1\n  value " + "-" * (MAX_DEPTH + 10) + "1\n"
    with pytest.raises(TooDeep):
        parse_text(get_parser(), deep, "d.policy")
    _, diags = parse(SourceFile("d.policy", 'filter ok\n  reason "r"\n  require true\n' + deep))
    # located at the deep expression (line 5), not at the start of the parsed segment
    assert [(d.code, d.span.line if d.span else None) for d in diags] == [("too-deep", 5)]
    # one level less than the limit still parses (the checker has the last word on it)
    fine = "score s weight 1\n  value " + "-" * (MAX_DEPTH - 10) + "1\n"
    assert parse_text(get_parser(), fine, "d.policy").rules


def test_a_syntax_error_is_reported_before_a_misplaced_default_of_the_same_rule() -> None:
    text = 'score s weight 1\n  value int(node.labels["a"], default 0, 1) + )\n'
    _, diags = parse(SourceFile("t.policy", text))
    assert [d.code for d in diags] == ["unexpected-token"]
    with pytest.raises(DefaultMisplaced):
        parse_text(get_parser(), 'score s weight 1\n  value int(node.labels["a"], default 0, 1)\n', "t.policy")


def test_concurrent_parses_do_not_share_state() -> None:
    """The callbacks are per parse: two threads parsing different files get their own file names."""
    from concurrent.futures import ThreadPoolExecutor

    text = "".join(f'filter f{i}\n  reason "r"\n  require node.name != "n{i}"\n' for i in range(300))
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda n: parse_text(get_parser(), text, f"file{n}"), range(8)))
    for n, module in enumerate(results):
        assert {r.span.file for r in module.rules} == {f"file{n}"}
        assert len(module.rules) == 300
