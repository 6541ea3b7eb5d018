"""Where the running scheduler's policies come from: the start-up load, then watching and reloading.

Sources (``policyscheduler run``), layered by :func:`policyscheduler.loader.load_layered` exactly as
``lint`` layers them (bundled defaults, then ``--policies`` paths in argument order, then the ConfigMap's
keys), so ``lint`` of the same inputs prints the digest the scheduler runs:

* ``--policies-configmap NAMESPACE/NAME``: read once at start-up (``get``), then list+watched by name
  (``fieldSelector=metadata.name=NAME``, which is what RBAC's ``resourceNames`` allows for list/watch).
  Every ``data`` key ending in ``.policy`` is a file, in key order. Deleted: the set in force stays and a
  Warning event says so; recreated: loaded like any edit.
* ``--policies DIR`` (repeatable): polled on disk (:class:`policyscheduler.reload.DirectoryWatcher`),
  including the ``..data`` symlink swap of a mounted ConfigMap volume.
* neither: the bundled default set (nothing to watch; SIGHUP still reloads).

A ConfigMap without any ``*.policy`` key is an error (``no-policy-files``, as ``lint`` of the same
manifest says), never a silent fall back to the bundled defaults: at start-up and on every edit.

The last good set of a ConfigMap source is saved in the cluster (:mod:`.lastgood`): when the ConfigMap is
broken, empty, missing or unreadable at start-up, the saved files of the same source are loaded instead,
with a warning (stderr, log, Warning event ``PolicyLastGoodUsed``); the source is watched as usual and
the first edit that loads replaces them.

A change goes to the :class:`policyscheduler.reload.Reloader` (loads off the scheduling thread, swaps a set
without errors in between two cycles, keeps the last good one otherwise); every outcome is reported (log,
metrics, events) by :mod:`.reload_report`. Reading the ConfigMap is :mod:`policyscheduler.kube.configmaps`.

Each profile of a process has its own :class:`PolicySources` (attached with its name): its reload swaps only
its set and moves only its unschedulable pods.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policyscheduler.app.host import SchedulerHost
from policyscheduler.app.lastgood import LastGood, LastGoodStore, describe
from policyscheduler.app.reload_report import ReloadReporter
from policyscheduler.kube.configmaps import ConfigMapError, configmap_path, read_configmap
from policyscheduler.kube.rest import RestClient
from policyscheduler.kube.watch import Reflector
from policyscheduler.reload import DirectoryWatcher, Outcome, Reloader, fingerprint

if TYPE_CHECKING:
    from policyscheduler.compiler import PolicySet
    from policyscheduler.loader import LoadResult

__all__ = ["PolicySourceError", "PolicySources", "parse_configmap_ref", "policy_texts"]

log = logging.getLogger("policyscheduler.policies")

POLICY_SUFFIX = ".policy"


class PolicySourceError(RuntimeError):
    """The ConfigMap cannot be read at start-up (not found, forbidden, API server unreachable), or there is
    no connection to read it with."""


@dataclasses.dataclass(frozen=True)
class Fallback:
    """Start-up used the saved last good set: ``problem`` says what was wrong with the source (the load's
    ``diagnostics`` when it did not load), ``record`` is what was used."""

    problem: str
    record: LastGood
    diagnostics: tuple[Any, ...] = ()
    digest_now: str = ""

    def note(self, source: str) -> str:
        text = (f"{source}: {self.problem}; starting from the last good set {self.record.digest[:12]} "
                f"(ConfigMap {self.record.source} resourceVersion {self.record.resource_version}, saved "
                f"{self.record.saved_at})")
        if self.digest_now and self.digest_now != self.record.digest:
            text += f", now digest {self.digest_now[:12]} (the bundled defaults or --policies paths changed)"
        return text


def parse_configmap_ref(text: str) -> tuple[str, str]:
    """``NAMESPACE/NAME`` -> (namespace, name); ValueError otherwise."""
    namespace, sep, name = text.partition("/")
    if not sep or not namespace or not name or "/" in name:
        raise ValueError(f"--policies-configmap takes NAMESPACE/NAME, not {text!r}")
    return namespace, name


def policy_texts(configmap: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(key, text) for every ``data`` key ending in ``.policy``, in key order (the display name is the key;
    the digest looks at base names only, so it is the one ``lint`` computes for the same keys)."""
    data = configmap.get("data")
    if not isinstance(data, Mapping):
        return []
    return [(k, v) for k, v in sorted(data.items()) if isinstance(k, str) and k.endswith(POLICY_SUFFIX)
            and isinstance(v, str)]


class PolicySources:
    """The ``run`` policy sources: the start-up load, then watching, reloading and reporting."""

    def __init__(self, paths: Sequence[str | Path] = (), configmap: tuple[str, str] | None = None, *,
                 poll_interval: float = 1.0) -> None:
        self.paths = list(paths)
        self.configmap = configmap
        self.poll_interval = poll_interval
        self.reloader: Reloader | None = None
        self.reflector: Reflector | None = None
        self.watcher: DirectoryWatcher | None = None
        self._scheduler: SchedulerHost | None = None
        self.profile = ""
        self._texts: list[tuple[str, str]] | None = None
        self._reporter: ReloadReporter | None = None
        self._object: dict[str, Any] = {}
        self._present = False
        self.last_good: LastGoodStore | None = None
        """Where the last good set of the ConfigMap is saved (set by start-up; None: not saved)."""
        self.fallback: Fallback | None = None
        """Set when start-up fell back to the saved set."""
        self._loaded: tuple[tuple[tuple[str, str], ...], str | None, str] | None = None
        """The ConfigMap texts, their resourceVersion and the digest of the last load without errors."""

    @property
    def description(self) -> str:
        parts = [f"ConfigMap {self.configmap[0]}/{self.configmap[1]}"] if self.configmap else []
        parts += [str(p) for p in self.paths]
        return ", ".join(parts) or "the bundled default set"

    # -- start-up ---------------------------------------------------------------------------------------

    def load_initial(self, client: RestClient | None = None, profile: str = "") -> LoadResult:
        """Read the sources and load them once (the ConfigMap through ``client``). When the ConfigMap
        cannot be read or does not load and :attr:`last_good` holds a set of the same source for
        ``profile``, that set (:attr:`fallback` says so); otherwise PolicySourceError when the ConfigMap
        cannot be read, or the failed load."""
        if self.configmap is None:
            return self._load_source(self.paths, ())
        if client is None:
            raise PolicySourceError("a ConfigMap source needs a connection to the API server")
        try:
            obj = read_configmap(client, *self.configmap)
        except ConfigMapError as err:
            return self._fall_back(profile, str(err), None, error=err)
        self._remember(obj)
        self._texts = policy_texts(obj)
        result = self._load_source(self.paths, self._texts)
        if result.ok:
            return result
        count = len(result.errors)
        return self._fall_back(profile, f"does not load ({count} error{'s' if count != 1 else ''})", result)

    def _fall_back(self, profile: str, problem: str, failed: LoadResult | None, *,
                   error: ConfigMapError | None = None) -> LoadResult:
        """The saved last good set in place of a source that cannot be used at start-up (see load_initial)."""
        record, why_not = None, "no last good set saved"
        if self.last_good is not None:
            try:
                record = self.last_good.read(profile)
            except ConfigMapError as err:
                why_not = str(err)
            if record is not None and record.source != self._ref():
                why_not = f"the last good set saved is of ConfigMap {record.source}"
                record = None
        if record is None:
            if failed is None:
                raise PolicySourceError(f"{error}; {why_not}") from error
            return failed
        result = self._load_source(self.paths, record.files)
        if not result.ok:
            if failed is None:
                raise PolicySourceError(f"{error}; the last good set does not load either") from error
            return failed
        assert result.policy_set is not None
        self._loaded = (record.files, record.resource_version, result.policy_set.digest)
        self.fallback = Fallback(problem, record, tuple(failed.diagnostics) if failed else (),
                                 result.policy_set.digest)
        return result

    @staticmethod
    def _load(paths: Sequence[str | Path], texts: Sequence[tuple[str, str]]) -> LoadResult:
        """:func:`load_layered`, except that a watched folder holding no ``*.policy`` file *yet* (an empty
        ConfigMap volume, a folder to be filled later) is a warning, not an error: it is watched, and its
        files are loaded when they appear. Anything else is exactly what ``lint`` says."""
        from policyscheduler.diagnostics import Span, warning
        from policyscheduler.loader import load_layered

        empty = [p for p in paths if Path(p).is_dir() and not fingerprint([p])]
        result = load_layered([p for p in paths if p not in empty], texts=texts)
        if not empty:
            return result
        notes = [warning("no-policy-files", f"{p} holds no *.policy files yet; watching it", Span(str(p), 1, 1, 1, 1))
                 for p in empty]
        return dataclasses.replace(result, diagnostics=[*notes, *result.diagnostics])

    def _load_source(self, paths: Sequence[str | Path], texts: Sequence[tuple[str, str]]) -> LoadResult:
        """:meth:`_load` of these sources, where a ConfigMap source with no ``*.policy`` key is an error
        (``lint`` of that manifest says ``no-policy-files``), not the bundled defaults alone; a ConfigMap set
        that loads is remembered, to be saved as the last good one once it is in force."""
        from policyscheduler.diagnostics import error

        result = self._load(paths, texts)
        if self.configmap is None:
            return result
        if not texts:
            missing = error("no-policy-files", f"ConfigMap {self._ref()} has no *.policy key "
                            "(each data key ending in .policy is a policy file)", None)
            return dataclasses.replace(result, policy_set=None, diagnostics=[missing, *result.diagnostics])
        if result.policy_set is not None:
            self._loaded = (tuple(texts), self._object.get("resourceVersion"), result.policy_set.digest)
        return result

    def attach(self, scheduler: SchedulerHost, profile: str | None = None) -> None:
        """Wire the watches and the reloader to a scheduler's ``profile`` (default: its first), which holds
        the start-up set."""
        self._scheduler = scheduler
        own = profile if profile is not None else scheduler.profile_names[0]
        self.profile = own
        self._reporter = ReloadReporter(scheduler, own, self.description, self._ref, self._regarding)

        def apply(policy_set: PolicySet) -> int:
            return scheduler.set_profile_policy(own, policy_set)

        self.reloader = Reloader(scheduler.policy_set_of(own), apply, self._report, paths=self.paths,
                                 texts=self._texts, load=self._load_source, prepare=_warm(scheduler.cycle.evaluator))
        if self.configmap is not None:
            namespace, name = self.configmap
            self.reflector = Reflector(scheduler.client, "ConfigMap", self, path=configmap_path(namespace),
                                       selector={"fieldSelector": f"metadata.name={name}"})
        if self.paths:
            self.watcher = DirectoryWatcher(self.paths, lambda why: self._trigger(why),
                                            interval=self.poll_interval)
        if self.fallback is not None:
            self._report_fallback(scheduler, own, self.fallback)
        else:
            self._save(scheduler.policy_set_of(own).digest)

    def _report_fallback(self, scheduler: SchedulerHost, profile: str, fallback: Fallback) -> None:
        """Start-up runs the saved set: a warning in the log and a Warning event on the ConfigMap (posted by
        every replica that starts so: each runs a set that is not the configured one)."""
        from policyscheduler.reload import format_diagnostics

        note = fallback.note(f"ConfigMap {self._ref()}")
        fields = {"profile": profile, "source": self.description, "problem": fallback.problem,
                  **describe(fallback.record)}
        if fallback.diagnostics:
            fields["errors"] = format_diagnostics([d for d in fallback.diagnostics if d.severity == "error"], 10)
        log.warning("policy source unusable at start-up; running the last good set", extra={"fields": fields})
        scheduler.metrics.reload_ok[profile] = False
        regarding = self._regarding()
        if regarding is not None:
            recorder = scheduler.recorders.get(profile, scheduler.recorder)
            recorder.object_event(regarding, "Warning", "PolicyLastGoodUsed", "Start", note)

    def _save(self, digest: str) -> None:
        """The ConfigMap set now in force (``digest``) becomes the last good one saved in the cluster."""
        loaded = self._loaded
        if self.last_good is None or self.configmap is None or loaded is None or loaded[2] != digest:
            return
        self.last_good.remember(self.profile, self._ref(), loaded[1], loaded[0], digest)

    def start(self) -> None:
        for part in (self.reloader, self.reflector, self.watcher):
            if part is not None:
                part.start()

    def stop(self) -> None:
        for part in (self.watcher, self.reflector):
            if part is not None:
                part.stop()
        if self.reloader is not None:
            self.reloader.stop()

    def reload(self, reason: str = "SIGHUP") -> None:
        """Load the sources again now (SIGHUP); the outcome is reported even when nothing changed."""
        if self.reloader is not None:
            self.reloader.trigger(reason, force=True)

    def _trigger(self, why: str) -> None:
        if self.reloader is not None:
            self.reloader.trigger(why)

    # -- the ConfigMap watch (Reflector handler; its thread) ---------------------------------------------

    def _remember(self, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
        assert isinstance(meta, Mapping)
        self._object = {k: meta.get(k) for k in ("uid", "resourceVersion")}
        self._present = True

    def on_upsert(self, kind: str, obj: dict[str, Any]) -> None:
        self._remember(obj)
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if self.reloader is not None:
            self.reloader.set_texts(policy_texts(obj), f"ConfigMap {self._ref()} resourceVersion {version}")

    def on_delete(self, kind: str, obj: dict[str, Any]) -> None:
        self._present = False
        if self.reloader is not None:
            self.reloader.missing(f"ConfigMap {self._ref()} deleted")

    def on_synced(self, kind: str) -> None:
        if not self._present and self.reloader is not None:
            self.reloader.missing(f"ConfigMap {self._ref()} not found")

    def on_error(self, kind: str, error: str) -> None:
        if self._scheduler is not None:
            self._scheduler.metrics.watch_errors.labels(kind).inc()
        log.warning("watch ConfigMap %s: %s (retrying)", self._ref(), error)

    def _ref(self) -> str:
        return f"{self.configmap[0]}/{self.configmap[1]}" if self.configmap else "-"

    # -- reporting (:mod:`.reload_report`) --------------------------------------------------------------

    def _regarding(self) -> dict[str, Any] | None:
        """What reload events regard: the ConfigMap (with its uid once seen), else None (the reporter then
        takes the scheduler's own Pod, when it knows it)."""
        if self.configmap is None:
            return None
        namespace, name = self.configmap
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "namespace": namespace, "name": name}
        if self._present:
            ref.update({k: v for k, v in self._object.items() if v})
        return ref

    def _report(self, outcome: Outcome) -> None:
        assert self._reporter is not None
        self._reporter.report(outcome)
        if outcome.result == "success" and outcome.loaded is not None:
            self._save(outcome.loaded)


def _warm(evaluator: Any) -> Any:
    """Prepare a new set for the engine off the scheduling thread (the vector engine's lowering)."""
    backend = getattr(evaluator, "backend", None)
    if backend is None or type(backend).__name__ != "VectorBackend":
        return None

    def prepare(policy_set: PolicySet) -> None:
        from policyscheduler.evaluation.vector.backend import lowered

        lowered(policy_set)

    return prepare
