"""The one way the tool reads a YAML or JSON file: bounded in size, depth and alias expansion, strict on keys.

Every reader of user files (snapshots, ConfigMap manifests, kustomizations, configuration files,
``config import``/``config check``, ``lint --config``) goes through here, so a hostile or broken file gets
the same located answer everywhere instead of a hang, a memory blow-up or a Python traceback:

* **Regular files only**, checked by type on the open descriptor before any read (a FIFO would block, a
  device such as ``/dev/zero`` never ends), and **a size limit** (:data:`MAX_FILE_BYTES`, 16 MiB as for
  policy files; snapshot readers pass their own, larger one). A UTF-8 byte-order mark is dropped.
* **YAML aliases are bounded by what they expand to**: each anchor's expanded node count is known when
  it closes, and the nodes all aliases of a document add are capped (:data:`MAX_ALIAS_NODES`). An alias
  bomb (each level nine aliases of the previous one) is refused at the first alias that crosses the cap,
  after work linear in the text -- PyYAML would share the nodes, but every consumer walking the data
  expands them exponentially. An alias to an anchor that is still open (a recursive anchor, ``&a [*a]``)
  is refused outright.
* **Depth** is capped (:data:`MAX_DEPTH`; a Kubernetes object needs about 15), counting what aliases add.
* **Duplicate mapping keys** are refused, in YAML and in JSON, as the API server's strict decoding does.
* **Integers** too long for Python's conversion (over 4,300 digits) are a located error, not Python's message.

Every refusal is an :class:`InputError` naming the file and, where the parser knows it, the line and column;
commands print it and exit 2. Composition walks libyaml's events (the C parser when present) with an
explicit stack: no recursion, so no nesting can overflow Python's stack.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "InputError",
    "Limits",
    "MAX_ALIAS_NODES",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "compose_yaml",
    "construct",
    "load_json",
    "load_yaml",
    "read_stdin",
    "read_text",
]

MAX_FILE_BYTES = 16 * 2**20
"""Largest manifest or configuration file read (16 MiB, the policy-file limit; the API server stores at most
1.5 MiB per object, so a bigger manifest of policies is a mistake)."""
MAX_DEPTH = 100
"""Deepest nesting of mappings and lists (a Kubernetes object needs about 15)."""
MAX_ALIAS_NODES = 100_000
"""Most nodes all YAML aliases of one document may add when expanded (a real manifest's anchors add tens)."""
MAX_INT_DIGITS = 4_000
"""Longest integer literal read in YAML (JSON: Python's own conversion limit, 4,300 digits; int64 needs 19)."""


@dataclasses.dataclass
class InputError(Exception):
    """A file we will not use, and why; ``line``/``col`` are 1-based, 0 when unknown."""

    file: str
    line: int
    col: int
    message: str

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}:{self.col}" if self.line else self.file

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


@dataclasses.dataclass(frozen=True)
class Limits:
    """The bounds of one read (tests pass small ones; commands use the defaults)."""

    max_bytes: int = MAX_FILE_BYTES
    max_depth: int = MAX_DEPTH
    max_alias_nodes: int = MAX_ALIAS_NODES


DEFAULT = Limits()


# ------------------------------------------------------------------------------------------------ bytes


def _size_text(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit:,} bytes"


def _decode(name: str, data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputError(name, line, col, f"not UTF-8 text (byte 0x{data[exc.start]:02x})") from None
    return text[1:] if text.startswith("\ufeff") else text


def _read_limited(name: str, stream: Any, limit: int) -> bytes:
    data = stream.read(limit + 1)
    if data is None:  # a non-blocking stream with nothing yet: treat as empty
        return b""
    if len(data) > limit:
        raise InputError(name, 0, 0, f"more than {_size_text(limit)}; files are limited to that size")
    return bytes(data)


def read_text(path: str | Path, *, limit: int = MAX_FILE_BYTES, name: str | None = None) -> str:
    """The UTF-8 text of a regular file (BOM dropped); InputError for anything else, before reading it."""
    shown = str(path) if name is None else name
    try:
        # O_NONBLOCK: opening a FIFO without a writer must not block; fstat then refuses it before any read
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(shown, 0, 0, f"cannot read: {exc.strerror or exc}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        kind = ("a directory" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode)
                else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
                else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
        raise InputError(shown, 0, 0, f"cannot read: {kind}, not a regular file")
    with os.fdopen(fd, "rb") as f:
        if st.st_size > limit:
            raise InputError(shown, 0, 0, f"cannot read: {st.st_size:,} bytes, over the limit of {_size_text(limit)}")
        try:
            data = _read_limited(shown, f, limit)
        except OSError as exc:
            raise InputError(shown, 0, 0, f"cannot read: {exc.strerror or exc}") from None
    return _decode(shown, data)


def read_stdin(*, limit: int = MAX_FILE_BYTES, name: str = "<stdin>") -> str:
    """Standard input as UTF-8 text, bounded like a file (decoded here: the locale decoding of ``sys.stdin``
    would turn bad bytes into lone surrogates that fail later, naming no input)."""
    raw = getattr(sys.stdin, "buffer", None) if sys.stdin is not None else None
    if raw is None:
        if sys.stdin is None:
            raise InputError(name, 0, 0, "cannot read: standard input is closed")
        text = sys.stdin.read(limit + 1)
        if len(text) > limit:
            raise InputError(name, 0, 0, f"more than {_size_text(limit)}; files are limited to that size")
        return text[1:] if text.startswith("\ufeff") else text
    try:
        return _decode(name, _read_limited(name, raw, limit))
    except OSError as exc:
        raise InputError(name, 0, 0, f"cannot read: {exc.strerror or exc}") from None


# ------------------------------------------------------------------------------------------------- YAML


_CLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Resolver(yaml.resolver.Resolver):
    """YAML 1.1 implicit types, less timestamps: the Kubernetes API keeps them as strings."""


_Resolver.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.resolver.Resolver.yaml_implicit_resolvers.items()
}
_RESOLVER = _Resolver()
_resolve: Any = _RESOLVER.resolve  # untyped in the stubs
_MERGE = "tag:yaml.org,2002:merge"


class _Frame:
    """A collection being composed: its node, the node count when it opened, its height so far, and for a
    mapping the pending key and the keys seen."""

    __slots__ = ("anchor", "height", "key", "node", "seen", "start")

    def __init__(self, node: yaml.Node, anchor: str | None, start: int) -> None:
        self.node = node
        self.anchor = anchor
        self.start = start
        self.height = 1
        self.key: yaml.Node | None = None
        self.seen: set[tuple[str, str]] | None = set() if isinstance(node, yaml.MappingNode) else None


def _too_long(digits: int) -> str:
    return f"an integer of {digits:,} digits is too long to read (int64 needs at most 19)"


def _at(name: str, mark: Any, message: str) -> InputError:
    if mark is None:
        return InputError(name, 0, 0, message)
    return InputError(name, mark.line + 1, mark.column + 1, message)


def _show_key(value: str) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def compose_yaml(name: str, text: str, limits: Limits = DEFAULT) -> list[yaml.Node]:
    """The documents of a YAML stream as nodes with marks (empty documents left out), within ``limits``."""
    docs: list[yaml.Node] = []
    try:
        for node in _compose(name, text, limits):
            if node is not None:
                docs.append(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = " ".join(str(x) for x in (exc.context, exc.problem) if x) or "invalid YAML"
        raise _at(name, mark, f"invalid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise InputError(name, 0, 0, f"invalid YAML: {exc}") from None
    return docs


def _compose(name: str, text: str, limits: Limits) -> Iterator[yaml.Node | None]:
    stack: list[_Frame] = []
    anchors: dict[str, tuple[yaml.Node, int, int]] = {}  # anchor -> (node, expanded size, height)
    open_anchors: set[str] = set()
    root: list[yaml.Node] = []
    count = 0  # nodes of this document, aliases expanded
    alias_nodes = 0

    def attach(node: yaml.Node, size_height: int, mark: Any) -> None:
        if not stack:
            root.append(node)
            return
        top = stack[-1]
        top.height = max(top.height, size_height + 1)
        if top.seen is None:
            top.node.value.append(node)
        elif top.key is None:
            if isinstance(node, yaml.ScalarNode) and node.tag != _MERGE:
                ident = (node.tag, node.value)
                if ident in top.seen:
                    raise _at(name, mark, f"duplicate key {_show_key(node.value)} in a mapping (the API server "
                              "refuses it: which value was meant?)")
                top.seen.add(ident)
            top.key = node
        else:
            top.node.value.append((top.key, node))
            top.key = None

    events: Iterator[Any] = iter(yaml.parse(text, Loader=_CLoader))
    for event in events:
        kind = type(event)
        if kind is yaml.ScalarEvent:
            tag = event.tag
            if tag is None or tag == "!":
                tag = _resolve(yaml.ScalarNode, event.value, event.implicit)
            node: yaml.Node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
            count += 1
            if event.anchor is not None:
                anchors[event.anchor] = (node, 1, 0)
            attach(node, 0, event.start_mark)
        elif kind is yaml.SequenceStartEvent or kind is yaml.MappingStartEvent:
            if len(stack) >= limits.max_depth:
                raise _at(name, event.start_mark, f"nesting deeper than {limits.max_depth} levels (a Kubernetes "
                          "object needs about 15)")
            tag = event.tag
            cls = yaml.SequenceNode if kind is yaml.SequenceStartEvent else yaml.MappingNode
            if tag is None or tag == "!":
                tag = _resolve(cls, None, event.implicit)
            node = cls(tag, [], event.start_mark, None, flow_style=event.flow_style)
            count += 1
            if event.anchor is not None:
                open_anchors.add(event.anchor)
            stack.append(_Frame(node, event.anchor, count))
        elif kind is yaml.SequenceEndEvent or kind is yaml.MappingEndEvent:
            frame = stack.pop()
            frame.node.end_mark = event.end_mark
            if frame.anchor is not None:
                open_anchors.discard(frame.anchor)
                anchors[frame.anchor] = (frame.node, count - frame.start + 1, frame.height)
            attach(frame.node, frame.height, frame.node.start_mark)
        elif kind is yaml.AliasEvent:
            anchor = event.anchor
            if anchor in open_anchors:
                raise _at(name, event.start_mark, f"recursive YAML anchor: alias *{anchor} refers to the collection "
                          "it is in")
            found = anchors.get(anchor)
            if found is None:
                raise _at(name, event.start_mark, f"invalid YAML: undefined alias *{anchor}")
            target, size, height = found
            alias_nodes += size
            if alias_nodes > limits.max_alias_nodes:
                raise _at(name, event.start_mark, f"YAML aliases expand to more than {limits.max_alias_nodes:,} "
                          "nodes (an alias bomb?); write the values out or use fewer aliases")
            if len(stack) + height > limits.max_depth:
                raise _at(name, event.start_mark, f"nesting deeper than {limits.max_depth} levels once alias "
                          f"*{anchor} is expanded")
            count += size
            attach(target, height, event.start_mark)
        elif kind is yaml.DocumentStartEvent:
            stack, root, anchors, open_anchors, count, alias_nodes = [], [], {}, set(), 0, 0
        elif kind is yaml.DocumentEndEvent:
            yield root[0] if root else None


class _Constructor(yaml.constructor.SafeConstructor):
    """Safe construction; an integer too long to convert is a located error instead of Python's message."""

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        digits = len(node.value)
        if digits > MAX_INT_DIGITS:
            raise yaml.constructor.ConstructorError(None, None, _too_long(digits), node.start_mark)
        return int(super().construct_yaml_int(node))


_Constructor.add_constructor("tag:yaml.org,2002:int", _Constructor.construct_yaml_int)  # type: ignore[type-var]


def construct(name: str, node: yaml.Node) -> Any:
    """The Python value of one composed document (tags limited to the safe ones)."""
    try:
        return _Constructor().construct_document(node)
    except yaml.MarkedYAMLError as exc:
        problem = " ".join(str(x) for x in (exc.context, exc.problem) if x) or "invalid value"
        raise _at(name, exc.problem_mark or exc.context_mark, problem) from None
    except (yaml.YAMLError, ValueError, TypeError) as exc:
        raise _at(name, getattr(node, "start_mark", None), f"invalid value: {exc}") from None


def load_yaml(name: str, text: str, limits: Limits = DEFAULT) -> list[Any]:
    """The Python values of a YAML stream's non-empty documents (see the module docstring for the bounds)."""
    return [construct(name, node) for node in compose_yaml(name, text, limits)]


# ------------------------------------------------------------------------------------------------- JSON


_ANY_BRACKET = re.compile(r'[\[\]{}"]')
_STRING_END = re.compile(r'(?:[^"\\]|\\.)*"', re.S)
_LONG_INT = re.compile(r"-?\d{" + str(sys.get_int_max_str_digits() + 1) + ",}")


def _line_col(text: str, pos: int) -> tuple[int, int]:
    return text.count("\n", 0, pos) + 1, pos - (text.rfind("\n", 0, pos) + 1) + 1


def json_too_deep(text: str, max_depth: int = MAX_DEPTH) -> tuple[int, int] | None:
    """(line, column) where a JSON text's nesting first exceeds ``max_depth``, None when it does not: a count
    of brackets first, then one scan skipping strings by regex (a fraction of ``json.loads`` itself)."""
    if text.count("[") + text.count("{") <= max_depth:
        return None
    depth = 0
    pos = 0
    while True:
        m = _ANY_BRACKET.search(text, pos)
        if m is None:
            return None
        ch = m.group(0)
        pos = m.end()
        if ch == '"':
            end = _STRING_END.match(text, pos)
            if end is None:
                return None  # unterminated: json.loads reports it
            pos = end.end()
        elif ch in "[{":
            depth += 1
            if depth > max_depth:
                return _line_col(text, m.start())
        else:
            depth -= 1


class _DuplicateJsonKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise _DuplicateJsonKey(k)
            seen.add(k)
    return out


def _duplicate_position(text: str, key: str) -> tuple[int, int]:
    """Where the object holding ``key`` twice starts: the pure-Python decoder, whose object parser is told
    its start offset (this runs only once a duplicate is known to exist)."""
    decoder = json.JSONDecoder()
    inner: Any = getattr(json.decoder, "JSONObject")  # noqa: B009 -- not in the stubs

    def parse_object(s_and_end: tuple[str, int], *rest: Any) -> Any:
        pairs, end = inner(s_and_end, *rest[:2], None, lambda p: p, *rest[4:])
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys) and key in keys:
            raise _DuplicateJsonKey(str(s_and_end[1] - 1))
        return dict(pairs), end

    setattr(decoder, "parse_object", parse_object)  # noqa: B010 -- not in the stubs
    decoder.scan_once = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
    try:
        decoder.decode(text)
    except _DuplicateJsonKey as found:
        return _line_col(text, int(found.key))
    except (ValueError, RecursionError):
        pass
    return 0, 0


def load_json(name: str, text: str, limits: Limits = DEFAULT) -> Any:
    """One JSON value, strict: duplicate keys, too deep nesting and over-long integers are located errors."""
    deep = json_too_deep(text, limits.max_depth)
    if deep is not None:
        raise InputError(name, deep[0], deep[1], f"nesting deeper than {limits.max_depth} levels (a Kubernetes "
                         "object needs about 15)")
    try:
        return json.loads(text, object_pairs_hook=_pairs)
    except json.JSONDecodeError as err:
        raise InputError(name, err.lineno, err.colno, f"invalid JSON: {err.msg}") from None
    except _DuplicateJsonKey as dup:
        line, col = _duplicate_position(text, dup.key)
        raise InputError(name, line, col, f"duplicate key {_show_key(dup.key)} in an object (the API server "
                         "refuses it: which value was meant?)") from None
    except ValueError as err:  # Python's own limit on integer conversion (4,300 digits by default)
        found = _LONG_INT.search(text) if "integer string conversion" in str(err) else None
        if found is None:
            raise InputError(name, 0, 0, f"invalid JSON: {err}") from None
        line, col = _line_col(text, found.start())
        raise InputError(name, line, col, _too_long(len(found.group(0).lstrip("-")))) from None
    except RecursionError as err:
        raise InputError(name, 0, 0, f"invalid JSON: {err}") from None
