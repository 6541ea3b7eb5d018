"""The layered set a document belongs to, loaded with the editor's unsaved text.

``policyscheduler lint FOLDER`` is the reference: the bundled defaults, then every ``*.policy`` file under
the document's folder (recursively, in path order), then lint's own checks on the folder's files. The
language server loads exactly that, except that an open document's text is the editor's buffer, not the
file on disk: every user file goes to :func:`policyscheduler.loader.load_layered` as a (name, text) pair,
named by its path, so the order (path order) and the names in diagnostics are the ones lint uses. A
document that is not a file (an untitled buffer) is a set of its own on top of the defaults.

Like ``lint``, a file of the folder that *is* a bundled default (same resolved path, or same base name
and text) counts as the default rather than as a second copy; a document of the bundled defaults folder
itself (editing the checkout's ``policies/``) is checked as ``lint policies/`` checks it: as the defaults.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePath

from pygls.uris import from_fs_path, to_fs_path

from policyscheduler.diagnostics import ERROR, Span, sort_key
from policyscheduler.loader import LoadResult, ParseCache, bundled_defaults_dir, load_layered, read_policy_paths
from policyscheduler.source import SourceFile
from policyscheduler.syntax import ast, parse

__all__ = ["LintChecks", "Layered", "set_key", "load_for", "defaults", "uri_for"]

LintChecks = Callable[[LoadResult, Sequence[str]], LoadResult]
"""Lint's checks on top of a load (``cli.lint.with_lint_checks``): the result and the paths in scope."""


@dataclasses.dataclass(frozen=True)
class Layered:
    """One loaded set: the load (with lint's checks) and the URIs of the user files it read."""

    key: str
    result: LoadResult
    user_uris: dict[str, str]
    """User file name (as in spans) -> the URI diagnostics for it are published on."""
    modules: dict[str, ast.Module | None] = dataclasses.field(default_factory=dict, repr=False)
    """Every file's AST (the loader's own parses when cached), for navigation: parsed on the load thread."""


def _fs_path(uri: str) -> str | None:
    if not uri.startswith("file:"):
        return None
    return to_fs_path(uri)


def set_key(uri: str) -> str:
    """Which set a document belongs to: its folder, or the URI itself for a buffer that is not a file."""
    path = _fs_path(uri)
    return str(Path(path).parent) if path else uri


@functools.cache
def defaults() -> tuple[SourceFile, ...]:
    """The bundled default files (read once: they ship with the package and do not change under us)."""
    sources, _ = read_policy_paths([bundled_defaults_dir()])
    return tuple(sources)


@functools.cache
def _default_identity() -> tuple[frozenset[str], frozenset[tuple[str, str]]]:
    srcs = defaults()
    return (frozenset(os.path.realpath(s.name) for s in srcs),
            frozenset((PurePath(s.name).name, s.text) for s in srcs))


def _is_default(name: str, text: str) -> bool:
    real, content = _default_identity()
    return os.path.realpath(name) in real or (PurePath(name).name, text) in content


def uri_for(name: str, open_uris: Mapping[str, str]) -> str:
    """The URI of a file named in a span: the editor's own URI when it is open, else the file's."""
    if ":" in name and not name.startswith("/") and not (len(name) > 1 and name[1] == ":"):
        return name  # already a URI (an untitled buffer's name)
    real = os.path.realpath(name)
    return open_uris.get(real) or from_fs_path(os.path.abspath(name)) or name


def load_for(uri: str, buffers: Mapping[str, str], lint: LintChecks, cache: ParseCache | None = None) -> Layered:
    """Load the set ``uri`` belongs to; ``buffers`` maps every open document's URI to its current text.

    ``cache`` keeps the parses of unchanged files from one load to the next (a keystroke re-parses one
    file, not the folder); it is pruned to the files of this load.
    """
    path = _fs_path(uri)
    if path is None:
        result = lint(load_layered(texts=[(uri, buffers.get(uri, ""))], parse_cache=cache), [uri])
        _prune(cache, result)
        return Layered(uri, result, {uri: uri}, _modules(result, cache))
    folder = Path(path).parent
    open_by_real: dict[str, tuple[str, str]] = {}
    for u, text in buffers.items():
        p = _fs_path(u)
        if p is not None:
            open_by_real[os.path.realpath(p)] = (u, text)
    sources, read_diags = read_policy_paths([folder]) if folder.is_dir() else ([], [])
    texts: dict[str, str] = {}
    seen: set[str] = set()
    for src in sources:
        real = os.path.realpath(src.name)
        seen.add(real)
        texts[src.name] = open_by_real[real][1] if real in open_by_real else src.text
    real_folder = os.path.realpath(folder)
    for real, (u, text) in open_by_real.items():  # open, not saved yet: part of the folder all the same
        if real in seen:
            continue
        if u == uri or (real.endswith(".policy") and real.startswith(real_folder + os.sep)):
            p = _fs_path(u)
            assert p is not None
            texts[p] = text
    open_uris = {real: u for real, (u, _) in open_by_real.items()}
    if real_folder == os.path.realpath(bundled_defaults_dir()):
        return _edit_defaults(str(folder), texts, lint, open_uris)
    user = [(name, text) for name, text in sorted(texts.items()) if not _is_default(name, text)]
    result = load_layered(texts=user, parse_cache=cache)
    _prune(cache, result)
    read_diags = [d for d in read_diags if d.code != "no-policy-files"]
    if read_diags:  # an unreadable file fails the set, as in lint
        failed = any(d.severity == ERROR for d in read_diags)
        result = dataclasses.replace(result, diagnostics=sorted([*read_diags, *result.diagnostics], key=sort_key),
                                     policy_set=None if failed else result.policy_set)
    result = lint(result, [str(folder), *(name for name, _ in user)])
    return Layered(str(folder), result, {name: uri_for(name, open_uris) for name, _ in user},
                   _modules(result, cache))


def _edit_defaults(folder: str, texts: Mapping[str, str], lint: LintChecks, open_uris: Mapping[str, str]) -> Layered:
    """A document of the bundled defaults folder itself (a checkout's ``policies/``): ``lint policies/``
    checks the defaults alone, so the buffers are loaded *as* the defaults -- from a scratch copy of the
    folder, since the loader reads defaults from a directory -- and the names mapped back."""
    with tempfile.TemporaryDirectory(prefix="policyscheduler-lsp-") as tmp:
        back: dict[str, str] = {}
        for name, text in texts.items():
            target = Path(tmp) / os.path.relpath(name, folder)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            back[str(target)] = name
        result = lint(load_layered(defaults_dir=tmp), [tmp])

    def span(sp: Span | None) -> Span | None:
        return dataclasses.replace(sp, file=back.get(sp.file, sp.file)) if sp is not None else None

    result = dataclasses.replace(
        result,
        diagnostics=[dataclasses.replace(d, span=span(d.span)) for d in result.diagnostics],
        sources={back.get(n, n): SourceFile(back.get(n, n), src.text) for n, src in result.sources.items()},
        default_files=tuple(back.get(n, n) for n in result.default_files),
    )
    return Layered(folder, result, {name: uri_for(name, open_uris) for name in texts}, _modules(result, None))


def _prune(cache: ParseCache | None, result: LoadResult) -> None:
    if cache is None:
        return
    live = {(src.name, src.text) for src in result.sources.values()}
    for key in [k for k in cache if k not in live]:
        del cache[key]


def _modules(result: LoadResult, cache: ParseCache | None) -> dict[str, ast.Module | None]:
    out: dict[str, ast.Module | None] = {}
    for name, src in result.sources.items():
        hit = cache.get((src.name, src.text)) if cache is not None else None
        out[name] = hit[0] if hit is not None else parse(SourceFile(name, src.text))[0]
    return out
