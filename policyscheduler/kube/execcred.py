"""Kubeconfig ``exec`` credential plugins, run the way client-go runs them.

Why our own and not the ``kubernetes`` package's: that loader reads only a token from the plugin's
``ExecCredential`` (a returned client certificate is written once and never renewed: no refresh hook
is set for it), and it treats a credential as expired five minutes before its ``expirationTimestamp``,
so a plugin that issues short-lived credentials is run on every request. client-go keeps the
credential until its expiry, runs the plugin again after it, and also when the API server answers
401 (the credential was revoked early). Both a token and a client certificate may be returned.

What is read from the kubeconfig's ``user.exec``: ``command`` (a relative path with a ``/`` is relative
to the kubeconfig's folder, as in client-go), ``args``, ``env``, ``apiVersion``
(``client.authentication.k8s.io/v1`` or ``v1beta1``), ``provideClusterInfo`` and ``installHint``.
We never run interactively: ``interactiveMode: Always`` is refused with a clear error.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import shutil
import subprocess
import tempfile
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ExecCredential", "ExecError", "ExecPlugin"]

API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
RUN_TIMEOUT = 60.0
"""Seconds a plugin may take (client-go has none; a hung plugin must not hang the scheduler forever)."""


class ExecError(RuntimeError):
    """The plugin could not be run or its output is not a usable ExecCredential (the message says why)."""


@dataclass(frozen=True)
class ExecCredential:
    """One credential the plugin returned; ``cert_file``/``key_file`` are written to a private folder
    (a new pair of paths per credential, so a changed path means a changed certificate)."""

    token: str | None
    cert_file: str | None
    key_file: str | None
    expiry: dt.datetime | None

    def expired(self, now: dt.datetime) -> bool:
        return self.expiry is not None and now >= self.expiry


class ExecPlugin:
    """Runs one kubeconfig user's exec plugin on demand and caches its credential until it expires.

    Thread-safe: concurrent callers during a refresh wait for the one run."""

    def __init__(self, spec: Mapping[str, Any], base_dir: str, cluster: Mapping[str, Any] | None = None) -> None:
        command = spec.get("command")
        if not isinstance(command, str) or not command:
            raise ExecError("exec: 'command' is missing")
        version = spec.get("apiVersion")
        if version not in API_VERSIONS:
            raise ExecError(f"exec: apiVersion {version!r} is not one of {', '.join(API_VERSIONS)}")
        if spec.get("interactiveMode") == "Always":
            raise ExecError("exec: interactiveMode Always needs a terminal; the scheduler never has one")
        if os.sep in command and not os.path.isabs(command):
            command = os.path.join(base_dir, command)
        self.command = command
        self.args = [str(a) for a in spec.get("args") or []]
        self.env = {str(e["name"]): str(e["value"]) for e in spec.get("env") or []}
        self.api_version = str(version)
        self.install_hint = str(spec.get("installHint") or "")
        self.cluster = dict(cluster) if cluster is not None and spec.get("provideClusterInfo") else None
        self.runs = 0
        """How many times the plugin was run (logged and tested)."""
        self._lock = threading.Lock()
        self._current: ExecCredential | None = None
        self._folder = tempfile.mkdtemp(prefix="policyscheduler-exec-")
        weakref.finalize(self, shutil.rmtree, self._folder, True)

    def credential(self) -> ExecCredential:
        """The cached credential, or a new one when there is none or it expired."""
        current = self._current
        if current is not None and not current.expired(dt.datetime.now(dt.UTC)):
            return current
        with self._lock:
            current = self._current
            if current is None or current.expired(dt.datetime.now(dt.UTC)):
                current = self._current = self._run()
            return current

    def invalidate(self, used: ExecCredential | None = None) -> None:
        """Forget the credential (the API server answered 401): the next request runs the plugin again.
        With ``used``, only when that is still the cached one, so a burst of 401s runs it once."""
        with self._lock:
            if used is None or self._current is used:
                self._current = None

    def _run(self) -> ExecCredential:
        info: dict[str, Any] = {"apiVersion": self.api_version, "kind": "ExecCredential",
                                "spec": {"interactive": False}}
        if self.cluster is not None:
            info["spec"]["cluster"] = _cluster_info(self.cluster)
        env = {**os.environ, **self.env, "KUBERNETES_EXEC_INFO": json.dumps(info)}
        self.runs += 1
        try:
            done = subprocess.run([self.command, *self.args], env=env, stdin=subprocess.DEVNULL,
                                  capture_output=True, timeout=RUN_TIMEOUT, check=False)
        except FileNotFoundError as err:
            hint = f" ({self.install_hint.strip()})" if self.install_hint else ""
            raise ExecError(f"exec: {self.command}: not found{hint}") from err
        except (OSError, subprocess.TimeoutExpired) as err:
            raise ExecError(f"exec: {self.command}: {err}") from err
        if done.returncode != 0:
            tail = done.stderr.decode(errors="replace").strip()[-500:]
            raise ExecError(f"exec: {self.command} exited with {done.returncode}" + (f": {tail}" if tail else ""))
        return self._parse(done.stdout)

    def _parse(self, stdout: bytes) -> ExecCredential:
        try:
            doc = json.loads(stdout)
        except ValueError as err:
            raise ExecError(f"exec: {self.command} printed no JSON ExecCredential: {err}") from err
        if not isinstance(doc, dict) or doc.get("kind") != "ExecCredential":
            raise ExecError(f"exec: {self.command} printed no ExecCredential")
        if doc.get("apiVersion") != self.api_version:
            raise ExecError(f"exec: {self.command} answered apiVersion {doc.get('apiVersion')!r}, "
                            f"the kubeconfig asks for {self.api_version}")
        status = doc.get("status")
        if not isinstance(status, dict):
            raise ExecError(f"exec: {self.command}: the ExecCredential has no status")
        token = status.get("token") or None
        cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
        if bool(cert) != bool(key):
            raise ExecError(f"exec: {self.command}: clientCertificateData and clientKeyData come together")
        if token is None and not cert:
            raise ExecError(f"exec: {self.command}: the ExecCredential has neither a token nor a client certificate")
        expiry = None
        stamp = status.get("expirationTimestamp")
        if stamp:
            try:
                expiry = dt.datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
            except ValueError as err:
                raise ExecError(f"exec: {self.command}: bad expirationTimestamp {stamp!r}") from err
            if expiry.tzinfo is None:
                expiry = expiry.replace(tzinfo=dt.UTC)
        cert_file = key_file = None
        if cert:
            cert_file = self._write(f"client-{self.runs}.crt", str(cert))
            key_file = self._write(f"client-{self.runs}.key", str(key))
            self._remove_older(keep=self.runs)
        return ExecCredential(str(token) if token else None, cert_file, key_file, expiry)

    def _write(self, name: str, pem: str) -> str:
        path = os.path.join(self._folder, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(pem)
        return path

    def _remove_older(self, keep: int) -> None:
        """Drop the files of credentials before the previous one (the previous one may still be in use
        by a connection being opened right now)."""
        for name in os.listdir(self._folder):
            stem = name.rsplit(".", 1)[0]
            number = stem.removeprefix("client-")
            if number.isdigit() and int(number) < keep - 1:
                try:
                    os.remove(os.path.join(self._folder, name))
                except OSError:
                    pass


def _cluster_info(cluster: Mapping[str, Any]) -> dict[str, Any]:
    """The kubeconfig cluster as an ExecCredential ``spec.cluster`` (client-go's field names)."""
    info: dict[str, Any] = {"server": cluster.get("server", "")}
    if cluster.get("tls-server-name"):
        info["tls-server-name"] = cluster["tls-server-name"]
    if cluster.get("insecure-skip-tls-verify"):
        info["insecure-skip-tls-verify"] = True
    ca = cluster.get("certificate-authority-data")
    if ca:
        info["certificate-authority-data"] = ca
    elif cluster.get("certificate-authority"):
        try:
            with open(str(cluster["certificate-authority"]), "rb") as fh:
                info["certificate-authority-data"] = base64.b64encode(fh.read()).decode()
        except OSError:
            pass
    if cluster.get("proxy-url"):
        info["proxy-url"] = cluster["proxy-url"]
    for ext in cluster.get("extensions") or []:
        if isinstance(ext, dict) and ext.get("name") == "client.authentication.k8s.io/exec":
            info["config"] = ext.get("extension")
    return info
