"""``policyscheduler fmt [--check] [--diff] PATH...``: the canonical layout of .policy files.

Formats in place (folders: their ``*.policy`` files, recursively). ``--check`` writes nothing and exits
1 when some file is not formatted (for CI: ``policyscheduler fmt --check policies/``); ``--diff`` prints a
unified diff instead of writing. A file that does not parse is reported and left alone (exit 2), as is
a missing path. Formatting never changes what a file means (see :mod:`policyscheduler.syntax.format`).
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path
from typing import TextIO

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
    for f in files:
        try:
            text = f.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            err.write(f"error: cannot read {f}: {exc}\n")
            status = 2
            continue
        try:
            new = format_source(SourceFile(str(f), text))
        except FormatError as exc:
            err.write(f"error: {exc}\n")
            status = 2
            continue
        if new == text:
            continue
        changed.append(f)
        if args.diff:
            out.writelines(difflib.unified_diff(text.splitlines(True), new.splitlines(True), str(f), f"{f} (formatted)"))
        elif args.check:
            err.write(f"{f}: not formatted (run: policyscheduler fmt {f})\n")
        else:
            f.write_text(new, encoding="utf-8")
            err.write(f"formatted {f}\n")
    if status:
        return status
    if changed and (args.check or args.diff):
        return 1
    if args.check and not changed:
        out.write(f"ok: {len(files)} file{'' if len(files) == 1 else 's'} formatted\n")
    return 0
