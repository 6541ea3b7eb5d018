"""Policies kept in a ConfigMap: read them from the manifests you apply, and say where each line came from.

``policyscheduler lint`` checks the very object CI applies: a ConfigMap manifest (YAML or JSON, possibly
multi-document, e.g. ``kubectl get configmap -o yaml`` output or a file in a kustomization) or a
kustomization directory (rendered with ``kubectl kustomize DIR`` when kubectl is on PATH, else read from
its ``configMapGenerator`` entries and resources directly). Every data key ending in ``.policy`` is one
policy file, in key order, exactly as ``run --policies-configmap`` reads the object from the API.

Diagnostics are located where the text *is*, not in the key:

* a block scalar (``site.policy: |``): policy line L, column C is YAML line ``start + L``, column
  ``indent + C`` of the manifest (checked line by line against the file's own text);
* a ConfigMap generated from files (``configMapGenerator: files:``): the ``.policy`` file's own line and
  column;
* anything else (a double-quoted string with ``\\n`` escapes, as in JSON): the start of the value, with the
  position inside the value added to the message.

This module reads Kubernetes YAML only; it imports nothing from the policy pipeline. ``cli/lint.py`` loads
:meth:`PolicyConfigMap.texts` with :func:`policyscheduler.loader.load_layered` (so the digest is the one the
scheduler computes from the same keys) and moves the diagnostics with :meth:`PolicyConfigMap.relocate`.
"""

from __future__ import annotations

import base64
import dataclasses
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from policyscheduler.inputs import apivalid, safeload
from policyscheduler.kobjects import is_list_kind

__all__ = [
    "KUSTOMIZATION_FILES",
    "Entry",
    "Manifests",
    "Origin",
    "PolicyConfigMap",
    "Problem",
    "is_manifest",
    "kustomization_file",
    "read_kustomization",
    "read_manifest_file",
    "read_manifests",
]

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
POLICY_SUFFIX = ".policy"
KUBECTL_TIMEOUT = 60.0


def kustomization_file(directory: Path) -> Path | None:
    """The kustomization file of ``directory``, or None."""
    for name in KUSTOMIZATION_FILES:
        if (directory / name).is_file():
            return directory / name
    return None


def is_manifest(path: str | Path) -> bool:
    """Is ``path`` a Kubernetes manifest (a YAML/JSON file) or a kustomization directory, rather than a
    ``.policy`` file or a folder of them?"""
    p = Path(path)
    if p.is_dir():
        return kustomization_file(p) is not None
    return p.suffix.lower() in MANIFEST_SUFFIXES


# ------------------------------------------------------------------------------------------------ data


@dataclasses.dataclass(frozen=True)
class Problem:
    """Something that stops a manifest from being read (1-based position; ``line`` 0 when unknown)."""

    file: str
    line: int
    col: int
    message: str
    code: str = "unreadable-file"
    """A diagnostic code of :mod:`policyscheduler.diagnostics`: ``unreadable-file`` (cannot read, not YAML,
    kustomize failed) or ``no-policy-files`` (no ConfigMap with a ``*.policy`` key)."""


@dataclasses.dataclass(frozen=True)
class Origin:
    """Where one policy text sits: ``kind`` is ``file`` (the text is a whole file: same positions),
    ``block`` (a YAML block scalar whose content line 1 is file line ``line``, indented ``col - 1``) or
    ``value`` (only the start ``line:col`` of the YAML value is known)."""

    file: str
    kind: str
    line: int = 1
    col: int = 1
    columns: tuple[int, ...] = ()
    """``quoted`` (a double-quoted value on one line, as in JSON): the file column of each character of
    the text, escapes undone (``\\n`` is two columns, one character)."""
    line_starts: tuple[int, ...] = ()
    """``quoted``: the offset in the text where each of its lines starts."""

    def locate(self, line: int, col: int) -> tuple[str, int, int, bool]:
        """(file, line, col, exact) of the policy text's ``line``/``col`` (1-based)."""
        if self.kind == "file":
            return self.file, line, col, True
        if self.kind == "block":
            return self.file, self.line + line - 1, self.col + col - 1, True
        if self.kind == "quoted" and self.columns and 1 <= line <= len(self.line_starts):
            offset = self.line_starts[line - 1] + col - 1
            if offset < len(self.columns):
                return self.file, self.line, self.columns[max(offset, 0)], True
            return self.file, self.line, self.columns[-1] + 1, True
        return self.file, self.line, self.col, False


@dataclasses.dataclass(frozen=True)
class Entry:
    """One ``*.policy`` key of a ConfigMap."""

    key: str
    text: str
    origin: Origin


@dataclasses.dataclass(frozen=True)
class PolicyConfigMap:
    """A ConfigMap holding policy files, and where it was read from (``source``: the manifest or the
    kustomization directory)."""

    namespace: str
    name: str
    source: str
    entries: tuple[Entry, ...]

    @property
    def ref(self) -> str:
        """``namespace/name`` (what ``--policies-configmap`` takes)."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def _prefix(self) -> str:
        return f"configmap:{self.source}#{self.ref}/"

    def texts(self) -> list[tuple[str, str]]:
        """(display name, text) per ``*.policy`` key, in key order, for ``load_layered(texts=...)``.

        The names are unique across ConfigMaps but their last path component is the key, which is all the
        policy digest looks at: lint's digest is the one the scheduler computes from the same keys."""
        prefix = self._prefix()
        return [(prefix + e.key, e.text) for e in self.entries]

    def locate(self, name: str, line: int, col: int) -> tuple[str, int, int, bool] | None:
        """Map a position in the text named ``name`` (see :meth:`texts`) to (file, line, col, exact)."""
        prefix = self._prefix()
        if not name.startswith(prefix):
            return None
        for e in self.entries:
            if prefix + e.key == name:
                return e.origin.locate(line, col)
        return None

    def files(self) -> dict[str, str]:
        """The text of every file the entries point into (for excerpts): display path -> text."""
        out: dict[str, str] = {}
        for e in self.entries:
            if e.origin.file not in out:
                try:
                    out[e.origin.file] = Path(e.origin.file).read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError):
                    pass
        return out

    def relocate(self, result: Any, source_file: Callable[[str, str], Any]) -> Any:
        """A ``LoadResult`` whose diagnostics point into the manifests (or the generator's files) instead
        of the ConfigMap keys, with those files added to ``sources`` (``source_file(name, text)`` builds
        a ``SourceFile``) so excerpts show the lines as they are in the YAML."""
        names = {n for n, _ in self.texts()}
        name_re = re.compile("(?:" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
                             + r"):(\d+):(\d+)") if names else None

        def where(name: str, line: int, col: int) -> tuple[str, int, int, bool]:
            found = self.locate(name, line, col)
            return found if found is not None else (name, line, col, True)

        def message(text: str) -> str:
            if name_re is None:
                return text

            def sub(m: re.Match[str]) -> str:
                name = m.group(0).rsplit(":", 2)[0]
                file, line, col, _ = where(name, int(m.group(1)), int(m.group(2)))
                return f"{file}:{line}:{col}"
            return name_re.sub(sub, text)

        diagnostics = []
        for d in result.diagnostics:
            span = d.span
            text = message(d.message)
            if span is not None and span.file in names:
                file, line, col, exact = where(span.file, span.line, span.col)
                if exact:
                    _, end_line, end_col, _ = where(span.file, span.end_line, span.end_col)
                else:
                    end_line, end_col = line, col + 1
                    key = PurePosixPath(span.file).name
                    text += f" (in the value of {key}: line {span.line}, column {span.col})"
                span = dataclasses.replace(span, file=file, line=line, col=col, end_line=end_line, end_col=end_col)
            diagnostics.append(dataclasses.replace(d, span=span, message=text))
        diagnostics.sort(key=lambda d: ("", 0, 0) if d.span is None else (d.span.file, d.span.line, d.span.col))
        sources = {k: v for k, v in result.sources.items() if k not in names}
        for file, text in self.files().items():
            sources[file] = source_file(file, text)
        return dataclasses.replace(result, diagnostics=diagnostics, sources=sources)


@dataclasses.dataclass
class Manifests:
    """What :func:`read_manifests` found: the ConfigMaps with ``*.policy`` keys, and the problems."""

    configmaps: list[PolicyConfigMap] = dataclasses.field(default_factory=list)
    problems: list[Problem] = dataclasses.field(default_factory=list)


# ------------------------------------------------------------------------------------------ YAML files


def _mark(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _get(node: yaml.Node, key: str) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == key:
                return v if isinstance(v, yaml.Node) else None
    return None


def _scalar(node: yaml.Node | None) -> str | None:
    return node.value if isinstance(node, yaml.ScalarNode) else None


def _block_origin(file: str, lines: Sequence[str], value: yaml.ScalarNode, text: str) -> Origin:
    """An exact ``block`` origin when ``value`` is a literal block scalar whose every content line can be
    found verbatim in the file; else a ``value`` origin (the start of the value)."""
    line, col = _mark(value)
    fallback = Origin(file, "value", line, col)
    if value.style == '"':
        return _quoted_origin(file, lines, value, text) or fallback
    if value.style != "|":
        return fallback
    content = text.splitlines()
    first = value.start_mark.line + 1  # 0-based index of the first content line (the indicator line is before)
    indent = None
    for i, want in enumerate(content):
        if want.strip():
            got = lines[first + i] if first + i < len(lines) else ""
            indent = len(got) - len(want)
            break
    if indent is None:
        return Origin(file, "block", first + 1, 1)
    if indent < 0:
        return fallback
    for i, want in enumerate(content):
        if first + i >= len(lines):
            return fallback
        raw = lines[first + i]
        if want and (raw[:indent].strip(" ") or raw[indent:] != want):
            return fallback
    return Origin(file, "block", first + 1, indent + 1)


_ESCAPE_WIDTH = {"x": 4, "u": 6, "U": 10}


def _quoted_origin(file: str, lines: Sequence[str], value: yaml.ScalarNode, text: str) -> Origin | None:
    """A ``quoted`` origin for a double-quoted scalar written on one line (JSON, ``-o json``), when undoing
    its escapes character by character gives back ``text``; else None."""
    start, end = value.start_mark, value.end_mark
    if start.line != end.line or start.line >= len(lines):
        return None
    raw = lines[start.line][start.column + 1:end.column - 1]  # inside the quotes
    columns: list[int] = []
    i = 0
    while i < len(raw):
        columns.append(start.column + 2 + i)  # 1-based file column of this character
        if raw[i] == "\\" and i + 1 < len(raw):
            i += _ESCAPE_WIDTH.get(raw[i + 1], 2)
        else:
            i += 1
    if len(columns) != len(text):
        return None
    starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            starts.append(i + 1)
    return Origin(file, "quoted", start.line + 1, start.column + 1, tuple(columns), tuple(starts))


def _configmaps_in(node: yaml.Node, file: str, lines: Sequence[str], source: str,
                   default_namespace: str = "", problems: list[Problem] | None = None) -> Iterator[PolicyConfigMap]:
    """ConfigMaps in one YAML document (a ``List``'s items too) that hold ``*.policy`` keys; what the API
    server would refuse in a ConfigMap is added to ``problems`` (when given)."""
    kind = _scalar(_get(node, "kind"))
    if is_list_kind(kind):
        items = _get(node, "items")
        if isinstance(items, yaml.SequenceNode):
            for item in items.value:
                yield from _configmaps_in(item, file, lines, source, default_namespace, problems)
        return
    if kind != "ConfigMap":
        return
    if problems is not None:
        problems.extend(_configmap_problems(node, file))
    meta = _get(node, "metadata")
    name = _scalar(_get(meta, "name")) if meta is not None else None
    namespace = (_scalar(_get(meta, "namespace")) if meta is not None else None) or default_namespace
    data = _get(node, "data")
    entries = []
    if isinstance(data, yaml.MappingNode):
        for k, v in data.value:
            key = _scalar(k)
            if key is None or not key.endswith(POLICY_SUFFIX) or not isinstance(v, yaml.ScalarNode):
                continue
            entries.append(Entry(key, v.value, _block_origin(file, lines, v, v.value)))  # value: unescaped
    if entries:
        yield PolicyConfigMap(namespace or "", name or "?", source, tuple(sorted(entries, key=lambda e: e.key)))


def _compose(file: str, text: str) -> tuple[list[yaml.Node], Problem | None]:
    """The documents, through the bounded reader (aliases, depth, duplicate keys: see :mod:`.safeload`)."""
    try:
        return safeload.compose_yaml(file, text), None
    except safeload.InputError as exc:
        return [], Problem(exc.file, exc.line, exc.col, exc.message)


def _at(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _configmap_problems(node: yaml.Node, file: str) -> list[Problem]:
    """What the API server refuses in a ConfigMap: invalid keys, non-string values, a key in both ``data``
    and ``binaryData``, binaryData that is not base64, more than 1 MiB in all, invalid labels/annotations."""
    meta = _get(node, "metadata")
    name = (_scalar(_get(meta, "name")) if meta is not None else None) or "?"
    what = f"ConfigMap {name}"
    out: list[Problem] = []
    if isinstance(meta, yaml.MappingNode):
        for field, check in (("labels", apivalid.labels_problem), ("annotations", apivalid.annotations_problem)):
            value_node = _get(meta, field)
            if value_node is None:
                continue
            try:
                value = safeload.construct(file, value_node)
            except safeload.InputError as exc:
                out.append(Problem(exc.file, exc.line, exc.col, exc.message))
                continue
            problem = check(value)
            if problem is not None:
                out.append(Problem(file, *_at(value_node), f"{what}: {problem}"))
    total = 0
    keys: dict[str, str] = {}
    for field in ("data", "binaryData"):
        section = _get(node, field)
        if section is None or (isinstance(section, yaml.ScalarNode) and section.tag.endswith(":null")):
            continue
        if not isinstance(section, yaml.MappingNode):
            out.append(Problem(file, *_at(section), f"{what}: {field} must be a mapping of keys to strings"))
            continue
        for k, v in section.value:
            key = k.value if isinstance(k, yaml.ScalarNode) else None
            problem = apivalid.configmap_key_problem(key if key is not None else "<a collection>")
            if problem is not None:
                out.append(Problem(file, *_at(k), f"{what}: {field}: {problem}"))
                continue
            assert key is not None
            if key in keys:
                out.append(Problem(file, *_at(k), f"{what}: key {key!r} is in both {keys[key]} and {field} "
                                   "(the API server refuses it)"))
                continue
            keys[key] = field
            if not isinstance(v, yaml.ScalarNode) or v.tag not in (_STR, _NULL, _BINARY):
                shown = "a list" if isinstance(v, yaml.SequenceNode) else "a mapping" if isinstance(
                    v, yaml.MappingNode) else f"a {v.tag.rsplit(':', 1)[-1]} ({v.value})"
                out.append(Problem(file, *_at(v), f"{what}: {field}[{key!r}] must be a string, not {shown} (quote it)"))
                continue
            size = len(v.value.encode())
            if field == "binaryData" and v.tag != _NULL:
                try:
                    size = len(base64.b64decode("".join(v.value.split()), validate=True))
                except ValueError:
                    out.append(Problem(file, *_at(v), f"{what}: binaryData[{key!r}] is not base64"))
                    continue
            total += len(key.encode()) + size
    if total > apivalid.MAX_CONFIGMAP_BYTES:
        out.append(Problem(file, *_at(node), f"{what}: data and binaryData hold {total:,} bytes (the API server "
                           f"stores at most {apivalid.MAX_CONFIGMAP_BYTES:,} in a ConfigMap)"))
    return out


_STR = "tag:yaml.org,2002:str"
_NULL = "tag:yaml.org,2002:null"
_BINARY = "tag:yaml.org,2002:binary"


def read_manifest_file(path: str | Path, *, source: str | None = None,
                       default_namespace: str = "") -> tuple[list[PolicyConfigMap], list[Problem]]:
    """The policy ConfigMaps of one YAML/JSON file (multi-document and ``List`` kinds too)."""
    file = str(path)
    try:
        text = safeload.read_text(path)
    except safeload.InputError as exc:
        return [], [Problem(file, exc.line, exc.col, f"{file}: {exc.message}")]
    docs, problem = _compose(file, text)
    if problem is not None:
        return [], [problem]
    lines = text.splitlines()
    problems: list[Problem] = []
    found = [cm for doc in docs for cm in _configmaps_in(doc, file, lines, source or file, default_namespace,
                                                          problems)]
    return found, problems


# -------------------------------------------------------------------------------------- kustomizations


@dataclasses.dataclass(frozen=True)
class _Generated:
    """A ``configMapGenerator`` entry as written (name before kustomize's prefix/suffix/hash)."""

    name: str
    namespace: str
    entries: tuple[Entry, ...]


def _join(directory: str, rel: str) -> str:
    return os.path.normpath(os.path.join(directory, rel))


def _load_yaml(file: Path) -> tuple[Any, Problem | None]:
    """A kustomization file's first document, through the bounded reader."""
    try:
        docs = safeload.load_yaml(str(file), safeload.read_text(file))
    except safeload.InputError as exc:
        return None, Problem(str(file), exc.line, exc.col, f"{file}: {exc.message}" if not exc.line else exc.message)
    return (docs[0] if docs else None), None


def _walk_kustomization(directory: Path, display: str, seen: set[Path], problems: list[Problem],
                        generated: list[_Generated], plain: list[PolicyConfigMap], source: str,
                        namespace: str = "") -> None:
    """Collect the generator entries (with their files' texts) and the ConfigMaps in resource files, in
    this kustomization and the kustomizations it includes as resources."""
    real = directory.resolve()
    kfile = kustomization_file(directory)
    if real in seen or kfile is None:
        return
    seen.add(real)
    doc, problem = _load_yaml(kfile)
    if problem is not None:
        problems.append(problem)
        return
    if not isinstance(doc, dict):
        return
    declared = doc.get("namespace")
    ns = declared if isinstance(declared, str) else namespace
    for res in doc.get("resources") or []:
        if not isinstance(res, str) or "://" in res:
            continue
        path, shown = directory / res, _join(display, res)
        if path.is_dir():
            _walk_kustomization(path, shown, seen, problems, generated, plain, source, ns)
        elif path.suffix.lower() in MANIFEST_SUFFIXES and path.is_file():
            found, probs = read_manifest_file(path, source=source, default_namespace=ns)
            rebased = [dataclasses.replace(cm, entries=tuple(
                dataclasses.replace(e, origin=dataclasses.replace(e.origin, file=shown)) for e in cm.entries))
                for cm in found]
            plain.extend(rebased)
            problems.extend(dataclasses.replace(p, file=shown) for p in probs)
    for gen in doc.get("configMapGenerator") or []:
        if not isinstance(gen, dict):
            continue
        entries = []
        for spec in gen.get("files") or []:
            if not isinstance(spec, str):
                continue
            key, sep, rel = spec.partition("=")
            if not sep:
                key, rel = PurePosixPath(spec).name, spec
            if not key.endswith(POLICY_SUFFIX):
                continue
            shown = _join(display, rel)
            try:
                text = safeload.read_text(directory / rel, name=shown)
            except safeload.InputError as exc:
                problems.append(Problem(str(kfile), 0, 0, f"configMapGenerator {gen.get('name')!r}: {exc}"))
                continue
            entries.append(Entry(key, text, Origin(shown, "file")))
        if entries:
            gen_ns = gen.get("namespace") if isinstance(gen.get("namespace"), str) else ns
            generated.append(_Generated(str(gen.get("name") or "?"), gen_ns or "",
                                        tuple(sorted(entries, key=lambda e: e.key))))


def _render(directory: Path, kubectl: str) -> tuple[str | None, str]:
    """``kubectl kustomize DIR``: (output, "") or (None, the error)."""
    try:
        proc = subprocess.run([kubectl, "kustomize", str(directory)], capture_output=True, text=True,
                              timeout=KUBECTL_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{kubectl} kustomize {directory}: {exc}"
    if proc.returncode != 0:
        err = " ".join(proc.stderr.split()) or f"exit status {proc.returncode}"
        err = re.sub(r"^E\d{4} [\d:.]+\s+\d+ \S+\] ", "", err)
        return None, f"kubectl kustomize {directory} failed: {err}"
    return proc.stdout, ""


def read_kustomization(directory: str | Path, *, kubectl: str | None = "auto") -> Manifests:
    """The policy ConfigMaps a kustomization produces, each key mapped back to its source.

    With kubectl (``kubectl="auto"``: the one on PATH), the texts are kustomize's own output (name prefixes,
    namespaces, patches and merges applied, errors such as the load restrictor's reported); each key is then
    traced to the generator file or resource manifest with the same key and text. Without kubectl the
    generator entries and resource files are read directly."""
    directory = Path(directory)
    display = str(directory)
    out = Manifests()
    generated: list[_Generated] = []
    plain: list[PolicyConfigMap] = []
    _walk_kustomization(directory, display, set(), out.problems, generated, plain, display)
    kfile = kustomization_file(directory)
    kdisplay = _join(display, kfile.name) if kfile is not None else display
    exe = shutil.which("kubectl") if kubectl == "auto" else kubectl
    if not exe:
        out.configmaps = [PolicyConfigMap(g.namespace, g.name, display, g.entries) for g in generated] + plain
        return out
    rendered, error = _render(directory, exe)
    if rendered is None:
        out.problems.append(Problem(kdisplay, 0, 0, error))
        return out
    docs, problem = _compose(f"kubectl kustomize {display}", rendered)
    if problem is not None:
        out.problems.append(problem)
        return out
    known = [e for g in generated for e in g.entries] + [e for cm in plain for e in cm.entries]
    lines = rendered.splitlines()
    for doc in docs:
        for cm in _configmaps_in(doc, "<rendered>", lines, display):
            entries = []
            for e in cm.entries:
                match = next((k for k in known if k.key == e.key and k.text == e.text), None)
                origin = match.origin if match is not None else Origin(kdisplay, "value", 1, 1)
                entries.append(Entry(e.key, e.text, origin))
            out.configmaps.append(dataclasses.replace(cm, entries=tuple(entries)))
    return out


# ------------------------------------------------------------------------------------------------- API


def read_manifests(paths: Iterable[str | Path], *, kubectl: str | None = "auto") -> Manifests:
    """Every policy ConfigMap in ``paths`` (manifest files and kustomization directories), in argument
    order; a path that yields none is a problem (lint must not pass a file it did not check)."""
    out = Manifests()
    for p in paths:
        path = Path(p)
        if path.is_dir():
            found = read_kustomization(path, kubectl=kubectl)
            configmaps, problems = found.configmaps, found.problems
        else:
            configmaps, problems = read_manifest_file(path)
        out.problems.extend(problems)
        out.configmaps.extend(configmaps)
        if not configmaps and not problems:
            out.problems.append(Problem(str(path), 0, 0, f"{path} holds no ConfigMap with a *{POLICY_SUFFIX} data key",
                                        "no-policy-files"))
    return out
