"""Fixtures of the kube client tests: a TCP proxy in front of the session's API server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.kube.proxy import Proxy

if TYPE_CHECKING:
    from tests.controlplane.harness import ControlPlane


@pytest.fixture
def proxy(control_plane: ControlPlane) -> Iterator[Proxy]:
    """A :class:`Proxy` to the API server (connect to ``https://127.0.0.1:<proxy.port>``)."""
    host, port = control_plane.server.removeprefix("https://").rsplit(":", 1)
    p = Proxy((host, int(port)))
    yield p
    p.close()
