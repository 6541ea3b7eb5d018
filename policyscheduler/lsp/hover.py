"""Hover: the reference entry of a builtin, field, method or root, and a rule's docstring."""

from __future__ import annotations

import re

from lsprotocol import types

from policyscheduler.checker.types import RecordT
from policyscheduler.lsp import reference
from policyscheduler.lsp.layers import Layered
from policyscheduler.lsp.navigation import rule_hover
from policyscheduler.lsp.positions import utf16_col, word_at

__all__ = ["hover"]

_OWNER = re.compile(r"([A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*)\s*\.\s*$")


def _text(lines: list[str], line: int, col: int) -> str:
    return "\n".join([*lines[:line], lines[line][:col]])


def hover(layered: Layered | None, lines: list[str], pos: types.Position) -> types.Hover | None:
    """What the word under ``pos`` is, in markdown, with the word's range."""
    found = word_at(lines, pos)
    if found is None:
        return None
    word, start, end = found
    text = rule_hover(layered, lines, pos) if layered is not None else None
    if text is None:
        before = _text(lines, pos.line, start)
        owner = _OWNER.search(before)
        if owner is not None:  # a member: x.word
            chain = [p.strip() for p in owner.group(1).split(".")]
            t = reference.resolve(chain, reference.local_types(before[: owner.start()]))
            text = reference.member_entry(t.name, word) if isinstance(t, RecordT) else None
        else:
            local = reference.local_types(before).get(word)
            text = reference.builtin_entry(word) or reference.root_entry(word) or \
                (f"```policy\n{word}: {local}\n```" if local is not None else None)
    if text is None:
        return None
    line = lines[pos.line]
    rng = types.Range(types.Position(pos.line, utf16_col(line, start)), types.Position(pos.line, utf16_col(line, end)))
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text), range=rng)
