"""A call's latency is its requests' own time: never the wait for one of our slots, nor a backoff.

Run on a virtual clock: the test moves time, so nothing here depends on the machine's speed.
"""

from __future__ import annotations

import asyncio

import pytest

from rubrictools.judge import retry
from rubrictools.judge.config import Judge
from rubrictools.judge.result import CallResult


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    perf_counter = monotonic


class SlowGate:
    """A throttle whose slot is free only after ``wait`` virtual seconds (our own queue)."""

    def __init__(self, clock: Clock, wait: float) -> None:
        self.clock, self.wait, self.stopped, self.adaptive = clock, wait, None, False

    async def acquire(self) -> int:
        self.clock.now += self.wait
        return 0

    async def release(self, *, ok: bool, latency: float | None = None) -> None:
        self.released = latency


def test_latency_is_the_request_time_not_the_wait_for_a_slot(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    monkeypatch.setattr(retry, "time", clock)
    gate = SlowGate(clock, wait=90.0)  # 90 s in our queue (a one-slot server's pace)

    async def send() -> CallResult:
        clock.now += 20.0  # the server takes 20 s
        return CallResult("{}", 1, 1, 0.0)

    res = asyncio.run(retry.with_retries(Judge(model="openai/x"), 1, send, gate))  # type: ignore[arg-type]
    assert res.latency_s == 20.0 and gate.released == 20.0 and res.attempts == 1


def test_latency_adds_up_every_attempt_but_not_the_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    monkeypatch.setattr(retry, "time", clock)

    class Unavailable(Exception):
        status_code = 503  # a retryable server error

    tries = iter([Unavailable("busy"), None])

    async def send() -> CallResult:
        clock.now += 3.0
        err = next(tries)
        if err is not None:
            raise err
        return CallResult("{}", 1, 1, 0.0)

    async def no_sleep(seconds: float) -> None:
        clock.now += seconds  # the backoff passes on the virtual clock

    monkeypatch.setattr(retry.asyncio, "sleep", no_sleep)
    judge = Judge(model="openai/x", backoff_base=50.0, backoff_max=50.0)
    res = asyncio.run(retry.with_retries(judge, 2, send))
    # two requests of 3 s; the backoff is not latency (approx: the backoff is jittered, so the clock reads
    # 3 + j + 3 and the second request's 3 s comes back as a float difference, 3.0000000000001 at times)
    assert res.attempts == 2 and res.latency_s == pytest.approx(6.0, abs=1e-9)
