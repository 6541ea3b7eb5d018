"""Start etcd + kube-apiserver (and optionally kube-scheduler and kube-controller-manager) on 127.0.0.1.

The binaries come from ``build.sh`` (Go modules pinned in this directory). One
:class:`ControlPlane` owns a temp directory (certificates, etcd data, logs,
kubeconfig) and its processes; :meth:`ControlPlane.stop` -- also run by the
context manager, ``atexit`` and SIGTERM -- stops every process it started and
removes the directory. See ``procs.py`` for why nothing survives a SIGKILL either.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import urllib3
import yaml

from tests.controlplane import procs
from tests.controlplane.api import Api, wait_for
from tests.controlplane.certs import TinyCA, service_account_keys

HERE = Path(__file__).resolve().parent
BUILD_SCRIPT = HERE / "build.sh"
BIN_ENV = "POLICYSCHEDULER_CONTROLPLANE_BIN"
KEEP_ENV = "POLICYSCHEDULER_CONTROLPLANE_KEEP"
_DIR_PREFIX = "policyscheduler-cp-"


class ControlPlaneError(RuntimeError):
    """The control plane could not be built or started; the message says why."""


STORAGE_CONTROLLERS = ("persistentvolume-binder-controller",)
"""The kube-controller-manager controllers the storage tests need (v1.35 names,
``cmd/kube-controller-manager/names``): the PV binder binds claims to volumes, pre-bound or provisioned,
and asks external provisioners (the storage-provisioner annotation) for claims with a selected node."""


@dataclass(frozen=True)
class Binaries:
    etcd: Path
    kube_apiserver: Path
    kube_scheduler: Path
    kube_controller_manager: Path

    @classmethod
    def in_dir(cls, bin_dir: Path) -> Binaries:
        return cls(bin_dir / "etcd", bin_dir / "kube-apiserver", bin_dir / "kube-scheduler",
                   bin_dir / "kube-controller-manager")

    def missing(self) -> list[Path]:
        return [p for p in (self.etcd, self.kube_apiserver, self.kube_scheduler, self.kube_controller_manager)
                if not os.access(p, os.X_OK)]


def ensure_binaries(*, build: bool = True) -> Binaries:
    """Locate the binaries, building them with build.sh when needed (idempotent, cached).

    ``$POLICYSCHEDULER_CONTROLPLANE_BIN`` points at a directory of prebuilt binaries
    and skips the build entirely.
    """
    override = os.environ.get(BIN_ENV)
    if override:
        found = Binaries.in_dir(Path(override))
        if found.missing():
            raise ControlPlaneError(f"${BIN_ENV}={override} lacks: {', '.join(map(str, found.missing()))}")
        return found
    if build:
        proc = subprocess.run(["bash", str(BUILD_SCRIPT)], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise ControlPlaneError(
                f"building the control plane failed ({BUILD_SCRIPT}, exit {proc.returncode}):\n"
                + "\n".join(proc.stderr.splitlines()[-25:]))
        return Binaries.in_dir(Path(proc.stdout.strip().splitlines()[-1]))
    bin_dir = subprocess.run(["bash", str(BUILD_SCRIPT), "--bin-dir"], stdout=subprocess.PIPE, text=True,
                             check=True).stdout.strip()
    found = Binaries.in_dir(Path(bin_dir))
    if found.missing():
        raise ControlPlaneError(f"control plane not built: run {BUILD_SCRIPT} (or `make controlplane`)")
    return found


def free_port() -> int:
    """A currently free loopback port (start-up retries cover the small race)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _temp_root() -> str | None:
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def sweep_stale_dirs() -> None:
    """Remove work dirs left by harnesses that were SIGKILLed (their owner pid is gone)."""
    for root in {tempfile.gettempdir(), _temp_root() or tempfile.gettempdir()}:
        for d in Path(root).glob(_DIR_PREFIX + "*"):
            try:
                owner = int((d / "owner.pid").read_text())
            except (OSError, ValueError):
                continue
            if not procs.process_alive(owner):
                shutil.rmtree(d, ignore_errors=True)


class _Serving:
    """A running component serving HTTPS on loopback ``port`` (see :meth:`ControlPlane._start_serving`)."""

    def __init__(self, child: procs.Child, port: int) -> None:
        self.child = child
        self.port = port
        self.url = f"https://127.0.0.1:{port}"

    @property
    def pid(self) -> int:
        return self.child.pid

    def stop(self) -> None:
        self.child.stop()


class Scheduler(_Serving):
    """A running kube-scheduler started by :meth:`ControlPlane.start_scheduler`."""

    def __init__(self, child: procs.Child, port: int, config_file: Path) -> None:
        super().__init__(child, port)
        self.config_file = config_file


class ControllerManager(_Serving):
    """A running kube-controller-manager started by :meth:`ControlPlane.start_controller_manager`."""

    def __init__(self, child: procs.Child, port: int, controllers: tuple[str, ...]) -> None:
        super().__init__(child, port)
        self.controllers = controllers


class ControlPlane:
    """etcd + kube-apiserver on loopback with an admin (system:masters) identity."""

    def __init__(self, binaries: Binaries, workdir: Path, keep: bool) -> None:
        self.binaries = binaries
        self.workdir = workdir
        self.keep = keep
        self.etcd: procs.Child | None = None
        self.apiserver: procs.Child | None = None
        self.schedulers: list[Scheduler] = []
        self.controller_managers: list[ControllerManager] = []
        self.server = ""
        self.etcd_url = ""
        self.token = os.urandom(16).hex()
        pki = workdir / "pki"
        pki.mkdir()
        self.ca = TinyCA(pki)
        self.serving = self.ca.serving("apiserver")
        self.admin = self.ca.client("admin", "admin", ("system:masters",))
        self.sa_key, self.sa_pub = service_account_keys(pki)
        self.kubeconfig = workdir / "admin.kubeconfig"
        self._api: Api | None = None
        procs.register_cleanup(self._remove_workdir)

    # -- lifecycle -----------------------------------------------------------------

    @classmethod
    def start(cls, binaries: Binaries | None = None, *, timeout: float = 120.0,
              apiserver_args: Sequence[str] = (), keep: bool | None = None) -> ControlPlane:
        """Start etcd and kube-apiserver and wait until the API server is ready."""
        binaries = binaries or ensure_binaries()
        if keep is None:
            keep = os.environ.get(KEEP_ENV, "") not in ("", "0")
        sweep_stale_dirs()
        workdir = Path(tempfile.mkdtemp(prefix=_DIR_PREFIX, dir=_temp_root()))
        (workdir / "owner.pid").write_text(str(os.getpid()))
        cp = cls(binaries, workdir, keep)
        try:
            cp._start_etcd(timeout)
            cp._start_apiserver(timeout, apiserver_args)
        except BaseException:
            cp.stop()
            raise
        return cp

    def __enter__(self) -> ControlPlane:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop schedulers and controller managers, then the API server, then etcd; remove the work dir."""
        children = [s.child for s in reversed(self.schedulers)] + [m.child for m in reversed(self.controller_managers)]
        for child in children + [self.apiserver, self.etcd]:
            if child is not None:
                child.stop()
        self.schedulers.clear()
        self.controller_managers.clear()
        procs.unregister_cleanup(self._remove_workdir)
        self._remove_workdir()

    def _remove_workdir(self) -> None:
        if not self.keep:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def children(self) -> list[procs.Child]:
        """etcd, kube-apiserver, the kube-schedulers and kube-controller-managers not stopped yet, in start order."""
        started = ([self.etcd, self.apiserver] + [s.child for s in self.schedulers]
                   + [m.child for m in self.controller_managers])
        return [c for c in started if c is not None]

    def pids(self) -> list[int]:
        """Pids of every process this control plane started (for leak checks)."""
        return [c.pid for c in self.children()]

    # -- start-up ------------------------------------------------------------------

    def _start_etcd(self, timeout: float) -> None:
        http = urllib3.PoolManager(retries=False, timeout=2.0)

        def healthy() -> bool:
            self._check_alive(self.etcd)
            resp = http.request("GET", self.etcd_url + "/health")
            return resp.status == 200 and json.loads(resp.data).get("health") == "true"

        for attempt in range(3):
            client, peer = free_port(), free_port()
            self.etcd_url = f"http://127.0.0.1:{client}"
            peer_url = f"http://127.0.0.1:{peer}"
            self.etcd = procs.Child("etcd", [
                str(self.binaries.etcd),
                f"--data-dir={self.workdir / 'etcd'}",
                f"--listen-client-urls={self.etcd_url}",
                f"--advertise-client-urls={self.etcd_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=default={peer_url}",
                "--unsafe-no-fsync",
                "--log-level=warn",
            ], self.workdir / "etcd.log")
            try:
                wait_for(healthy, timeout=timeout, what="etcd /health")
                return
            except TimeoutError as exc:
                raise ControlPlaneError(f"{exc}\n--- etcd log ---\n{self.etcd.log_tail()}") from exc
            except ControlPlaneError:
                if attempt == 2 or "address already in use" not in self.etcd.log_tail():
                    raise
                self.etcd.stop()

    def _start_apiserver(self, timeout: float, extra: Sequence[str]) -> None:
        tokens = self.workdir / "pki" / "tokens.csv"
        tokens.write_text(f'{self.token},admin,admin,"system:masters"\n')
        for attempt in range(3):
            port = free_port()
            self.server = f"https://127.0.0.1:{port}"
            self.apiserver = procs.Child("kube-apiserver", [
                str(self.binaries.kube_apiserver),
                f"--etcd-servers={self.etcd_url}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={port}",
                f"--cert-dir={self.workdir / 'pki'}",
                f"--tls-cert-file={self.serving.cert_file}",
                f"--tls-private-key-file={self.serving.key_file}",
                f"--client-ca-file={self.ca.pair.cert_file}",
                f"--token-auth-file={tokens}",
                "--authorization-mode=RBAC",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--service-account-issuer=https://policyscheduler.test",
                f"--service-account-key-file={self.sa_pub}",
                f"--service-account-signing-key-file={self.sa_key}",
                # No controller-manager runs: nothing would create service accounts
                # or lift the not-ready taint from new nodes.
                "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
                "--endpoint-reconciler-type=none",
                "--allow-privileged=true",
                # Loopback test server: let benchmarks, not rate limits, set the pace.
                "--max-requests-inflight=0",
                "--max-mutating-requests-inflight=0",
                "--enable-priority-and-fairness=false",
                *extra,
            ], self.workdir / "kube-apiserver.log")
            self._api = None
            try:
                wait_for(lambda: self._check_alive(self.apiserver) or self.api().status("/readyz") == 200,
                         timeout=timeout, interval=0.25, what="kube-apiserver /readyz")
                wait_for(lambda: self.api().get("/api/v1/namespaces/default"), timeout=timeout,
                         what="namespace default")
                break
            except ControlPlaneError:
                if attempt == 2 or "address already in use" not in self.apiserver.log_tail():
                    raise
                self.apiserver.stop()
            except TimeoutError as exc:
                raise ControlPlaneError(f"{exc}\n--- kube-apiserver log ---\n{self.apiserver.log_tail()}") from exc
        self._write_kubeconfig()

    @staticmethod
    def _check_alive(child: procs.Child | None) -> bool:
        if child is not None and not child.alive():
            raise ControlPlaneError(
                f"{child.name} exited with status {child.popen.returncode}\n--- {child.name} log ---\n"
                f"{child.log_tail()}")
        return False

    def _write_kubeconfig(self) -> None:
        self._kubeconfig_for(self.kubeconfig, self.admin, "admin")

    def _kubeconfig_for(self, path: Path, pair: Any, user: str) -> None:
        """A kubeconfig for this API server with ``pair``'s client certificate."""
        import base64

        def b64(data: bytes) -> str:
            return base64.b64encode(data).decode()

        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "policyscheduler-test", "cluster": {
                "server": self.server, "certificate-authority-data": b64(self.ca.pair.cert_pem)}}],
            "users": [{"name": user, "user": {
                "client-certificate-data": b64(pair.cert_pem),
                "client-key-data": b64(pair.key_pem)}}],
            "contexts": [{"name": "policyscheduler-test",
                          "context": {"cluster": "policyscheduler-test", "user": user}}],
            "current-context": "policyscheduler-test",
        }
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        path.chmod(0o600)

    # -- clients -------------------------------------------------------------------

    def api(self) -> Api:
        """A shared raw-JSON client authenticated as the admin user."""
        if self._api is None:
            self._api = Api(self.server, str(self.ca.pair.cert_file), str(self.admin.cert_file),
                            str(self.admin.key_file))
        return self._api

    def env(self) -> dict[str, str]:
        """Environment for subprocesses (kubectl, our CLI) that should target this cluster."""
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig)}

    # -- kube-scheduler ----------------------------------------------------------------

    def start_scheduler(self, config: Mapping[str, Any] | None = None, *, timeout: float = 60.0,
                        args: Sequence[str] = ()) -> Scheduler:
        """Run the real kube-scheduler with a KubeSchedulerConfiguration (dict).

        The connection settings are filled in: our kubeconfig, QPS/burst 5000, and
        leader election off unless the config says otherwise.
        """
        cfg: dict[str, Any] = json.loads(json.dumps(dict(config or {})))
        cfg.setdefault("apiVersion", "kubescheduler.config.k8s.io/v1")
        cfg.setdefault("kind", "KubeSchedulerConfiguration")
        conn = cfg.setdefault("clientConnection", {})
        conn["kubeconfig"] = str(self.kubeconfig)
        conn.setdefault("qps", 5000)
        conn.setdefault("burst", 5000)
        cfg.setdefault("leaderElection", {}).setdefault("leaderElect", False)
        n = len(self.schedulers)
        config_file = self.workdir / f"kube-scheduler-{n}.yaml"
        config_file.write_text(yaml.safe_dump(cfg, sort_keys=False))
        child, port = self._start_serving("kube-scheduler", n, [
            str(self.binaries.kube_scheduler),
            f"--config={config_file}",
        ], self.kubeconfig, args)
        sched = Scheduler(child, port, config_file)
        self.schedulers.append(sched)
        self._await_ready(child, sched.url, "/readyz", timeout)
        return sched

    def stop_scheduler(self, sched: Scheduler) -> None:
        sched.stop()
        if sched in self.schedulers:
            self.schedulers.remove(sched)


    # -- kube-controller-manager ----------------------------------------------------------

    def start_controller_manager(self, controllers: Sequence[str] = STORAGE_CONTROLLERS, *,
                                 timeout: float = 60.0, sync_period: str = "5s",
                                 args: Sequence[str] = ()) -> ControllerManager:
        """Run the real kube-controller-manager with only ``controllers`` (v1.35 names).

        It connects with a kubeconfig of its own (user ``system:kube-controller-manager`` in
        ``system:masters``: the controllers share its credentials, no service-account tokens), runs without
        leader election and without a cloud provider, serves /healthz on a free loopback port, and is
        ready when /healthz answers 200. Its client is not rate-limited (QPS/burst 5000, as our kube-scheduler's;
        kube's default of 20 queries per second holds a parity run's bindings back for tens of seconds). ``sync_period``: the PV binder's resync (kube's default is 15s;
        watch events drive it, the resync only repeats what they missed).
        """
        n = len(self.controller_managers)
        kubeconfig = self.workdir / f"kube-controller-manager-{n}.kubeconfig"
        if not kubeconfig.exists():
            pair = self.ca.client(f"kube-controller-manager-{n}", "system:kube-controller-manager",
                                  ("system:masters",))
            self._kubeconfig_for(kubeconfig, pair, "system:kube-controller-manager")
        names = tuple(controllers)
        if not names:
            raise ControlPlaneError("start_controller_manager needs at least one controller")
        child, port = self._start_serving("kube-controller-manager", n, [
            str(self.binaries.kube_controller_manager),
            f"--kubeconfig={kubeconfig}",
            f"--controllers={','.join(names)}",
            "--leader-elect=false",
            "--use-service-account-credentials=false",
            "--kube-api-qps=5000",
            "--kube-api-burst=5000",
            f"--pvclaimbinder-sync-period={sync_period}",
        ], kubeconfig, args)
        manager = ControllerManager(child, port, names)
        self.controller_managers.append(manager)
        self._await_ready(child, manager.url, "/healthz", timeout)
        return manager

    # -- components that serve HTTPS on loopback (kube-scheduler, kube-controller-manager) --------------

    def _start_serving(self, name: str, n: int, command: Sequence[str], kubeconfig: Path,
                       args: Sequence[str]) -> tuple[procs.Child, int]:
        """Start component ``name`` (its ``n``-th instance) serving on a free loopback port.

        kube-scheduler and kube-controller-manager take the same serving flags: our serving certificate,
        and ``kubeconfig`` for delegated authentication and authorization. They go after ``command`` (binary
        and component flags) and before the caller's extra ``args``; the log is ``<name>-<n>.log``.
        """
        port = free_port()
        child = procs.Child(name, [
            *command,
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            f"--tls-cert-file={self.serving.cert_file}",
            f"--tls-private-key-file={self.serving.key_file}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            *args,
        ], self.workdir / f"{name}-{n}.log")
        return child, port

    def _await_ready(self, child: procs.Child, url: str, path: str, timeout: float) -> None:
        """Wait until ``url`` + ``path`` answers 200 as admin; a child that exits or times out raises with its log."""
        probe = Api(url, str(self.ca.pair.cert_file), str(self.admin.cert_file), str(self.admin.key_file))
        try:
            wait_for(lambda: self._check_alive(child) or probe.status(path) == 200, timeout=timeout,
                     interval=0.25, what=f"{child.name} {path}")
        except TimeoutError as exc:
            raise ControlPlaneError(f"{exc}\n--- {child.name} log ---\n{child.log_tail()}") from exc

    def stop_controller_manager(self, manager: ControllerManager) -> None:
        manager.stop()
        if manager in self.controller_managers:
            self.controller_managers.remove(manager)


def start(**kwargs: Any) -> ControlPlane:
    """Shorthand for :meth:`ControlPlane.start`."""
    return ControlPlane.start(**kwargs)


# -- fault injection for the live scheduler's e2e tests (additive) -------------------------------------

def _restartable_apiserver(cp: ControlPlane, timeout: float = 120.0) -> None:
    """Start kube-apiserver again with the argv it had (same port, certificates and etcd)."""
    old = cp.apiserver
    if old is None:
        raise ControlPlaneError("no kube-apiserver was started")
    cp.apiserver = procs.Child("kube-apiserver", old.argv, cp.workdir / "kube-apiserver.log")
    cp._api = None
    try:
        wait_for(lambda: cp._check_alive(cp.apiserver) or cp.api().status("/readyz") == 200,
                 timeout=timeout, interval=0.25, what="kube-apiserver /readyz after restart")
    except TimeoutError as exc:
        raise ControlPlaneError(f"{exc}\n--- kube-apiserver log ---\n{cp.apiserver.log_tail()}") from exc


def stop_apiserver(cp: ControlPlane) -> None:
    """Stop kube-apiserver (etcd keeps running); :func:`start_apiserver` brings it back."""
    if cp.apiserver is not None:
        cp.apiserver.stop()


def start_apiserver(cp: ControlPlane, timeout: float = 120.0) -> None:
    """Start the stopped kube-apiserver on the same address; waits for /readyz."""
    _restartable_apiserver(cp, timeout)


def etcd_revision(cp: ControlPlane) -> int:
    """etcd's current revision (through its JSON gateway)."""
    http = urllib3.PoolManager(retries=False, timeout=5.0)
    resp = http.request("POST", cp.etcd_url + "/v3/kv/range", body=json.dumps({"key": "AA=="}).encode(),
                        headers={"Content-Type": "application/json"})
    return int(json.loads(resp.data)["header"]["revision"])


def compact_etcd(cp: ControlPlane) -> int:
    """Compact etcd up to its current revision, so every older resourceVersion is gone (a watch
    resuming from one gets 410). Returns the revision compacted to.

    A key outside the API server's prefix is written first: a watch whose last bookmark carried the
    current revision would otherwise resume from the compaction revision itself and never see a 410."""
    http = urllib3.PoolManager(retries=False, timeout=30.0)
    bump = http.request("POST", cp.etcd_url + "/v3/kv/put",
                        body=json.dumps({"key": "L3Rlc3RzL2NvbXBhY3Rpb24tYnVtcA==", "value": "MQ=="}).encode(),
                        headers={"Content-Type": "application/json"})  # /tests/compaction-bump = 1
    if bump.status != 200:
        raise ControlPlaneError(f"etcd put failed: HTTP {bump.status}: {bump.data[:300]!r}")
    revision = etcd_revision(cp)
    resp = http.request("POST", cp.etcd_url + "/v3/kv/compaction",
                        body=json.dumps({"revision": str(revision), "physical": True}).encode(),
                        headers={"Content-Type": "application/json"})
    if resp.status != 200:
        raise ControlPlaneError(f"etcd compaction failed: HTTP {resp.status}: {resp.data[:300]!r}")
    return revision
