"""The pipeline's ``linger`` (kube/pipeline.py): once an answer arrives, the thread waits that long and
reads every answer that came meanwhile in the same round -- the events pipeline's answers arrive one at
a time, and a round (a wake-up of its thread) per answer was most of its CPU. Against a small local HTTP
server that answers a connection's requests 10 ms apart."""

from __future__ import annotations

import threading
import time
from typing import Any

from policyscheduler.kube.pipeline import Pipeline
from tests.kube.plainhttp import CountingServer, PlainOpener

ANSWER_GAP = 0.01


def rounds_to_answer(linger: float, count: int = 8) -> tuple[int, list[tuple[int, bytes]]]:
    """Rounds the pipeline thread took to write ``count`` GETs on one connection and read their answers."""
    server = CountingServer(gap=ANSWER_GAP)
    pipe = Pipeline(PlainOpener(server.port), lanes=1, depth=count, linger=linger, name="linger-test")
    got: list[tuple[int, bytes]] = []
    done = threading.Event()

    def answered(status: int, body: bytes, detail: Any) -> None:
        got.append((status, body))
        if len(got) == count:
            done.set()

    try:
        time.sleep(0.05)  # the thread is asleep in poll
        before = pipe.rounds
        # queued at once (one wake-up): one submit per request lets a busy machine wake the thread
        # between them, and the rounds would count the submissions, not the reading of the answers
        pipe.submit_all([("GET", f"/r{i}", None, answered) for i in range(count)])
        assert done.wait(10), got
        return pipe.rounds - before, got
    finally:
        pipe.close()
        server.close()


def test_lingering_reads_answers_that_arrive_one_at_a_time_in_one_round() -> None:
    rounds, got = rounds_to_answer(linger=0.5)  # the 8 answers come within ~80 ms
    assert got == [(200, f"/r{i}".encode()) for i in range(8)]  # each to its own request, in order
    assert rounds <= 3, rounds  # write, read all (a wake-up byte may cost one more)


def test_without_linger_each_answer_costs_a_round() -> None:
    """The setting the binder keeps (a bind's answer is read at once): also what shows the test above
    measures something."""
    rounds, got = rounds_to_answer(linger=0.0)
    assert got == [(200, f"/r{i}".encode()) for i in range(8)]
    assert rounds >= 6, rounds
