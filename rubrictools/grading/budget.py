"""A cost budget that is never exceeded: each request reserves its worst case before it is sent.

``max_cost_usd`` used to be checked against what had been spent, so every call already in
flight (and every call started before the first answer came back) went out after the money
was gone. Here a request is sent only when its worst-case cost fits in what is left:

    worst = ceil(1.25 * counted_prompt_tokens + 4 * messages) * p_in + n * reply_cap * p_out

(litellm's token counter and prices; the 25% margin covers providers whose tokenizer counts
more than the one litellm uses; ``reply_cap`` is the call's ``max_tokens``, else the model's
output limit; ``n`` the samples asked for). The reservation is held while the request is in
flight and replaced by the real cost when the answer comes, so spent + reserved never passes
the budget, at any concurrency (reservations are made on the event loop, one at a time).

A request that does not fit while others hold reservations waits for them to settle
(:meth:`Budget.acquire`): their real costs are usually far below their worst cases, so what
they free lets it go out. Only a request that does not fit with nothing in flight is refused,
so a run spends its budget to within one request's worst case, at any concurrency.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from typing import Any

from rubrictools.judge import Judge
from rubrictools.judge.pricing import model_limit, unit_prices
from rubrictools.judge.providers import load_litellm

__all__ = ["PROMPT_MARGIN", "Budget", "budget_limit", "reply_cap"]

PROMPT_MARGIN = 1.25
"""Counted prompt tokens are multiplied by this (another provider's tokenizer may count more)."""


def reply_cap(model: str, max_tokens: int | None) -> int | None:
    """The most tokens one reply can have: ``max_tokens``, else the model's output limit in
    litellm's model info, else None (unbounded: no budget can be kept)."""
    return max_tokens if max_tokens is not None else model_limit(model, "max_output_tokens", "max_tokens")


class Budget:
    """Money spent and reserved against ``limit`` dollars (None: no budget), by one run or, given
    as ``max_cost_usd`` to several :func:`rubrictools.agrade` calls on one event loop, by all of
    them together (as :func:`rubrictools.inspect.rubric_scorer` does across an eval's samples)."""

    def __init__(self, limit: float | None) -> None:
        self.limit = limit
        self.spent = 0.0
        self.reserved = 0.0
        self._settled: asyncio.Event | None = None  # set whenever a reservation is released
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop that event belongs to

    def worst_case(self, judge: Judge, messages: Sequence[dict[str, Any]], max_tokens: int | None, n: int) -> float:
        """The most one request can cost (see the module docstring); ``inf`` when it is unbounded."""
        prices = unit_prices(judge.model)
        cap = reply_cap(judge.model, max_tokens)
        if prices is None or cap is None:
            return math.inf
        counted = load_litellm().token_counter(model=judge.model, messages=list(messages))
        prompt = math.ceil(PROMPT_MARGIN * counted + 4 * len(messages))
        return prompt * prices[0] + max(1, n) * cap * prices[1]

    def reserve(self, judge: Judge, messages: Sequence[dict[str, Any]], max_tokens: int | None, n: int) -> float | None:
        """Hold the worst case of one request; None (send nothing) when it does not fit."""
        if self.limit is None:
            return 0.0
        worst = self.worst_case(judge, messages, max_tokens, n)
        if self.spent + self.reserved + worst > self.limit:
            return None
        self.reserved += worst
        return worst

    async def acquire(
        self, judge: Judge, messages: Sequence[dict[str, Any]], max_tokens: int | None, n: int
    ) -> float | None:
        """:meth:`reserve`, waiting while other requests hold reservations that may free room;
        None only when the request does not fit with nothing else in flight."""
        while True:
            held = self.reserve(judge, messages, max_tokens, n)
            if held is not None or self.reserved <= 0:
                return held
            loop = asyncio.get_running_loop()
            if self._settled is None or self._loop is not loop:  # a Budget shared by runs on several loops
                self._settled, self._loop = asyncio.Event(), loop
            self._settled.clear()
            await self._settled.wait()

    def settle(self, reservation: float, cost: float | None) -> None:
        """Release a reservation and count what the request really cost."""
        self.reserved = max(0.0, self.reserved - reservation)
        if self.reserved < 1e-15:
            self.reserved = 0.0  # float dust must not keep a waiting request waiting
        if cost:
            self.spent += cost
        if self._settled is not None:
            self._settled.set()


def budget_limit(setting: float | Budget | None) -> float | None:
    """The dollar cap of a ``max_cost_usd`` setting: a number, a shared :class:`Budget`'s limit, or None."""
    return setting.limit if isinstance(setting, Budget) else setting
