"""The API side of preemption: what kube-scheduler v1.35 writes once its PostFilter chose victims.

The cycle (:mod:`policyscheduler.cycle.preemption`) only decides; an :class:`Attempt` carries the outcome
(``nominated_node``, ``victims``, ``clear_nomination``, ``cleared_nominations``). :class:`PreemptionWriter`
turns it into API writes, in kube's order (``prepareCandidate`` / ``PreemptPod`` and the failure
handler's nomination patch):

1. each victim gets the ``DisruptionTarget`` condition (True, reason ``PreemptionByScheduler``, message
   ``<preemptor's schedulerName>: preempting to accommodate a higher priority pod``), is deleted, and gets
   a ``Preempted`` event (action ``Preempting``, note ``Preempted by pod <preemptor UID> on node <node>``,
   ``related``: the preemptor) -- a victim already gone (404) or recreated (uid precondition, 409) is
   done, as in kube;
2. lower-priority pods nominated to that node lose their ``status.nominatedNodeName``;
3. the preemptor gets ``status.nominatedNodeName`` (or loses it, ``clear_nomination``).

The writes run on a small pool, never on the scheduling loop (kube-scheduler's async preemption does the
same): the loop only queues. A write the API server could not take (connection error, 429, 5xx) is
retried with backoff (0.5 s doubling, 5 tries); any other failure is logged with the pod and dropped --
the pod stays pending and the next attempt preempts again if it still must.
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import socket
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from policyscheduler.kube.rest import ApiError, pod_path

if TYPE_CHECKING:
    from policyscheduler.cycle import Attempt
    from policyscheduler.cycle.preemption import Victim
    from policyscheduler.kube.metrics import SchedulerMetrics
    from policyscheduler.kube.rest import RestClient

__all__ = ["DISRUPTION_MESSAGE", "PreemptionWriter", "preempted_note"]

log = logging.getLogger("policyscheduler.preemption")

DISRUPTION_MESSAGE = "{scheduler}: preempting to accommodate a higher priority pod"
"""kube's DisruptionTarget message (``preemptor.Spec.SchedulerName`` first)."""

_RETRIES = 5


def preempted_note(preemptor_uid: str, node: str) -> str:
    """The ``Preempted`` event's note on a victim, word for word kube's."""
    return f"Preempted by pod {preemptor_uid} on node {node}"


def _meta(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = pod.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class PreemptionWriter:
    """Queues and performs the writes of one preemption per :meth:`submit` (see the module docstring)."""

    def __init__(self, client: RestClient, metrics: SchedulerMetrics | None = None, *, workers: int = 2,
                 backoff: float = 0.5, may_write: Callable[[], bool] = lambda: True) -> None:
        self.client = client
        self.metrics = metrics
        self.backoff = backoff
        self.may_write = may_write
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="preemption")
        self.failed = 0

    def submit(self, attempt: Attempt, scheduler: str) -> None:
        """Count the preemption attempt (if the cycle ran PostFilter: kube counts every run, an ineligible
        pod's too) and queue its writes. Returns at once."""
        if attempt.preemption is not None and self.metrics is not None:
            self.metrics.preempted(len(attempt.victims) if attempt.nominated_node is not None else None)
        if not (attempt.nominated_node or attempt.victims or attempt.clear_nomination
                or attempt.cleared_nominations):
            return
        self._pool.submit(self._run, attempt, scheduler)

    def shutdown(self, wait: bool = True) -> None:
        """Finish (``wait``) or drop the queued writes."""
        self._pool.shutdown(wait=wait, cancel_futures=not wait)

    # -- the worker -----------------------------------------------------------------------------------------

    def _run(self, attempt: Attempt, scheduler: str) -> None:
        try:
            meta = _meta(attempt.pod)
            node = attempt.nominated_node
            for victim in attempt.victims:
                if not self.may_write():
                    return
                self._evict(victim, attempt.pod, scheduler, node or victim.node)
            for key in attempt.cleared_nominations:
                namespace, _, name = key.partition("/")
                self._retry(f"clear nomination of {key}", self._nominate, namespace, name, None, None)
            namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name"))
            if node is not None:
                self._retry(f"nominate {namespace}/{name} to {node}", self._nominate, namespace, name,
                            str(meta.get("uid") or "") or None, node)
            elif attempt.clear_nomination:
                self._retry(f"clear nomination of {namespace}/{name}", self._nominate, namespace, name,
                            str(meta.get("uid") or "") or None, None)
        except Exception:  # a worker never dies silently
            log.exception("preemption writes for %s failed", attempt.key)

    def _evict(self, victim: Victim, preemptor: Mapping[str, Any], scheduler: str, node: str) -> None:
        what = f"preempt {victim.key} (uid {victim.uid}) on {node} for {attempt_key(preemptor)}"
        if not self._retry(what, self._disruption_target, victim, scheduler):
            return
        if not self._retry(what, self._delete, victim):
            return
        log.info("preempted", extra={"fields": {"pod": victim.key, "uid": victim.uid, "node": node,
                                                "preemptor": attempt_key(preemptor),
                                                "pdb_violation": victim.pdb_violation}})
        self._retry(f"Preempted event on {victim.key}", self._event, victim, preemptor, scheduler, node)

    def _retry(self, what: str, fn: Callable[..., Any], *args: Any) -> bool:
        """``fn(*args)`` until it succeeds or fails for good; True when it succeeded. A 404/409 (the pod is
        gone or is another pod now) ends the work on that pod quietly, as kube does."""
        delay = self.backoff
        for attempt in range(_RETRIES):
            try:
                fn(*args)
                return True
            except ApiError as err:
                if err.status in (404, 409):
                    log.info("%s: the pod is gone (%d); nothing to do", what, err.status)
                    return False
                if (err.status == 0 or err.status == 429 or err.status >= 500) and attempt < _RETRIES - 1:
                    log.warning("%s: %s (retrying in %.1fs)", what, err, delay)
                    time.sleep(delay)
                    delay *= 2
                    continue
                self.failed += 1
                log.warning("%s failed: %s", what, err)
                return False
        return False  # pragma: no cover - the loop returns

    # -- the writes -------------------------------------------------------------------------------------------

    def _disruption_target(self, victim: Victim, scheduler: str) -> None:
        condition = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                     "message": DISRUPTION_MESSAGE.format(scheduler=scheduler), "lastTransitionTime": _now()}
        patch: dict[str, Any] = {"metadata": {"uid": victim.uid}, "status": {"conditions": [condition]}}
        self.client.patch(pod_path(victim.namespace, victim.name, "status"), patch)

    def _delete(self, victim: Victim) -> None:
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": victim.uid}}
        self.client.request("DELETE", pod_path(victim.namespace, victim.name), body)

    def _nominate(self, namespace: str, name: str, uid: str | None, node: str | None) -> None:
        patch: dict[str, Any] = {"status": {"nominatedNodeName": node}}  # None: a merge patch removes it
        if uid:
            patch["metadata"] = {"uid": uid}
        self.client.patch(pod_path(namespace, name, "status"), patch)

    def _event(self, victim: Victim, preemptor: Mapping[str, Any], scheduler: str, node: str) -> None:
        meta = _meta(preemptor)
        now = _dt.datetime.now(_dt.UTC)
        body = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": f"{victim.name}.{time.time_ns():x}", "namespace": victim.namespace},
            "eventTime": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "reportingController": scheduler,
            "reportingInstance": f"{scheduler}-{socket.gethostname()}-{os.getpid()}",
            "action": "Preempting",
            "reason": "Preempted",
            "type": "Normal",
            "note": preempted_note(str(meta.get("uid") or ""), node),
            "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": victim.namespace, "name": victim.name,
                          "uid": victim.uid},
            "related": {k: v for k, v in {"apiVersion": "v1", "kind": "Pod", "namespace": meta.get("namespace"),
                                          "name": meta.get("name"), "uid": meta.get("uid")}.items() if v},
        }
        self.client.post(f"/apis/events.k8s.io/v1/namespaces/{quote(victim.namespace, safe='')}/events", body)


def attempt_key(pod: Mapping[str, Any]) -> str:
    """``namespace/name`` of a pod, for log lines."""
    meta = _meta(pod)
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
