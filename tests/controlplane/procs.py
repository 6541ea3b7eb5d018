"""Child processes that cannot outlive the Python process that started them.

Three layers, because each one alone leaves a gap:

* every child gets ``PR_SET_PDEATHSIG=SIGKILL`` (Linux), so it dies even when the
  Python parent is SIGKILLed or crashes without running any cleanup;
* every child runs in its own process group, and :meth:`Child.stop` signals the
  whole group (SIGTERM, then SIGKILL after a grace period);
* :func:`stop_all` runs from ``atexit`` and from SIGTERM/SIGHUP handlers, for the
  normal and the polite-kill exits.

Note that the death signal follows the *thread* that forked the child: start
children from a long-lived thread (the main thread in pytest and the CLI).
"""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

_PR_SET_PDEATHSIG = 1
_live: dict[int, Child] = {}
_cleanups: list[Callable[[], None]] = []
_lock = threading.Lock()
_handlers_installed = False


# Resolved once in the parent: after fork() only already-loaded code is safe to run
# (another thread may hold the loader or allocator locks at fork time).
_prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None


def _die_with_parent(parent_pid: int) -> Callable[[], None]:
    """preexec_fn: ask the kernel to SIGKILL us when the parent goes away."""

    def setup() -> None:
        if _prctl is not None:
            _prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
            # The parent may have died between fork and prctl: then nobody would
            # ever send the signal, so give up now.
            if os.getppid() != parent_pid:
                os._exit(1)

    return setup


class Child:
    """One started binary, with its log file."""

    def __init__(self, name: str, argv: Sequence[str], log_file: Path, env: dict[str, str] | None = None) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_file = log_file
        log = open(log_file, "ab")  # noqa: SIM115 -- the child keeps writing to it after __init__ returns
        try:
            self.popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent(os.getpid()),
                env=env,
                close_fds=True,
            )
        finally:
            log.close()
        self.pid = self.popen.pid
        with _lock:
            _live[self.pid] = self
        install_signal_handlers()

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        """The end of the child's log, for error messages that say *why* it failed."""
        try:
            text = self.log_file.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM the child's process group, SIGKILL it if it lingers, and reap it."""
        try:
            if self.popen.poll() is None:
                _signal_group(self.pid, signal.SIGTERM)
                try:
                    self.popen.wait(timeout=grace)
                except subprocess.TimeoutExpired:
                    pass
            # Kill leftovers in the group even if the leader already exited.
            _signal_group(self.pid, signal.SIGKILL)
            if self.popen.poll() is None:
                self.popen.wait(timeout=5)
        finally:
            with _lock:
                _live.pop(self.pid, None)


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def register_cleanup(fn: Callable[[], None]) -> None:
    """Run ``fn`` at interpreter exit or on SIGTERM/SIGHUP (after children are stopped)."""
    with _lock:
        _cleanups.append(fn)


def unregister_cleanup(fn: Callable[[], None]) -> None:
    with _lock:
        if fn in _cleanups:
            _cleanups.remove(fn)


def stop_all() -> None:
    """Stop every live child and run registered cleanups; safe to call repeatedly."""
    with _lock:
        children = list(_live.values())
        cleanups = list(reversed(_cleanups))
        _cleanups.clear()
    for child in children:
        try:
            child.stop(grace=5.0)
        except Exception:  # noqa: BLE001 - cleanup must go on for the others
            pass
    for fn in cleanups:
        try:
            fn()
        except Exception:  # noqa: BLE001
            pass


def _on_signal(signum: int, frame: object) -> None:
    stop_all()
    # Re-raise the default behaviour so the exit status still says "killed by signal".
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def install_signal_handlers() -> None:
    """Hook SIGTERM/SIGHUP when nobody else has (SIGINT stays KeyboardInterrupt)."""
    global _handlers_installed
    if _handlers_installed or threading.current_thread() is not threading.main_thread():
        return
    _handlers_installed = True
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) in (signal.SIG_DFL, None):
            signal.signal(sig, _on_signal)


def process_alive(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie (an exited child nobody reaped yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    except OSError:
        return True
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


atexit.register(stop_all)
