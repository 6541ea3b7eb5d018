"""Secure serving as kube-scheduler does it: HTTPS, delegated authentication and authorization.

Why: /metrics and /configz tell anyone who can reach the port how the cluster is scheduled; kube-scheduler
serves them on 10259 over HTTPS and asks the API server who the caller is (a TokenReview of the bearer
token) and whether they may read the path (a SubjectAccessReview with ``nonResourceAttributes``: the path
and verb ``get``). Health paths (/healthz, /healthz/ping, /livez, /readyz) are exempt, as kube's
``--authorization-always-allow-paths`` default makes them.

Answers are cached for 10 s (kube's default authentication and authorization cache TTL for allowed
answers), so a Prometheus scrape costs no API request most of the time. When the API server cannot be
asked, the request is refused (kube: 401/500), never let through.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import ipaddress
import os
import ssl
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["ALWAYS_ALLOW_PATHS", "DelegatedAuth", "SecureServing", "Verdict", "server_context", "self_signed"]

ALWAYS_ALLOW_PATHS = frozenset({"/healthz", "/healthz/ping", "/livez", "/readyz"})
"""Served without authentication or authorization (kube-scheduler's ``--authorization-always-allow-paths``)."""

CACHE_SECONDS = 10.0


@dataclasses.dataclass(frozen=True)
class SecureServing:
    """``--bind-address`` / ``--secure-port`` / ``--tls-cert-file`` / ``--tls-private-key-file``."""

    host: str = "0.0.0.0"
    port: int = 10259
    cert_file: str | None = None
    key_file: str | None = None


@dataclasses.dataclass(frozen=True)
class Verdict:
    """``code`` 200 (allowed), 401 (who are you?) or 403 (not allowed); ``reason`` for the body."""

    code: int
    reason: str = ""


class _Poster(Protocol):
    def post(self, path: str, body: Any, **query: Any) -> Any: ...


class DelegatedAuth:
    """Bearer token -> TokenReview -> SubjectAccessReview(path, get), through ``client``."""

    def __init__(self, client: _Poster, *, ttl: float = CACHE_SECONDS, clock: Callable[[], float] = time.monotonic):
        self._client, self._ttl, self._clock = client, ttl, clock
        self._lock = threading.Lock()
        self._users: dict[str, tuple[float, dict[str, Any] | None]] = {}
        self._decisions: dict[tuple[str, str], tuple[float, bool]] = {}

    def check(self, authorization: str | None, path: str) -> Verdict:
        """The verdict for a request with this ``Authorization`` header on ``path``."""
        if path in ALWAYS_ALLOW_PATHS:
            return Verdict(200)
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return Verdict(401, "Unauthorized")
        try:
            user = self._authenticate(token.strip())
        except Exception as exc:  # noqa: BLE001 - the API server unreachable: refuse, say why
            return Verdict(401, f"Unauthorized: authentication unavailable ({type(exc).__name__})")
        if user is None:
            return Verdict(401, "Unauthorized")
        name = str(user.get("username") or "")
        try:
            allowed = self._authorize(token.strip(), user, path)
        except Exception as exc:  # noqa: BLE001
            return Verdict(403, f"Forbidden: authorization unavailable ({type(exc).__name__})")
        if not allowed:
            return Verdict(403, f'Forbidden: user "{name}" cannot get path "{path}"')
        return Verdict(200)

    def _authenticate(self, token: str) -> dict[str, Any] | None:
        now = self._clock()
        digest = hashlib.sha256(token.encode()).hexdigest()  # the cache keeps no token itself
        with self._lock:
            hit = self._users.get(digest)
        if hit is not None and hit[0] > now:
            return hit[1]
        review = self._client.post("/apis/authentication.k8s.io/v1/tokenreviews", {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}})
        status = (review or {}).get("status") or {}
        user = status.get("user") if status.get("authenticated") else None
        with self._lock:
            if len(self._users) > 1024:
                self._users.clear()
            self._users[digest] = (now + self._ttl, user)
        return user if isinstance(user, dict) else None

    def _authorize(self, token: str, user: dict[str, Any], path: str) -> bool:
        now = self._clock()
        key = (hashlib.sha256(token.encode()).hexdigest(), path)
        with self._lock:
            hit = self._decisions.get(key)
        if hit is not None and hit[0] > now:
            return hit[1]
        spec: dict[str, Any] = {"user": user.get("username", ""), "groups": list(user.get("groups") or []),
                                "nonResourceAttributes": {"path": path, "verb": "get"}}
        if user.get("uid"):
            spec["uid"] = user["uid"]
        if user.get("extra"):
            spec["extra"] = user["extra"]
        review = self._client.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec})
        allowed = bool(((review or {}).get("status") or {}).get("allowed"))
        with self._lock:
            if len(self._decisions) > 4096:
                self._decisions.clear()
            self._decisions[key] = (now + self._ttl, allowed)
        return allowed


def self_signed(host: str) -> tuple[bytes, bytes]:
    """A fresh key and a certificate for ``host`` (plus localhost), valid a year: (cert PEM, key PEM).

    kube-scheduler does the same when no certificate is given (it writes them under --cert-dir; we keep
    them in memory and only hand them to ``ssl`` through a private temporary file, removed at once)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName("localhost")]
    ips = {ipaddress.ip_address("127.0.0.1")}
    try:
        ip = ipaddress.ip_address(host)
        if not ip.is_unspecified:
            ips.add(ip)
    except ValueError:
        if host:
            names.append(x509.DNSName(host))
    names.extend(x509.IPAddress(ip) for ip in sorted(ips, key=str))
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{host or 'localhost'}@{int(time.time())}")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=365))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


def server_context(serving: SecureServing) -> ssl.SSLContext:
    """The TLS server context: the given files, or a self-signed pair made now. Raises OSError/ValueError
    with the reason when the files do not load."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if serving.cert_file and serving.key_file:
        try:
            ctx.load_cert_chain(serving.cert_file, serving.key_file)
        except ssl.SSLError as exc:
            raise ValueError(f"--tls-cert-file/--tls-private-key-file do not load: {exc}") from exc
        return ctx
    cert, key = self_signed(serving.host)
    fd, name = tempfile.mkstemp(prefix="policyscheduler-serving-", suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as out:  # mkstemp: mode 0600, removed before anyone needs it again
            out.write(key + cert)
        ctx.load_cert_chain(name)
    finally:
        os.unlink(name)
    return ctx
