"""Shared pytest fixtures: the real control plane for the e2e tests.

``control_plane`` (session) starts etcd + kube-apiserver once, ``cp`` (module) one per test module; it builds the
binaries first if needed and *fails* (never skips) with the reason when it cannot.
``namespace`` gives each test a fresh namespace, and ``kube`` adds helpers that
create fake nodes and pods and delete them again after the test. ``storage_controllers`` (session) adds
kube-controller-manager with the PV binder to ``control_plane``, and ``cp_storage`` to the module's ``cp``,
only for the tests that ask for them (claims then really bind).
Nothing here is imported or started unless a test asks for these fixtures.

The language tests' fixtures live here too, because their users sit in several folders (checker, compiler,
cli and the loader's tests at the top): ``schema`` is the small test-only object model of
``tests/schema_fixture.py``; ``cli_schema`` makes the CLI fall back to it when the real object model is absent.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

if TYPE_CHECKING:
    from policyscheduler.checker.env import Schema
    from tests.controlplane.api import Api
    from tests.controlplane.harness import ControlPlane

T = TypeVar("T")


def _started_or_fail(what: str, start: Callable[[], T]) -> T:
    """``start()``; when it raises ControlPlaneError the test *fails* (never skips) with the reason."""
    from tests.controlplane.harness import ControlPlaneError

    error = None
    try:
        return start()
    except ControlPlaneError as exc:
        error = str(exc)
    pytest.fail(f"cannot start {what}: {error}", pytrace=False)


def _start_control_plane() -> ControlPlane:
    """Start etcd + kube-apiserver; a test *fails* (never skips) with the reason when that cannot be done."""
    from tests.controlplane.harness import ControlPlane

    return _started_or_fail("the test control plane", ControlPlane.start)


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    cp = _start_control_plane()
    try:
        yield cp
    finally:
        cp.stop()


@pytest.fixture(scope="module")
def cp() -> Iterator[ControlPlane]:
    """A control plane of the test module's own, for modules that run a live scheduler: it watches every
    namespace, so no other module's pods may reach it (and it may be restarted or compacted)."""
    plane = _start_control_plane()
    try:
        yield plane
    finally:
        plane.stop()


@contextmanager
def _storage_controllers_on(plane: ControlPlane) -> Iterator[Any]:
    """kube-controller-manager with the storage controllers on ``plane`` (fails, never skips, with the
    reason), stopped again at the end."""
    manager = _started_or_fail("kube-controller-manager", plane.start_controller_manager)
    try:
        yield manager
    finally:
        plane.stop_controller_manager(manager)


@pytest.fixture(scope="session")
def storage_controllers(control_plane: ControlPlane) -> Iterator[Any]:
    """The PV binder on the session control plane, started once by the first test that needs it."""
    with _storage_controllers_on(control_plane) as manager:
        yield manager


@pytest.fixture(scope="module")
def cp_storage(cp: ControlPlane) -> Iterator[ControlPlane]:
    """The module's own control plane (``cp``) with the PV binder running."""
    with _storage_controllers_on(cp):
        yield cp


@pytest.fixture
def namespace(control_plane: ControlPlane, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace unique to this test; its pods are deleted (no grace) afterwards.

    No namespace controller runs, so the Namespace itself stays Terminating after
    deletion; that is harmless because names are never reused.
    """
    base = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")[:40].strip("-") or "t"
    name = f"{base}-{uuid.uuid4().hex[:6]}"
    api = control_plane.api()
    api.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    try:
        yield name
    finally:
        for pod in api.list_items(f"/api/v1/namespaces/{name}/pods"):
            api.delete(f"/api/v1/namespaces/{name}/pods/{pod['metadata']['name']}", gracePeriodSeconds=0)
        api.delete(f"/api/v1/namespaces/{name}")


class Kube:
    """Per-test helpers bound to the session control plane and the test's namespace."""

    def __init__(self, control_plane: ControlPlane, namespace: str) -> None:
        self.control_plane = control_plane
        self.namespace = namespace
        self.api: Api = control_plane.api()

    def create_nodes(self, count: int, **kwargs: Any) -> list[dict[str, Any]]:
        """Create fake nodes (see fakes.make_nodes); they are deleted after the test."""
        from tests.controlplane import fakes

        kwargs.setdefault("prefix", f"{self.namespace}-node")
        return fakes.create_all(self.api, fakes.make_nodes(count, owner=self.namespace, **kwargs))

    def create_pods(self, count: int, **kwargs: Any) -> list[dict[str, Any]]:
        """Create pods in this test's namespace (see fakes.make_pods)."""
        from tests.controlplane import fakes

        return fakes.create_all(self.api, fakes.make_pods(count, self.namespace, owner=self.namespace, **kwargs))

    def cleanup(self) -> None:
        from tests.controlplane import fakes

        fakes.delete_owned(self.api, self.namespace)


@pytest.fixture
def kube(control_plane: ControlPlane, namespace: str) -> Iterator[Kube]:
    helper = Kube(control_plane, namespace)
    try:
        yield helper
    finally:
        helper.cleanup()


@pytest.fixture(scope="session")
def schema() -> Schema:
    from tests.schema_fixture import test_schema

    return test_schema()


@pytest.fixture
def cli_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    """For tests that go through the CLI (no schema argument): the real object model when it is installed,
    else the test-only schema (same field names)."""
    from policyscheduler import loader
    from policyscheduler.schema import ROOTS
    from tests.schema_fixture import test_schema

    try:
        import policyscheduler.objects  # noqa: F401
    except ModuleNotFoundError:
        pass
    if not ROOTS:
        fallback = test_schema()
        monkeypatch.setattr(loader, "global_schema", lambda: fallback)
