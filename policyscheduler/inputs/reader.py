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
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml

from policyscheduler.inputs import apivalid, safeload
from policyscheduler.kobjects import flatten_lists, namespace_of, pod_key

__all__ = ["KEPT_KINDS", "ReadResult", "read_objects", "read_texts", "SUFFIXES"]

KEPT_KINDS = frozenset(
    {"Node", "Pod", "Namespace", "Service", "ReplicaSet", "StatefulSet", "ReplicationController",
     "PodDisruptionBudget", "PersistentVolumeClaim", "PersistentVolume", "StorageClass", "CSINode", "CSIDriver",
     "CSIStorageCapacity", "VolumeAttachment"}
)
"""Kinds the cluster snapshot uses; everything else is skipped with a warning."""

SUFFIXES = (".yaml", ".yml", ".json")

MAX_INPUT_BYTES = 1 << 30
"""Largest input file (1 GiB: a 5,000-node snapshot with its pods is a few hundred MB); larger is refused."""
MAX_DEPTH = 100
"""Deepest nesting of mappings and lists in an input document (a Kubernetes object needs about 15)."""

_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


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
    seen: dict[tuple[str, str, str], str] = dataclasses.field(default_factory=dict, repr=False)
    """(kind, namespace, name) -> where it was first read: names are unique per namespace and kind."""


_CLUSTER_SCOPED = frozenset({"Node", "Namespace"})


def _identity(obj: dict[str, Any]) -> tuple[str, str, str]:
    kind = obj["kind"]
    meta = obj["metadata"]
    ns = "" if kind in _CLUSTER_SCOPED else namespace_of(obj)
    return kind, ns, meta["name"]


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

    def __init__(self, strict: bool = False) -> None:
        self.strict = strict
        """Refuse duplicate keys and nesting deeper than MAX_DEPTH (what reading inputs does)."""
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
            except (yaml.YAMLError, ValueError):  # e.g. a 5,000-digit integer: the full path locates it
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
                if self.strict and len(stack) > 2 * MAX_DEPTH:  # a mapping's pending key takes a slot too
                    raise _TooDeep(event.start_mark)
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
                if self.strict and value in top:
                    raise _DuplicateKey(value, event.start_mark)
                stack.append(_Key(value))
            else:  # a pending key: the value completes it
                stack.pop()
                stack[-1][top.key] = value


class _TooDeep(Exception):
    def __init__(self, mark: Any) -> None:
        self.mark = mark


class _DuplicateKey(Exception):
    """A mapping with the same key twice: the API server's strict decoding refuses it (which value was meant?)."""

    def __init__(self, key: Any, mark: Any) -> None:
        self.key = key
        self.mark = mark


class _Key:
    """A mapping key waiting for its value on the fast path's stack."""

    __slots__ = ("key",)

    def __init__(self, key: Any) -> None:
        self.key = key


def _yaml_documents(text: str, strict: bool = False) -> Iterable[Any]:
    """The documents of a YAML stream: the fast path when it applies, else the full loader. ``strict``
    (reading inputs): duplicate keys and nesting deeper than :data:`MAX_DEPTH` are errors, and the full
    loader is :mod:`.safeload`'s (alias expansion bounded, recursive anchors and over-long integers refused);
    without it both paths give exactly what PyYAML's safe loader gives."""
    done: list[Any] = []
    try:
        for doc in _FastYaml(strict).documents(text):
            done.append(doc)
    except _Unusual:
        if strict:  # the bounded reader: alias bombs, recursive anchors, long integers are located errors
            yield from safeload.load_yaml("", text)
        else:
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
            yield 1, safeload.load_json(name, text, safeload.Limits(max_depth=MAX_DEPTH))
        except safeload.InputError as err:
            raise ValueError(str(err)) from None
        return
    try:
        yield from enumerate(_yaml_documents(text, strict=True), start=1)
    except _TooDeep as err:
        raise ValueError(f"{name}:{err.mark.line + 1}:{err.mark.column + 1}: nesting deeper than {MAX_DEPTH} "
                         "levels (a Kubernetes object needs about 15)") from None
    except _DuplicateKey as err:
        raise ValueError(f"{name}:{err.mark.line + 1}:{err.mark.column + 1}: duplicate key {_show(err.key)} in a "
                         "mapping (the API server refuses it: which value was meant?)") from None
    except safeload.InputError as err:
        raise ValueError(str(dataclasses.replace(err, file=name))) from None
    except RecursionError:
        raise ValueError(f"{name}: nesting too deep to read") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{name}:{mark.line + 1}:{mark.column + 1}" if mark is not None else name
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ValueError(f"{where}: invalid YAML: {problem}") from None


def _show(value: Any) -> str:
    """A value for a message: repr with control characters escaped, shortened."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


_LABEL_NAMED = frozenset({"Namespace", "Service"})
"""Kinds whose names are DNS-1123 labels (at most 63 characters, no dots); the others are subdomains."""


def _valid_name(kind: str, name: str) -> bool:
    if kind in _LABEL_NAMED:
        return len(name) <= 63 and _DNS1123_LABEL.fullmatch(name) is not None
    return len(name) <= 253 and _DNS1123_SUBDOMAIN.fullmatch(name) is not None


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
    name, ns = meta["name"], meta.get("namespace")
    if not _valid_name(kind, name):
        return (f"{where}: {kind} {_show(name)}: metadata.name is not a valid name (the API server wants a DNS-1123 "
                f"{'label' if kind in _LABEL_NAMED else 'subdomain'}: lower-case letters, digits, '-' "
                f"{'' if kind in _LABEL_NAMED else 'and ' + repr('.') + ' '}, at most "
                f"{63 if kind in _LABEL_NAMED else 253} characters)")
    if ns is not None and (not isinstance(ns, str) or (ns and not (len(ns) <= 63 and _DNS1123_LABEL.fullmatch(ns)))):
        return f"{where}: {kind} {name}: metadata.namespace {_show(ns)} is not a valid namespace name (a DNS-1123 label)"
    problem = apivalid.labels_problem(meta.get("labels")) or apivalid.annotations_problem(meta.get("annotations"))
    if problem is not None:
        return f"{where}: {kind} {name}: {problem}"
    for field in ("spec", "status"):
        if field in obj and obj[field] is not None and not isinstance(obj[field], dict):
            return f"{where}: {kind} {meta['name']}: {field} must be a mapping"
    if kind == "Pod" and isinstance(obj.get("spec"), dict):
        problem = _pod_fields(obj["spec"])
        if problem is not None:
            return f"{where}: Pod {pod_key(obj)}: {problem}"
    return None


_INT32 = (-(2**31), 2**31 - 1)
_AFFINITIES = ("nodeAffinity", "podAffinity", "podAntiAffinity")
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


_NEGATIVE = re.compile(r"\s*-\s*0*[1-9.]")


def _negative(raw: Any) -> bool:
    """A quantity (string or bare number) below zero; malformed ones are the object model's to report."""
    if isinstance(raw, bool):
        return False
    if isinstance(raw, (int, float)):
        return raw < 0
    return isinstance(raw, str) and _NEGATIVE.match(raw) is not None and any(c in "123456789" for c in raw)


def _pod_fields(spec: dict[str, Any]) -> str | None:
    """The API server's validation of the pod fields the scheduler reads: requests and limits >= 0, preferred
    affinity weights 1..100, priority within int32. The message names the field; None when all is well."""
    for group in ("initContainers", "containers", "ephemeralContainers"):
        containers = spec.get(group)
        if not isinstance(containers, list):
            continue
        for i, c in enumerate(containers):
            resources = c.get("resources") if isinstance(c, dict) else None
            if not isinstance(resources, dict):
                continue
            for part in ("requests", "limits"):
                values = resources.get(part)
                if not isinstance(values, dict):
                    continue
                for res, raw in values.items():
                    if _negative(raw):
                        return (f"spec.{group}[{i}].resources.{part}[{_show(res)}]: {raw} is negative (must be "
                                "greater than or equal to 0)")
    affinity = spec.get("affinity")
    if isinstance(affinity, dict):
        for which in _AFFINITIES:
            block = affinity.get(which)
            terms = block.get(_PREFERRED) if isinstance(block, dict) else None
            if not isinstance(terms, list):
                continue
            for i, term in enumerate(terms):
                weight = term.get("weight") if isinstance(term, dict) else None
                if isinstance(weight, bool) or not isinstance(weight, int) or not 1 <= weight <= 100:
                    shown = _show(weight) if weight is not None else "missing"
                    return (f"spec.affinity.{which}.{_PREFERRED}[{i}].weight: {shown} (must be an integer in the "
                            "range 1-100)")
    priority = spec.get("priority")
    if priority is not None and (isinstance(priority, bool) or not isinstance(priority, int)
                                 or not _INT32[0] <= priority <= _INT32[1]):
        return f"spec.priority: {_show(priority)} (must be a 32-bit integer)"
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
                for obj in flatten_lists((doc,)):  # a List's items (PodList items get kind Pod)
                    problem = _check(obj, where)
                    if problem is not None:
                        result.errors.append(problem)
                    elif obj["kind"] not in KEPT_KINDS:
                        skipped[obj["kind"]] += 1
                    else:
                        key = _identity(obj)
                        first = result.seen.get(key)
                        if first is not None:
                            ns = f"{key[1]}/" if key[1] else ""
                            result.errors.append(f"{where}: duplicate {key[0]} {ns}{key[2]} (first in {first}); names "
                                                 "are unique per namespace and kind")
                            continue
                        result.seen[key] = where
                        result.objects.append(obj)
        except ValueError as err:
            result.errors.append(str(err))
        for kind, count in sorted(skipped.items()):
            noun = "object" if count == 1 else "objects"
            result.warnings.append(f"skipped {count} {noun} of kind {kind} in {name}")
    return result


def _read_text(path: Path | str) -> str:
    """The text of a file, or of standard input for ``-``, through the bounded reader (regular files only,
    at most :data:`MAX_INPUT_BYTES`); raises :class:`safeload.InputError` naming the input."""
    if path == "-":
        return safeload.read_stdin(limit=MAX_INPUT_BYTES)
    return safeload.read_text(path, limit=MAX_INPUT_BYTES)


def read_objects(paths: Sequence[str | Path]) -> ReadResult:
    """Read every object of ``paths`` (files, folders, or ``-`` for standard input)."""
    result = ReadResult()
    for path in _expand(paths, result):
        name = "<stdin>" if path == "-" else str(path)
        try:
            text = _read_text(path)
        except safeload.InputError as err:
            result.errors.append(str(dataclasses.replace(err, file=name)))
            continue
        read_texts([(name, text)], result)
    return result
