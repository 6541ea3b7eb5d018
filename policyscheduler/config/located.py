"""YAML read with positions: every value keeps the line and column it was written at.

:func:`load_yaml` returns a :class:`Doc` (the plain Python data plus a mark per path) or raises
:class:`ConfigError` with ``file:line:col``. The configuration file and the KubeSchedulerConfiguration
importer both validate through :class:`Doc`, so every complaint points at the offending key or value.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import yaml

from policyscheduler.inputs import safeload

__all__ = ["ConfigError", "Doc", "Path", "load_yaml", "fmt_path", "from_input_error", "read_file"]

Path = tuple[Any, ...]
"""Keys (str) and list indexes (int) from the document root; a key's own mark is at ``path + (KEY,)``."""

KEY = "\0key"


@dataclasses.dataclass
class ConfigError(Exception):
    """A problem in a configuration file, located (1-based line and column) when possible."""

    file: str
    line: int | None
    col: int | None
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}:{self.col}"
        return f"{where}: error: {self.message}"


def from_input_error(exc: safeload.InputError) -> ConfigError:
    """The reader's refusal as a configuration error (same file and position)."""
    return ConfigError(exc.file, exc.line or None, exc.col or None, exc.message)


def read_file(file: str) -> str:
    """The text of a configuration file (``-``: standard input), bounded and regular files only."""
    try:
        return safeload.read_stdin() if file == "-" else safeload.read_text(file)
    except safeload.InputError as exc:
        if exc.message.startswith("cannot read: "):
            exc.message = "cannot read the configuration file: " + exc.message.removeprefix("cannot read: ")
        raise from_input_error(exc) from None


def fmt_path(path: Path) -> str:
    out = ""
    for p in path:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + str(p)
    return out or "(document)"


class Doc:
    """Parsed YAML data with a (line, col) per path."""

    def __init__(self, file: str, data: Any, marks: dict[Path, tuple[int, int]]) -> None:
        self.file = file
        self.data = data
        self.marks = marks

    def at(self, path: Path) -> tuple[int | None, int | None]:
        while path not in self.marks and path:
            path = path[:-1]
        mark = self.marks.get(path)
        return (mark[0], mark[1]) if mark else (None, None)

    def error(self, path: Path, message: str, *, key: bool = False) -> ConfigError:
        """An error at ``path`` (its key with ``key=True``, e.g. an unknown field)."""
        line, col = self.at(path + (KEY,)) if key and path + (KEY,) in self.marks else self.at(path)
        return ConfigError(self.file, line, col, message)

    def get(self, path: Path) -> Any:
        value = self.data
        for p in path:
            value = value[p]
        return value


def load_yaml(file: str, text: str) -> Doc:
    """One YAML document, with positions; ConfigError for a syntax error or several documents."""
    try:  # the bounded reader: alias bombs, recursive anchors, depth and duplicate keys are located errors
        nodes = safeload.compose_yaml(file, text)
    except safeload.InputError as exc:
        raise from_input_error(exc) from None
    if not nodes:
        raise ConfigError(file, 1, 1, "the file is empty")
    if len(nodes) > 1:
        m = nodes[1].start_mark
        raise ConfigError(file, m.line + 1, m.column + 1, "expected one YAML document, found several")
    marks: dict[Path, tuple[int, int]] = {}

    def walk(node: yaml.Node, path: Path) -> Any:
        marks[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Any] = {}
            for knode, vnode in node.value:
                if knode.tag == "tag:yaml.org,2002:merge":
                    raise ConfigError(file, knode.start_mark.line + 1, knode.start_mark.column + 1,
                                      "YAML merge keys ('<<') are not supported here")
                key = walk(knode, path + ("\0tmp",))
                if not isinstance(key, str):
                    key = str(key)
                if key in out:
                    raise ConfigError(file, knode.start_mark.line + 1, knode.start_mark.column + 1,
                                      f"duplicate key {key!r}")
                marks[path + (key, KEY)] = (knode.start_mark.line + 1, knode.start_mark.column + 1)
                out[key] = walk(vnode, path + (key,))
            marks.pop(path + ("\0tmp",), None)
            return out
        if isinstance(node, yaml.SequenceNode):
            return [walk(item, path + (i,)) for i, item in enumerate(node.value)]
        try:
            return safeload.construct(file, node)
        except safeload.InputError as exc:
            raise from_input_error(exc) from None

    return Doc(file, walk(nodes[0], ()), marks)


# -- small validators shared by both readers --------------------------------------------------------------

def expect_map(doc: Doc, path: Path, known: Sequence[str], what: str) -> dict[str, Any]:
    value = doc.get(path)
    if not isinstance(value, dict):
        raise doc.error(path, f"{what} must be a mapping, not {_kind(value)}")
    for key in value:
        if key not in known:
            import difflib

            close = difflib.get_close_matches(key, list(known), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; known fields: {', '.join(known)}"
            raise doc.error(path + (key,), f"unknown field {key!r} in {what}{hint}", key=True)
    return value


def expect_list(doc: Doc, path: Path, what: str) -> list[Any]:
    value = doc.get(path)
    if value is None:
        return []
    if not isinstance(value, list):
        raise doc.error(path, f"{what} must be a list, not {_kind(value)}")
    return value


def expect_str(doc: Doc, path: Path, what: str, *, choices: Sequence[str] = ()) -> str:
    value = doc.get(path)
    if not isinstance(value, str) or not value:
        raise doc.error(path, f"{what} must be a non-empty string, not {_kind(value)}")
    if choices and value not in choices:
        raise doc.error(path, f"{what} must be one of {', '.join(choices)}, not {value!r}")
    return value


def expect_int(doc: Doc, path: Path, what: str, *, low: int | None = None, high: int | None = None) -> int:
    value = doc.get(path)
    if isinstance(value, bool) or not isinstance(value, int):
        raise doc.error(path, f"{what} must be an integer, not {_kind(value)}")
    if (low is not None and value < low) or (high is not None and value > high):
        rng = f"{low}..{high}" if high is not None else f">= {low}"
        raise doc.error(path, f"{what} must be in {rng}, not {value}")
    return value


def expect_number(doc: Doc, path: Path, what: str, *, positive: bool = False) -> float:
    value = doc.get(path)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise doc.error(path, f"{what} must be a number, not {_kind(value)}")
    if not math.isfinite(value):
        raise doc.error(path, f"{what} must be a finite number, not {value}")
    if positive and not value > 0:
        raise doc.error(path, f"{what} must be positive, not {value}")
    return float(value)


def expect_bool(doc: Doc, path: Path, what: str) -> bool:
    value = doc.get(path)
    if not isinstance(value, bool):
        raise doc.error(path, f"{what} must be true or false, not {_kind(value)}")
    return value


_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def expect_duration(doc: Doc, path: Path, what: str) -> float:
    """Seconds, from a number or a Go duration string ("15s", "1m30s", "500ms")."""
    import re

    value = doc.get(path)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str) and re.fullmatch(r"(\d+(\.\d+)?(ms|s|m|h))+", value):
        seconds = sum(float(n) * _UNITS[u] for n, _, u in re.findall(r"(\d+(\.\d+)?)(ms|s|m|h)", value))
    else:
        raise doc.error(path, f"{what} must be a duration such as 15s, 1m30s or 500ms, not {value!r}")
    if not math.isfinite(seconds):
        raise doc.error(path, f"{what} must be a finite duration, not {value!r}")
    if not seconds > 0:
        raise doc.error(path, f"{what} must be positive")
    return seconds


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a string ({value!r})"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__
