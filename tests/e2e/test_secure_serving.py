"""Secure serving on the real control plane, as kube-scheduler does it: HTTPS (a self-signed certificate
made at start), /metrics and /configz only for a bearer token the API server authenticates (TokenReview)
and authorizes for ``get`` on the path (SubjectAccessReview); health paths open to anyone.

Three callers: no token (401), a ServiceAccount with no grant (403) and one bound to a ClusterRole that
allows ``get`` on ``/metrics`` only (200 on /metrics, 403 on /configz).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3

from tests.controlplane.harness import ControlPlane, free_port
from tests.kube.live import LiveEnv

pytestmark = pytest.mark.e2e

RBAC = "/apis/rbac.authorization.k8s.io/v1"


@pytest.fixture
def env(cp: ControlPlane, tmp_path: Path) -> Iterator[LiveEnv]:
    e = LiveEnv(cp, tmp_path, "secure")
    try:
        yield e
    finally:
        for path in (f"{RBAC}/clusterrolebindings/{e.ns}-reader", f"{RBAC}/clusterroles/{e.ns}-reader"):
            try:
                e.api.delete(path)
            except Exception:  # noqa: BLE001 - already gone
                pass
        e.cleanup()


def _token(env: LiveEnv, name: str) -> str:
    env.api.post(f"/api/v1/namespaces/{env.ns}/serviceaccounts",
                 {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})
    review: dict[str, Any] = env.api.post(
        f"/api/v1/namespaces/{env.ns}/serviceaccounts/{name}/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 600}})
    return str(review["status"]["token"])


def test_metrics_need_an_authorized_token_and_health_paths_are_open(env: LiveEnv) -> None:
    reader, nobody = _token(env, "reader"), _token(env, "nobody")
    env.api.post(f"{RBAC}/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": f"{env.ns}-reader"},
        "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]})
    env.api.post(f"{RBAC}/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": f"{env.ns}-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": f"{env.ns}-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": env.ns}]})
    port = free_port()
    env.start("--bind-address", "127.0.0.1", "--secure-port", str(port))  # no certificate given: self-signed
    http = urllib3.PoolManager(cert_reqs="CERT_NONE", retries=False, timeout=urllib3.Timeout(connect=5, read=15))
    base = f"https://127.0.0.1:{port}"

    def get(path: str, token: str | None = None) -> tuple[int, str]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        with pytest.warns(urllib3.exceptions.InsecureRequestWarning):  # the self-signed certificate
            resp = http.request("GET", base + path, headers=headers)
        return resp.status, str(resp.data.decode())

    assert get("/metrics")[0] == 401
    assert get("/metrics", "not-a-token")[0] == 401
    code, body = get("/metrics", nobody)
    assert code == 403 and f"system:serviceaccount:{env.ns}:nobody" in body
    code, body = get("/metrics", reader)
    assert code == 200 and "scheduler_pending_pods{" in body
    assert get("/configz", reader)[0] == 403  # the role allows /metrics only: authorization is per path
    assert get("/configz", env.cp.token)[0] == 200  # the admin (system:masters) may read everything
    for path in ("/healthz", "/healthz/ping", "/livez", "/readyz"):
        assert get(path)[0] == 200, path
    # plain HTTP on the HTTPS port gets no metrics
    plain = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(connect=5, read=5))
    try:
        answer = plain.request("GET", f"http://127.0.0.1:{port}/metrics")
        assert answer.status != 200 or b"scheduler_" not in answer.data
    except urllib3.exceptions.HTTPError:
        pass
