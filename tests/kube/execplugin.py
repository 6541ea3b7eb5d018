"""A kubeconfig ``exec`` credential plugin for tests, and the kubeconfig that runs it.

The plugin counts its runs in a file and answers from a plan (a JSON list; run *n* uses entry *n*, the
last one repeated): each entry may give a ``token``, a client certificate (``cert``/``key`` PEM) and
``expires_in`` seconds (negative: already expired)."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

import yaml

SCRIPT = '''#!{python}
import datetime, json, os, sys
state = os.environ["PLUGIN_STATE"]
runs = int(open(state).read() or 0) if os.path.exists(state) else 0
open(state, "w").write(str(runs + 1))
plan = json.load(open(os.environ["PLUGIN_PLAN"]))
step = plan[min(runs, len(plan) - 1)]
info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
status = {{}}
if step.get("token"):
    status["token"] = step["token"]
if step.get("cert"):
    status["clientCertificateData"] = step["cert"]
    status["clientKeyData"] = step["key"]
if step.get("expires_in") is not None:
    when = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=step["expires_in"])
    status["expirationTimestamp"] = when.strftime("%Y-%m-%dT%H:%M:%SZ")
json.dump({{"apiVersion": info["apiVersion"], "kind": "ExecCredential", "status": status}}, sys.stdout)
'''


class Plugin:
    """The plugin's files in ``folder``: :meth:`plan` sets its answers, :attr:`runs` counts its runs."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.script = folder / "credential-plugin"
        self.script.write_text(SCRIPT.format(python=sys.executable))
        self.script.chmod(0o755)
        self.state = folder / "runs"
        self.plan_file = folder / "plan.json"
        self.plan([{"token": "none"}])

    def plan(self, steps: list[dict[str, Any]]) -> None:
        self.plan_file.write_text(json.dumps(steps))

    @property
    def runs(self) -> int:
        return int(self.state.read_text() or 0) if self.state.exists() else 0

    def kubeconfig(self, server: str, ca_pem: bytes | None = None, *, proxy_url: str | None = None,
                   name: str = "exec.kubeconfig") -> Path:
        """A kubeconfig whose only credential is this plugin (relative ``command``: resolved against the
        kubeconfig's folder, as client-go does)."""
        cluster: dict[str, Any] = {"server": server}
        if ca_pem is not None:
            cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
        if proxy_url:
            cluster["proxy-url"] = proxy_url
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "c",
            "clusters": [{"name": "c", "cluster": cluster}],
            "users": [{"name": "u", "user": {"exec": {
                "apiVersion": "client.authentication.k8s.io/v1", "command": f"./{self.script.name}",
                "interactiveMode": "Never", "provideClusterInfo": True,
                "env": [{"name": "PLUGIN_STATE", "value": str(self.state)},
                        {"name": "PLUGIN_PLAN", "value": str(self.plan_file)}]}}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        }
        path = self.folder / name
        path.write_text(yaml.safe_dump(config))
        return path
