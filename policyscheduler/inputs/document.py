"""YAML documents that are not Kubernetes objects (policy test files), read safely and with positions.

A test file is hand-written YAML whose mistakes must be reported where they are (``file:line:col``),
so this reader keeps the position of every mapping key and list item. It reads and composes the file with
:mod:`policyscheduler.inputs.safeload` (regular files only, the size limit, UTF-8, bounded aliases, no
recursive anchors, duplicate keys refused) and builds values with the same rules: timestamps stay text, a duplicate key is an
error, nesting is limited to :data:`~policyscheduler.inputs.reader.MAX_DEPTH`. Anchors and aliases are
allowed (tests share objects) but a recursive alias is refused and the expanded document is limited to
:data:`MAX_VALUES` values, so an alias bomb stops early instead of filling the memory. Values are plain
JSON types (str, int, float, bool, None, list, dict); other YAML types (``!!binary``, ``!!set``) are refused.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import yaml

from policyscheduler.inputs import safeload
from policyscheduler.inputs.safeload import MAX_DEPTH

__all__ = ["Document", "DocumentError", "MAX_VALUES", "read_documents"]

MAX_VALUES = 1_000_000
"""Most values (scalars, lists, mappings, counted after alias expansion) in one document."""

Path_ = tuple[Any, ...]


class DocumentError(Exception):
    """A file that cannot be read or parsed; the message starts with ``file[:line:col]:``."""


class _Plain(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The safe loader without the timestamp resolver (timestamps stay text, as the API serves them)."""


_Plain.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


@dataclasses.dataclass
class Document:
    """One YAML document: its value and the 1-based (line, column) of every key and item in it."""

    name: str
    value: Any
    marks: dict[Path_, tuple[int, int]]

    def where(self, *path: Any) -> str:
        """``file:line:col`` of ``path`` (keys and list indexes from the top), or of its nearest parent."""
        p = tuple(path)
        while p and p not in self.marks:
            p = p[:-1]
        line, col = self.marks.get(p, (1, 1))
        return f"{self.name}:{line}:{col}"


def _at(name: str, mark: Any) -> str:
    return f"{name}:{mark.line + 1}:{mark.column + 1}" if mark is not None else name


class _Builder:
    """Turns a composed node graph into plain values, recording positions and enforcing the limits."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.count = 0
        self.marks: dict[Path_, tuple[int, int]] = {}
        self.active: set[int] = set()
        self.scalars = _Plain("")

    def fail(self, node: Any, message: str) -> DocumentError:
        return DocumentError(f"{_at(self.name, node.start_mark)}: {message}")

    def build(self, node: Any, path: Path_, depth: int) -> Any:
        self.count += 1
        if self.count > MAX_VALUES:
            raise self.fail(node, f"more than {MAX_VALUES:,} values (aliases expanded); refused")
        if depth > MAX_DEPTH:
            raise self.fail(node, f"nesting deeper than {MAX_DEPTH} levels")
        self.marks.setdefault(path, (node.start_mark.line + 1, node.start_mark.column + 1))
        if isinstance(node, yaml.ScalarNode):
            value = self.scalars.construct_object(node)
            if value is not None and not isinstance(value, (str, int, float, bool)):
                raise self.fail(node, f"a {type(value).__name__} value ({node.tag}) where plain YAML data is expected")
            return value
        if id(node) in self.active:
            raise self.fail(node, "a recursive alias (an anchor used inside itself)")
        self.active.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                return [self.build(item, (*path, i), depth + 1) for i, item in enumerate(node.value)]
            if isinstance(node, yaml.MappingNode):
                out: dict[Any, Any] = {}
                for key_node, value_node in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":
                        raise self.fail(key_node, "merge keys ('<<') are not supported in test files")
                    key = self.build(key_node, (*path, "<key>"), depth + 1)
                    if isinstance(key, (list, dict)):
                        raise self.fail(key_node, "a mapping key must be a plain value")
                    if key in out:
                        raise self.fail(key_node, f"duplicate key {key!r} in a mapping (which value was meant?)")
                    self.marks[(*path, key)] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
                    out[key] = self.build(value_node, (*path, key), depth + 1)
                return out
        finally:
            self.active.discard(id(node))
        raise self.fail(node, f"unsupported YAML node {type(node).__name__}")


def read_documents(path: str | Path) -> list[Document]:
    """Every document of the YAML file ``path`` (empty documents left out); DocumentError when it cannot be
    read or parsed, with the file and, where there is one, the line and column."""
    name = str(path)
    try:
        text = safeload.read_text(Path(path), name=name)
        nodes = safeload.compose_yaml(name, text)
    except safeload.InputError as err:
        raise DocumentError(str(err)) from None
    out: list[Document] = []
    try:
        for node in nodes:
            builder = _Builder(name)
            value = builder.build(node, (), 0)
            if value is not None:
                out.append(Document(name, value, builder.marks))
    except RecursionError:
        raise DocumentError(f"{name}: nesting too deep to read") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise DocumentError(f"{_at(name, mark)}: not valid YAML: {problem}") from None
    return out
