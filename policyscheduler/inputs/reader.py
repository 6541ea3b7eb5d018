"""Turn files and folders of Kubernetes YAML/JSON into a flat list of object dicts.

What we accept is what people already have: ``kubectl get nodes,pods -A -o yaml`` output (a ``kind:
List`` whose items carry their kind), API list responses (``PodList``/``NodeList`` whose items have
no kind), multi-document YAML, JSON, and folders of any of these (searched recursively, files sorted
by path, hidden entries skipped). Kinds the scheduler does not look at (Deployments, ConfigMaps ...)
are skipped with one warning per kind and file, so a whole namespace dump can be fed in unchanged.

Problems are data, not exceptions: :class:`ReadResult` carries ``errors`` (unreadable files, YAML
syntax errors, documents that are not objects -- the CLI exits 2 on any) and ``warnings``.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml

__all__ = ["KEPT_KINDS", "ReadResult", "read_objects", "read_texts", "SUFFIXES"]

KEPT_KINDS = frozenset(
    {"Node", "Pod", "Namespace", "Service", "ReplicaSet", "StatefulSet", "ReplicationController"}
)
"""Kinds the cluster snapshot uses; everything else is skipped with a warning."""

SUFFIXES = (".yaml", ".yml", ".json")


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """Safe YAML loading that keeps timestamps as strings, as the Kubernetes API serves them."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


@dataclasses.dataclass
class ReadResult:
    """The objects read, in input order, plus what went wrong (``errors`` non-empty => unusable)."""

    objects: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    errors: list[str] = dataclasses.field(default_factory=list)
    warnings: list[str] = dataclasses.field(default_factory=list)


def _expand(paths: Sequence[str | Path], result: ReadResult) -> list[Path | str]:
    """Files to read, in order: explicit files as given, folders expanded recursively and sorted."""
    files: list[Path | str] = []
    for raw in paths:
        if str(raw) == "-":
            files.append("-")
            continue
        path = Path(raw)
        if path.is_dir():
            found = sorted(
                p
                for p in path.rglob("*")
                if p.is_file()
                and p.suffix.lower() in SUFFIXES
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
            if not found:
                result.warnings.append(f"{path}: no .yaml, .yml or .json files found")
            files.extend(found)
        elif path.exists():
            files.append(path)
        else:
            result.errors.append(f"{path}: no such file or directory")
    return files


class _Unusual(Exception):
    """The fast YAML path met something only the full loader handles (tags, anchors, merge keys)."""


_EMPTY_TAGS = (None, "!")
_STR = "tag:yaml.org,2002:str"


class _FastYaml:
    """Documents straight from libyaml's events: PyYAML's constructor costs ~15 µs per scalar in Python.

    Plain scalars are resolved exactly as :class:`_Loader` resolves them (same resolvers, same
    constructors), memoised by their text -- a snapshot repeats the same few thousand values.
    Anything unusual (explicit tags, anchors and aliases, ``<<`` merge keys, non-scalar keys) raises
    :class:`_Unusual` and the caller uses the full loader instead, so results never differ.
    """

    def __init__(self) -> None:
        self._plain: dict[str, Any] = {}
        self._resolver = _Loader("")

    def scalar(self, value: str) -> Any:
        known = self._plain.get(value, self)
        if known is not self:
            return known
        tag = self._resolver.resolve(yaml.ScalarNode, value, (True, False))
        if tag == _STR:
            result: Any = value
        else:
            if tag == "tag:yaml.org,2002:merge":
                raise _Unusual(tag)
            try:
                result = self._resolver.construct_object(yaml.ScalarNode(tag, value), deep=True)
            except yaml.YAMLError:
                raise _Unusual(tag) from None
            if isinstance(result, (list, dict, set, bytes)):
                raise _Unusual(tag)
        if len(self._plain) > 100_000:
            self._plain.clear()
        self._plain[value] = result
        return result

    def documents(self, text: str) -> Iterable[Any]:
        """Each document of the stream; raises yaml.YAMLError as the parser does, _Unusual as above."""
        events = iter(yaml.parse(text, Loader=_Loader))
        scalar_event, map_start, seq_start = yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent
        collection_end = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
        stack: list[Any] = []  # open containers; a mapping's pending key follows it on the stack
        for event in events:
            if isinstance(event, yaml.DocumentStartEvent):
                stack = [[]]  # the root "container": a one-item list
                continue
            if isinstance(event, yaml.DocumentEndEvent):
                root = stack[0]
                yield root[0] if root else None
                continue
            if isinstance(event, (yaml.StreamStartEvent, yaml.StreamEndEvent)):
                continue
            if isinstance(event, collection_end):
                value = stack.pop()
            elif isinstance(event, scalar_event):
                if event.anchor is not None or event.tag not in _EMPTY_TAGS:
                    raise _Unusual("tag or anchor")
                value = self.scalar(event.value) if event.implicit[0] else event.value
            elif isinstance(event, (map_start, seq_start)):
                if event.anchor is not None or event.tag not in _EMPTY_TAGS:
                    raise _Unusual("tag or anchor")
                stack.append({} if isinstance(event, map_start) else [])
                continue
            else:  # an alias
                raise _Unusual("alias")
            top = stack[-1]
            if type(top) is list:
                top.append(value)
            elif type(top) is dict:
                if isinstance(value, (dict, list)):
                    raise _Unusual("non-scalar key")
                stack.append(_Key(value))
            else:  # a pending key: the value completes it
                stack.pop()
                stack[-1][top.key] = value


class _Key:
    """A mapping key waiting for its value on the fast path's stack."""

    __slots__ = ("key",)

    def __init__(self, key: Any) -> None:
        self.key = key


def _yaml_documents(text: str) -> Iterable[Any]:
    """The documents of a YAML stream: the fast path when it applies, else the full safe loader."""
    done: list[Any] = []
    try:
        for doc in _FastYaml().documents(text):
            done.append(doc)
    except _Unusual:
        yield from yaml.load_all(text, Loader=_Loader)
        return
    except yaml.YAMLError:
        yield from done  # the documents before the broken one, then the located error
        raise
    yield from done


def _documents(name: str, text: str, is_json: bool) -> Iterable[tuple[int, Any]]:
    """(document number, parsed value) pairs; raises ValueError with a located message."""
    if is_json:
        try:
            yield 1, json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"{name}:{err.lineno}:{err.colno}: invalid JSON: {err.msg}") from None
        return
    try:
        yield from enumerate(_yaml_documents(text), start=1)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{name}:{mark.line + 1}:{mark.column + 1}" if mark is not None else name
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ValueError(f"{where}: invalid YAML: {problem}") from None


def _flatten(doc: dict[str, Any]) -> Iterable[dict[str, Any]]:
    """A List kind's items (items of ``PodList`` get kind ``Pod``), or the object itself."""
    kind = doc.get("kind")
    items = doc.get("items")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(items, list):
        item_kind = kind[: -len("List")] or None
        for item in items:
            if isinstance(item, dict) and "kind" not in item and item_kind:
                item = {"kind": item_kind, **item}
                if "apiVersion" in doc:
                    item.setdefault("apiVersion", doc["apiVersion"])
            yield item
    else:
        yield doc


def _check(obj: Any, where: str) -> str | None:
    """Why ``obj`` is not a usable Kubernetes object (None when it is)."""
    if not isinstance(obj, dict):
        return f"{where}: expected a Kubernetes object (a mapping), got {type(obj).__name__}"
    kind = obj.get("kind")
    if not isinstance(kind, str) or not kind:
        return f"{where}: object has no 'kind'"
    if kind not in KEPT_KINDS:
        return None
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        return f"{where}: {kind} has no metadata.name"
    for field in ("spec", "status"):
        if field in obj and obj[field] is not None and not isinstance(obj[field], dict):
            return f"{where}: {kind} {meta['name']}: {field} must be a mapping"
    return None


def read_texts(files: Sequence[tuple[str, str]], result: ReadResult | None = None) -> ReadResult:
    """Parse (display name, text) pairs; JSON when the name ends in ``.json``, YAML otherwise."""
    result = result if result is not None else ReadResult()
    for name, text in files:
        skipped: Counter[str] = Counter()
        try:
            for number, doc in _documents(name, text, name.lower().endswith(".json")):
                if doc is None:
                    continue  # empty document ("---" at the end)
                where = f"{name}: document {number}"
                if not isinstance(doc, dict):
                    result.errors.append(_check(doc, where) or where)
                    continue
                for obj in _flatten(doc):
                    problem = _check(obj, where)
                    if problem is not None:
                        result.errors.append(problem)
                    elif obj["kind"] not in KEPT_KINDS:
                        skipped[obj["kind"]] += 1
                    else:
                        result.objects.append(obj)
        except ValueError as err:
            result.errors.append(str(err))
        for kind, count in sorted(skipped.items()):
            noun = "object" if count == 1 else "objects"
            result.warnings.append(f"skipped {count} {noun} of kind {kind} in {name}")
    return result


def _read_text(path: Path | str) -> str:
    """The text of a file, or of standard input for ``-``; raises OSError or UnicodeDecodeError.

    Standard input is decoded here, not by ``sys.stdin``: its locale decoding would turn bytes that are
    not UTF-8 into lone surrogates that only fail later, with a message that names no input.
    """
    if path == "-":
        raw = getattr(sys.stdin, "buffer", None)  # None when stdin was replaced by a text stream
        return raw.read().decode("utf-8") if raw is not None else sys.stdin.read()
    assert isinstance(path, Path)
    return path.read_text(encoding="utf-8")


def read_objects(paths: Sequence[str | Path]) -> ReadResult:
    """Read every object of ``paths`` (files, folders, or ``-`` for standard input)."""
    result = ReadResult()
    for path in _expand(paths, result):
        name = "<stdin>" if path == "-" else str(path)
        try:
            text = _read_text(path)
        except UnicodeDecodeError:
            result.errors.append(f"{name}: not a UTF-8 text file")
            continue
        except OSError as err:
            result.errors.append(f"{name}: cannot read: {err.strerror or err}")
            continue
        read_texts([(name, text)], result)
    return result
