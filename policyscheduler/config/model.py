"""The ``--config`` file: ``apiVersion: policyscheduler.io/v1alpha1``, ``kind: PolicySchedulerConfiguration``.

```yaml
apiVersion: policyscheduler.io/v1alpha1
kind: PolicySchedulerConfiguration
clientConnection: {kubeconfig: /etc/kubernetes/scheduler.conf, qps: 50, burst: 100}
leaderElection: {leaderElect: true, leaseName: policy-scheduler, leaseNamespace: kube-system,
                 leaseDuration: 15s, renewDeadline: 10s, retryPeriod: 2s}
bindAddress: 0.0.0.0:10259        # /metrics, /healthz, /readyz
verbosity: 2
engine: vector                    # or reference
profiles:
- schedulerName: policy-scheduler
  defaults: true                  # the bundled default set (false = 'use defaults none')
  policies:                       # layered on the defaults, in this order
  - path: policies/               # a folder (recursive) or a .policy file, relative to this file
  - configMap: kube-system/scheduler-policies
  - name: tuning.policy           # policy text inline
    text: |
      override score taint_toleration weight 1
  statements:                     # layering statements, one per item (an inline file of their own)
  - disable score image_locality
- schedulerName: candidate        # another profile of the same process
  mode: shadow                    # judge another scheduler's placements; never bind (kube/shadow.py)
  shadows: default-scheduler
```

``run`` starts every profile in one process (:mod:`policyscheduler.cli.config` ``apply_run_config``);
``qps``/``burst`` set the client's token bucket (unset: no limit) and ``leaseName`` the Lease (unset: the
first profile's schedulerName).

Every unknown field and bad value is a :class:`ConfigError` with the file, line and column.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path as FsPath
from typing import Any

from policyscheduler.config.located import (
    ConfigError,
    Doc,
    expect_bool,
    expect_duration,
    expect_int,
    expect_list,
    expect_map,
    expect_number,
    expect_str,
    load_yaml,
    read_file,
)

__all__ = ["API_VERSION", "KIND", "Configuration", "Profile", "PolicySource", "load_config", "parse_config"]

API_VERSION = "policyscheduler.io/v1alpha1"
KIND = "PolicySchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "policy-scheduler"
_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")


@dataclasses.dataclass(frozen=True)
class PolicySource:
    """One policy source of a profile: exactly one of ``path``, ``configmap`` or ``text`` (with ``name``)."""

    path: str | None = None
    configmap: tuple[str, str] | None = None
    name: str | None = None
    text: str | None = None
    line: int | None = None


@dataclasses.dataclass(frozen=True)
class Profile:
    scheduler_name: str
    defaults: bool = True
    sources: tuple[PolicySource, ...] = ()
    mode: str = "schedule"
    shadows: str | None = None

    @property
    def paths(self) -> list[str]:
        return [s.path for s in self.sources if s.path is not None]

    @property
    def configmaps(self) -> list[tuple[str, str]]:
        return [s.configmap for s in self.sources if s.configmap is not None]

    @property
    def texts(self) -> list[tuple[str, str]]:
        """Inline policy files as (name, text), with 'use defaults none' first when defaults are off."""
        out = [] if self.defaults else [("00-use-defaults-none.policy", "use defaults none\n")]
        return out + [(s.name, s.text) for s in self.sources if s.text is not None and s.name is not None]


@dataclasses.dataclass(frozen=True)
class Configuration:
    file: str
    profiles: tuple[Profile, ...]
    kubeconfig: str | None = None
    qps: float | None = None
    burst: int | None = None
    leader_elect: bool | None = None
    lease_name: str | None = None
    lease_namespace: str | None = None
    lease_duration: float | None = None
    renew_deadline: float | None = None
    retry_period: float | None = None
    bind_address: str | None = None
    verbosity: int | None = None
    engine: str | None = None

    def profile(self, scheduler_name: str | None) -> Profile:
        """The profile for ``scheduler_name``, or the only one; ConfigError otherwise."""
        if scheduler_name is None:
            if len(self.profiles) == 1:
                return self.profiles[0]
            names = ", ".join(p.scheduler_name for p in self.profiles)
            raise ConfigError(self.file, None, None,
                              f"the file has several profiles ({names}); choose one with --scheduler-name")
        for p in self.profiles:
            if p.scheduler_name == scheduler_name:
                return p
        names = ", ".join(p.scheduler_name for p in self.profiles)
        raise ConfigError(self.file, None, None, f"no profile has schedulerName {scheduler_name!r} (profiles: {names})")


_TOP = ("apiVersion", "kind", "clientConnection", "leaderElection", "bindAddress", "verbosity", "engine", "profiles")
_CLIENT = ("kubeconfig", "qps", "burst")
_LEADER = ("leaderElect", "leaseName", "leaseNamespace", "leaseDuration", "renewDeadline", "retryPeriod")
_PROFILE = ("schedulerName", "defaults", "policies", "statements", "mode", "shadows")
_SOURCE = ("path", "configMap", "name", "text")


def load_config(file: str | FsPath) -> Configuration:
    """Read and validate a configuration file; ConfigError (located) for anything wrong."""
    name = str(file)
    return parse_config(name, read_file(name))


def parse_config(file: str, text: str) -> Configuration:
    doc = load_yaml(file, text)
    top = expect_map(doc, (), _TOP, "the configuration")
    if "apiVersion" not in top:
        raise doc.error((), f"missing apiVersion (expected {API_VERSION})")
    if top["apiVersion"] != API_VERSION:
        raise doc.error(("apiVersion",), f"unsupported apiVersion {top['apiVersion']!r} (expected {API_VERSION}"
                        + ("; convert a KubeSchedulerConfiguration with 'policyscheduler config import'"
                           if str(top["apiVersion"]).startswith("kubescheduler.config.k8s.io") else "") + ")")
    if top.get("kind") != KIND:
        raise doc.error(("kind",) if "kind" in top else (), f"kind must be {KIND}, not {top.get('kind')!r}")
    kw: dict[str, Any] = {}
    if "clientConnection" in top:
        cc = expect_map(doc, ("clientConnection",), _CLIENT, "clientConnection")
        if "kubeconfig" in cc:
            kw["kubeconfig"] = _relative(file, expect_str(doc, ("clientConnection", "kubeconfig"), "kubeconfig"))
        if "qps" in cc:
            kw["qps"] = expect_number(doc, ("clientConnection", "qps"), "qps", positive=True)
        if "burst" in cc:
            kw["burst"] = expect_int(doc, ("clientConnection", "burst"), "burst", low=1)
    if "leaderElection" in top:
        le = expect_map(doc, ("leaderElection",), _LEADER, "leaderElection")
        p = ("leaderElection",)
        if "leaderElect" in le:
            kw["leader_elect"] = expect_bool(doc, p + ("leaderElect",), "leaderElect")
        if "leaseName" in le:
            kw["lease_name"] = _dns_name(doc, p + ("leaseName",), "leaseName")
        if "leaseNamespace" in le:
            kw["lease_namespace"] = _dns_name(doc, p + ("leaseNamespace",), "leaseNamespace")
        for key, attr in (("leaseDuration", "lease_duration"), ("renewDeadline", "renew_deadline"),
                          ("retryPeriod", "retry_period")):
            if key in le:
                kw[attr] = expect_duration(doc, p + (key,), key)
        d, r, t = (kw.get("lease_duration", 15.0), kw.get("renew_deadline", 10.0), kw.get("retry_period", 2.0))
        if not t < r < d:
            raise doc.error(p, f"leader election needs retryPeriod < renewDeadline < leaseDuration "
                            f"(have {t:g}s, {r:g}s, {d:g}s)")
    if "bindAddress" in top:
        addr = expect_str(doc, ("bindAddress",), "bindAddress")
        if not re.fullmatch(r"(\[[0-9a-fA-F:.]+\]|[^:\s]*):\d{1,5}", addr) or int(addr.rsplit(":", 1)[1]) > 65535:
            raise doc.error(("bindAddress",), f"bindAddress must be HOST:PORT (port 0..65535), not {addr!r}")
        kw["bind_address"] = addr
    if "verbosity" in top:
        kw["verbosity"] = expect_int(doc, ("verbosity",), "verbosity", low=0, high=10)
    if "engine" in top:
        kw["engine"] = expect_str(doc, ("engine",), "engine", choices=("vector", "reference"))
    profiles: list[Profile] = []
    if "profiles" not in top:
        profiles.append(Profile(DEFAULT_SCHEDULER_NAME))
    else:
        items = expect_list(doc, ("profiles",), "profiles")
        if not items:
            raise doc.error(("profiles",), "profiles must list at least one profile")
        seen: dict[str, int] = {}
        for i in range(len(items)):
            profile = _profile(doc, ("profiles", i), file)
            if profile.scheduler_name in seen:
                raise doc.error(("profiles", i, "schedulerName"),
                                f"duplicate schedulerName {profile.scheduler_name!r} (also profile {seen[profile.scheduler_name]})")
            seen[profile.scheduler_name] = i
            profiles.append(profile)
        for i, profile in enumerate(profiles):
            if profile.mode == "shadow" and profile.shadows == profile.scheduler_name:
                raise doc.error(("profiles", i, "shadows"), "a shadow profile cannot shadow itself")
    return Configuration(file=file, profiles=tuple(profiles), **kw)


def _profile(doc: Doc, p: tuple[Any, ...], file: str) -> Profile:
    raw = expect_map(doc, p, _PROFILE, "a profile")
    name = _dns_name(doc, p + ("schedulerName",), "schedulerName") if "schedulerName" in raw else DEFAULT_SCHEDULER_NAME
    defaults = expect_bool(doc, p + ("defaults",), "defaults") if "defaults" in raw else True
    mode = expect_str(doc, p + ("mode",), "mode", choices=("schedule", "shadow")) if "mode" in raw else "schedule"
    shadows = expect_str(doc, p + ("shadows",), "shadows") if "shadows" in raw else None
    if mode == "shadow" and shadows is None:
        raise doc.error(p + ("mode",), "a profile with mode: shadow needs 'shadows: <schedulerName>'")
    if shadows is not None and mode != "shadow":
        raise doc.error(p + ("shadows",), "'shadows' needs mode: shadow")
    sources: list[PolicySource] = []
    names: set[str] = set()
    for i, _ in enumerate(expect_list(doc, p + ("policies",), "policies") if "policies" in raw else []):
        q = p + ("policies", i)
        item = expect_map(doc, q, _SOURCE, "a policy source")
        given = [k for k in ("path", "configMap", "text") if k in item]
        if len(given) != 1:
            raise doc.error(q, "a policy source needs exactly one of path, configMap or text (with name)"
                            + (f"; found {', '.join(given)}" if given else ""))
        line = doc.at(q)[0]
        if "name" in item and "text" not in item:
            raise doc.error(q + ("name",), "'name' belongs to an inline source ('text')", key=True)
        if "path" in item:
            sources.append(PolicySource(path=_relative(file, expect_str(doc, q + ("path",), "path")), line=line))
        elif "configMap" in item:
            ref = expect_str(doc, q + ("configMap",), "configMap")
            parts = ref.split("/")
            if len(parts) != 2 or not all(_NAME.fullmatch(x) for x in parts):
                raise doc.error(q + ("configMap",), f"configMap must be NAMESPACE/NAME, not {ref!r}")
            sources.append(PolicySource(configmap=(parts[0], parts[1]), line=line))
        else:
            text = doc.get(q + ("text",))
            if not isinstance(text, str):
                raise doc.error(q + ("text",), "text must be a string of policy text (use a block scalar: 'text: |')")
            if "name" not in item:
                raise doc.error(q, "an inline policy source needs a name (e.g. name: tuning.policy)")
            fname = expect_str(doc, q + ("name",), "name")
            if not re.fullmatch(r"[A-Za-z0-9][-A-Za-z0-9_.]*\.policy", fname):
                raise doc.error(q + ("name",), f"name must be a file name ending in .policy (no '/'), not {fname!r}")
            if fname in names:
                raise doc.error(q + ("name",), f"duplicate inline policy name {fname!r}")
            names.add(fname)
            sources.append(PolicySource(name=fname, text=text, line=line))
    statements = expect_list(doc, p + ("statements",), "statements") if "statements" in raw else []
    if statements:
        lines = [expect_str(doc, p + ("statements", i), "a statement") for i in range(len(statements))]
        sources.append(PolicySource(name=f"zz-{name}-statements.policy", text="\n".join(lines) + "\n",
                                    line=doc.at(p + ("statements",))[0]))
    if len(sources) and sum(1 for s in sources if s.configmap) > 1:
        raise doc.error(p + ("policies",), "a profile can take policies from at most one ConfigMap")
    return Profile(name, defaults, tuple(sources), mode, shadows)


def _dns_name(doc: Doc, path: tuple[Any, ...], what: str) -> str:
    value = expect_str(doc, path, what)
    if len(value) > 253 or not _NAME.fullmatch(value):
        raise doc.error(path, f"{what} must be a DNS subdomain name (lower case letters, digits, '-', '.'), not {value!r}")
    return value


def _relative(file: str, path: str) -> str:
    """A path in the file is relative to the file's folder."""
    p = FsPath(path).expanduser()
    return str(p if p.is_absolute() else FsPath(file).resolve().parent / p)
