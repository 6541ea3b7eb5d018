"""``policyscheduler simulate``: replay a cluster snapshot under a policy set.

Exit status: 0 when the run completed (even if some pods fit nowhere), 2 for bad input or bad
policies, with the problems on stderr. Bad input is a missing or unreadable file, a YAML/JSON syntax
error, a document that is not a Kubernetes object, or a malformed field the API server would have
refused (an invalid quantity, a selector of the wrong shape): the object model would replace such a
field by an empty value, which would silently change the placements, so nothing is simulated.
Warnings and notes go to stderr and do not change the status: skipped kinds, policy warnings, a node
without allocatable pods, a pod bound to a node missing from the input, pending pods left to another
scheduler, score rules that failed on some node.

Policies: ``--policies`` adds the user's files to the bundled defaults (see
:func:`policyscheduler.loader.load_layered`, shared with ``lint`` and ``run``). Pods: only pending pods
whose ``spec.schedulerName`` is the simulated scheduler's (``--scheduler-name``, default
``policy-scheduler``) are scheduled, as the live scheduler would; ``--include-default-scheduler`` also
takes ``default-scheduler`` pods (and pods without a schedulerName, which the API server defaults to
it). The others are left out of the run, and their number is reported.

``--compare OLD NEW``: the snapshot is scheduled under two policy sets (same pods, order, seed and
cycle; :mod:`policyscheduler.simulate.compare`) and the pods placed differently are listed with why.
OLD and NEW are each ``defaults`` (the bundled set), a folder or ``.policy`` file layered on the defaults
as ``--policies`` layers it, or a PolicySchedulerConfiguration file (recognised by its ``kind``; the
profile ``--scheduler-name`` names, or its only one). Exit 0 when the comparison ran, 1 with
``--fail-on-change`` when some pod moved, 2 for bad input or a set that does not load.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple, TextIO

from policyscheduler.cli.now import add_now_argument, chosen_now
from policyscheduler.kobjects import DEFAULT_SCHEDULER as KUBE_DEFAULT_SCHEDULER
from policyscheduler.kobjects import scheduler_name
from policyscheduler.times import format_timestamp

__all__ = ["add_arguments", "main", "run", "rule_error_lines", "score_error_lines", "select_pods"]

EXIT_CHANGED = 1

EXIT_OK = 0
EXIT_BAD_INPUT = 2
DEFAULT_SCHEDULER_NAME = "policy-scheduler"
MAX_SCORE_ERROR_LINES = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``simulate`` options (shared by the top-level CLI and :func:`main`)."""
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="YAML/JSON files or folders of Kubernetes objects ('-' for stdin); default: the bundled demo cluster",
    )
    parser.add_argument(
        "--policies",
        metavar="DIR",
        action="append",
        help="policy folder or file (repeatable, in order; folders are searched recursively), added to the "
        "bundled default set (which a file can change with replace/override/disable, or drop with "
        "'use defaults none'); see 'policyscheduler policies path'",
    )
    parser.add_argument(
        "--allow-empty",
        action="store_true",
        help="accept --policies paths without policy files and a policy set without filter rules",
    )
    parser.add_argument(
        "--scheduler-name",
        default=None,
        metavar="NAME",
        help=f"schedule only pending pods whose spec.schedulerName is NAME (default: {DEFAULT_SCHEDULER_NAME})",
    )
    parser.add_argument(
        "--include-default-scheduler",
        action="store_true",
        help=f"also schedule pods of {KUBE_DEFAULT_SCHEDULER!r} (and pods without a schedulerName)",
    )
    parser.add_argument("--config", metavar="FILE",
                        help="a PolicySchedulerConfiguration file: the policies of its profile (the one "
                        "--scheduler-name names, or the only one); --policies replaces them")
    parser.add_argument("--cluster", nargs="+", metavar="PATH", action="extend",
                        help="snapshot files or folders (the same as PATH; as in 'explain --cluster')")
    parser.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"),
                        help="schedule the snapshot under two policy sets and list the pods that move, and why; "
                        "each is 'defaults', a policy folder or file (layered on the defaults, as --policies), "
                        "or a PolicySchedulerConfiguration file")
    parser.add_argument("--fail-on-change", action="store_true",
                        help="with --compare: exit 1 when some pod moved (for CI)")
    parser.add_argument("--output", "-o", choices=("table", "json"), default="table", help="output format (default: table)")
    parser.add_argument("--seed", type=int, default=0, help="seed for breaking score ties (default: 0)")
    add_now_argument(parser)
    parser.add_argument(
        "--engine",
        choices=("vector", "reference"),
        default="vector",
        help="how rules are evaluated: 'vector' (whole-cluster numpy operations, the default) or "
        "'reference' (node by node; the oracle the vector engine is tested against); same placements",
    )


def _esc(text: str) -> str:
    """Control characters from inputs written as escapes (names, labels and reasons never drive the terminal)."""
    from policyscheduler.diagnostics import escape_controls

    return escape_controls(text)


def _refuse(err: TextIO, problems: Sequence[str], why: str, *, what: str = "nothing was simulated") -> int:
    """Print every problem as an ``error:`` line, then why nothing was simulated; the exit status."""
    for problem in problems:
        err.write(f"error: {_esc(problem)}\n")
    err.write(f"policyscheduler simulate: {why}; {what}\n")
    return EXIT_BAD_INPUT


def select_pods(objects: list[dict[str, Any]], name: str, include_default: bool) -> tuple[list[dict[str, Any]], Counter[str]]:
    """The objects without the pending pods another scheduler owns, and how many were left out per
    scheduler name. Running pods stay whatever their scheduler: they take room on their nodes."""
    from policyscheduler.simulate import is_pending

    accepted = {name} | ({KUBE_DEFAULT_SCHEDULER} if include_default else set())
    kept: list[dict[str, Any]] = []
    skipped: Counter[str] = Counter()
    for obj in objects:
        if is_pending(obj) and scheduler_name(obj) not in accepted:
            skipped[scheduler_name(obj)] += 1
            continue
        kept.append(obj)
    return kept, skipped


def _skipped_note(skipped: Counter[str], name: str, include_default: bool) -> str:
    total = sum(skipped.values())
    parts = ", ".join(f"{count} {who}" for who, count in sorted(skipped.items(), key=lambda kv: (-kv[1], kv[0])))
    hint = "" if include_default or KUBE_DEFAULT_SCHEDULER not in skipped else \
        f"; add --include-default-scheduler to schedule the {KUBE_DEFAULT_SCHEDULER} ones too"
    return (f"note: skipped {total} pending pod{'' if total == 1 else 's'} that another scheduler owns ({parts}): "
            f"this run schedules spec.schedulerName {name!r} (--scheduler-name){hint}")


def score_error_lines(decisions: Sequence[Any]) -> list[str]:
    """One ``warning:`` line per (rule, location, error) over the run: how many nodes and pods it hit;
    filter rules first (see :func:`rule_error_lines`), then score rules."""
    return (rule_error_lines(decisions, "filter", "those nodes were infeasible for those pods")
            + rule_error_lines(decisions, "score", "those nodes got 0 for this rule and stayed feasible"))


def rule_error_lines(decisions: Sequence[Any], kind: str, consequence: str) -> list[str]:
    """One ``warning:`` line per (rule, location, error) of the ``kind`` rules (``filter`` or ``score``:
    the ``filter_errors`` / ``score_errors`` of each decision) over the run: how many nodes and pods it
    hit, and what that meant for them."""
    groups: dict[tuple[str, str | None, str], tuple[set[str | None], set[str]]] = {}
    for decision in decisions:
        for e in getattr(decision, f"{kind}_errors", ()):
            nodes, pods = groups.setdefault((e.rule, e.location, e.message), (set(), set()))
            nodes.add(e.node)
            pods.add(decision.pod)
    lines: list[str] = []
    for (rule, location, message), (nodes, pods) in list(groups.items())[:MAX_SCORE_ERROR_LINES]:
        where = f"{location}: " if location else ""
        on = "every node" if None in nodes else f"{len(nodes)} node{'' if len(nodes) == 1 else 's'}"
        example = sorted(n for n in nodes if n is not None)[:1]
        lines.append(f"warning: {where}{kind} rule {rule} failed: {message} -- on {on} for {len(pods)} "
                     f"pod{'' if len(pods) == 1 else 's'}" + (f" (e.g. node {example[0]})" if example else "")
                     + f"; {consequence}")
    if len(groups) > MAX_SCORE_ERROR_LINES:
        lines.append(f"warning: ... and {len(groups) - MAX_SCORE_ERROR_LINES} more {kind} rule failures "
                     f"(--output json lists every one under {kind}_errors)")
    return lines


def _malformed(warnings: Sequence[str]) -> list[str]:
    """The object model's notes about fields it could not read, said as what they mean here: the live
    scheduler would read such a field as absent (the note's "ignored"), the simulation refuses."""
    out = []
    for w in warnings:
        text = w[: -len("; ignored")] if w.endswith("; ignored") else w
        out.append(text)
    return out


def _progress(stream: TextIO, label: str = "") -> Callable[[int, int], None] | None:
    """A callback drawing ``simulating: 57/200 pods placed`` (``simulating OLD: ...`` with a ``label``)
    over itself on a TTY (every 10th attempt, so the drawing costs nothing next to the evaluation); None
    when ``stream`` is not a TTY."""
    if not stream.isatty():
        return None
    attempts = 0

    def report(placed: int, total: int) -> None:
        nonlocal attempts
        attempts += 1
        if attempts % 10 == 0:
            stream.write(f"\rsimulating{' ' + label if label else ''}: {placed}/{total} pods placed ")
            stream.flush()

    return report


def run(args: argparse.Namespace, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Execute ``simulate`` with parsed ``args``; returns the exit status."""
    from policyscheduler.diagnostics import render_text
    from policyscheduler.evaluation import make_evaluator
    from policyscheduler.loader import load_layered
    from policyscheduler.simulate import simulate
    from policyscheduler.simulate.output import render_json, render_table

    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr

    if getattr(args, "compare", None):
        return _run_compare(args, out, err)
    if getattr(args, "fail_on_change", False):
        err.write("policyscheduler simulate: --fail-on-change needs --compare OLD NEW\n")
        return EXIT_BAD_INPUT
    policy_paths: list[str | Path] = list(args.policies or [])
    texts: list[tuple[str, str]] = []
    if getattr(args, "config", None):
        from policyscheduler.cli.config import profile_sources

        # "" is no valid name: a --scheduler-name given, even the default one, names the profile
        chosen = profile_sources(args, err, default_scheduler_name="")
        if chosen is None:
            return EXIT_BAD_INPUT
        policy_paths, texts = list(chosen[0]), chosen[1]
    if args.scheduler_name is None:
        args.scheduler_name = DEFAULT_SCHEDULER_NAME
    loaded = load_layered(policy_paths, texts=texts, allow_empty=args.allow_empty)
    if loaded.diagnostics:  # already sorted; rendered exactly as lint renders them
        err.write(render_text(loaded.diagnostics, loaded.sources).rstrip("\n") + "\n")
    if loaded.policy_set is None:
        return _refuse(err, [], "the policies have errors")

    snapshot = _read_snapshot(args, err)
    if isinstance(snapshot, int):
        return snapshot
    objects, prepared = snapshot
    prepared.snapshot.now_ns = chosen_now(args)
    progress = _progress(err)
    try:
        sim = simulate(loaded.policy_set, objects, seed=args.seed, progress=progress, prepared=prepared,
                       evaluator=make_evaluator(args.engine), detail=False)
    finally:
        if progress is not None:
            err.write("\r\033[K")
            err.flush()
    for line in score_error_lines(sim.decisions):
        err.write(_esc(line) + "\n")
    if args.output == "json":
        out.write(render_json(sim, now=format_timestamp(chosen_now(args))) + "\n")
    else:
        out.write(render_table(sim, seed=args.seed, now=format_timestamp(chosen_now(args))))
    return EXIT_OK


def _read_snapshot(args: argparse.Namespace, err: TextIO, *, why: str = "nothing was simulated") -> Any:
    """The snapshot's objects (pending pods of other schedulers left out) and their :func:`prepare`, or the
    exit status after printing why the input cannot be used (shared by a plain run and ``--compare``)."""
    from policyscheduler.inputs import read_objects
    from policyscheduler.simulate.defaults import demo_cluster_dir
    from policyscheduler.simulate.run import prepare

    paths: list[str | Path] = [*args.paths, *(getattr(args, "cluster", None) or [])] or [demo_cluster_dir()]
    read = read_objects(paths)
    for warning in read.warnings:
        err.write(f"warning: {_esc(warning)}\n")
    if read.errors:
        return _refuse(err, read.errors, "bad input", what=why)
    if not read.objects:  # e.g. `kubectl get pods -o yaml` against the wrong context: say so, not just 0/0
        err.write("warning: the input holds no Nodes, Pods or other objects simulate looks at\n")

    objects, skipped = select_pods(list(read.objects), args.scheduler_name, args.include_default_scheduler)
    if skipped:
        err.write(_skipped_note(skipped, args.scheduler_name, args.include_default_scheduler) + "\n")
    prepared = prepare(objects)
    for note in prepared.snapshot.notes:
        err.write(f"note: {_esc(note)}\n")
    # The object model never raises on malformed objects: it degrades bad fields to empty values and
    # says so. The scheduler must keep going on them; a simulation would give silently wrong answers.
    if prepared.snapshot.warnings:
        n = len(prepared.snapshot.warnings)
        return _refuse(err, _malformed(prepared.snapshot.warnings),
                       f"{n} field{'' if n == 1 else 's'} above could not be read (fix "
                       f"{'it' if n == 1 else 'them'} or leave those objects out): the live scheduler would read "
                       f"{'it' if n == 1 else 'them'} as absent (a bad request as no request, a bad capacity as "
                       "none), which would silently change the placements", what=why)
    return objects, prepared


# ------------------------------------------------------------------------------------------- --compare


_CONFIG_KIND = re.compile(r"^kind:\s*[\"']?PolicySchedulerConfiguration[\"']?\s*(#.*)?$", re.MULTILINE)
_MAX_CONFIG_BYTES = 4 * 2**20


def _is_config_file(spec: str) -> bool:
    """A PolicySchedulerConfiguration (recognised by its ``kind``), not a policy file or folder."""
    path = Path(spec)
    try:
        if not path.is_file() or path.suffix == ".policy" or path.stat().st_size > _MAX_CONFIG_BYTES:
            return False
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False  # the policy loader reports it, located
    return _CONFIG_KIND.search(text) is not None


class _Side(NamedTuple):
    """One policy set of a comparison: what the user named, how it reads in the report, its profile."""

    label: str
    source: str
    policy_set: Any
    profile: str | None


def _load_side(label: str, spec: str, args: argparse.Namespace, err: TextIO) -> _Side | None:
    """Load OLD or NEW (see the module docstring); None after printing located errors."""
    from policyscheduler.loader import load_layered

    profile_name: str | None = None
    if spec == "defaults":
        source, paths, texts = "the bundled defaults", [], []
    elif _is_config_file(spec):
        from policyscheduler.cli.config import read_config

        cfg = read_config(spec, err)
        if cfg is None:
            return _side_failed(label, spec, err)
        names = [p.scheduler_name for p in cfg.profiles]
        wanted = args.scheduler_name
        explicit = wanted is not None
        if explicit and wanted in names:  # as 'simulate --config': the flag names it, or the file has one
            profile = cfg.profiles[names.index(wanted)]
        elif len(names) == 1 and not explicit:
            profile = cfg.profiles[0]
        else:
            choose = f"no profile has schedulerName {wanted!r}" if explicit or len(names) == 1 \
                else "the file has several profiles; choose one with --scheduler-name"
            err.write(f"{cfg.file}: error: {choose} (profiles: {', '.join(names)})\n")
            return _side_failed(label, spec, err)
        configmaps = [s for s in profile.sources if s.configmap is not None]
        if configmaps:
            where = f"{cfg.file}:{configmaps[0].line}" if configmaps[0].line else cfg.file
            ns, name = configmaps[0].configmap or ("", "")
            err.write(f"{where}: error: profile {profile.scheduler_name} takes policies from ConfigMap {ns}/{name}, "
                      "which simulate cannot read offline; save its *.policy keys to a folder and compare that\n")
            return _side_failed(label, spec, err)
        profile_name = profile.scheduler_name
        source, paths, texts = f"{spec} (profile {profile_name})", list(profile.paths), list(profile.texts)
    elif _is_manifest(spec):  # a ConfigMap manifest or kustomization: its *.policy keys, as lint reads them
        from policyscheduler.inputs.configmap import read_manifests
        from policyscheduler.source import SourceFile

        found = read_manifests([spec])
        for p in found.problems:
            err.write(f"{p.file}:{p.line}:{p.col}: error: {p.message}\n" if p.line else f"{p.file}: error: {p.message}\n")
        if found.problems or len(found.configmaps) != 1:
            if not found.problems:
                refs = ", ".join(cm.ref for cm in found.configmaps)
                err.write(f"{spec}: error: several ConfigMaps with *.policy keys ({refs}); compare one at a time\n")
            return _side_failed(label, spec, err)
        cm = found.configmaps[0]
        loaded = cm.relocate(load_layered([], texts=cm.texts(), allow_empty=args.allow_empty), SourceFile)
        return _finish_side(label, f"{spec} (ConfigMap {cm.ref})", spec, loaded, None, err)
    else:
        source, paths, texts = spec, [spec], []
    loaded = load_layered(paths, texts=texts, allow_empty=args.allow_empty)
    return _finish_side(label, source, spec, loaded, profile_name, err)


def _is_manifest(spec: str) -> bool:
    from policyscheduler.inputs.configmap import is_manifest

    return Path(spec).exists() and is_manifest(spec)


def _finish_side(label: str, source: str, spec: str, loaded: Any, profile_name: str | None, err: TextIO) -> _Side | None:
    from policyscheduler.diagnostics import render_text

    if loaded.diagnostics:
        err.write(render_text(loaded.diagnostics, loaded.sources).rstrip("\n") + "\n")
    if loaded.policy_set is None:
        return _side_failed(label, spec, err)
    return _Side(label, source, loaded.policy_set, profile_name)


def _side_failed(label: str, spec: str, err: TextIO) -> _Side | None:
    """Say which side failed (its located errors are above); None."""
    err.write(f"policyscheduler simulate: the {label} policy set ({_esc(spec)}) does not load (errors above)\n")
    return None


def _run_compare(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``simulate --compare OLD NEW``: both sets, the same snapshot; the moves and why."""
    from policyscheduler.simulate.compare import compare
    from policyscheduler.simulate.output import render_compare_json, render_compare_table

    if args.policies or getattr(args, "config", None):
        err.write("policyscheduler simulate: --compare takes both policy sets (OLD and NEW); "
                  "drop --policies and --config\n")
        return EXIT_BAD_INPUT
    old_spec, new_spec = args.compare
    old = _load_side("OLD", old_spec, args, err)
    new = _load_side("NEW", new_spec, args, err)
    if old is None or new is None:
        err.write("policyscheduler simulate: nothing was compared\n")
        return EXIT_BAD_INPUT
    if args.scheduler_name is None:  # not given: a configuration's profile names the pods
        named = new.profile or old.profile
        if old.profile and new.profile and old.profile != new.profile:
            err.write(f"note: OLD's profile is {old.profile!r} and NEW's {new.profile!r}; scheduling the pods of "
                      f"{named!r} (--scheduler-name chooses)\n")
        args.scheduler_name = named or DEFAULT_SCHEDULER_NAME
    snapshot = _read_snapshot(args, err, why="nothing was compared")
    if isinstance(snapshot, int):
        return snapshot
    objects, prepared = snapshot
    prepared.snapshot.now_ns = chosen_now(args)
    drawn: list[str] = []

    def progress(label: str) -> Callable[[int, int], None] | None:
        report = _progress(err, label)
        if report is not None:
            drawn.append(label)
        return report

    try:
        result = compare(old.policy_set, new.policy_set, objects, seed=args.seed, engine=args.engine,
                         prepared=prepared, progress=progress)
    finally:
        if drawn:
            err.write("\r\033[K")
            err.flush()
    for side, sim in (("OLD", result.old), ("NEW", result.new)):
        for line in score_error_lines(sim.decisions):
            err.write(_esc(line.replace("warning: ", f"warning: {side}: ", 1)) + "\n")
    if args.output == "json":
        out.write(render_compare_json(result, old_source=old.source, new_source=new.source) + "\n")
    else:
        out.write(render_compare_table(result, old_source=old.source, new_source=new.source))
    return EXIT_CHANGED if args.fail_on_change and result.moves else EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry point (``policyscheduler simulate`` goes through ``policyscheduler.cli``)."""
    parser = argparse.ArgumentParser(prog="policyscheduler simulate", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))
