"""Completion: members after ``x.``, rule names after ``override``/``disable``/``replace``, else names.

Members come from the schema (the checker's record types), resolved through the text before the cursor
(see :func:`policyscheduler.lsp.reference.local_types`); rule names from the layered set the document
belongs to, so ``override score `` offers the bundled defaults and the folder's own rules.
"""

from __future__ import annotations

import re

from lsprotocol import types

from policyscheduler.checker.env import GENERIC_DOCS
from policyscheduler.lsp import reference
from policyscheduler.lsp.layers import Layered
from policyscheduler.lsp.navigation import naming_prefix, rule_index
from policyscheduler.lsp.positions import char_col, line_prefix
from policyscheduler.syntax.grammar import RESERVED_WORDS

__all__ = ["complete"]

_MEMBER = re.compile(r"([A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*)\s*\.\s*([A-Za-z_]\w*)?$")
_HEADERS = re.compile(r"^\s*(filter|score|preempt|use|disable|override|replace)\b", re.MULTILINE)
_STATEMENT = re.compile(r"^\s*(override|disable|replace)\s+[a-z]*$")
_CLAUSE_WORDS = ("reason", "applies", "when", "let", "require", "reject", "each", "ignore", "node", "value",
                 "victim", "weight", "normalize", "skip", "else", "max", "min")


def _text_before(lines: list[str], pos: types.Position) -> str:
    head = lines[: pos.line]
    line = lines[pos.line] if pos.line < len(lines) else ""
    return "\n".join([*head, line[: char_col(line, pos.character)]])


def _markdown(text: str) -> types.MarkupContent | None:
    return types.MarkupContent(kind=types.MarkupKind.Markdown, value=text) if text else None


def member_items(before: str) -> list[types.CompletionItem] | None:
    """Fields and methods of the expression before the last ``.``; None when the cursor is not after one."""
    m = _MEMBER.search(before)
    if m is None:
        return None
    chain = [p.strip() for p in m.group(1).split(".")]
    t = reference.resolve(chain, reference.local_types(before[: m.start()]))
    if t is None:
        return []
    return [types.CompletionItem(
        label=mem.name, detail=mem.detail, documentation=_markdown(mem.doc),
        kind=types.CompletionItemKind.Method if mem.is_method else types.CompletionItemKind.Field)
        for mem in reference.members(t)]


def complete(layered: Layered | None, lines: list[str], pos: types.Position) -> list[types.CompletionItem]:
    """The completion items at ``pos``."""
    kind = naming_prefix(lines, pos)
    if kind is not None:
        if layered is None:
            return []
        return [types.CompletionItem(label=name, kind=types.CompletionItemKind.Reference,
                                     detail=f"{kind} ({defs[0].file})",
                                     documentation=_markdown(defs[0].rule.doc.strip()))
                for (k, name), defs in rule_index(layered).items() if k == kind]
    if _STATEMENT.match(line_prefix(lines, pos)):
        return [types.CompletionItem(label=w, kind=types.CompletionItemKind.Keyword) for w in ("filter", "score", "preempt")]
    before = _text_before(lines, pos)
    members = member_items(before)
    if members is not None:
        return members
    items = [types.CompletionItem(label=name, kind=types.CompletionItemKind.Function,
                                  detail="builtin", documentation=_markdown(reference.builtin_entry(name) or ""))
             for name in reference.builtin_names()]
    items += [types.CompletionItem(label=name, kind=types.CompletionItemKind.Variable,
                                   detail=str(t), documentation=_markdown(reference.root_entry(name) or ""))
              for name, t in reference.schema().roots.items()]
    items.append(types.CompletionItem(label="now", kind=types.CompletionItemKind.Variable, detail="timestamp",
                                      documentation=_markdown(reference.root_entry("now") or "")))
    headers = _HEADERS.findall(before)
    if headers and headers[-1] == "preempt":  # inside a preempt rule: its candidate victim too
        items.append(types.CompletionItem(label="target", kind=types.CompletionItemKind.Variable,
                                          detail=str(reference.resolve(["target"], {})),
                                          documentation=_markdown(reference.root_entry("target") or "")))
    items += [types.CompletionItem(label=name, kind=types.CompletionItemKind.Variable, detail=str(t))
              for name, t in reference.local_types(before).items()]
    items += [types.CompletionItem(label=w, kind=types.CompletionItemKind.Keyword)
              for w in dict.fromkeys([*RESERVED_WORDS, *_CLAUSE_WORDS]) if w not in GENERIC_DOCS]
    return items
