"""policyscheduler: a Kubernetes scheduler whose filter and score rules are ``.policy`` files.

The public API, imported lazily so that ``import policyscheduler`` (and the CLI's start-up) does not pay
for the parser and the object model until they are used::

    from policyscheduler import load_policy_set, ClusterSnapshot, evaluate
    loaded = load_policy_set(["policies"])
    snapshot = ClusterSnapshot.from_objects(objects)
    decision = evaluate(loaded.policy_set, snapshot, pod, rng=random.Random(0))
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "ClusterSnapshot",
    "Decision",
    "Diagnostic",
    "LoadResult",
    "PolicySet",
    "evaluate",
    "load_policy_set",
    "load_policy_texts",
]

_WHERE = {
    "ClusterSnapshot": "policyscheduler.state",
    "Decision": "policyscheduler.evaluation",
    "Diagnostic": "policyscheduler.diagnostics",
    "LoadResult": "policyscheduler.loader",
    "PolicySet": "policyscheduler.loader",
    "evaluate": "policyscheduler.evaluation",
    "load_policy_set": "policyscheduler.loader",
    "load_policy_texts": "policyscheduler.loader",
}

if TYPE_CHECKING:  # pragma: no cover
    from policyscheduler.diagnostics import Diagnostic
    from policyscheduler.evaluation import Decision, evaluate
    from policyscheduler.loader import LoadResult, PolicySet, load_policy_set, load_policy_texts
    from policyscheduler.state import ClusterSnapshot


def __getattr__(name: str) -> Any:
    """Import a public name on first use (PEP 562)."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'policyscheduler' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
