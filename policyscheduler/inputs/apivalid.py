"""The API server's validation of the metadata and ConfigMap fields we read, so nothing it would refuse is
accepted silently here (a snapshot or manifest that could never exist in a cluster gives placements, or a
lint verdict, that mean nothing).

The rules are kube-apiserver's (``apimachinery`` validation): a label or annotation key is a *qualified
name* (an optional DNS-1123 subdomain prefix of at most 253 characters and ``/``, then a name of at most 63
characters: alphanumerics, ``-``, ``_``, ``.``, starting and ending alphanumeric); a label value is empty
or such a name; annotations total at most 256 KiB; a ConfigMap's keys are ``[-._a-zA-Z0-9]+`` (at most
253, not ``.``/``..``), no key is in both ``data`` and ``binaryData``, and the two together hold at most
1 MiB. Each function returns a message (None when the value is valid); callers add the object and file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "MAX_ANNOTATIONS_BYTES",
    "MAX_CONFIGMAP_BYTES",
    "annotations_problem",
    "configmap_key_problem",
    "labels_problem",
    "qualified_name_problem",
]

MAX_ANNOTATIONS_BYTES = 256 * 1024
"""Total size of an object's annotations (keys and values), as the API server counts it."""
MAX_CONFIGMAP_BYTES = 1024 * 1024
"""Total size of a ConfigMap's ``data`` and ``binaryData`` (keys and values)."""

_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_CONFIGMAP_KEY = re.compile(r"[-._a-zA-Z0-9]+")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def qualified_name_problem(key: Any) -> str | None:
    """Why ``key`` is not a valid label or annotation key (None when it is)."""
    if not isinstance(key, str):
        return f"key {_show(key)} must be a string"
    prefix, slash, name = key.rpartition("/")
    if slash:
        if not prefix:
            return f"key {_show(key)}: the prefix before '/' must not be empty"
        if len(prefix) > 253 or not _SUBDOMAIN.fullmatch(prefix):
            return (f"key {_show(key)}: the prefix must be a DNS-1123 subdomain of at most 253 characters "
                    "(lower-case letters, digits, '-' and '.')")
    if not name:
        return f"key {_show(key)}: the name part must not be empty"
    if len(name) > 63:
        return f"key {_show(key)}: the name part has {len(name):,} characters (at most 63)"
    if not _NAME.fullmatch(name):
        return (f"key {_show(key)}: the name part must be alphanumerics, '-', '_' or '.', starting and ending "
                "with an alphanumeric")
    return None


def _label_value_problem(value: Any) -> str | None:
    if not isinstance(value, str):
        return f"value {_show(value)} must be a string"
    if value == "":
        return None
    if len(value) > 63:
        return f"value of {len(value):,} characters (at most 63)"
    if not _NAME.fullmatch(value):
        return (f"value {_show(value)} must be empty or alphanumerics, '-', '_' or '.', starting and ending with "
                "an alphanumeric")
    return None


def labels_problem(labels: Any) -> str | None:
    """Why ``metadata.labels`` would be refused (None when valid); the message starts with the field."""
    if labels is None:
        return None
    if not isinstance(labels, Mapping):
        return "metadata.labels must be a mapping"
    for key, value in labels.items():
        problem = qualified_name_problem(key) or _label_value_problem(value)
        if problem is not None:
            return f"metadata.labels: {problem}"
    return None


def annotations_problem(annotations: Any) -> str | None:
    """Why ``metadata.annotations`` would be refused (None when valid): keys, string values, total size."""
    if annotations is None:
        return None
    if not isinstance(annotations, Mapping):
        return "metadata.annotations must be a mapping"
    total = 0
    for key, value in annotations.items():
        problem = qualified_name_problem(key)
        if problem is not None:
            return f"metadata.annotations: {problem}"
        if not isinstance(value, str):
            return f"metadata.annotations[{_show(key)}] must be a string"
        total += len(key.encode()) + len(value.encode())
    if total > MAX_ANNOTATIONS_BYTES:
        return f"metadata.annotations: {total:,} bytes in all (at most {MAX_ANNOTATIONS_BYTES:,})"
    return None


def configmap_key_problem(key: Any) -> str | None:
    """Why ``key`` cannot be a ConfigMap data key (None when it can)."""
    if not isinstance(key, str):
        return f"key {_show(key)} must be a string"
    if len(key) > 253:
        return f"key {_show(key)} has {len(key):,} characters (at most 253)"
    if key in (".", "..") or key.startswith(".."):
        return f"key {_show(key)} must not be '.' or '..' or start with '..'"
    if not _CONFIGMAP_KEY.fullmatch(key):
        return f"key {_show(key)} must be alphanumerics, '-', '_' or '.'"
    return None
