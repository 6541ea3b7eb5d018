"""``policyscheduler fmt [--check] [--diff] PATH...``: the canonical layout of .policy files.

Formats in place (folders: their ``*.policy`` files, recursively). ``--check`` writes nothing and exits
1 when some file is not formatted (for CI: ``policyscheduler fmt --check policies/``); ``--diff`` prints a
unified diff instead of writing. A file that does not parse is reported and left alone (exit 2), as is
a missing path. Formatting never changes what a file means (see :mod:`policyscheduler.syntax.format`).

Files are read as every command reads them (regular files only, at most 16 MiB, a BOM and CRLF line
ends dropped: the canonical layout has LF ends). When writing in place, every file is checked for
writing before any is formatted, so a read-only file is reported (exit 2) instead of failing midway.
``--diff`` shows control characters in the files as ``\\xNN`` escapes: a diff is for reading, and raw
escape sequences would drive the terminal (or whatever reads the output) instead.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
from pathlib import Path
from typing import TextIO

from policyscheduler.inputs import safeload

__all__ = ["add_arguments", "run", "policy_files"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help=".policy files or folders of them (recursively)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when a file is not in the canonical layout")
    parser.add_argument("--diff", action="store_true", help="write nothing; print what would change as a diff")


def policy_files(paths: list[str]) -> tuple[list[Path], list[str]]:
    """The files to format, and the paths that do not exist."""
    files: list[Path] = []
    missing: list[str] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            files.extend(sorted(f for f in p.rglob("*.policy")
                                if not any(part.startswith(".") for part in f.relative_to(p).parts)))
        elif p.is_file():
            files.append(p)
        else:
            missing.append(raw)
    return files, missing


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _visible(line: str) -> str:
    """A diff line with control characters (ESC, BEL, CR ...; not tab or the newline) as ``\\xNN``."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", line)


def _unwritable(path: Path) -> str | None:
    """Why ``path`` cannot be rewritten (None when it can): opening it for writing, without writing."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK))
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def run(args: argparse.Namespace, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    from policyscheduler.source import SourceFile
    from policyscheduler.syntax.format import FormatError, format_source

    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    files, missing = policy_files(args.paths)
    status = 0
    for m in missing:
        err.write(f"error: {m}: no such file or directory\n")
        status = 2
    changed: list[Path] = []
    if not (args.check or args.diff):
        for f in list(files):
            why = _unwritable(f)
            if why is not None:
                err.write(f"error: cannot write {f}: {why}\n")
                files.remove(f)
                status = 2
    for f in files:
        try:
            raw = safeload.read_text(f)
        except safeload.InputError as exc:
            err.write(f"error: {exc}\n")
            status = 2
            continue
        text = raw.replace("\r\n", "\n")
        try:
            new = format_source(SourceFile(str(f), text))
        except FormatError as exc:
            err.write(f"error: {exc}\n")
            status = 2
            continue
        if new == raw:
            continue
        changed.append(f)
        if args.diff:
            out.writelines(_visible(line) for line in difflib.unified_diff(
                raw.splitlines(True), new.splitlines(True), str(f), f"{f} (formatted)"))
        elif args.check:
            err.write(f"{f}: not formatted (run: policyscheduler fmt {f})\n")
        else:
            try:
                f.write_text(new, encoding="utf-8")
            except OSError as exc:
                err.write(f"error: cannot write {f}: {exc.strerror or exc}\n")
                status = 2
                continue
            err.write(f"formatted {f}\n")
    if status:
        return status
    if changed and (args.check or args.diff):
        return 1
    if args.check and not changed:
        out.write(f"ok: {len(files)} file{'' if len(files) == 1 else 's'} formatted\n")
    return 0
