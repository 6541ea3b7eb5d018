"""``policyscheduler config``: the configuration file.

* ``config import kube-scheduler.yaml [-o FILE]``: translate a KubeSchedulerConfiguration into a
  PolicySchedulerConfiguration with the policy overlays inline (stdout or FILE); what cannot be translated
  is listed on stderr, one located line each (exit 0 even so: the rest is usable).
* ``config check FILE``: validate the file and load every profile's policies (the ConfigMaps are not read).

Exit status: 0 ok, 2 bad input (located errors on stderr, never a traceback).
"""

from __future__ import annotations

import argparse
import atexit
import dataclasses
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from policyscheduler.kobjects import join_key

__all__ = ["add_arguments", "run", "main", "read_config", "apply_profile", "apply_run_config", "run_profiles",
           "RunProfilePlan"]

EXIT_OK = 0
EXIT_BAD_INPUT = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="config_command", metavar="ACTION")
    imp = sub.add_parser("import", help="translate a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1)",
                         description="Translate a KubeSchedulerConfiguration into a PolicySchedulerConfiguration "
                         "with the equivalent policy overlays inline; untranslatable parts are listed on stderr.")
    imp.add_argument("file", metavar="KUBE_SCHEDULER_YAML", help="the KubeSchedulerConfiguration ('-' for stdin)")
    imp.add_argument("-o", "--output", metavar="FILE", help="write here instead of standard output")
    chk = sub.add_parser("check", help="validate a configuration file and load the policies of every profile")
    chk.add_argument("file", metavar="CONFIG")


def run(args: argparse.Namespace, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    from policyscheduler.config import ConfigError

    try:
        if args.config_command == "import":
            return _import(args, out, err)
        if args.config_command == "check":
            cfg = read_config(args.file, err)
            if cfg is None:
                return EXIT_BAD_INPUT
            return EXIT_OK if _check_profiles(cfg, err) else EXIT_BAD_INPUT
    except ConfigError as exc:
        err.write(f"{exc}\n")
        return EXIT_BAD_INPUT
    err.write("usage: policyscheduler config {import,check} FILE\n")
    return EXIT_BAD_INPUT


def _import(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from policyscheduler.config.kubeimport import import_kube_config, render
    from policyscheduler.config.located import read_file

    name = "<stdin>" if args.file == "-" else args.file
    text = read_file(args.file)  # ConfigError (FIFO, device, too large, not UTF-8): reported by run()
    result = import_kube_config(name, text)
    rendered = render(result.config, Path(name).name)
    for n in result.notes:
        err.write(n + "\n")
    if args.output:
        try:
            Path(args.output).write_text(rendered, encoding="utf-8")
        except OSError as exc:
            err.write(f"{args.output}: error: cannot write: {exc.strerror or exc}\n")
            return EXIT_BAD_INPUT
    else:
        out.write(rendered)
    if result.notes:
        err.write(f"note: {len(result.notes)} part(s) above were not translated; the rest of the configuration is "
                  "equivalent\n")
    return EXIT_OK


def read_config(file: str, err: TextIO):  # type: ignore[no-untyped-def]
    """The parsed configuration, or None after printing the located error."""
    from policyscheduler.config import ConfigError, load_config

    try:
        return load_config(file)
    except ConfigError as exc:
        err.write(f"{exc}\n")
        return None


def _check_profiles(cfg, err: TextIO) -> bool:  # type: ignore[no-untyped-def]
    from policyscheduler.config import load_profile
    from policyscheduler.diagnostics import render_text

    ok = True
    for profile in cfg.profiles:
        loaded = load_profile(profile)
        if loaded.diagnostics:
            err.write(render_text(loaded.diagnostics, loaded.sources).rstrip("\n") + "\n")
        if loaded.policy_set is None:
            ok = False
            err.write(f"{cfg.file}: profile {profile.scheduler_name}: the policies have errors\n")
        else:
            cms = ", ".join(join_key(ns, n) for ns, n in profile.configmaps)
            err.write(f"ok: profile {profile.scheduler_name}: digest {loaded.policy_set.digest[:12]}"
                      + (f" (ConfigMap {cms} not read offline)" if cms else "") + "\n")
    return ok


def apply_profile(args: argparse.Namespace, cfg, *, defaults: dict[str, object], err: TextIO):  # type: ignore[no-untyped-def]
    """Fill ``args`` from ``cfg`` where the flag kept its default (flags override the file). Returns the
    profile, or None after printing why (e.g. several profiles and no --scheduler-name)."""
    from policyscheduler.config import ConfigError

    name = getattr(args, "scheduler_name", None)
    chosen = name if name is not None and name != defaults.get("scheduler_name") else None
    try:
        profile = cfg.profile(chosen)
    except ConfigError as exc:
        err.write(f"{exc}\n")
        return None
    if hasattr(args, "scheduler_name") and chosen is None:
        args.scheduler_name = profile.scheduler_name
    return profile


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="policyscheduler config", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


def profile_sources(args: argparse.Namespace, err: TextIO, *, default_scheduler_name: str,
                    offline: bool = True) -> tuple[list[str], list[tuple[str, str]], object] | None:
    """``--config`` for ``simulate`` and ``explain``: the chosen profile's (paths, inline texts, configuration).

    ``--policies`` on the command line replaces the profile's sources (flags override the file); the profile
    is the one ``--scheduler-name`` names, or the only one. None after printing why."""
    cfg = read_config(args.config, err)
    if cfg is None:
        return None
    profile = apply_profile(args, cfg, defaults={"scheduler_name": default_scheduler_name}, err=err)
    if profile is None:
        return None
    if args.policies:
        return list(args.policies), [], cfg
    if offline and profile.configmaps:
        ns, name = profile.configmaps[0]
        err.write(f"{cfg.file}: error: profile {profile.scheduler_name} takes policies from ConfigMap {ns}/{name}, "
                  "which this command cannot read offline; give the files with --policies\n")
        return None
    return profile.paths, profile.texts, cfg


def lint_config(args: argparse.Namespace) -> int:
    """``lint --config FILE [PATH ...]``: the file itself (located errors), then every profile's policy set as
    ``run`` would layer it (plus PATHs). Exit 0 clean, 1 errors found."""
    from policyscheduler.cli.lint import report_json, report_text, with_lint_checks
    from policyscheduler.config import load_profile

    cfg = read_config(args.config, sys.stderr)
    if cfg is None:
        return 1
    failed = False
    reports = []
    for profile in cfg.profiles:
        result = load_profile(profile, allow_empty=args.allow_empty)
        if args.paths:
            from policyscheduler.loader import load_layered

            result = load_layered([*profile.paths, *args.paths], texts=profile.texts, allow_empty=args.allow_empty)
        result = with_lint_checks(result, [*profile.paths, *args.paths, *(n for n, _ in profile.texts)],
                                  cost_budget=args.cost_budget)
        failed = failed or bool(result.errors)
        if args.format == "json":
            import json

            reports.append({**json.loads(report_json(result)), "profile": profile.scheduler_name})
            continue
        print(f"profile {profile.scheduler_name}:")
        print(report_text(result, args.costs))
        for ns, name in profile.configmaps:
            print(f"note: ConfigMap {ns}/{name} is read by 'run' only; lint its manifest with 'lint MANIFEST'")
    if args.format == "json":
        import json

        print(json.dumps(reports, indent=2))
    return 1 if failed else 0


_RUN_DEFAULTS: dict[str, object] = {"scheduler_name": "policy-scheduler", "kubeconfig": None, "policies": None,
                 "policies_configmap": None, "leader_elect": False, "leader_elect_lease_namespace": "kube-system",
                 "leader_elect_lease_duration": 15.0, "leader_elect_renew_deadline": 10.0,
                 "leader_elect_retry_period": 2.0, "bind_address": "0.0.0.0", "verbosity": 0, "engine": None,
                 "kube_api_qps": None, "kube_api_burst": None, "leader_elect_resource_name": None}


@dataclasses.dataclass(frozen=True)
class RunProfilePlan:
    """What ``run`` starts for one profile: its scheduler name, policy paths (watched), the ConfigMap
    (``NAMESPACE/NAME``) and, for a shadow profile, the scheduler it shadows."""

    name: str
    paths: tuple[str, ...] = ()
    configmap: str | None = None
    shadows: str | None = None


def run_profiles(args: argparse.Namespace) -> list[RunProfilePlan]:
    """The profiles ``run`` starts: ``args.profiles`` after :func:`apply_run_config`, else one from the flags."""
    plans = getattr(args, "profiles", None)
    if plans:
        return list(plans)
    return [RunProfilePlan(args.scheduler_name, tuple(args.policies or ()), args.policies_configmap)]


def apply_run_config(args: argparse.Namespace, err: TextIO) -> bool:
    """``run --config FILE``: fill every ``run`` flag left at its default from the file (flags override the
    file) and set ``args.profiles``: every profile of the file, or only the one ``--scheduler-name`` names.
    ``--policies`` / ``--policies-configmap`` replace the sources of the one profile run (with several, name
    it). Inline policy text is written to a private folder per profile, watched like any ``--policies`` path.
    False after printing why the file cannot be used."""
    from policyscheduler.config import ConfigError

    cfg = read_config(args.config, err)
    if cfg is None:
        return False

    def default(name: str) -> bool:
        return bool(getattr(args, name, None) == _RUN_DEFAULTS[name])

    if default("scheduler_name"):
        profiles = list(cfg.profiles)
    else:
        try:
            profiles = [cfg.profile(args.scheduler_name)]
        except ConfigError as exc:
            err.write(f"{exc}\n")
            return False
    overridden = bool(args.policies or args.policies_configmap)
    if overridden and len(profiles) > 1:
        names = ", ".join(p.scheduler_name for p in profiles)
        err.write(f"{cfg.file}: error: --policies/--policies-configmap replace one profile's sources, and the file "
                  f"has several ({names}); choose one with --scheduler-name\n")
        return False
    plans = []
    for profile in profiles:
        if overridden:
            plans.append(RunProfilePlan(profile.scheduler_name, tuple(args.policies or ()), args.policies_configmap,
                                        profile.shadows))
            continue
        paths = list(profile.paths)
        if profile.texts:
            folder = tempfile.mkdtemp(prefix=f"policyscheduler-{profile.scheduler_name}-")
            atexit.register(shutil.rmtree, folder, True)  # the inline policies live as long as the process
            for name, text in profile.texts:
                (Path(folder) / name).write_text(text, encoding="utf-8")
            paths.append(folder)
        configmap = join_key(*profile.configmaps[0]) if profile.configmaps else None
        plans.append(RunProfilePlan(profile.scheduler_name, tuple(paths), configmap, profile.shadows))
    args.profiles = plans
    args.scheduler_name = plans[0].name
    for attr, value in (("kubeconfig", cfg.kubeconfig), ("leader_elect", cfg.leader_elect),
                        ("leader_elect_lease_namespace", cfg.lease_namespace),
                        ("leader_elect_lease_duration", cfg.lease_duration),
                        ("leader_elect_renew_deadline", cfg.renew_deadline),
                        ("leader_elect_retry_period", cfg.retry_period), ("bind_address", cfg.bind_address),
                        ("verbosity", cfg.verbosity), ("engine", cfg.engine), ("kube_api_qps", cfg.qps),
                        ("kube_api_burst", cfg.burst), ("leader_elect_resource_name", cfg.lease_name)):
        if value is not None and default(attr):
            setattr(args, attr, value)
    return True
