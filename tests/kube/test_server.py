"""The status server's paths, its HTTPS with delegated authn/authz, ``/metrics/resources``' values and
the serving flags. The API server's two reviews are answered by a stand-in that knows one good token."""

from __future__ import annotations

import argparse
import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Counter

from policyscheduler.cli.run import add_arguments, serving_from
from policyscheduler.kube.resources import pod_totals, resource_registry, unit_of
from policyscheduler.kube.secure import DelegatedAuth, SecureServing, server_context
from policyscheduler.kube.server import StatusServer


class ReviewingApi:
    """Answers TokenReview (token "good" or "reader" is a user) and SubjectAccessReview ("reader" may get)."""

    def __init__(self) -> None:
        self.posts: list[str] = []

    def post(self, path: str, body: Any, **query: Any) -> Any:
        self.posts.append(path)
        if path.endswith("/tokenreviews"):
            token = body["spec"]["token"]
            if token in ("good", "reader"):
                return {"status": {"authenticated": True, "user": {"username": token, "groups": ["g"]}}}
            return {"status": {"authenticated": False}}
        assert path.endswith("/subjectaccessreviews")
        spec = body["spec"]
        assert spec["nonResourceAttributes"]["verb"] == "get"
        return {"status": {"allowed": spec["user"] == "reader"}}


def _registry() -> CollectorRegistry:
    r = CollectorRegistry()
    Counter("scheduler_schedule_attempts", "x", registry=r).inc()
    return r


POD = {"metadata": {"namespace": "ns", "name": "p"},
       "spec": {"nodeName": "n1", "schedulerName": "s", "priority": 7,
                "containers": [{"resources": {"requests": {"cpu": "250m", "memory": "1Gi"},
                                              "limits": {"cpu": "1"}}},
                               {"resources": {"requests": {"cpu": "250m"}}}],
                "initContainers": [{"resources": {"requests": {"cpu": "2"}}}],
                "overhead": {"cpu": "100m"}}}


def _get(url: str, token: str | None = None, ctx: ssl.SSLContext | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=10, context=ctx) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


@pytest.fixture
def secure() -> Iterator[tuple[str, ReviewingApi]]:
    api = ReviewingApi()
    server = StatusServer(("127.0.0.1", 0), _registry(), lambda: (True, "ok"), lambda: (False, "not synced"),
                          tls=server_context(SecureServing("127.0.0.1", 0)), auth=DelegatedAuth(api),
                          configz=lambda: {"kind": "PolicySchedulerConfiguration"},
                          resources=resource_registry(lambda: [POD]))
    server.start()
    try:
        yield f"https://127.0.0.1:{server.address[1]}", api
    finally:
        server.stop()


def _insecure_ctx() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def test_https_self_signed_refuses_unauthenticated_and_unauthorized(secure: tuple[str, ReviewingApi]) -> None:
    url, api = secure
    ctx = _insecure_ctx()
    assert _get(url + "/metrics", None, ctx)[0] == 401
    assert _get(url + "/metrics", "bad", ctx)[0] == 401
    code, body = _get(url + "/metrics", "good", ctx)
    assert code == 403 and 'user "good" cannot get path "/metrics"' in body
    code, body = _get(url + "/metrics", "reader", ctx)
    assert code == 200 and "scheduler_schedule_attempts_total 1.0" in body
    assert _get(url + "/configz", "good", ctx)[0] == 403
    assert json.loads(_get(url + "/configz", "reader", ctx)[1])["kind"] == "PolicySchedulerConfiguration"
    posts = len(api.posts)
    assert _get(url + "/metrics", "reader", ctx)[0] == 200
    assert len(api.posts) == posts  # answers are cached: a scrape costs no review


def test_https_health_paths_need_no_token(secure: tuple[str, ReviewingApi]) -> None:
    url, api = secure
    ctx = _insecure_ctx()
    assert _get(url + "/healthz", None, ctx) == (200, "ok\n")
    assert _get(url + "/livez", None, ctx) == (200, "ok\n")
    assert _get(url + "/healthz/ping", None, ctx) == (200, "ok\n")
    assert _get(url + "/readyz", None, ctx) == (503, "not synced\n")
    assert api.posts == []


def test_https_certificate_is_served(secure: tuple[str, ReviewingApi]) -> None:
    url, _ = secure
    with pytest.raises(urllib.error.URLError):  # self-signed: a verifying client refuses it
        _get(url + "/healthz", None, ssl.create_default_context())


def test_metrics_resources_as_kube(secure: tuple[str, ReviewingApi]) -> None:
    url, _ = secure
    body = _get(url + "/metrics/resources", "reader", _insecure_ctx())[1]
    labels = 'namespace="ns",node="n1",pod="p",priority="7",resource="cpu",scheduler="s",unit="cores"'
    assert f"kube_pod_resource_request{{{labels}}} 2.1" in body  # max(0.5, init 2) + 0.1 overhead
    assert f"kube_pod_resource_limit{{{labels}}} 1.1" in body


def test_pod_totals_units() -> None:
    assert pod_totals(POD, "requests") == {"cpu": Fraction(21, 10), "memory": Fraction(2**30)}
    assert (unit_of("cpu"), unit_of("memory"), unit_of("hugepages-2Mi"), unit_of("nvidia.com/gpu")) == \
        ("cores", "bytes", "bytes", "")
    done = {**POD, "status": {"phase": "Succeeded"}}
    from prometheus_client import generate_latest
    assert b"kube_pod_resource_request{" not in generate_latest(resource_registry(lambda: [done]))


def test_plain_http_serves_every_path() -> None:
    server = StatusServer(("127.0.0.1", 0), _registry(), lambda: (True, "ok"), lambda: (True, "ok"),
                          configz=lambda: {"a": 1}, resources=resource_registry(lambda: []))
    server.start()
    try:
        base = f"http://127.0.0.1:{server.address[1]}"
        for path in ("/healthz", "/healthz/ping", "/livez", "/readyz", "/configz", "/metrics", "/metrics/resources"):
            assert _get(base + path)[0] == 200, path
        assert _get(base + "/nothing")[0] == 404
    finally:
        server.stop()


def _flags(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


def test_serving_flags() -> None:
    assert serving_from(_flags()) == (None, SecureServing("0.0.0.0", 10259))
    assert serving_from(_flags("--bind-address", "127.0.0.1", "--secure-port", "8443",
                               "--tls-cert-file", "c", "--tls-private-key-file", "k")) == \
        (None, SecureServing("127.0.0.1", 8443, "c", "k"))
    assert serving_from(_flags("--secure-port", "0")) == (None, None)
    assert serving_from(_flags("--bind-address", "127.0.0.1:0")) == (("127.0.0.1", 0), None)  # development
    with pytest.raises(ValueError, match="loopback"):
        serving_from(_flags("--bind-address", "0.0.0.0:10259"))
    with pytest.raises(ValueError, match="go together"):
        serving_from(_flags("--tls-cert-file", "c"))
