"""Keeping the collector away from the cluster state: :func:`freeze_heap` and its thresholds.

The scheduling loop (:mod:`.scheduler`) calls it once the caches have synced, and again when it goes idle
after real work; why, and why not at other times, is the function's docstring.
"""

from __future__ import annotations

import gc
import logging
import time

__all__ = ["GC_YOUNG_THRESHOLD", "REFREEZE_AFTER", "freeze_heap", "relax_collector"]

log = logging.getLogger("policyscheduler.scheduler")

GC_YOUNG_THRESHOLD = 10_000
"""Net allocations between young-generation collections once the scheduler runs (CPython's default: 700)."""

REFREEZE_AFTER = 200
"""Attempts after which an idle loop collects and freezes the heap again."""


def relax_collector() -> None:
    """The collector's thresholds of :func:`freeze_heap`, set when the scheduler starts: decoding the
    first lists and building the cluster state from them allocate millions of long-lived objects, and
    with CPython's defaults the full collections in between walked the growing heap again and again
    (about 30% of the state build's CPU time for 1,000 nodes and 10,000 pods)."""
    gc.set_threshold(GC_YOUNG_THRESHOLD, 10, 100)


def freeze_heap(*, first: bool) -> None:
    """Collect, then move every surviving object out of the collector's reach (:func:`gc.freeze`): once
    the caches have synced and before the first attempt (the listed objects are in the cluster state),
    and again when the loop goes idle after at least :data:`REFREEZE_AFTER` attempts (the engine's
    tables, built by the first attempt, and the burst's records).

    Not after the first attempt, as it once was: with a backlog of pending pods that collection
    (90-140 ms for 1,000 nodes and 1,000-5,000 pods) stalled the burst just after its first bind.

    Why: the cluster state is hundreds of thousands of long-lived objects, and a burst adds more (pod
    records, node records). Left in the collector's oldest generation, each full collection walks them
    all: 15-45 ms pauses, several per 1,000-pod burst (a tenth of its time), landing on whichever pod
    is being decided. Frozen objects are still freed by reference counting when the cache drops them;
    only cyclic garbage among them would stay, and nothing is frozen before a full collection has
    removed it. Young collections run every :data:`GC_YOUNG_THRESHOLD` allocations instead of 700 (a
    decision allocates a few thousand short-lived objects; each collection has a fixed cost), and full
    collections are considered after 100 middle ones instead of 10, so that a burst rarely meets one:
    the idle-time collection here does that work.
    """
    started = time.monotonic()
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, 10, 100)
    fields = {"objects": gc.get_freeze_count(), "seconds": round(time.monotonic() - started, 3)}
    if first:
        log.info("heap frozen before the first attempt", extra={"fields": fields})
    else:
        log.debug("heap frozen again while idle", extra={"fields": fields})
