"""The one load pipeline: read -> parse -> layer -> check -> compile. Used by ``lint``, ``simulate`` and
hot reload alike, so lint gives exactly the verdict the running scheduler would.

Two entry points share the pipeline:

* :func:`load_layered` is what every **command** runs: the bundled default set (``policies/``, shipped in
  the wheel) first, then the user's files in argument order (a directory: its ``*.policy`` files,
  recursively, in path order; ConfigMap keys: in key order). User files *add* rules; ``replace``,
  ``override`` and ``disable`` statements change a rule of the set by name, ``use defaults none`` drops
  the defaults. A user path that yields no policy file, or a set without a filter, is an error unless
  the caller allows it (``--allow-empty``).
* :func:`load_policy_set` / :func:`load_policy_texts` load exactly the files given (the library API and
  the tests of single rules); the statements work the same within those files.

Filter order (the order in which a node's first failing filter is found) is the layer order: the
defaults in file-name order (kube-scheduler's plugin order), then the user's files in the order above;
a ``replace``d rule keeps the place of the rule it replaces.

Never raises for bad input: unreadable paths, broken text and even an internal bug become diagnostics.
"""

from __future__ import annotations

import dataclasses
import errno
import gc
import os
import stat
from collections.abc import Sequence
from importlib import resources
from pathlib import Path, PurePath

from policyscheduler.checker import CheckedRule, Schema, check, global_schema
from policyscheduler.compiler import (
    FilterRule,
    PolicySet,
    PreemptRule,
    ScoreRule,
    compile_rule,
    digest_of,
)
from policyscheduler.diagnostics import (
    ERROR,
    Diagnostic,
    Span,
    close_names,
    error,
    sort_key,
    warning,
)
from policyscheduler.source import SourceFile
from policyscheduler.syntax import ast, parse

_REPO_ROOT = Path(__file__).resolve().parent.parent

__all__ = [
    "FilterRule",
    "LoadResult",
    "ParseCache",
    "PolicySet",
    "ScoreRule",
    "bundled_defaults_dir",
    "load_layered",
    "load_policy_set",
    "load_policy_texts",
    "load_sources",
    "read_policy_paths",
]


ParseCache = dict[tuple[str, str], tuple[ast.Module | None, tuple[Diagnostic, ...]]]
"""(file name, text) -> that file's parse (the AST is immutable, so a parse can be reused as is)."""


@dataclasses.dataclass(frozen=True)
class LoadResult:
    """``policy_set`` is None iff some diagnostic is an error."""

    policy_set: PolicySet | None
    diagnostics: list[Diagnostic]
    sources: dict[str, SourceFile] = dataclasses.field(default_factory=dict, repr=False)
    costs: dict[str, int] = dataclasses.field(default_factory=dict, repr=False)
    """Static cost bound per rule ("filter name" / "score name"), for lint's report."""
    default_files: tuple[str, ...] = ()
    """The bundled default files in force (empty with ``use defaults none`` or outside :func:`load_layered`)."""
    user_files: tuple[str, ...] = ()
    """The user's files, in layer order."""
    checked: tuple[CheckedRule, ...] = dataclasses.field(default=(), repr=False)
    """The rules that passed the checker, also when other rules of the set have errors: lint's own checks
    (``cost-budget``...) run on them, so its warnings are reported together with the errors."""

    @property
    def ok(self) -> bool:
        return self.policy_set is not None

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == ERROR]


def _ensure_object_model() -> None:
    """Importing the object model registers its records, roots and builtins in policyscheduler.schema."""
    import policyscheduler.objects  # noqa: F401 -- not at the top: importing the loader must not pay for numpy


def _file_order(name: str) -> tuple[str, str]:
    return (Path(name).name, name)


def bundled_defaults_dir() -> Path:
    """Where the bundled default policy set is: the wheel's ``policyscheduler/policies`` (hatch
    ``force-include``), else the source checkout's ``policies/`` (editable install, plain checkout)."""
    try:
        entry = resources.files("policyscheduler").joinpath("policies")
        path = Path(str(entry))
        if path.is_dir():
            return path
    except (ModuleNotFoundError, TypeError):  # pragma: no cover - zip imports without a path
        pass
    return _REPO_ROOT / "policies"


MAX_POLICY_FILE_BYTES = 16 * 2**20
"""Largest policy file read (16 MiB: a 100k-rule file is about 5 MB); a larger one is a ``too-large`` error."""


def _policy_files(directory: Path, diags: list[Diagnostic]) -> list[Path]:
    """The ``*.policy`` files under ``directory``, recursively, in path order; hidden entries skipped
    (a ConfigMap volume holds ``..data/`` next to symlinks to the same files).

    Symlinked directories are followed once (a directory already on the walk -- a symlink loop -- is
    skipped), and an entry that cannot be looked at (a symlink loop, a dangling link, no permission) is a
    diagnostic for that path while the rest of the directory still loads.
    """
    found: list[tuple[str, Path]] = []
    on_walk: set[tuple[int, int]] = set()

    def walk(d: Path, rel: PurePath) -> None:
        try:
            st = d.stat()
            key = (st.st_dev, st.st_ino)
            if key in on_walk:
                diags.append(warning("symlink-loop", f"{d} leads back to a directory already being searched "
                                     "(a symlink loop); skipped", Span(str(d), 1, 1, 1, 1)))
                return
            on_walk.add(key)
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError as exc:
            diags.append(_unreadable(d, exc))
            return
        try:
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                path = d / entry.name
                try:
                    is_dir = entry.is_dir()
                    is_file = entry.is_file()
                    if not is_dir and not is_file and entry.is_symlink():
                        os.stat(path)  # dangling link or loop: raises with the reason
                except OSError as exc:
                    if entry.name.endswith(".policy") or entry.is_symlink():
                        diags.append(_unreadable(path, exc))
                    continue
                if is_dir:
                    walk(path, rel / entry.name)
                elif entry.name.endswith(".policy") and not is_file:
                    diags.append(error("unreadable-file", f"cannot read {path}: not a regular file (a device, FIFO "
                                       "or socket cannot hold policies)", Span(str(path), 1, 1, 1, 1)))
                elif entry.name.endswith(".policy"):
                    found.append(((rel / entry.name).as_posix(), path))
        finally:
            on_walk.discard(key)

    walk(directory, PurePath())
    return [f for _, f in sorted(found)]


def _unreadable(path: Path | str, exc: BaseException) -> Diagnostic:
    if isinstance(exc, OSError) and exc.errno == errno.ELOOP:
        reason = "a symlink loop (too many levels of symbolic links)"
    elif isinstance(exc, OSError) and exc.strerror:
        reason = exc.strerror
    elif isinstance(exc, UnicodeDecodeError):
        reason = f"not UTF-8 text (byte {exc.start})"
    else:
        reason = str(exc) or type(exc).__name__
    return error("unreadable-file", f"cannot read {path}: {reason}", Span(str(path), 1, 1, 1, 1))


def _read_policy_file(path: Path) -> str:
    """The text of one policy file; refuses (ValueError) what is not a regular file or is too large, before
    reading: a FIFO would block, /dev/zero would fill the memory."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("not a regular file (a device, FIFO or socket cannot hold policies)")
        if st.st_size > MAX_POLICY_FILE_BYTES:
            raise ValueError(f"{st.st_size:,} bytes, over the {MAX_POLICY_FILE_BYTES // 2**20} MiB limit "
                             "for a policy file")
        data = f.read(MAX_POLICY_FILE_BYTES + 1)
    if len(data) > MAX_POLICY_FILE_BYTES:
        raise ValueError(f"over the {MAX_POLICY_FILE_BYTES // 2**20} MiB limit for a policy file")
    return data.decode("utf-8")


@dataclasses.dataclass(frozen=True)
class _Read:
    sources: list[SourceFile]
    resolved: list[str]
    diagnostics: list[Diagnostic]


def read_policy_paths(paths: Sequence[str | Path], *, empty_is_error: bool = False) -> tuple[list[SourceFile], list[Diagnostic]]:
    """Read files and directories (recursively) in argument order; a file reached twice is read once.

    A directory without ``*.policy`` files is a ``no-policy-files`` warning, or an error when
    ``empty_is_error`` (what commands use: ``--policies /dev/null`` must not quietly mean "no rules").
    """
    read = _read(paths, empty_is_error=empty_is_error)
    return read.sources, read.diagnostics


def _read(paths: Sequence[str | Path], *, empty_is_error: bool) -> _Read:
    sources: list[SourceFile] = []
    resolved: list[str] = []
    diags: list[Diagnostic] = []
    seen: set[str] = set()
    make = error if empty_is_error else warning
    for p in paths:
        path = Path(p)
        try:
            if path.is_dir():
                found = _policy_files(path, diags)
                if not found:
                    diags.append(make("no-policy-files", f"{path} holds no *.policy files (directories are "
                                      "searched recursively)", Span(str(path), 1, 1, 1, 1)))
            elif path.exists() and not path.is_file():  # /dev/null, a fifo: nothing a policy can be read from
                found = []
                diags.append(make("no-policy-files", f"{path} is not a policy file or a directory of them",
                                  Span(str(path), 1, 1, 1, 1)))
            else:
                found = [path]
        except OSError as exc:  # a symlink loop given as the path itself
            diags.append(_unreadable(p, exc))
            continue
        for f in found:
            try:
                key = os.path.realpath(f)  # never raises on a loop (Path.resolve does on Python 3.11)
                if key in seen:
                    continue
                seen.add(key)
                sources.append(SourceFile(str(f), _read_policy_file(f)))
                resolved.append(key)
            except (OSError, UnicodeDecodeError, ValueError, RuntimeError) as exc:
                diags.append(_unreadable(f, exc))
    return _Read(sources, resolved, diags)


def load_policy_set(paths: Sequence[str | Path], *, schema: Schema | None = None) -> LoadResult:
    """Load exactly these files and directories (no bundled defaults), in argument order; a directory
    means its ``*.policy`` files, recursively, in path order."""
    read = _read(paths, empty_is_error=False)
    return _finish(_load(read.sources, [], schema=schema, ordered=True), read.diagnostics)


def load_policy_texts(files: Sequence[tuple[str, str]], *, schema: Schema | None = None) -> LoadResult:
    """Load exactly these (display name, text) pairs (no bundled defaults), in name order."""
    return load_sources([SourceFile(n, t) for n, t in files], schema=schema)


def load_sources(sources: Sequence[SourceFile], *, schema: Schema | None = None) -> LoadResult:
    """The shared pipeline over already-read sources, ordered by file base name (no bundled defaults)."""
    return _load(sorted(sources, key=lambda s: _file_order(s.name)), [], schema=schema, ordered=False)


def load_layered(
    paths: Sequence[str | Path] = (),
    *,
    texts: Sequence[tuple[str, str]] = (),
    allow_empty: bool = False,
    defaults_dir: str | Path | None = None,
    schema: Schema | None = None,
    parse_cache: ParseCache | None = None,
) -> LoadResult:
    """What every command loads: the bundled defaults, then the user's ``paths`` (argument order) and
    ``texts`` (e.g. ConfigMap keys, in key order). See the module docstring for the layering.

    A user file that *is* a default file (same resolved path, or same base name and text: ``lint
    policies/`` in a checkout) counts as the default, so the same inputs always give the same digest.
    Unless ``allow_empty``: a path yielding no policy file and a set without filters are errors.
    ``parse_cache`` (the language server's, reloading on every keystroke) reuses the parse of a file
    whose name and text are unchanged; the caller owns it and prunes it.
    """
    root = Path(defaults_dir) if defaults_dir is not None else bundled_defaults_dir()
    default_read = _read([root], empty_is_error=True)
    user_read = _read(paths, empty_is_error=not allow_empty)
    defaults = {key: src for key, src in zip(default_read.resolved, default_read.sources)}
    by_content = {(PurePath(src.name).name, src.text) for src in default_read.sources}
    users = [src for key, src in zip(user_read.resolved, user_read.sources)
             if key not in defaults and (PurePath(src.name).name, src.text) not in by_content]
    users.extend(sorted((SourceFile(n, t) for n, t in texts), key=lambda s: s.name))
    if not allow_empty and (paths or texts) and not user_read.sources and not texts and not user_read.diagnostics:
        user_read.diagnostics.append(error("no-policy-files", "no policy files were given", None))
    result = _load(users, default_read.sources, schema=schema, ordered=True, parse_cache=parse_cache)
    diags = default_read.diagnostics + user_read.diagnostics
    if not allow_empty and result.policy_set is not None and not result.policy_set.filters:
        diags.append(error("no-filters", "the policy set has no filter rule, so every pod would fit on every node "
                           "(even a full one); keep the bundled defaults (remove 'use defaults none'), add a filter, "
                           "or allow an empty set on purpose (--allow-empty)", _use_defaults_span(result)))
    return _finish(result, diags)


def _use_defaults_span(result: LoadResult) -> Span | None:
    for src in result.sources.values():
        for i, line in enumerate(src.lines, 1):
            col = line.find("use defaults")
            if col >= 0 and not line.lstrip().startswith("#"):
                return Span(src.name, i, col + 1, i, col + 13)
    return None


def _finish(result: LoadResult, extra: list[Diagnostic]) -> LoadResult:
    if not extra:
        return result
    all_diags = sorted(extra + result.diagnostics, key=sort_key)
    failed = any(d.severity == ERROR for d in all_diags)
    return dataclasses.replace(result, policy_set=None if failed else result.policy_set, diagnostics=all_diags)


def _load(users: Sequence[SourceFile], defaults: Sequence[SourceFile], *, schema: Schema | None,
          ordered: bool, parse_cache: ParseCache | None = None) -> LoadResult:
    by_name = {s.name: s for s in [*defaults, *users]}
    # The pipeline allocates millions of small, acyclic objects (tokens, trees, AST nodes, closures); the
    # cyclic collector would rescan them over and over (half the time of a 10k-rule lint). Off while loading.
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        return _pipeline(list(users), list(defaults), by_name, schema, ordered, parse_cache)
    except RecursionError:
        d = error("too-deep", "an expression is nested too deeply to analyse; split it with 'let'", None)
        return LoadResult(None, [d], by_name)
    except Exception as exc:  # noqa: BLE001 -- a bug of ours must not take the scheduler (or lint) down
        d = error("internal-error", f"the policy loader failed: {type(exc).__name__}: {exc}", None)
        return LoadResult(None, [d], by_name)
    finally:
        if gc_was_on:
            gc.enable()


def _pipeline(users: list[SourceFile], defaults: list[SourceFile], by_name: dict[str, SourceFile],
              schema: Schema | None, ordered: bool, parse_cache: ParseCache | None = None) -> LoadResult:
    if schema is None:
        _ensure_object_model()
        schema = global_schema()
    diags: list[Diagnostic] = []
    user_modules: list[ast.Module] = []
    default_modules: list[ast.Module] = []
    for group, out in ((defaults, default_modules), (users, user_modules)):
        for src in group:
            hit = parse_cache.get((src.name, src.text)) if parse_cache is not None else None
            if hit is None:
                module, parse_diags = parse(src)
                hit = (module, tuple(parse_diags))
                if parse_cache is not None:
                    parse_cache[(src.name, src.text)] = hit
            module = hit[0]
            diags.extend(hit[1])
            if module is not None:
                out.append(module)
    layered = layer(default_modules, user_modules, diags)
    in_force = [s for s in defaults if layered.defaults_used] + users
    by_name = {s.name: s for s in [*defaults, *users]}
    checked, check_diags = check([ast.Module("<policy set>", tuple(layered.rules), Span("<policy set>", 1, 1, 1, 1))],
                                 schema)
    diags = sorted(diags + check_diags, key=sort_key)
    costs = {f"{c.rule.kind} {c.rule.name}": c.cost for c in checked}
    default_files = tuple(s.name for s in defaults) if layered.defaults_used else ()
    user_files = tuple(s.name for s in users)
    if any(d.severity == ERROR for d in diags):
        return LoadResult(None, diags, by_name, costs, default_files, user_files, tuple(checked))
    compiled = [compile_rule(c) for c in checked]
    policy_set = PolicySet(
        filters=tuple(r for r in compiled if isinstance(r, FilterRule)),
        scores=tuple(r for r in compiled if isinstance(r, ScoreRule)),
        preempts=tuple(r for r in compiled if isinstance(r, PreemptRule)),
        # Base names, not paths: the same policies read by lint in CI, by simulate from the wheel and from
        # the ConfigMap in the cluster must carry the same digest. Layered sets keep their layer order
        # (it is the filter order); the plain loaders sort by name, which is their order too.
        digest=digest_of([(PurePath(s.name).name, s.text) for s in in_force], ordered=ordered),
    )
    return LoadResult(policy_set, diags, by_name, costs, default_files, user_files, tuple(checked))


# ------------------------------------------------------------------------------------------- layering


@dataclasses.dataclass
class Layered:
    """The rules in force, in filter/score order, after the statements were applied."""

    rules: list[ast.Rule]
    defaults_used: bool


def _names_hint(kind: str, name: str, known: Sequence[str]) -> str:
    close = close_names(name, known)
    if close:
        return "; did you mean " + " or ".join(f"'{c}'" for c in close) + "?"
    if known:
        return f"; the {kind} rules are: " + ", ".join(sorted(known))
    return f"; the set has no {kind} rules"


def layer(default_modules: Sequence[ast.Module], user_modules: Sequence[ast.Module],
          diags: list[Diagnostic]) -> Layered:
    """Apply ``use defaults``, ``replace``, ``override`` and ``disable`` to the rules of the modules.

    Definitions in layer order: the defaults' rules, then the users'. A second definition of a
    (kind, name) is ``duplicate-rule``, reported on the later one (a user's file, never a default
    one). Statements target a definition anywhere in the set; a rule may be the target of one
    statement; an unknown target is ``unknown-rule`` at the name.
    """
    statements = [s for m in user_modules for s in m.statements]
    statements += [s for m in default_modules for s in m.statements]
    use = [s for s in statements if isinstance(s, ast.UseDefaults)]
    defaults_used = True
    for s in use:
        if s.mode != "none":
            diags.append(error("unknown-use", f"'use defaults {s.mode}': the only choice is 'use defaults none' "
                               "(start from an empty set; the defaults are in force without a statement)",
                               s.mode_span))
        else:
            defaults_used = False
    modules = ([*default_modules] if defaults_used else []) + list(user_modules)
    default_files = {m.file for m in default_modules}
    left_out = set() if defaults_used else {(r.kind, r.name) for m in default_modules for r in m.rules}

    definitions: list[ast.Rule] = []
    where: dict[tuple[str, str], ast.Rule] = {}
    replacements: list[ast.Rule] = []
    for m in modules:
        for r in m.rules:
            if r.replaces:
                replacements.append(r)
                continue
            first = where.get((r.kind, r.name))
            if first is not None:
                hint = ""
                if first.span.file in default_files:
                    hint = (f" (a bundled default); to change it write 'replace {r.kind} {r.name}' (or 'override "
                            f"{r.kind} {r.name} ...', 'disable {r.kind} {r.name}'), or give your rule another name")
                diags.append(error("duplicate-rule", f"{r.kind} '{r.name}' is already defined at "
                                   f"{first.name_span}{hint}", r.name_span))
                continue
            where[(r.kind, r.name)] = r
            definitions.append(r)

    targeted: dict[tuple[str, str], Span] = {}

    def target(kind: str, name: str, span: Span, what: str) -> ast.Rule | None:
        rule = where.get((kind, name))
        if rule is None:
            known = [n for k, n in where if k == kind]
            others = [k for k in ("filter", "score", "preempt") if k != kind and (k, name) in where]
            if (kind, name) in left_out:
                hint = " (it is a bundled default, but 'use defaults none' leaves the defaults out)"
            elif others:  # the right name, the wrong kind: `disable score node_unschedulable` of a filter
                verb = what.strip("'").split(" ", 1)[0]
                hint = "; " + "; ".join(f"there is a {k} named {name}; did you mean '{verb} {k} {name}'?"
                                        for k in others)
            else:
                hint = _names_hint(kind, name, known)
            diags.append(error("unknown-rule", f"{what}: there is no {kind} rule named '{name}' in the policy set"
                               + hint, span))
            return None
        earlier = targeted.get((kind, name))
        if earlier is not None:
            diags.append(error("conflicting-statements", f"{kind} '{name}' is already changed at {earlier}; "
                               "a rule takes one replace, override or disable", span))
            return None
        targeted[(kind, name)] = span
        return rule

    changed: dict[int, ast.Rule | None] = {}
    for r in replacements:
        old = target(r.kind, r.name, r.name_span, f"'replace {r.kind} {r.name}'")
        if old is None:
            continue
        if isinstance(r, ast.ScoreRule) and isinstance(old, ast.ScoreRule):  # what it does not state, it keeps
            if not r.weight_text:
                r = dataclasses.replace(r, weight_text=old.weight_text, weight_span=old.weight_span)
            if r.normalize is None:
                r = dataclasses.replace(r, normalize=old.normalize, normalize_span=old.normalize_span)
        changed[id(old)] = r
    for stmt in statements:
        if isinstance(stmt, ast.Disable):
            old = target(stmt.kind, stmt.name, stmt.name_span, f"'disable {stmt.kind} {stmt.name}'")
            if old is not None:
                changed[id(old)] = None
        elif isinstance(stmt, ast.Override):
            old = target(stmt.kind, stmt.name, stmt.name_span, f"'override {stmt.kind} {stmt.name}'")
            if old is not None:
                new = _override(old, stmt, diags)
                if new is not None:
                    changed[id(old)] = new
    rules: list[ast.Rule] = []
    for r in definitions:
        new = changed.get(id(r), r)
        if new is not None:
            rules.append(new)
    return Layered(rules, defaults_used)


def _override(rule: ast.Rule, s: ast.Override, diags: list[Diagnostic]) -> ast.Rule | None:
    """The rule with the override's settings applied (None, with diagnostics, when they do not fit)."""
    ok = True
    if not s.settings:
        diags.append(error("empty-override", f"'override {s.kind} {s.name}' changes nothing; add "
                           + ("'weight N', 'normalize MODE' or 'skip when CONDITION'" if s.kind == "score"
                              else "'skip when CONDITION'"), s.name_span))
        return None
    seen: dict[str, Span] = {}
    for what, span in s.settings:
        if what in seen and what != "skip when":
            diags.append(error("duplicate-clause", f"'{what}' appears twice in this override (first at "
                               f"{seen[what]})", span))
            ok = False
        seen.setdefault(what, span)
        if what in ("weight", "normalize") and not isinstance(rule, ast.ScoreRule):
            diags.append(error("clause-not-allowed", f"a {rule.kind} has no {what}; 'override {rule.kind}' takes "
                               f"only 'skip when CONDITION'" + (" (use 'replace filter' to change what it checks)"
                                                               if isinstance(rule, ast.FilterRule) else ""), span))
            ok = False
    if not ok:
        return None
    if isinstance(rule, ast.ScoreRule):
        if s.weight_text is not None and s.weight_span is not None:
            rule = dataclasses.replace(rule, weight_text=s.weight_text, weight_span=s.weight_span)
        if s.normalize is not None:
            rule = dataclasses.replace(rule, normalize=s.normalize, normalize_span=s.normalize_span)
    if s.skip:
        rule = _with_skip(rule, s.skip)
    return rule


def _with_skip(rule: ast.Rule, skips: Sequence[ast.Expr]) -> ast.Rule:
    """``applies when A`` becomes ``applies when A and not (S1 or S2 ...)`` (the skip conditions keep their
    own spans, so a mistake in one is reported in the user's file)."""
    cond: ast.Expr = skips[0]
    for extra in skips[1:]:
        cond = ast.Binary("or", cond, extra, cond.span)
    negated = ast.Unary("not", cond, cond.span)
    clauses = list(rule.clauses)
    for i, c in enumerate(clauses):
        if isinstance(c, ast.Applies):
            clauses[i] = ast.Applies(ast.Binary("and", c.cond, negated, c.cond.span), c.span)
            break
    else:
        at = 0
        while at < len(clauses) and isinstance(clauses[at], ast.Reason):
            at += 1
        clauses.insert(at, ast.Applies(negated, cond.span))
    return dataclasses.replace(rule, clauses=tuple(clauses))
