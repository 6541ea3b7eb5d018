"""The client's token bucket (clientConnection qps/burst) with an injected clock."""

from __future__ import annotations

import threading
import time

import pytest

from policyscheduler.kube.ratelimit import RateLimiter


class Clock:
    """Time that passes only when told to (or when the limiter sleeps)."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_a_full_bucket_lets_burst_through_then_paces_at_qps() -> None:
    clock = Clock()
    limiter = RateLimiter(10, 5, clock=clock, sleep=clock.sleep)
    assert [limiter.acquire() for _ in range(5)] == [0.0] * 5  # the burst
    assert clock.slept == []
    waits = [limiter.acquire() for _ in range(4)]
    assert waits == pytest.approx([0.1] * 4)  # then one every 1/qps seconds
    assert clock.now == pytest.approx(100.4)
    assert limiter.throttled == 4 and limiter.waited == pytest.approx(0.4)


def test_tokens_refill_at_qps_up_to_burst_only() -> None:
    clock = Clock()
    limiter = RateLimiter(2, 3, clock=clock, sleep=clock.sleep)
    for _ in range(3):
        limiter.acquire()
    assert limiter.tokens() == pytest.approx(0.0)
    clock.now += 1.0
    assert limiter.tokens() == pytest.approx(2.0)  # 2 per second
    clock.now += 60.0
    assert limiter.tokens() == pytest.approx(3.0)  # never more than burst
    assert [limiter.acquire() for _ in range(3)] == [0.0] * 3
    assert limiter.acquire() == pytest.approx(0.5)


def test_waiting_callers_reserve_tokens_in_order_without_sleeping_in_the_lock() -> None:
    clock = Clock()
    limiter = RateLimiter(4, 1, clock=clock, sleep=clock.sleep)
    # Reservations made at the same instant are spaced 1/qps apart: each caller's own due time.
    assert [limiter.reserve() for _ in range(4)] == pytest.approx([0.0, 0.25, 0.5, 0.75])
    assert limiter.tokens() == pytest.approx(-3.0)
    clock.now += 1.0
    assert limiter.tokens() == pytest.approx(1.0)


def test_real_threads_are_paced() -> None:
    limiter = RateLimiter(200, 2)
    start = threading.Event()
    done: list[float] = []

    def worker() -> None:
        start.wait()
        for _ in range(5):
            done.append(limiter.acquire())

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    began = time.monotonic()
    start.set()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - began
    # 20 requests at 200/s with a burst of 2: the last one is due (20 - 2) / 200 = 0.09 s after the first.
    assert len(done) == 20 and limiter.throttled >= 15  # (a slow thread start may refill a token)
    assert elapsed >= 0.085


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="qps"):
        RateLimiter(0, 1)
    with pytest.raises(ValueError, match="burst"):
        RateLimiter(1, 0)
