"""Reading a server's queue from latency and throughput (:mod:`rubrictools.judge.pace`), and the
throttle acting on it and on timeouts. Times are given, never measured: each case is exact."""

from __future__ import annotations

import asyncio

import pytest

from rubrictools.judge.pace import Pace
from rubrictools.judge.throttle import Throttle


def feed(pace: Pace, finishes: list[float], *, sent_at: list[float], limit: float) -> list[tuple[str, float] | None]:
    """Completions at ``finishes`` of requests sent at ``sent_at``; each decision returned."""
    return [pace.observe(latency=f - s, now=f, limit=limit) for f, s in zip(finishes, sent_at, strict=True)]


def one_slot(n: int, service: float, in_flight: int) -> tuple[list[float], list[float]]:
    """A server answering one request at a time, each in ``service`` s, fed ``in_flight`` at
    once from t=0 (a new request sent at each completion): finish and send times."""
    finishes = [service * (k + 1) for k in range(n)]
    sent = [0.0 if k < in_flight else finishes[k - in_flight] for k in range(n)]
    return finishes, sent


def test_a_one_slot_server_fed_sixteen_is_cut_to_what_it_serves():
    pace = Pace()
    finishes, sent = one_slot(16, 10.0, 16)
    decisions = [d for d in feed(pace, finishes, sent_at=sent, limit=16) if d is not None]
    assert pace.base == 10.0
    assert decisions[0] == ("cut", 2.0)  # p = X * base = 1 request at a time: keep two in flight


def test_a_parallel_server_with_uneven_latency_is_left_alone():
    # 16 at once, each answered in 1-2.5 s regardless of the others (a provider)
    pace = Pace()
    lat = [1.0, 1.5, 2.0, 2.5] * 12
    t, finishes, sent = 0.0, [], []
    for k, x in enumerate(lat):
        start = 0.0 if k < 16 else finishes[k - 16]
        finishes.append(start + x)
        sent.append(start)
        t = max(t, start + x)
    order = sorted(range(len(lat)), key=finishes.__getitem__)
    decisions = feed(pace, [finishes[i] for i in order], sent_at=[sent[i] for i in order], limit=16)
    assert all(d is None or d[0] == "grow" for d in decisions)


def test_a_cut_that_costs_throughput_is_undone_and_latency_is_read_no_more():
    pace = Pace(base=1.0, window_start=0.0)
    pace.before = (12.0, 16.0)  # a cut from 16 when the server delivered 12 at once
    # next two windows: 4 completions a second at base 1 s -> p = 4, well under 3/4 of 12
    decisions = feed(pace, [0.25, 0.5, 0.75, 1.0], sent_at=[-2.0] * 4, limit=8)
    assert decisions[-1] is None and pace.reading  # one slow window could be the client's own pause
    decisions = feed(pace, [1.25, 1.5, 1.75, 2.0], sent_at=[-1.0] * 4, limit=8)
    assert decisions[-1] == ("restore", 16.0)
    assert not pace.reading
    # the same queueing signal again: no cut while latency is not read
    decisions = feed(pace, [11.0, 21.0, 31.0, 41.0], sent_at=[0.0] * 4, limit=16)
    assert decisions[-1] is None


def test_one_slow_window_after_a_cut_does_not_undo_it():
    """Before: one window of less throughput after a right cut (a loaded CI machine's pause)
    restored the old limit and stopped reading latency for the whole run."""
    pace = Pace(base=1.0, window_start=0.0)
    pace.before = (12.0, 16.0)
    feed(pace, [0.25, 0.5, 0.75, 1.0], sent_at=[-2.0] * 4, limit=8)  # slow: p = 4
    decisions = feed(pace, [1.02, 1.04, 1.06, 1.08], sent_at=[0.0] * 4, limit=8)  # fast again: p = 50
    assert ("restore", 16.0) not in decisions and pace.reading and pace.before is None


def test_calm_latency_lets_the_ceiling_grow():
    pace = Pace(base=1.0, window_start=0.0)
    assert feed(pace, [1.0, 1.1, 1.2, 1.3], sent_at=[0.0, 0.0, 0.1, 0.2], limit=2)[-1] == ("grow", 1.0)


def test_the_throttle_applies_a_cut_and_regrows_only_to_the_ceiling():
    async def main() -> Throttle:
        th = Throttle(16)
        th._steer(("cut", 2.0))
        for _ in range(50):
            await th.acquire()
            await th.release(ok=True)  # no latency: growth to the ceiling only
        return th

    th = asyncio.run(main())
    assert (th.limit, th.cap, th.queue_cuts) == (2.0, 2.0, 1)
    th._steer(("grow", 1.0))
    assert th.cap == 3.0


@pytest.mark.parametrize(
    ("others", "free", "limit"),
    [(0, False, 16.0), (15, True, 8.0), (3, True, 2.0), (1, True, 1.0)],
)
def test_a_timeout_with_company_halves_the_limit_and_is_free(others, free, limit):
    th = Throttle(16)
    assert th.timed_out(others) is free
    assert th.limit == limit and th.cap == limit


def test_without_adaptive_concurrency_a_timeout_changes_nothing():
    th = Throttle(16, adaptive=False)
    assert th.timed_out(15) is False
    assert th.limit == 16.0


def test_a_reported_slot_count_bounds_the_limit_as_max_concurrency_does():
    assert (Throttle(16, slots=1).limit, Throttle(16, slots=1).max) == (1.0, 1)
    assert Throttle(4, slots=8).limit == 4.0
    assert Throttle(16, slots=None).limit == 16.0


def test_acquire_says_how_many_others_are_in_flight():
    async def main() -> list[int]:
        th = Throttle(4)
        return [await th.acquire() for _ in range(3)]

    assert asyncio.run(main()) == [0, 1, 2]


def test_one_stalled_window_is_not_a_queue():
    # a parallel server answering in 20 ms, 50 in flight; the client's own loop stalls 0.2 s once
    pace = Pace(base=0.02, window_start=0.0)
    calm = feed(pace, [0.001 * k for k in range(1, 14)], sent_at=[-0.02] * 13, limit=50)
    stall = feed(pace, [0.25 + 0.001 * k for k in range(13)], sent_at=[0.1] * 13, limit=50)
    after = feed(pace, [0.26 + 0.001 * k for k in range(13)], sent_at=[0.24] * 13, limit=50)
    assert all(d is None or d[0] == "grow" for d in calm + stall + after)
    assert pace.suspect is None
