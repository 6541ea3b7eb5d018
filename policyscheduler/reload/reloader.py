"""The reload worker: load the policy sources off the scheduling thread, apply only a set without errors.

Sources call :meth:`Reloader.set_texts` (a ConfigMap's ``*.policy`` keys changed), :meth:`Reloader.missing`
(the ConfigMap was deleted) or :meth:`Reloader.trigger` (files changed on disk, SIGHUP). Triggers are
coalesced: one worker thread loads the *latest* inputs with :func:`policyscheduler.loader.load_layered`
(paths first, then the ConfigMap texts, exactly as ``lint`` layers them, so the digests agree), and

* no errors: ``prepare(policy_set)`` (e.g. warm the vector engine's lowering, still off the scheduling
  thread), then ``apply(policy_set)`` -- the cycle swaps the reference, so the next cycle uses the new set
  and no cycle ever sees half of one -- and reports ``success``;
* errors: nothing is applied, the last good set stays in force, and ``error`` is reported with the
  diagnostics;
* the source is gone: nothing is loaded, ``missing`` is reported once.

Every outcome goes to ``report`` (an :class:`Outcome`, plain data). ``notify`` on the outcome says whether
it is news for operators (a new digest in force, a recovery, a new error, a newly missing source): the
reporter posts events only for those, so a periodic resync never floods the event stream.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policyscheduler.diagnostics import ERROR, Diagnostic

if TYPE_CHECKING:
    from policyscheduler.compiler import PolicySet
    from policyscheduler.loader import LoadResult

__all__ = ["Outcome", "Reloader", "format_diagnostics"]

log = logging.getLogger("policyscheduler.reload")

SUCCESS = "success"
ERROR_RESULT = "error"
MISSING = "missing"


def format_diagnostics(diagnostics: Sequence[Diagnostic], limit: int | None = None) -> list[str]:
    """``file:line:col: error code: message`` per error (then warnings), at most ``limit`` lines."""
    ordered = [d for d in diagnostics if d.severity == ERROR] + [d for d in diagnostics if d.severity != ERROR]
    return [str(d) for d in ordered[:limit]]


@dataclasses.dataclass(frozen=True)
class Outcome:
    """One reload: ``result`` is ``success``, ``error`` or ``missing`` (the source is gone).

    ``digest`` is the digest in force afterwards, ``previous`` before; ``loaded`` the digest of the set
    that loaded (success only). ``recovered``: a success after an error or a missing source. ``notify``:
    news for operators (see the module docstring). ``requeued``: unschedulable pods moved back.
    """

    result: str
    trigger: str
    digest: str
    previous: str
    loaded: str | None = None
    diagnostics: tuple[Diagnostic, ...] = ()
    seconds: float = 0.0
    recovered: bool = False
    notify: bool = True
    rules: int = 0
    files: int = 0
    requeued: int = 0

    @property
    def changed(self) -> bool:
        """A new policy set is in force."""
        return self.digest != self.previous

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == ERROR]


def _default_load(paths: Sequence[str | Path], texts: Sequence[tuple[str, str]]) -> LoadResult:
    from policyscheduler.loader import load_layered

    return load_layered(paths, texts=texts)


class Reloader:
    """See the module docstring. ``current`` is the set in force at start-up (loaded by the caller)."""

    def __init__(
        self,
        current: PolicySet,
        apply: Callable[[PolicySet], int],
        report: Callable[[Outcome], None],
        *,
        paths: Sequence[str | Path] = (),
        texts: Sequence[tuple[str, str]] | None = None,
        load: Callable[[Sequence[str | Path], Sequence[tuple[str, str]]], LoadResult] = _default_load,
        prepare: Callable[[PolicySet], Any] | None = None,
    ) -> None:
        self.current = current
        self.apply = apply
        self.report = report
        self.paths = list(paths)
        self.load = load
        self.prepare = prepare
        self._texts: tuple[tuple[str, str], ...] | None = tuple(texts) if texts is not None else None
        self._missing = False
        self._triggers: list[str] = []
        self._forced = False
        self._cond = threading.Condition()
        self._stop = False
        self._busy = False
        self._healthy = True
        self._last_error: tuple[str, ...] | None = None
        self._reported_missing = False
        self.outcomes = 0
        self._thread = threading.Thread(target=self._run, name="policy-reload", daemon=True)

    # -- what sources call (any thread) ---------------------------------------------------------------

    def set_texts(self, texts: Sequence[tuple[str, str]], trigger: str) -> bool:
        """The ConfigMap's policy texts (``(name, text)`` in key order); a load when they changed (or
        the ConfigMap is back). False when nothing changed."""
        new = tuple(texts)
        with self._cond:
            if new == self._texts and not self._missing:
                return False
            self._texts, self._missing = new, False
            self._triggers.append(trigger)
            self._cond.notify_all()
        return True

    def missing(self, trigger: str) -> None:
        """The ConfigMap is gone: keep the set in force, report it (once)."""
        with self._cond:
            if self._missing:
                return
            self._missing = True
            self._triggers.append(trigger)
            self._cond.notify_all()

    def trigger(self, reason: str, *, force: bool = False) -> None:
        """Load again (files changed; ``force``: SIGHUP, report even an unchanged outcome)."""
        with self._cond:
            self._triggers.append(reason)
            self._forced = self._forced or force
            self._cond.notify_all()

    # -- lifecycle ------------------------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def idle(self, timeout: float = 10.0) -> bool:
        """Wait until no trigger is pending or being processed (tests)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._triggers or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._triggers and not self._stop:
                    self._cond.wait()
                if self._stop:
                    return
                triggers, self._triggers = self._triggers, []
                forced, self._forced = self._forced, False
                self._busy = True
            try:
                self.process("; ".join(dict.fromkeys(triggers)), force=forced)
            except Exception:
                log.exception("policy reload: unexpected error; keeping the policy set in force")
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    # -- one reload (the worker thread; tests call it directly) ---------------------------------------

    def process(self, trigger: str, *, force: bool = False) -> Outcome:
        """Load the latest inputs once, apply a good set, report. Returns the outcome."""
        with self._cond:
            texts, missing = self._texts, self._missing
        previous = self.current.digest
        if missing:
            outcome = Outcome(MISSING, trigger, previous, previous, notify=not self._reported_missing)
            self._reported_missing = True
            self._healthy = False
            return self._report(outcome)
        self._reported_missing = False
        started = time.monotonic()
        result = self.load(self.paths, texts or ())
        diagnostics = tuple(result.diagnostics)
        policy_set = result.policy_set
        if policy_set is None or any(d.severity == ERROR for d in diagnostics):
            signature = tuple(format_diagnostics(diagnostics))
            outcome = Outcome(ERROR_RESULT, trigger, previous, previous, diagnostics=diagnostics,
                              seconds=time.monotonic() - started,
                              notify=force or self._healthy or signature != self._last_error,
                              files=len(result.user_files))
            self._last_error = signature
            self._healthy = False
            return self._report(outcome)
        if self.prepare is not None:
            try:
                self.prepare(policy_set)
            except Exception:
                log.debug("policy reload: prepare failed", exc_info=True)
        recovered = not self._healthy
        requeued = 0
        if policy_set.digest != previous:
            requeued = self.apply(policy_set)
            self.current = policy_set
        outcome = Outcome(SUCCESS, trigger, policy_set.digest, previous, loaded=policy_set.digest,
                          diagnostics=diagnostics, seconds=time.monotonic() - started, recovered=recovered,
                          notify=force or recovered or policy_set.digest != previous,
                          rules=len(policy_set.filters) + len(policy_set.scores),
                          files=len(result.user_files), requeued=requeued)
        self._healthy, self._last_error = True, None
        return self._report(outcome)

    def _report(self, outcome: Outcome) -> Outcome:
        self.outcomes += 1
        try:
            self.report(outcome)
        except Exception:
            log.exception("policy reload: reporting failed")
        return outcome
