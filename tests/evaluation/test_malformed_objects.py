"""Property: malformed Kubernetes objects never crash the object model or the evaluator.

The scheduler will feed whatever the API server (or a hand-written snapshot) holds into
``ClusterSnapshot`` and ``evaluate``. A field of the wrong type or shape must become a snapshot warning
and a safe default, and evaluation must still return a Decision for every node: never an exception.
The objects are real ones from the bundled demo with one to four fields replaced by junk.
"""

from __future__ import annotations

import copy
import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyscheduler.evaluation import evaluate
from policyscheduler.inputs import read_objects
from policyscheduler.simulate.defaults import demo_cluster_dir
from policyscheduler.state import ClusterSnapshot
from tests.evaluation.policies import default_policies

_DEMO = read_objects([demo_cluster_dir()]).objects
_NODES = [o for o in _DEMO if o.get("kind") == "Node"][:6]
_RUNNING = [o for o in _DEMO if o.get("kind") == "Pod" and o.get("spec", {}).get("nodeName")][:8]
_PENDING = [o for o in _DEMO if o.get("kind") == "Pod" and not o.get("spec", {}).get("nodeName")]
_OTHERS = [o for o in _DEMO if o.get("kind") in ("Namespace", "Service", "ReplicaSet", "StatefulSet")]

JUNK = st.one_of(
    st.none(), st.booleans(), st.integers(-10**12, 10**12), st.floats(allow_nan=True),
    st.text(max_size=12), st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.one_of(st.none(), st.integers(), st.text(max_size=5)), max_size=3),
    st.sampled_from(["-1", "1e9999", "0.0000001m", "12 parsecs", "NaN", "", "Exists", "0.0.0.0"]),
)


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key/index path inside an object, so a mutation can hit any depth."""
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.extend(_paths(v, (*prefix, i)))
    return out


def _replace(obj: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        obj = obj[key]
    obj[path[-1]] = value


@st.composite
def broken_cluster(draw: st.DrawFn) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    objects = copy.deepcopy(_NODES + _RUNNING + _OTHERS)
    pod = copy.deepcopy(draw(st.sampled_from(_PENDING)))
    targets = [pod, *objects]
    for _ in range(draw(st.integers(1, 4))):
        target = targets[draw(st.integers(0, len(targets) - 1))]
        paths = _paths(target)
        if paths:
            _replace(target, paths[draw(st.integers(0, len(paths) - 1))], draw(JUNK))
    return objects, pod


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(broken_cluster(), st.integers(0, 2**32))
def test_malformed_objects_never_raise(cluster: tuple[list[dict[str, Any]], dict[str, Any]], seed: int) -> None:
    objects, pod = cluster
    snapshot = ClusterSnapshot.from_objects(objects)
    decision = evaluate(default_policies(), snapshot, pod, rng=random.Random(seed))
    assert set(decision.verdicts) == {n.name for n in snapshot.nodes}
    assert (decision.node is None) == (decision.message is not None)
    if decision.node is not None:
        snapshot.assume(pod, decision.node)  # placing a malformed pod must not raise either
