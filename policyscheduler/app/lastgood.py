"""The last good policy set of a ConfigMap source, kept in the cluster so that it survives restarts.

The set a ``--policies-configmap`` source last loaded without errors lives in memory while the scheduler
runs; a restart during a bad edit (a rollout, an OOM kill, a lost node) would otherwise find only the
broken ConfigMap and could not start. So every set that goes into force from a ConfigMap is also saved in
the ConfigMap ``policyscheduler-last-good`` of the lease namespace (``--leader-elect-lease-namespace``),
one key per profile (``<scheduler-name>.json``) holding::

    {"digest": "<sha256 of the whole layered set>", "source": "<namespace>/<name>",
     "resourceVersion": "<the policy ConfigMap's resourceVersion that loaded>",
     "savedAt": "<RFC 3339>", "files": {"<key>.policy": "<text>", ...}}

At start-up, when the configured ConfigMap is broken, has no ``*.policy`` key, is missing or cannot be
read (forbidden), the scheduler loads the saved files of the *same* source instead (layered with the
``--policies`` paths as usual), logs a warning and posts a Warning event ``PolicyLastGoodUsed``; it
keeps watching the source and switches as soon as it loads. Without a saved set it exits 2 as before.

Only the leader writes (or the single replica without leader election), from a thread of its own, and
only when the record changed; a failed write is retried every :data:`RETRY_SECONDS`. The ConfigMap is
the scheduler's own: RBAC grants ``get``/``update`` on it by name and ``create`` in the namespace.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from policyscheduler.kube.configmaps import ConfigMapError, read_configmap, update_configmap_keys
from policyscheduler.kube.rest import RestClient

__all__ = ["LAST_GOOD_NAME", "LastGood", "LastGoodStore"]

log = logging.getLogger("policyscheduler.policies")

LAST_GOOD_NAME = "policyscheduler-last-good"
RETRY_SECONDS = 5.0


@dataclasses.dataclass(frozen=True)
class LastGood:
    """One saved set: the policy ConfigMap ``source`` (``ns/name``) at ``resource_version``, its ``*.policy``
    ``files`` (key, text) in key order, and the digest the scheduler ran with them."""

    digest: str
    source: str
    resource_version: str | None
    files: tuple[tuple[str, str], ...]
    saved_at: str = ""

    def encode(self) -> str:
        return json.dumps({"digest": self.digest, "source": self.source, "resourceVersion": self.resource_version,
                           "savedAt": self.saved_at or _now(), "files": dict(self.files)}, sort_keys=True)

    @classmethod
    def decode(cls, text: str) -> LastGood | None:
        """The record in ``text``; None when it is not one (edited by hand, another version's format)."""
        try:
            raw = json.loads(text)
        except ValueError:
            return None
        if not isinstance(raw, dict) or not isinstance(raw.get("files"), dict):
            return None
        files = raw["files"]
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
            return None
        version = raw.get("resourceVersion")
        return cls(str(raw.get("digest") or ""), str(raw.get("source") or ""),
                   str(version) if version is not None else None, tuple(sorted(files.items())),
                   str(raw.get("savedAt") or ""))

    def same_as(self, other: LastGood) -> bool:
        return (self.digest, self.source, self.resource_version, self.files) == (
            other.digest, other.source, other.resource_version, other.files)


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def record_key(profile: str) -> str:
    """The data key of ``profile``'s record."""
    return f"{profile}.json"


class LastGoodStore:
    """Reads the saved sets (start-up) and saves new ones (a writer thread, started by the first
    :meth:`remember`). ``may_write``: only the leader writes (set once the scheduler exists)."""

    def __init__(self, client: RestClient, namespace: str, name: str = LAST_GOOD_NAME) -> None:
        self.client = client
        self.namespace = namespace
        self.name = name
        self.may_write: Callable[[], bool] = lambda: False
        self._pending: dict[str, LastGood] = {}
        self._saved: dict[str, LastGood] = {}
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self.writes = 0

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"

    def read(self, profile: str) -> LastGood | None:
        """``profile``'s saved set; None when there is none; ConfigMapError when it cannot be read."""
        try:
            obj = read_configmap(self.client, self.namespace, self.name, wait=5.0)
        except ConfigMapError as err:
            if "not found" in str(err):
                return None
            raise
        data = obj.get("data") or {}
        text = data.get(record_key(profile)) if isinstance(data, dict) else None
        record = LastGood.decode(text) if isinstance(text, str) else None
        if record is not None:
            self._saved[profile] = record
        return record

    def remember(self, profile: str, source: str, resource_version: str | None,
                 files: Sequence[tuple[str, str]], digest: str) -> None:
        """Save this set as ``profile``'s last good one (soon, from the writer thread)."""
        record = LastGood(digest, source, resource_version, tuple(files), _now())
        with self._cond:
            saved = self._saved.get(profile)
            if saved is not None and saved.same_as(record):
                self._pending.pop(profile, None)
                return
            self._pending[profile] = record
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="last-good-writer", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def wait_saved(self, timeout: float) -> bool:
        """Wait until nothing is pending (tests); True when nothing is."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._pending, timeout)

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: bool(self._pending))
                batch = dict(self._pending)
            if not self.may_write():
                with self._cond:
                    self._cond.wait(1.0)  # a standby: write once leading (the leader writes the same)
                continue
            try:
                update_configmap_keys(self.client, self.namespace, self.name,
                                      {record_key(p): r.encode() for p, r in batch.items()},
                                      labels={"app.kubernetes.io/managed-by": "policyscheduler"})
            except ConfigMapError as err:
                log.warning("saving the last good policy set failed (retrying in %.0fs): %s", RETRY_SECONDS, err)
                with self._cond:
                    self._cond.wait(RETRY_SECONDS)
                continue
            with self._cond:
                for profile, record in batch.items():
                    self._saved[profile] = record
                    if self._pending.get(profile) is record:
                        del self._pending[profile]
                self.writes += 1
                self._cond.notify_all()
            log.info("last good policy set saved", extra={"fields": {
                "configmap": self.ref, "profiles": sorted(batch),
                "policy_digests": {p: r.digest[:12] for p, r in batch.items()}}})


def describe(record: LastGood) -> dict[str, Any]:
    """Log fields of a saved set."""
    return {"last_good_digest": record.digest[:12], "last_good_source": record.source,
            "last_good_resource_version": record.resource_version, "last_good_saved_at": record.saved_at,
            "last_good_files": [k for k, _ in record.files]}
