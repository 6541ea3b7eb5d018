"""A reflector's first list goes out a page at a time (a 150,000-pod cluster's raw objects are never all
held by the reflector at once); a relist still goes out once complete, deletions first; a first list that
has to start over (its continue token expired) deletes what the complete list no longer shows."""

from __future__ import annotations

from typing import Any

from policyscheduler.kube.rest import ApiError
from policyscheduler.kube.watch import Reflector


def _obj(name: str, version: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": version, "uid": f"uid-{name}",
                         "labels": {"app": name}},
            "spec": {"nodeName": f"node-{name}", "containers": [{"name": "c"}]}}


class Recorder:
    """Records every delivery in order."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.deleted: list[dict[str, Any]] = []

    def on_upsert(self, kind: str, obj: dict[str, Any]) -> None:
        self.events.append(("upsert", obj["metadata"]["name"]))

    def on_delete(self, kind: str, obj: dict[str, Any]) -> None:
        self.deleted.append(obj)
        self.events.append(("delete", obj["metadata"]["name"]))

    def on_synced(self, kind: str) -> None:
        self.events.append(("synced", kind))

    def on_error(self, kind: str, error: str) -> None:
        raise AssertionError(error)


class PagedApi:
    """Answers lists from ``pages`` (one list of objects per page, chained by continue tokens) and
    records, for every page asked for, what the handler had received by then. ``expire``: the
    continue token of that page index answers 410 once (an expired token: the reflector lists again)."""

    def __init__(self, handler: Recorder, pages: list[list[dict[str, Any]]], expire: int | None = None,
                 full: list[dict[str, Any]] | None = None) -> None:
        self.handler, self.pages, self.expire, self.full = handler, pages, expire, full
        self.asked: list[tuple[Any, list[tuple[str, str]]]] = []

    def get(self, path: str, **query: Any) -> Any:
        token = query.get("continue")
        self.asked.append((token, list(self.handler.events)))
        if token is None and "limit" not in query:  # the full list after an expired token
            return {"items": list(self.full or []), "metadata": {"resourceVersion": "9"}}
        index = int(token) if token else 0
        if index == self.expire:
            self.expire = None
            raise ApiError("GET", path, 410, '{"reason": "Expired"}')
        meta: dict[str, Any] = {"resourceVersion": "9"}
        if index + 1 < len(self.pages):
            meta["continue"] = str(index + 1)
        return {"items": [dict(o) for o in self.pages[index]], "metadata": meta}


def test_the_first_list_is_delivered_page_by_page() -> None:
    handler = Recorder()
    api = PagedApi(handler, [[_obj("a", "1"), _obj("b", "2")], [_obj("c", "3")], [_obj("d", "4")]])
    reflector = Reflector(api, "Pod", handler, page_size=2)  # type: ignore[arg-type]
    reflector._list()
    # each page was handed over before the next one was asked for
    assert [seen for _, seen in api.asked] == [
        [], [("upsert", "a"), ("upsert", "b")], [("upsert", "a"), ("upsert", "b"), ("upsert", "c")]]
    assert handler.events == [("upsert", "a"), ("upsert", "b"), ("upsert", "c"), ("upsert", "d"), ("synced", "Pod")]
    assert reflector.synced.is_set() and reflector.resource_version == "9" and len(reflector._known) == 4


def test_a_relist_is_delivered_once_complete_deletions_first() -> None:
    handler = Recorder()
    api = PagedApi(handler, [[_obj("a", "1"), _obj("b", "2")]])
    reflector = Reflector(api, "Pod", handler, page_size=2)  # type: ignore[arg-type]
    reflector._list()
    handler.events.clear()
    api.pages = [[_obj("b", "2"), _obj("c", "3")], [_obj("d", "4")]]
    api.asked.clear()
    reflector._list()
    assert [seen for _, seen in api.asked] == [[], []]  # nothing went out before the list was complete
    assert handler.events == [("delete", "a"), ("upsert", "c"), ("upsert", "d"), ("synced", "Pod")]
    # a deletion carries what the cache needs of the object: its metadata keys and the pod's node
    assert handler.deleted == [{"kind": "Pod", "metadata": {"name": "a", "namespace": "ns", "uid": "uid-a",
                                                            "resourceVersion": "1"}, "spec": {"nodeName": "node-a"}}]
    assert reflector.stats.relists == 1


def test_a_deleted_node_is_a_stub_without_spec() -> None:
    handler = Recorder()
    node = {"metadata": {"name": "n1", "resourceVersion": "3"}, "spec": {"nodeName": "not-a-pod-field"}}
    api = PagedApi(handler, [[node]])
    reflector = Reflector(api, "Node", handler)  # type: ignore[arg-type]
    reflector._list()
    api.pages = [[]]
    reflector._list()
    assert handler.deleted == [{"kind": "Node", "metadata": {"name": "n1", "resourceVersion": "3"}}]


def test_a_first_list_that_starts_over_deletes_what_is_gone() -> None:
    handler = Recorder()
    api = PagedApi(handler, [[_obj("a", "1"), _obj("b", "2")], [_obj("c", "3")]], expire=1,
                   full=[_obj("b", "2"), _obj("c", "5"), _obj("e", "6")])
    reflector = Reflector(api, "Pod", handler, page_size=2)  # type: ignore[arg-type]
    reflector._list()
    # a and b went out with the first page; the full list has no a (deleted), b unchanged (not repeated)
    assert handler.events == [("upsert", "a"), ("upsert", "b"), ("upsert", "c"), ("upsert", "e"),
                              ("delete", "a"), ("synced", "Pod")]
    assert sorted(name for _, name in reflector._known) == ["b", "c", "e"]
    assert reflector.stats.relists == 0 and reflector.stats.lists == 1
