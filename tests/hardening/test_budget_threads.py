"""The runtime budget is per thread: a shadow profile judging in the watch thread while the scheduling loop
evaluates must neither refill nor drain the loop's budget (``closures.BUDGET`` is thread-local)."""

from __future__ import annotations

import threading

from policyscheduler.compiler import closures
from policyscheduler.loader import load_policy_texts
from tests.schema_fixture import sample_env, test_schema

SCHEMA = test_schema()
TEXT = "score s weight 1 normalize minmax\n  value count(x in [1, 2, 3] + [4] where x > 0) % 100\n"
SMALL = "score t weight 1 normalize minmax\n  value count(x in [1, 2] where x > 0) % 100\n"


def test_another_threads_evaluation_leaves_this_threads_budget_alone() -> None:
    big_set = load_policy_texts([("s.policy", TEXT)], schema=SCHEMA).policy_set
    small_set = load_policy_texts([("t.policy", SMALL)], schema=SCHEMA).policy_set
    assert big_set is not None and small_set is not None
    (rule,), (small,) = big_set.scores, small_set.scores
    assert rule.raw(sample_env()) == 4
    assert closures.steps_used() == 8  # this thread's evaluation: 4 items built, 4 visited

    seen: list[int] = []

    def other() -> None:
        seen.append(closures.steps_used())  # a fresh thread starts with a full budget
        assert small.raw(sample_env()) == 2
        seen.append(closures.steps_used())

    worker = threading.Thread(target=other)
    worker.start()
    worker.join()
    assert seen == [0, 2]
    assert closures.steps_used() == 8  # neither reset nor charged by the other thread's evaluation
