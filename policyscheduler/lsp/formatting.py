"""Formatting: ``policyscheduler fmt``'s formatter on the buffer, as one whole-document edit.

A buffer that does not parse is left alone (no edit), like ``fmt`` leaves such a file alone; the
diagnostics already say why.
"""

from __future__ import annotations

from lsprotocol import types

from policyscheduler.lsp.positions import utf16_col
from policyscheduler.source import SourceFile
from policyscheduler.syntax.format import FormatError, format_source

__all__ = ["format_document"]


def format_document(name: str, text: str) -> list[types.TextEdit] | None:
    """The edits that turn ``text`` into its canonical layout: [] when it already is, None when it cannot."""
    try:
        new = format_source(SourceFile(name, text))
    except FormatError:
        return None
    if new == text:
        return []
    lines = text.split("\n")
    end = types.Position(len(lines) - 1, utf16_col(lines[-1], len(lines[-1])))
    return [types.TextEdit(range=types.Range(types.Position(0, 0), end), new_text=new)]
