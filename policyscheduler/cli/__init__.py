"""``policyscheduler`` command line: thin dispatch to one module per subcommand.

``lint`` is delegated verbatim to :func:`policyscheduler.cli.lint.main` (its own argparse), so both
entry points agree on options and exit codes. Any exception escaping a subcommand is a bug: it prints
one ``policyscheduler: internal error: ...`` line and a hint, and exits 70 (EX_SOFTWARE) -- never a
traceback, unless ``POLICYSCHEDULER_DEBUG=1`` asks for one.

Output failures are the environment's, not bugs, so they never reach exit 70:

* standard output closed (``>&-``), full (ENOSPC) or failing (EIO): one ``policyscheduler: cannot write
  output: ...`` line on standard error, exit 2 (:data:`EXIT_OUTPUT_ERROR`);
* standard output's reader gone (EPIPE, ``| head``): later output is dropped, the exit status is the one
  the run earned;
* standard error closed or failing: its messages are dropped (as with ``2>/dev/null``), the output and the
  exit status are unchanged -- a report written into standard output would corrupt JSON output.

A closed descriptor 0, 1 or 2 is pointed at ``/dev/null`` first, so no file the run opens can take its
number (and receive output meant for the terminal).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

__all__ = ["main", "EXIT_INTERNAL_ERROR"]

EXIT_INTERNAL_ERROR = 70
EXIT_OUTPUT_ERROR = 2


class OutputError(Exception):
    """Standard output cannot be written (a full disk, an I/O error): the run's output is lost."""


def _reopen_closed_standard_fds() -> None:
    """Point a closed descriptor 0/1/2 at /dev/null: the next ``open`` would otherwise get that number."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            try:
                null = os.open(os.devnull, os.O_RDWR)
                if null != fd:
                    os.dup2(null, fd)
                    os.close(null)
            except OSError:
                pass


class _Closed:
    """Standard output that was closed before we started: the first write is an :class:`OutputError`."""

    def write(self, text: str) -> int:
        raise OutputError("standard output is closed")

    def writelines(self, lines: object) -> None:
        raise OutputError("standard output is closed")

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError("standard output is closed")


class _Stderr:
    """Standard error whose failures (closed, EPIPE, ENOSPC) drop the message instead of raising."""

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.failed = inner is None

    def write(self, text: str) -> int:
        if not self.failed:
            try:
                return int(self.inner.write(text))  # type: ignore[attr-defined]
            except (OSError, ValueError):
                self.failed = True
        return len(text)

    def writelines(self, lines: object) -> None:
        for line in lines:  # type: ignore[attr-defined]
            self.write(line)

    def flush(self) -> None:
        if not self.failed:
            try:
                self.inner.flush()  # type: ignore[attr-defined]
            except (OSError, ValueError):
                self.failed = True

    def isatty(self) -> bool:
        return False if self.failed else bool(self.inner.isatty())  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        if self.inner is None:
            raise AttributeError(name)
        return getattr(self.inner, name)


class _Stdout:
    """Standard output that knows the two ways a write can fail.

    * The reader went away (EPIPE: ``lint ... | head``): later writes are dropped, and the command runs to
      its end, so the exit status is the one the run earned (``lint`` with errors still exits 1).
    * Anything else (ENOSPC: ``> /dev/full``, EIO): :class:`OutputError`, reported as "cannot write
      output: ..." with exit 2 -- a problem of the environment, not a bug of ours (exit 70).
    """

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.closed_pipe = False

    def _call(self, name: str, *args: object) -> object:
        if self.closed_pipe:
            return len(args[0]) if name == "write" and args and isinstance(args[0], str) else None
        try:
            return getattr(self.inner, name)(*args)
        except BrokenPipeError:
            self._drop()
            return None
        except OSError as exc:
            raise OutputError(exc.strerror or str(exc)) from None

    def _drop(self) -> None:
        self.closed_pipe = True
        try:  # keep Python's own flush at exit from failing on the same pipe
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.inner.fileno())  # type: ignore[attr-defined]
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass

    def write(self, text: str) -> int:
        return self._call("write", text) or 0  # type: ignore[return-value]

    def writelines(self, lines: object) -> None:
        for line in lines:  # type: ignore[attr-defined]
            self.write(line)

    def flush(self) -> None:
        self._call("flush")

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("policyscheduler")
    except Exception:  # noqa: BLE001 -- not installed (plain source checkout): any failure means "unknown"
        return "0+unknown"


_COMMANDS: dict[str, tuple[str, str, str]] = {
    # name: (module with add_arguments(parser) and run(args) -> int, help, description); lint parses its own
    "simulate": ("policyscheduler.cli.simulate", "schedule a snapshot's pending pods under a policy set",
                 "Schedule the pending pods of a cluster snapshot one by one under a policy set."),
    "run": ("policyscheduler.cli.run", "the live scheduler: watch the cluster, decide with the policies, bind",
            "Schedule the pods whose spec.schedulerName is ours on a live cluster."),
    "policies": ("policyscheduler.cli.policies",
                 "about the bundled default policies ('policies path': where they are)",
                 "Print where the bundled default policy set is (the one every command layers your files on)."),
    "explain": ("policyscheduler.cli.explain",
                "why a pod goes where it goes (or fits nowhere): per node, the rule and clause, the scores",
                "Explain the scheduler's decision for one pod on a snapshot (--cluster) or a live cluster "
                "(--kubeconfig), with the same policies and engine the scheduler uses."),
    "test": ("policyscheduler.cli.policytest", "run policy tests (YAML cases next to the policies); exit 1 on failure",
             "Run the policy test cases found under PATH (YAML files with a pod and expectations)."),
    "fmt": ("policyscheduler.cli.fmt", "format .policy files in the canonical layout (--check, --diff)",
            "Format .policy files in place in the one canonical layout, keeping every comment."),
    "docs": ("policyscheduler.cli.docs",
             "write (or --check) the generated language reference grammar/REFERENCE.md",
             "Generate the language reference from the schema, the builtins and the lint catalogue."),
    "config": ("policyscheduler.cli.config",
               "the configuration file: 'config import' a KubeSchedulerConfiguration, 'config check' a file",
               "Work with PolicySchedulerConfiguration files (--config)."),
    "lsp": ("policyscheduler.cli.lsp", "the language server for editors (LSP on stdin/stdout)",
            "Serve the Language Server Protocol on stdin/stdout: lint's diagnostics as you type, completion, "
            "hover, go-to-definition, symbols and formatting for .policy files."),
}
"""Every subcommand but lint: one table, so registering and dispatching cannot drift apart."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="policyscheduler",
        description="A Kubernetes scheduler whose filter and score rules are .policy files.",
    )
    parser.add_argument("--version", action="version", version=f"policyscheduler {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser(
        "lint",
        help="check .policy files (exit 0 clean, 1 errors found)",
        add_help=False,
    )
    for name, (module, help_text, description) in _COMMANDS.items():
        sub = commands.add_parser(name, help=help_text, description=description)
        importlib.import_module(module).add_arguments(sub)
    return parser


def _dispatch(argv: list[str]) -> int:
    if argv and argv[0] == "lint":
        from policyscheduler.cli import lint

        return int(lint.main(argv[1:]))
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command in _COMMANDS:
        module = importlib.import_module(_COMMANDS[args.command][0])
        return int(module.run(args))
    parser.print_help(sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    _reopen_closed_standard_fds()
    inner = sys.stdout
    inner_err = sys.stderr
    sys.stdout = _Stdout(inner if inner is not None else _Closed())  # type: ignore[assignment,unused-ignore]
    sys.stderr = _Stderr(inner_err)  # type: ignore[assignment,unused-ignore]
    try:
        status = _dispatch(args)
        sys.stdout.flush()  # surface a closed pipe or a full disk here, not in the interpreter's shutdown
        return status
    except OutputError as exc:
        sys.stderr.write(f"policyscheduler: cannot write output: {exc}\n")
        return EXIT_OUTPUT_ERROR
    except SystemExit as exc:  # argparse usage errors (2), --help/--version (0)
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 2)
    except KeyboardInterrupt:
        sys.stderr.write("policyscheduler: interrupted\n")
        return 130
    except BrokenPipeError:
        # The reader went away (`... | head`): stop quietly, and keep Python from complaining at exit.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, inner.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 0
    except Exception as exc:
        if os.environ.get("POLICYSCHEDULER_DEBUG") == "1":
            raise
        sys.stderr.write(f"policyscheduler: internal error: {type(exc).__name__}: {exc}\n")
        sys.stderr.write(
            "hint: this is a bug in policyscheduler, not in your input; rerun with "
            "POLICYSCHEDULER_DEBUG=1 for a traceback and report it\n"
        )
        return EXIT_INTERNAL_ERROR
    finally:
        sys.stdout = inner
        sys.stderr = inner_err
