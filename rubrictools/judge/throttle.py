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
- a **stop**: after an authentication failure no request of that judge is sent at all (another
  key will not appear mid-run), so a wrong key costs one request per slot, not one per call.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import time

__all__ = ["Throttle"]


class Throttle:
    """Admission control for one judge's requests (see module docstring)."""

    def __init__(self, max_concurrency: int) -> None:
        self.max = max(1, max_concurrency)
        self.limit = float(self.max)
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

    async def acquire(self) -> None:
        """Wait until the gate is open and a slot is free, then take the slot."""
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
                    return
                await cond.wait()

    async def release(self, *, ok: bool) -> None:
        """Give the slot back; a success lets concurrency grow by one per window of successes."""
        cond = self._condition()
        async with cond:
            self.in_flight -= 1
            if ok and self.limit < self.max:
                self.limit = min(float(self.max), self.limit + 1.0 / self.limit)
            cond.notify_all()

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
