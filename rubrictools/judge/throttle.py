"""One judge's calls share their fate under rate limits: a gate and adaptive concurrency.

Without this, every call that meets a 429 waits out its own ``Retry-After`` and retries at
the same instant as all the others, so retries arrive in synchronised waves for as long as
the provider is overloaded. A :class:`Throttle` is shared by all calls of one judge in a run:

- a **gate**: a 429 closes it for the ``Retry-After`` (or the backoff delay) stretched by a
  random factor in [1, 1.5], so no new request of that judge starts until it opens, and the
  waiting calls do not all wake at once;
- **adaptive concurrency** (AIMD): the number of requests in flight is halved on a wave of
  429s (at most once per gate period) and grows back by one per window of successes, up to
  the judge's ``max_concurrency``;
- **a server's own pace** (:mod:`rubrictools.judge.pace`): when latency climbs while
  throughput does not, the server is queueing what we send (a local server that answers one
  request at a time); the limit drops to what it serves and regrows as latency falls. A
  request that timed out while others of the judge were in flight halves the limit too: the
  wait in that queue was our doing (see :meth:`Throttle.timed_out`);
- a **stop**: after an authentication failure no request of that judge is sent at all (another
  key will not appear mid-run), so a wrong key costs one request per slot, not one per call.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import time

from rubrictools.judge.pace import Pace

__all__ = ["Throttle"]


class Throttle:
    """Admission control for one judge's requests (see module docstring).

    ``slots``: how many requests the server says it answers at once (llama.cpp's ``/props``);
    more are never sent. ``adaptive=False`` leaves the limit to 429s alone.
    """

    def __init__(self, max_concurrency: int, *, slots: int | None = None, adaptive: bool = True) -> None:
        self.max = max(1, min(max_concurrency, slots or max_concurrency))
        self.cap = float(self.max)  # where regrowth stops: lowered while the server is seen queueing
        self.limit = float(self.max)
        self.adaptive = adaptive
        self.pace = Pace()
        self.queue_cuts = 0  # times the limit came down for the server's queue (latency or timeouts)
        self.in_flight = 0
        self.open_at = 0.0
        self.last_cut = -math.inf
        self.trips = 0
        self.stopped: str | None = None  # why no request may be sent any more (an authentication failure)
        self._cond: asyncio.Condition | None = None

    def _condition(self) -> asyncio.Condition:
        if self._cond is None:
            self._cond = asyncio.Condition()
        return self._cond

    async def acquire(self) -> int:
        """Wait until the gate is open and a slot is free, then take the slot; the number of this
        judge's other requests then in flight."""
        cond = self._condition()
        async with cond:
            while True:
                wait = self.open_at - time.monotonic()
                if wait > 0:
                    with contextlib.suppress(TimeoutError):  # woken early or at the gate's opening
                        await asyncio.wait_for(cond.wait(), wait)
                    continue
                if self.in_flight < max(1, int(self.limit)):
                    self.in_flight += 1
                    self.pace.sent(time.monotonic())
                    return self.in_flight - 1
                await cond.wait()

    async def release(self, *, ok: bool, latency: float | None = None) -> None:
        """Give the slot back; a success lets concurrency grow by one per window of successes,
        up to the ceiling, and its ``latency`` is read for the server's queue (see :class:`Pace`)."""
        cond = self._condition()
        async with cond:
            self.in_flight -= 1
            if ok and latency is not None and self.adaptive:
                self._steer(self.pace.observe(latency=latency, now=time.monotonic(), limit=self.limit))
            if ok and self.limit < self.cap:
                self.limit = min(self.cap, self.limit + 1.0 / self.limit)
            cond.notify_all()

    def _steer(self, decision: tuple[str, float] | None) -> None:
        if decision is None:
            return
        what, value = decision
        if what == "cut":
            self.limit = self.cap = min(self.limit, value)
            self.queue_cuts += 1
        elif what == "restore":
            self.limit, self.cap = max(self.limit, value), max(self.cap, value)
        else:
            self.cap = min(float(self.max), self.cap + value)

    def timed_out(self, others: int) -> bool:
        """A request timed out that was sent while ``others`` requests of this judge were in
        flight. With company, much of its wait was likely in the server's queue, which we
        filled: the limit halves (not below 1) and True says the retry is not the server's
        fault (it is not charged to ``max_retries``). Sent alone, the server itself was too slow:
        False, and nothing changes."""
        if not self.adaptive or others < 1:
            return False
        self.limit = self.cap = max(1.0, min(self.limit, float(others + 1)) / 2)
        self.queue_cuts += 1
        return True

    def stop(self, reason: str) -> None:
        """Send nothing more for this judge: every later request ends with ``reason``."""
        if self.stopped is None:
            self.stopped = reason

    def rate_limited(self, delay: float) -> None:
        """A 429: close the gate for ``delay`` seconds (jittered) and halve concurrency once per wave."""
        now = time.monotonic()
        self.open_at = max(self.open_at, now + delay * random.uniform(1.0, 1.5) + random.uniform(0.0, 0.05))
        if now - self.last_cut >= max(delay, 0.05):
            self.limit = max(1.0, self.limit / 2)
            self.last_cut = now
            self.trips += 1
