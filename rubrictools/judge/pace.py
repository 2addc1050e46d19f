"""Is the server queueing our requests? Reading it from latency and throughput.

A server answers ``c`` requests at once (llama-cpp-python: one; vLLM: many), each in about
``s`` seconds of its own work. Sending it ``N > c`` at once does not make it faster: the
throughput stays ``X = c / s`` while each request's latency grows to ``L = N s / c``, the time
spent waiting in the server's queue. That wait counts against the request's timeout, so past
``N s / c > timeout`` the client's own concurrency makes calls time out.

:class:`Pace` watches the requests one judge completes, in windows of a few completions:

- ``base``: the fastest successful request seen, the best estimate of ``s`` (a request that
  found the server idle waited for nothing);
- per window, the throughput ``X = completions / seconds`` and the mean latency ``L``; the
  parallelism the server delivers is ``p = X * base`` (``c`` when it is saturated);
- **queueing** when ``L > 3 base`` and ``p < limit / 3`` in two windows in a row: latency
  has climbed while throughput stays that of fewer requests than we send. One such window is
  not enough: a pause of the client's own event loop (a garbage collection, a busy CPU) looks
  the same for one window and is gone in the next. The controller lowers the limit to
  ``ceil(2 p)`` with the larger ``p`` of the two (one request waiting per slot keeps the
  server busy and the wait short);
- a **check** of that cut over the next windows: when throughput fell with it (``p`` below 3/4
  of before) in two windows in a row, the server was using the concurrency after all; the
  limit comes back and latency is no longer read for this judge in this run (timeouts still
  are). One slow window is not enough, for the same reason as above: on a busy machine a
  window of the client's own slowness would otherwise undo a right cut for the whole run;
- **growth**: a window whose latency stays near ``base`` (``L <= 1.5 base``) lets the ceiling
  rise by one, so a server that got faster is used again.

>>> p = Pace()  # a one-slot server, 16 requests sent at t=0, each taking 10 s of its time
>>> [p.observe(latency=t, now=t, limit=16) for t in (10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0)][-1] is None
True
>>> [p.observe(latency=t, now=t, limit=16) for t in (90.0, 100.0, 110.0, 120.0)][-1]
('cut', 2.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Pace"]

QUEUE_LATENCY = 3.0  # mean latency above this many times the fastest request: requests wait in a queue
QUEUE_SHARE = 3.0  # ... and the server delivers under 1/3 of the requests in flight
KEEP_SHARE = 0.75  # after a cut, throughput above this share of before: the cut cost nothing
CALM_LATENCY = 1.5  # mean latency under this many times the fastest: room to grow


@dataclass
class Pace:
    """Latency and throughput of one judge's requests, and what they say about the server's queue."""

    base: float = math.inf
    window_start: float | None = None
    n: int = 0
    total: float = 0.0
    before: tuple[float, float] | None = None  # (parallelism, limit) before the last cut, until it is checked
    suspect: float | None = None  # the parallelism of the previous window, when it looked like queueing
    reading: bool = True  # latency still steers the limit (False once a cut proved wrong)
    doubt: bool = False  # the first window after a cut had less throughput: one more decides

    def sent(self, now: float) -> None:
        """A request left: the first one starts the first window."""
        if self.window_start is None:
            self.window_start = now

    def observe(self, *, latency: float, now: float, limit: float) -> tuple[str, float] | None:
        """A request answered after ``latency`` seconds; at the end of a window, what to do:
        ``("cut", new_limit)``, ``("restore", old_limit)``, ``("grow", 1.0)``, else None."""
        self.base = min(self.base, max(latency, 1e-6))
        self.n += 1
        self.total += latency
        if self.window_start is None:
            self.window_start = now - latency
        start = self.window_start
        if self.n < min(8, max(4, math.ceil(limit / 4))) or now <= start:
            return None
        parallel = self.n / (now - start) * self.base
        mean = self.total / self.n
        self.window_start, self.n, self.total = now, 0, 0.0
        if self.before is not None:
            was, old_limit = self.before
            if parallel < KEEP_SHARE * was:
                if not self.doubt:
                    self.doubt = True
                    return None
                self.before, self.doubt, self.reading = None, False, False
                return ("restore", old_limit)
            self.before, self.doubt = None, False
        queueing = self.reading and limit > 1 and mean > QUEUE_LATENCY * self.base and parallel * QUEUE_SHARE < limit
        seen, self.suspect = self.suspect, (parallel if queueing else None)
        if queueing and seen is not None:
            served = max(parallel, seen)
            self.before, self.suspect = (served, limit), None
            return ("cut", float(max(1, math.ceil(2 * served))))
        if mean <= CALM_LATENCY * self.base:
            return ("grow", 1.0)
        return None
