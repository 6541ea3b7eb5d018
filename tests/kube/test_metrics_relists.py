"""``policyscheduler_watch_relists_total`` counts the lists a watch had to start over from (here: a 410
Gone on the watch request, as after an etcd compaction), not the first list."""

from __future__ import annotations

from typing import Any

from prometheus_client import generate_latest

from policyscheduler.cycle import SchedulingQueue
from policyscheduler.kube.metrics import SchedulerMetrics
from policyscheduler.kube.rest import ApiError
from policyscheduler.kube.watch import Reflector
from tests.kube.test_report_cost import _sample


class _Stream:
    """An open watch that delivers nothing and ends the reflector (the test is over)."""

    def __init__(self, stop: Any) -> None:
        self.pause: Any = None
        self._stop = stop

    def __iter__(self) -> Any:
        self._stop()
        return iter(())

    def close(self) -> None:
        return None


class Handler:
    """Takes the events and says nothing (the counters are what this test reads)."""

    def on_upsert(self, kind: str, obj: dict[str, Any]) -> None:
        return None

    def on_delete(self, kind: str, obj: dict[str, Any]) -> None:
        return None

    def on_synced(self, kind: str) -> None:
        return None

    def on_error(self, kind: str, error: str) -> None:
        raise AssertionError(error)


class GoneOnceApi:
    """Lists answer at resourceVersion 5; the first watch answers 410 Gone (compacted), the next one opens."""

    def __init__(self) -> None:
        self.lists = 0
        self.watches = 0
        self.reflector: Reflector | None = None

    def get(self, path: str, **query: Any) -> Any:
        self.lists += 1
        return {"items": [{"metadata": {"name": "n1", "resourceVersion": "5"}}], "metadata": {"resourceVersion": "5"}}

    def stream(self, path: str, query: Any, *, read_timeout: float) -> Any:
        self.watches += 1
        if self.watches == 1:
            raise ApiError("GET", path, 410, '{"reason": "Expired", "message": "too old resource version"}')
        assert self.reflector is not None
        return _Stream(self.reflector.stop)


def test_a_410_relist_is_counted_on_metrics() -> None:
    api = GoneOnceApi()
    reflector = Reflector(api, "Node", Handler())  # type: ignore[arg-type]
    api.reflector = reflector
    reflector.run()
    assert api.lists == 2 and reflector.stats.relists == 1
    q = SchedulingQueue()
    m = SchedulerMetrics("p", pending=q.pending, cache=dict, leader=lambda: True,
                         watch_stats=lambda: {reflector.kind: reflector.stats})
    text = generate_latest(m.registry).decode()
    assert _sample(text, "policyscheduler_watch_relists_total", resource="Node") == 1
