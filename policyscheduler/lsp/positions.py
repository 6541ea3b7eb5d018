"""Positions: our spans are 1-based with character columns; LSP positions are 0-based in UTF-16 units.

Editors count columns in UTF-16 code units (the protocol's default encoding), so a line holding an emoji
or a CJK string before a diagnostic would shift every squiggle if columns were passed through as is.
"""

from __future__ import annotations

import re

from lsprotocol import types

from policyscheduler.diagnostics import Span

__all__ = ["span_range", "utf16_col", "char_col", "word_at", "line_prefix"]

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def utf16_col(line: str, chars: int) -> int:
    """The UTF-16 offset of the first ``chars`` characters of ``line``."""
    head = line[: max(0, chars)]
    return len(head) + sum(1 for ch in head if ord(ch) > 0xFFFF)


def char_col(line: str, utf16: int) -> int:
    """The character index at UTF-16 offset ``utf16`` of ``line`` (the inverse of :func:`utf16_col`)."""
    units = 0
    for i, ch in enumerate(line):
        if units >= utf16:
            return i
        units += 2 if ord(ch) > 0xFFFF else 1
    return len(line)


def _line(lines: list[str], n: int) -> str:
    return lines[n] if 0 <= n < len(lines) else ""


def span_range(span: Span | None, lines: list[str]) -> types.Range:
    """The LSP range of a 1-based, end-exclusive span over the file's ``lines`` (line 1 when None)."""
    if span is None:
        return types.Range(types.Position(0, 0), types.Position(0, 0))
    start_line = max(0, span.line - 1)
    end_line = max(start_line, span.end_line - 1)
    start = utf16_col(_line(lines, start_line), span.col - 1)
    end = utf16_col(_line(lines, end_line), max(0, span.end_col - 1))
    if end_line == start_line and end <= start:
        end = start + 1  # a point diagnostic still gets a visible squiggle
    return types.Range(types.Position(start_line, start), types.Position(end_line, end))


def word_at(lines: list[str], pos: types.Position) -> tuple[str, int, int] | None:
    """The identifier under ``pos``: (word, start char, end char) on that line, or None."""
    line = _line(lines, pos.line)
    col = char_col(line, pos.character)
    for m in _WORD.finditer(line):
        if m.start() <= col <= m.end():
            return m.group(), m.start(), m.end()
    return None


def line_prefix(lines: list[str], pos: types.Position) -> str:
    """The text of ``pos``'s line before the cursor."""
    line = _line(lines, pos.line)
    return line[: char_col(line, pos.character)]
