"""Rules by name across the layered set: go-to-definition, hover on rule names, document symbols.

An ``override``/``disable``/``replace`` line names a rule of the set it is loaded into -- usually a
bundled default -- so the definition of that name is looked up over the whole layer (the bundled files,
then the folder's files, in load order), and jumping from ``override score image_locality`` opens the
bundled ``95-image-locality.policy``. The ASTs are the loader's own (kept with the load), so the
positions are the parser's spans.
"""

from __future__ import annotations

import dataclasses
import re

from lsprotocol import types

from policyscheduler.lsp.layers import Layered, uri_for
from policyscheduler.lsp.positions import line_prefix, span_range, word_at
from policyscheduler.source import SourceFile
from policyscheduler.syntax import ast, parse

__all__ = ["RuleDef", "rule_index", "rule_at", "definitions", "document_symbols", "rule_hover"]

_NAMING = re.compile(r"\b(override|disable|replace)\s+(filter|score|preempt)\s+$")
_HEADER = re.compile(r"^\s*(filter|score|preempt)\s+$")


@dataclasses.dataclass(frozen=True)
class RuleDef:
    """One rule as written in one file."""

    kind: str
    name: str
    file: str
    rule: ast.Rule
    source: SourceFile


def rule_index(layered: Layered) -> dict[tuple[str, str], list[RuleDef]]:
    """(kind, name) -> the rules of that name, in layer order (defaults first, then the folder's files)."""
    result = layered.result
    order = [*result.default_files, *result.user_files]
    names = order + [n for n in result.sources if n not in order]
    index: dict[tuple[str, str], list[RuleDef]] = {}
    for name in names:
        src = result.sources.get(name)
        if src is None:
            continue
        module = layered.modules.get(name)
        for rule in module.rules if module is not None else ():
            index.setdefault((rule.kind, rule.name), []).append(RuleDef(rule.kind, rule.name, name, rule, src))
    return index


def rule_at(lines: list[str], pos: types.Position) -> tuple[str, str] | None:
    """(kind, name) when the cursor is on a rule name: a header, or an override/disable/replace target."""
    found = word_at(lines, pos)
    if found is None:
        return None
    word, start, _ = found
    before = lines[pos.line][:start] if pos.line < len(lines) else ""
    m = _NAMING.search(before) or _HEADER.match(before)
    if m is None:
        return None
    return m.group(m.lastindex or 1), word


def definitions(layered: Layered, lines: list[str], pos: types.Position,
                open_uris: dict[str, str]) -> list[types.Location]:
    """Where the rule under the cursor is defined; a replaced rule's original comes first."""
    target = rule_at(lines, pos)
    if target is None:
        return []
    defs = rule_index(layered).get(target, [])
    defs = sorted(defs, key=lambda d: d.rule.replaces)  # the original rule, then its replacements
    return [types.Location(uri_for(d.file, open_uris), span_range(d.rule.name_span, d.source.lines))
            for d in defs]


def rule_hover(layered: Layered, lines: list[str], pos: types.Position) -> str | None:
    """A rule's docstring and where it is defined, for hover on its name."""
    target = rule_at(lines, pos)
    if target is None:
        return None
    defs = rule_index(layered).get(target, [])
    if not defs:
        return None
    first = sorted(defs, key=lambda d: d.rule.replaces)[0]
    head = f"**{first.kind} `{first.name}`** ({first.file}:{first.rule.name_span.line})"
    return head + (f"\n\n{first.rule.doc.strip()}" if first.rule.doc.strip() else "")


def _rule_symbol(rule: ast.Rule, lines: list[str]) -> types.DocumentSymbol:
    if isinstance(rule, ast.ScoreRule):
        detail = f"score weight {rule.weight_text or '(kept)'}" + (f" normalize {rule.normalize}"
                                                                   if rule.normalize else "")
    else:
        detail = "filter"
    if rule.replaces:
        detail = "replace " + detail
    return types.DocumentSymbol(name=rule.name, detail=detail, kind=types.SymbolKind.Function,
                                range=span_range(rule.span, lines),
                                selection_range=span_range(rule.name_span, lines))


def document_symbols(name: str, text: str) -> list[types.DocumentSymbol]:
    """The rules of one file, and its override/disable statements, in file order."""
    module, _ = parse(SourceFile(name, text))
    if module is None:
        return []
    lines = text.splitlines()
    items: list[tuple[int, types.DocumentSymbol]] = [(r.span.line, _rule_symbol(r, lines)) for r in module.rules]
    for s in module.statements:
        if isinstance(s, (ast.Override, ast.Disable)):
            verb = "override" if isinstance(s, ast.Override) else "disable"
            items.append((s.span.line, types.DocumentSymbol(
                name=f"{verb} {s.kind} {s.name}", kind=types.SymbolKind.Event, range=span_range(s.span, lines),
                selection_range=span_range(s.name_span, lines))))
    return [sym for _, sym in sorted(items, key=lambda i: i[0])]


def naming_prefix(lines: list[str], pos: types.Position) -> str | None:
    """The rule kind when the cursor is where an override/disable/replace expects a rule name."""
    prefix = line_prefix(lines, pos)
    m = re.search(r"\b(override|disable|replace)\s+(filter|score|preempt)\s+[A-Za-z_0-9]*$", prefix)
    return m.group(2) if m else None
