"""Leader election against the real API server: one winner, and a leader that loses its lease stops at once."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from policyscheduler.kube import RestClient, load_connection
from policyscheduler.kube.lease import LeaderElector
from tests.controlplane.harness import ControlPlane

pytestmark = pytest.mark.e2e


def test_one_leader_and_a_stolen_lease_stops_the_leader(control_plane: ControlPlane) -> None:
    client = RestClient(load_connection(str(control_plane.kubeconfig)))
    name = f"lease-{uuid.uuid4().hex[:6]}"
    stopped = threading.Event()
    a = LeaderElector(client, "default", name, identity="a", lease_duration=4, renew_deadline=3, retry_period=0.5,
                      on_stopped_leading=stopped.set)
    b = LeaderElector(client, "default", name, identity="b", lease_duration=4, renew_deadline=3, retry_period=0.5)
    a.start()
    deadline = time.monotonic() + 10
    while not a.is_leader and time.monotonic() < deadline:
        time.sleep(0.1)
    b.start()
    time.sleep(1.5)
    assert a.is_leader and not b.is_leader
    # Someone else writes the lease (as after a partition): a must stop at its next renewal.
    lease = client.get(a.path)
    lease["spec"]["holderIdentity"] = "intruder"
    client.put(a.path, lease)
    assert stopped.wait(3.0)
    assert not a.is_leader
    b.stop()
    a.stop()
