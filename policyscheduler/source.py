"""Stage 0: a policy file's text, and how to show a position in it.

Diagnostics and runtime errors point at 1-based (line, column) positions; this module turns such a
position back into the source line and a caret line, so every stage renders excerpts the same way.
"""

from __future__ import annotations

import dataclasses
import functools


def normalise_text(text: str) -> str:
    """``text`` without a leading UTF-8 byte-order mark and with CRLF line ends turned into LF (the same
    object when there is nothing to change)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return text


@dataclasses.dataclass(frozen=True)
class SourceFile:
    """One policy file: the name shown in diagnostics and its full text."""

    name: str
    text: str

    def __post_init__(self) -> None:
        # One text for one meaning: a file saved with CRLF line ends or a UTF-8 byte-order mark (Windows
        # editors) parses, lints and digests exactly like the same text with LF and no mark.
        normal = normalise_text(self.text)
        if normal is not self.text:
            object.__setattr__(self, "text", normal)

    @functools.cached_property
    def lines(self) -> list[str]:
        """The text split into lines (computed once: a file with many diagnostics renders many excerpts)."""
        return self.text.splitlines()

    def line(self, line: int) -> str:
        """The text of a 1-based line without its newline ('' when out of range)."""
        if 1 <= line <= len(self.lines):
            return self.lines[line - 1]
        return ""

    def excerpt(self, line: int, col: int, end_line: int | None = None, end_col: int | None = None) -> str:
        """The source line followed by a caret line under [col, end_col) (one caret at least).

        Tabs in the source line are kept in the caret line so the caret lines up in a terminal.
        """
        text = self.line(line)
        if not text and line > len(self.lines):
            return ""
        start = max(col, 1)
        if end_line == line and end_col is not None and end_col > start:
            width = end_col - start
        else:
            width = 1
        width = max(1, min(width, max(1, len(text) - start + 1)))
        pad = "".join("\t" if ch == "\t" else " " for ch in text[: start - 1])
        pad += " " * max(0, start - 1 - len(text))
        return f"{text}\n{pad}{'^' * width}"
