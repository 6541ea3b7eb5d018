"""Comments recovered from the source text, by position.

The grammar ignores ``#`` comments (they never change what a file means, and ``##`` docs are attached
by the parser from the lines above a rule), so the AST does not hold them. Tools that rewrite a file
(``fmt``) and tools that read directives in comments (lint's ``# lint: ignore[code] because ...``)
find them here, from the text: a ``#`` outside a string literal starts a comment to the end of the line.
"""

from __future__ import annotations

import dataclasses
import re

__all__ = ["Comment", "scan_comments", "Suppression", "suppressions"]


@dataclasses.dataclass(frozen=True)
class Comment:
    """One comment: 1-based ``line`` and ``col`` of its ``#``; ``text`` from ``#`` to the end of the line
    (trailing whitespace removed); ``standalone`` when nothing but whitespace precedes it on its line."""

    line: int
    col: int
    text: str
    standalone: bool


def _comment_start(line: str) -> int:
    """The index of the ``#`` starting a comment on ``line``, or -1 (strings: ``"..."``, escapes ``\\x``)."""
    hash_at = line.find("#")
    if hash_at < 0 or '"' not in line[:hash_at]:  # the common lines: no comment, or none after a string
        return hash_at
    in_string = False
    i = 0
    while i < len(line):
        ch = line[i]
        if in_string:
            if ch == "\\":
                i += 2
                continue
            if ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "#":
            return i
        i += 1
    return -1


def scan_comments(text: str) -> list[Comment]:
    """Every comment of ``text``, in order."""
    out: list[Comment] = []
    for n, line in enumerate(text.splitlines(), 1):
        at = _comment_start(line)
        if at >= 0:
            out.append(Comment(n, at + 1, line[at:].rstrip(), not line[:at].strip()))
    return out


@dataclasses.dataclass(frozen=True)
class Suppression:
    """``# lint: ignore[code, code] because JUSTIFICATION``: silences those codes on the comment's line
    (a trailing comment) or on the next line holding code (a comment on its own line); ``reason`` is the
    justification ('' when missing, which lint reports)."""

    line: int
    col: int
    codes: tuple[str, ...]
    reason: str
    target_line: int


_SUPPRESS = re.compile(r"#+\s*lint:\s*ignore\s*\[([^\]]*)\]\s*(?:because\b\s*(.*))?$")


def suppressions(text: str) -> list[Suppression]:
    """The lint suppression comments of ``text``."""
    if "lint:" not in text:  # every suppression has it; a large file without any is not scanned
        return []
    lines = text.splitlines()
    out: list[Suppression] = []
    for c in scan_comments(text):
        m = _SUPPRESS.match(c.text)
        if m is None:
            continue
        codes = tuple(x.strip() for x in m.group(1).split(",") if x.strip())
        target = c.line
        if c.standalone:
            target = c.line + 1
            while target <= len(lines):
                body = lines[target - 1]
                at = _comment_start(body)
                code = body if at < 0 else body[:at]
                if code.strip():
                    break
                target += 1
        out.append(Suppression(c.line, c.col, codes, (m.group(2) or "").strip(), target))
    return out
