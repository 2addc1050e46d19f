"""The order calls are sent in: warm the provider's prompt cache first, then use it.

Requests about one submission share a long prefix (:mod:`rubrictools.judge.prompts`). Sent all
at once, none of them finds it in the provider's cache; sent one first and the rest once its
answer is back, the rest are served from the cache (OpenAI bills cached input at a quarter of
the price or less, Anthropic at a tenth). So, for calls whose shared prefix is long enough to be
cached (:data:`~rubrictools.judge.prompt_cache.MIN_CACHED_TOKENS`), the first call of each prefix
(the leader) goes in plan order with every other call, and the calls that share its prefix (the
followers) are released, at the front of the queue, when it ends. Workers stay busy with other
submissions' leaders meanwhile, so a run of many submissions takes as long as before; calls with
a short prefix (nothing to cache) are not held back at all. Never on the judge mode: only on the
requests' text.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sequence
from typing import Any

from rubrictools.judge import Judge
from rubrictools.judge.call import Call
from rubrictools.judge.image_parts import content_text
from rubrictools.judge.prompt_cache import MIN_CACHED_TOKENS, cacheable_prefix

__all__ = ["WarmFirst", "predicted_cached_tokens", "prefix_key"]


def prefix_key(call: Call, judge: Any) -> tuple[int, str, str] | None:
    """What a call's requests share with others about the same submission (judge, system
    message, the user message's shared part, images included:
    :func:`~rubrictools.judge.prompt_cache.cacheable_prefix`); None when there is nothing worth
    caching (a short prefix, no shared part, a judge that is not a model)."""
    if not isinstance(judge, Judge) or not call.messages or call.messages[-1].get("role") != "user":
        return None
    shared = cacheable_prefix(call.messages[-1].get("content"))
    if shared is None:
        return None
    system = "".join(content_text(m.get("content")) for m in call.messages if m.get("role") == "system")
    return call.judge_i, system, shared


class WarmFirst:
    """A queue of calls that holds back the followers of each shared prefix until its leader ends."""

    def __init__(self, calls: Sequence[Call], judges: Sequence[Any]) -> None:
        self._queue: deque[Call] = deque()
        self._followers: dict[int, list[Call]] = {}
        leaders: dict[tuple[int, str, str], Call] = {}
        for c in calls:
            key = prefix_key(c, judges[c.judge_i])
            if key is None or key not in leaders:
                self._queue.append(c)
                if key is not None:
                    leaders[key] = c
            else:
                self._followers.setdefault(id(leaders[key]), []).append(c)
        self._held = sum(len(f) for f in self._followers.values())
        self._wake = asyncio.Event()

    async def next(self) -> Call | None:
        """The next call to send; None once every call has been handed out."""
        while True:
            if self._queue:
                return self._queue.popleft()
            if not self._held:
                return None
            self._wake.clear()
            await self._wake.wait()

    def done(self, call: Call) -> None:
        """``call`` has ended (answered, failed or cancelled): release the calls it warmed."""
        followers = self._followers.pop(id(call), [])
        self._queue.extendleft(reversed(followers))
        self._held -= len(followers)
        self._wake.set()


def predicted_cached_tokens(calls: Sequence[Call], judge: Judge, count: Any) -> int:
    """The prompt tokens a provider's cache should serve for ``calls`` (one judge's), sent in the
    warm-first order: each follower's shared prefix, counted by ``count(messages)`` and rounded
    down to 128-token steps (OpenAI's), from :data:`MIN_CACHED_TOKENS`. A prediction: a provider
    may evict a prefix, or route a request to a machine that has not seen it; an image in the
    prefix counts as its description's tokens only, so with images it is a lower bound."""
    seen: dict[tuple[int, str, str], int] = {}
    total = 0
    for c in calls:
        key = prefix_key(c, judge)
        if key is None:
            continue
        if key not in seen:
            _, system, shared = key
            tokens = int(count([{"role": "system", "content": system}, {"role": "user", "content": shared}]))
            seen[key] = tokens // 128 * 128 if tokens >= MIN_CACHED_TOKENS else 0
            continue
        total += seen[key]
    return total
