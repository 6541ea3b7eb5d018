"""``explain --with-pending``: explain the decision ``simulate`` makes for the pod, not a fresh one.

Without the flag, ``explain`` decides on the cluster as it is (running pods only), which is what the live
scheduler sees when the pod is next in its queue. ``simulate`` instead places every pending pod in queue
order, each placement visible to the next, with one seeded generator for all tie-breaks, so the two can
answer differently for the same pod. With the flag, the pod is explained inside simulate's own run
(:func:`policyscheduler.simulate.simulate`, the one scheduling cycle; no second driver here): an evaluator
wrapper lets every other pod through unchanged and, when the cycle evaluates this pod, builds the
explanation on the cluster exactly as the run has it then, with the tie-break generator in the run's state.
The last such attempt wins, as simulate's message comes from a pod's last attempt.

Nodes whose room pods nominated there hold (the cycle passes them to the evaluator as ``rejected``)
are rejected in the explanation too, marked ``held``, exactly as the run rejected them.

Preemption runs too (the wrapper answers the cycle's what-if ``filter_nodes`` through the inner evaluator).
A pod that preempted is placed on a later attempt on its nominated node, which the cycle checks with the
filters alone (unscored, as kube-scheduler does): then the explanation of its last full evaluation is kept
and its outcome (node, score, top, message) is the run's, with ``pending.nominated_node`` and
``pending.preempted`` saying why. A pod that fits nowhere gets the run's FailedScheduling text, preemption's
part included.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["explain_in_simulation"]


def _key(pod: dict[str, Any]) -> tuple[str, str]:
    meta = pod.get("metadata") or {}
    return (meta.get("namespace") or "default", meta.get("name") or "")


class _Watching:
    """An evaluator that passes every pod to ``inner`` and explains the target pod where the run decides it."""

    def __init__(self, inner: Any, target: tuple[str, str],
                 on_target: Callable[[Any, dict[str, Any], Any, Any], None]):
        self.inner = inner
        self.target = target
        self.on_target = on_target
        self.placed = 0
        self.placed_before = 0

    def evaluate(self, policy_set: Any, snapshot: Any, pod: dict[str, Any], *, rng: random.Random,
                 **kwargs: Any) -> Any:
        if _key(pod) == self.target:
            self.placed_before = self.placed
            self.on_target(snapshot, pod, rng.getstate(), kwargs.get("rejected"))
        decision = self.inner.evaluate(policy_set, snapshot, pod, rng=rng, **kwargs)
        if decision.node is not None:
            self.placed += 1  # simulate's binder always succeeds: every decision with a node is a placement
        return decision

    def filter_nodes(self, *args: Any, **kwargs: Any) -> Any:
        """The cycle's what-if filter checks (preemption, nominated nodes), answered by the inner evaluator."""
        return self.inner.filter_nodes(*args, **kwargs)


def explain_in_simulation(policy_set: Any, objects: Sequence[dict[str, Any]], pod: dict[str, Any], *,
                          engine: str, seed: int, sources: dict[str, Any] | None,
                          explain: Callable[..., dict[str, Any]], now: int | None = None,
                          ) -> tuple[dict[str, Any], dict[str, Any]] | str:
    """(explanation, pending info) for ``pod`` as simulate's run over ``objects`` (which hold the pod,
    pending) decides it; a message when the run never evaluated it (e.g. it is being deleted)."""
    from policyscheduler.evaluation import make_evaluator
    from policyscheduler.simulate import simulate
    from policyscheduler.simulate.queue import is_pending
    from policyscheduler.simulate.run import prepare

    found: list[dict[str, Any]] = []

    def on_target(snapshot: Any, target: dict[str, Any], state: Any, held: Any) -> None:
        found[:] = [explain(policy_set, snapshot, target, engine=engine, sources=sources, rng_state=state,
                            held=held)]

    watcher = _Watching(make_evaluator(engine), _key(pod), on_target)
    others = sum(1 for o in objects if is_pending(o) and o is not pod)
    prepared = prepare(objects) if now is None else prepare(objects, now)
    run = simulate(policy_set, objects, seed=seed, evaluator=watcher, detail=False, prepared=prepared)
    if not found:
        return f"simulate never tried pod {'/'.join(_key(pod))} (it is not pending: finished or being deleted)"
    doc = found[0]
    pending: dict[str, Any] = {"with_pending": True, "others": others, "placed_before": watcher.placed_before,
                               "seed": seed}
    key = "/".join(_key(pod))
    preempted = run.preemptions.get(key)
    final = next((d for d in run.decisions if d.pod == key), None)
    if preempted is not None and final is not None:
        pending["nominated_node"], pending["preempted"] = preempted[0], list(preempted[1])
        if final.node is not None and final.node != doc.get("node"):  # placed on its nomination, unscored
            doc["node"], doc["score"], doc["top"], doc["message"] = final.node, final.score, list(final.top), None
    if final is not None and final.node is None:
        doc["message"] = final.message  # the FailedScheduling text with its "preemption: ..." part
    return doc, pending
