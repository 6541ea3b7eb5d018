"""``policyscheduler policies path``: where the bundled default policy set is.

After ``pip install`` the defaults live inside the installed package; this prints that directory so a
user can read the rules they are layering on (``cat "$(policyscheduler policies path)"/*.policy``), or
lint them. The loader owns the answer (:func:`policyscheduler.loader.bundled_defaults_dir`), so this is
the directory every command loads.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``policies ACTION``; ``path`` is the only action so far."""
    parser.add_argument("action", choices=("path",), help="path: print the directory of the bundled default policies")


def run(args: argparse.Namespace, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Print the bundled defaults' directory; exit 2 (with the reason) when it is missing."""
    from policyscheduler.loader import bundled_defaults_dir

    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    path = bundled_defaults_dir()
    if not path.is_dir():
        err.write(f"policyscheduler policies: the bundled default policies are missing (looked in {path}); "
                  "the installation is incomplete\n")
        return 2
    out.write(f"{path}\n")
    return 0
