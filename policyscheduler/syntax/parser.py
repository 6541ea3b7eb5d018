"""``parse(SourceFile) -> (Module | None, diagnostics)``: lark errors become friendly diagnostics.

Error recovery: a file is cut into segments, one per rule (a segment starts at a line whose first word
is ``filter`` or ``score``). After a parse error the failing rule's segment is dropped and the text
before and after it is parsed again, so one run reports an error per broken rule and still returns the
rules that parse (the checker can then report their problems too).
"""

from __future__ import annotations

import dataclasses
import re

from lark import Token
from lark.exceptions import (
    LarkError,
    UnexpectedCharacters,
    UnexpectedInput,
    UnexpectedToken,
)

from policyscheduler.diagnostics import Diagnostic, Span, error
from policyscheduler.source import SourceFile
from policyscheduler.syntax import ast
from policyscheduler.syntax.grammar import get_parser
from policyscheduler.syntax.transformer import DefaultMisplaced, TooDeep, parse_text

MAX_PARSE_ERRORS = 20

_RULE_START = re.compile(r"^[ \t]*(filter|score|preempt|use|disable|override|replace)\b", re.MULTILINE)
_ITEM_KEYWORDS = {"FILTER", "SCORE", "PREEMPT", "USE", "DISABLE", "OVERRIDE", "REPLACE"}

_NAMED = {
    "NAME": "a name",
    "INT": "an integer",
    "FLOAT": "a number",
    "QUANTITY": "a quantity",
    "STRING": "a string",
    "AGG_MINMAX": "'max'/'min'",
    "REJECT_POD": "'reject pod'",
    "$END": "end of file",
}
_EXPR_START = {"NAME", "INT", "FLOAT", "QUANTITY", "STRING", "LSQB", "LPAR"}
_OPERATORS = {"PLUS", "STAR", "SLASH", "PERCENT", "DOT", "LESSTHAN", "MORETHAN"}
_CLAUSES = {"REASON", "APPLIES", "LET", "REQUIRE", "REJECT", "IGNORE", "VALUE"}


def _terminal_display() -> dict[str, str]:
    shown: dict[str, str] = {}
    for term in get_parser().terminals:
        if term.pattern.type == "str":
            shown[term.name] = f"'{term.pattern.value}'"
        else:
            shown[term.name] = _NAMED.get(term.name, term.name.lower())
    shown.update({k: v for k, v in _NAMED.items() if k not in shown})
    return shown


def _describe_expected(expected: set[str]) -> str:
    shown = _terminal_display()
    parts: list[str] = []
    rest = set(expected)
    if rest >= _EXPR_START:
        parts.append("an expression")
        rest -= _EXPR_START | {"MINUS", "NOT", "ALL", "ANY", "IF", "COUNT", "SUM", "AGG_MINMAX", "TRUE", "FALSE"}
    if len(_OPERATORS & rest) >= 4:
        parts.append("an operator")
        rest -= _OPERATORS | {"MINUS", "EQUAL", "NOTEQUAL", "LESSEQUAL", "MOREEQUAL", "__ANON_0", "__ANON_1",
                              "__ANON_2", "__ANON_3", "AND", "OR", "IN", "NOT", "LPAR", "LSQB"}
        rest = {t for t in rest if shown.get(t, "").strip("'") not in {"==", "!=", "<=", ">="}}
    if len(_CLAUSES & rest) >= 4:
        parts.append("the next clause")
        rest -= _CLAUSES
        if {"FILTER", "SCORE"} <= rest:
            parts.append("the next rule")
            rest -= _ITEM_KEYWORDS | {"$END"}
    parts.extend(sorted(shown.get(t, t) for t in rest))
    if not parts:
        return "something else"
    if len(parts) > 8:
        parts = [*parts[:8], "..."]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]


def _describe_token(tok: Token) -> str:
    if tok.type == "$END":
        return "end of file"
    if tok.type == "NAME":
        return f"name '{tok}'"
    if tok.type in {"INT", "FLOAT", "QUANTITY", "STRING"}:
        return f"{_NAMED[tok.type].split(' ', 1)[1]} {tok}"
    if str(tok).isalpha():
        return f"keyword '{tok}'"
    return f"'{tok}'"


_CHAR_HINTS = {
    "&": " (use 'and')",
    "|": " (use 'or')",
    "!": " (use 'not', or '!=' to compare)",
    "'": " (strings use double quotes)",
    "=": " (use '==' to compare)",
}


def _diagnose(exc: UnexpectedInput, src: SourceFile) -> Diagnostic:
    """One diagnostic for a lark error, with what was expected and a hint for common slips."""
    if isinstance(exc, UnexpectedCharacters):
        line, col = exc.line, exc.column
        span = Span(src.name, line, col, line, col + 1)
        if exc.char == '"':
            return error("unterminated-string", "string literal is not closed on this line", span)
        hint = _CHAR_HINTS.get(exc.char, "")
        return error("unexpected-character", f"unexpected character {exc.char!r}{hint}", span)
    if isinstance(exc, UnexpectedToken):
        tok = exc.token
        missing = _reject_without_reason(exc, src)
        if missing is not None:
            return missing
        expected_set = set(getattr(exc, "accepts", None) or exc.expected or ())
        expected = _describe_expected(expected_set)
        if tok.type == "$END":
            line, col = tok.end_line or tok.line or 1, tok.end_column or tok.column or 1
            return error("unexpected-eof", f"unexpected end of file; expected {expected}",
                         Span(src.name, line, col, line, col))
        span = Span(src.name, tok.line or 1, tok.column or 1, tok.end_line or tok.line or 1,
                    tok.end_column or (tok.column or 1) + max(1, len(tok)))
        hint = ""
        if str(tok) == "=" and expected_set & {"__ANON_0", "EQUAL"} | {t for t in expected_set if "EQ" in t}:
            hint = " (use '==' to compare)"
        elif "NAME" in expected_set and "INT" not in expected_set and str(tok).isidentifier():
            hint = f" ('{tok}' is a keyword and cannot be used as a name)"
        elif tok.type in {"LESSTHAN", "MORETHAN", "__ANON_0", "__ANON_1", "__ANON_2", "__ANON_3", "IN"}:
            hint = " (comparisons do not chain; use 'and')"
        elif str(tok) in ("all", "any", "if"):
            hint = _parenthesis_hint(str(tok), src.line(tok.line or 1)[: (tok.column or 1) - 1])
        return error("unexpected-token", f"unexpected {_describe_token(tok)}{hint}; expected {expected}", span)
    line, col = getattr(exc, "line", 1) or 1, getattr(exc, "column", 1) or 1
    return error("parse-error", str(exc).splitlines()[0], Span(src.name, line, col, line, col + 1))


_OPERATOR_BEFORE = re.compile(r"(\band|\bor|\bnot|==|!=|<=|>=|<|>|\+|-|\*|/|%|\bin)\s*$")


def _parenthesis_hint(keyword: str, before: str) -> str:
    """``x and all p in L: ...``: a quantifier (or ``if``) extends as far right as it can, so the grammar
    takes it only as a whole expression; after an operator it needs parentheses."""
    m = _OPERATOR_BEFORE.search(before)
    if m is None:
        return ""
    op = m.group(1)
    shape = "if C then A else B" if keyword == "if" else f"{keyword} p in L: ..."
    what = "an 'if'" if keyword == "if" else f"a quantifier ('{keyword}')"
    return f" ({what} after '{op}' needs parentheses: x {op} ({shape}))"


_REJECT_WHEN = re.compile(r"\breject\s+when\b")


def _reject_without_reason(exc: UnexpectedToken, src: SourceFile) -> Diagnostic | None:
    """``reject when C``: the reason was left out, which the grammar can only see as a name ``when``."""
    tok = exc.token
    line = (tok.end_line or tok.line or 1) if tok.type == "$END" else (tok.line or 1)
    col = (tok.end_column or 1) if tok.type == "$END" else (tok.column or 1)
    before = src.line(line)[: col - 1]
    lines = [(line, before)]
    if line > 1:
        lines.insert(0, (line - 1, src.line(line - 1)))
    for ln, text in reversed(lines):
        found = list(_REJECT_WHEN.finditer(text))
        if found:
            m = found[-1]
            span = Span(src.name, ln, m.start() + 1, ln, m.end() + 1)
            return error("reject-needs-reason", "'reject' needs its reason before 'when': "
                         "reject \"REASON\" when CONDITION (or 'require NOT-CONDITION' to use the rule's "
                         "'reason')", span)
    return None


@dataclasses.dataclass
class _Segments:
    starts: list[int]  # offsets (line starts)
    lines: list[int]  # 1-based line of each start
    cols: list[int]  # 1-based column of the rule keyword


def _segments(text: str) -> _Segments:
    """Rule starts with their lines, counted incrementally from the previous start: one pass over the
    text (recounting from the start of the file for each rule made lint quadratic in rules per file)."""
    starts, lines, cols = [0], [1], [1]
    prev, line = 0, 1
    for m in _RULE_START.finditer(text):
        off = m.start()
        if off == 0:
            lines[0], cols[0] = 1, m.start(1) + 1
            continue
        line += text.count("\n", prev, off)
        prev = off
        starts.append(off)
        lines.append(line)
        cols.append(m.start(1) - off + 1)
    return _Segments(starts, lines, cols)


def parse(src: SourceFile) -> tuple[ast.Module | None, list[Diagnostic]]:
    """Parse one file. Returns the rules that parsed (None when nothing did) and the diagnostics."""
    segs = _segments(src.text)
    items: list[ast.Rule | ast.Statement] = []
    diags: list[Diagnostic] = []
    _parse_range(src, segs, 0, len(segs.starts), items, diags)
    items.sort(key=lambda r: (r.span.line, r.span.col))
    lines = src.lines
    rules = [_with_doc(r, _doc_above(lines, r.span.line)) for r in items
             if isinstance(r, ast.RULE_TYPES)]
    statements = tuple(s for s in items if not isinstance(s, ast.RULE_TYPES))
    end_line = max(1, len(lines))
    module = ast.Module(src.name, tuple(rules), Span(src.name, 1, 1, end_line, len(lines[-1]) + 1 if lines else 1),
                        statements)
    if diags and not items:
        return None, diags
    return module, diags


def _parse_range(src: SourceFile, segs: _Segments, a: int, b: int,
                 rules: list[ast.Rule | ast.Statement], diags: list[Diagnostic]) -> None:
    if a >= b or len(diags) >= MAX_PARSE_ERRORS:
        return
    start = segs.starts[a]
    end = segs.starts[b] if b < len(segs.starts) else len(src.text)
    text = "\n" * (segs.lines[a] - 1) + src.text[start:end]
    try:
        module = parse_text(get_parser(), text, src.name)
    except UnexpectedInput as exc:
        diags.append(_diagnose(exc, src))
        failed = _failing_segment(exc, segs, a, b)
        _parse_range(src, segs, a, failed, rules, diags)
        _parse_range(src, segs, failed + 1, b, rules, diags)
        return
    except DefaultMisplaced as exc:
        diags.append(error("misplaced-default", "'default D' must be the last argument of a conversion call, "
                           "e.g. int(node.labels[\"gpus\"], default 0)", exc.span))
        _parse_range(src, segs, a, _segment_of(segs, a, b, exc.span.line), rules, diags)
        _parse_range(src, segs, _segment_of(segs, a, b, exc.span.line) + 1, b, rules, diags)
        return
    except (TooDeep, RecursionError) as exc:
        line = exc.line if isinstance(exc, TooDeep) else segs.lines[a]  # where the deep expression is
        diags.append(error("too-deep", "an expression is nested too deeply; split it with 'let'",
                           Span(src.name, line, 1, line, 2)))
        return
    except (LarkError, ValueError) as exc:  # defensive: never raise for bad text (e.g. a 5000-digit int)
        line = segs.lines[a]
        diags.append(error("parse-error", f"cannot parse this part of the file: {exc}".splitlines()[0][:200],
                           Span(src.name, line, 1, line, 2)))
        return
    rules.extend(module.rules)
    rules.extend(module.statements)


def _segment_of(segs: _Segments, a: int, b: int, line: int) -> int:
    """The segment (in [a, b)) holding ``line``."""
    f = a
    for k in range(a, b):
        if segs.lines[k] <= line:
            f = k
    return f


def _failing_segment(exc: UnexpectedInput, segs: _Segments, a: int, b: int) -> int:
    tok = getattr(exc, "token", None)
    if isinstance(tok, Token) and tok.type == "$END":
        return b - 1
    line, col = exc.line, exc.column
    f = a
    for k in range(a, b):
        if segs.lines[k] <= line:
            f = k
    if (isinstance(tok, Token) and tok.type in _ITEM_KEYWORDS and f > a
            and segs.lines[f] == line and segs.cols[f] == col):
        f -= 1
    return f


def _with_doc(rule: ast.Rule, doc: str) -> ast.Rule:
    """The rule with its ``##`` docs (a copy only when there are some: most rules have none)."""
    return dataclasses.replace(rule, doc=doc) if doc != rule.doc else rule


def _doc_above(lines: list[str], line: int) -> str:
    """The ``##`` lines directly above a rule, without the markers."""
    doc: list[str] = []
    i = line - 2
    while i >= 0 and lines[i].strip().startswith("##"):
        doc.append(lines[i].strip()[2:].strip())
        i -= 1
    return "\n".join(reversed(doc))
