"""What a name means, from the tables the checker itself uses -- the text REFERENCE.md is generated from.

``policyscheduler docs`` writes grammar/REFERENCE.md from the schema (records, fields, methods, domain
builtins with their docstrings) and the generic builtins' one-line docs; hover and completion show the
same entries, formatted the same way, so the editor can never disagree with the reference. Types of
expressions before a ``.`` are resolved the checker's way, from the roots (``pod``, ``node``,
``cluster``) through fields and methods; loop variables and ``let`` names are followed textually
(``t in node.taints`` makes ``t`` a ``Taint``), which is all completion needs while the text is broken.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import re

from policyscheduler.checker import Schema, global_schema
from policyscheduler.checker.env import GENERIC_DOCS, FuncSig
from policyscheduler.checker.types import TIMESTAMP, ListT, MapT, RecordT, Type

__all__ = ["Member", "schema", "members", "resolve", "local_types", "builtin_entry", "member_entry",
           "root_entry", "builtin_names"]


@functools.cache
def schema() -> Schema:
    """The global schema, after the object model has registered its records, roots and builtins."""
    importlib.import_module("policyscheduler.objects")
    return global_schema()


def builtin_names() -> list[str]:
    """Every callable name: the generic builtins, then the domain ones."""
    return [*GENERIC_DOCS, *sorted(schema().builtins)]


@dataclasses.dataclass(frozen=True)
class Member:
    """A field or method of a record, as completion lists it."""

    name: str
    is_method: bool
    detail: str
    doc: str


def _sig(name: str, sig: FuncSig) -> str:
    return f"{name}({', '.join(str(p) for p in sig.params)}) -> {sig.ret}"


def members(t: Type) -> list[Member]:
    """The fields and methods of a record type (nothing for other types)."""
    if not isinstance(t, RecordT):
        return []
    info = schema().records.get(t.name)
    if info is None:
        return []
    out = [Member(n, False, str(ft), member_entry(t.name, n) or "") for n, ft in info.fields.items()]
    out += [Member(n, True, _sig(n, sig), member_entry(t.name, n) or "") for n, sig in info.methods.items()]
    return out


def _step(t: Type, name: str) -> Type | None:
    if not isinstance(t, RecordT):
        return None
    info = schema().records.get(t.name)
    if info is None:
        return None
    if name in info.fields:
        return info.fields[name]
    if name in info.methods:
        return info.methods[name].ret
    return None


TARGET_NOTE = "preempt rules only: the candidate victim (a Pod, like `pod`, which is the preemptor there)"
NOW_NOTE = ("the decision time: the wall clock in `run`; fixed (2026-01-01T00:00:00Z unless `--now`) in `simulate`, "
            "`explain` and `test`")


def _root(name: str) -> Type | None:
    """A root's type; ``target`` (a preempt rule's candidate victim) has the type of ``pod``."""
    roots = schema().roots
    if name == "now" and "now" not in roots and "cluster" in roots:
        return TIMESTAMP
    return roots.get("pod") if name == "target" and "target" not in roots else roots.get(name)


def resolve(chain: list[str], env: dict[str, Type]) -> Type | None:
    """The type of ``a.b.c`` (``chain`` = [a, b, c]); None when some step is unknown."""
    if not chain:
        return None
    t: Type | None = env.get(chain[0], _root(chain[0]))
    for name in chain[1:]:
        if t is None:
            return None
        t = _step(t, name)
    return t


_CHAIN = r"[A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*"
_BINDER = re.compile(rf"\b([A-Za-z_]\w*)(?:\s*,\s*([A-Za-z_]\w*))?\s+in\s+({_CHAIN})")
_LET = re.compile(rf"\blet\s+([A-Za-z_]\w*)\s*=\s*({_CHAIN})\s*$", re.MULTILINE)


def _split(chain: str) -> list[str]:
    return [p.strip() for p in chain.split(".")]


def local_types(text: str) -> dict[str, Type]:
    """Loop variables and ``let`` names of ``text`` whose type follows from a plain field path."""
    env: dict[str, Type] = {}
    found: list[tuple[int, str, str, str | None]] = []
    found += [(m.start(), "let", m.group(1), m.group(2)) for m in _LET.finditer(text)]
    found += [(m.start(), "in", m.group(1) + ("," + m.group(2) if m.group(2) else ""), m.group(3))
              for m in _BINDER.finditer(text)]
    for _, kind, names, chain in sorted(found):
        t = resolve(_split(chain or ""), env)
        if t is None:
            continue
        if kind == "let":
            env[names] = t
            continue
        parts = names.split(",")
        if isinstance(t, ListT) and len(parts) == 1:
            env[parts[0]] = t.elem
        elif isinstance(t, MapT) and len(parts) == 2:  # k, v in map
            env[parts[1]] = t.value
    return env


def builtin_entry(name: str) -> str | None:
    """A builtin's reference entry (markdown), or None when ``name`` is no builtin."""
    if name in GENERIC_DOCS:
        return f"**builtin `{name}`**\n\n{GENERIC_DOCS[name]}"
    sig = schema().builtins.get(name)
    if sig is None:
        return None
    return f"```policy\n{_sig(name, sig)}\n```\n\n{(sig.doc or '').strip() or '(no documentation)'}"


def member_entry(record: str, name: str) -> str | None:
    """A field's type or a method's signature and docstring, with the record's own description."""
    info = schema().records.get(record)
    if info is None:
        return None
    about = f"\n\n{record}: {info.doc.strip().splitlines()[0]}" if info.doc and info.doc.strip() else ""
    if name in info.fields:
        return f"```policy\n{record}.{name}: {info.fields[name]}\n```{about}"
    if name in info.methods:
        sig = info.methods[name]
        doc = (sig.doc or "").strip()
        return f"```policy\n{record}.{_sig(name, sig)}\n```" + (f"\n\n{doc}" if doc else "") + about
    return None


def root_entry(name: str) -> str | None:
    """``pod``/``node``/``cluster`` (and a preempt rule's ``target``): its record type and that record's
    description."""
    t = _root(name)
    if t is None:
        return None
    if name == "target":
        return f"```policy\ntarget: {t}\n```\n\n{TARGET_NOTE}"
    if name == "now":
        return f"```policy\nnow: {t}\n```\n\n{NOW_NOTE}"
    info = schema().records.get(t.name) if isinstance(t, RecordT) else None
    doc = info.doc.strip() if info is not None and info.doc else ""
    return f"```policy\n{name}: {t}\n```" + (f"\n\n{doc}" if doc else "")
