"""The event-driven YAML path of ``inputs.reader`` (used to read big snapshots) must equal PyYAML's
safe loader document for document -- including the values it resolves implicitly and the errors."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from policyscheduler.inputs.reader import _Loader, _yaml_documents
from tests.state import gen

TRICKY = [
    "a: 1\nb: [1, 2.5, true, null, 'x', 0x1f, 0o17, 1_000, .inf, -.nan, yes, off, ~, 2024-01-01, '3']\n",
    "---\n- &x {a: 1}\n- *x\n",  # anchors: full loader
    "a: !!str 5\nb: !!binary aGk=\n",  # explicit tags: full loader
    "<<: {a: 1}\nb: 2\n",  # merge key: full loader
    "", "---\n...\n", "--- 5\n--- [x]\n", "a:\n  b:\n    - c: {d: [e, {f: g}]}\n",
    "{a: 1, a: 2}\n", "? [1, 2]\n: x\n", "a: [1\n", "x: {a: b: c}\n", "- a\n- b: c\n  d: e\n",
]


def _load(loader_docs: Callable[[], list[Any]]) -> tuple[str, Any]:
    try:
        return "ok", [d if d == d else "nan" for d in loader_docs()]  # nan != nan
    except yaml.YAMLError as err:
        return "error", str(err).splitlines()[0]


@pytest.mark.parametrize("text", TRICKY)
def test_fast_path_equals_the_safe_loader(text: str) -> None:
    fast = _load(lambda: list(_yaml_documents(text)))
    full = _load(lambda: list(yaml.load_all(text, Loader=_Loader)))
    assert repr(fast) == repr(full)


def test_a_generated_cluster_reads_the_same() -> None:
    objects = gen.cluster(random.Random(5), 20, 5)
    text = yaml.dump_all([{"kind": "List", "items": objects}, *objects], Dumper=yaml.SafeDumper)
    assert list(_yaml_documents(text)) == list(yaml.load_all(text, Loader=_Loader))
