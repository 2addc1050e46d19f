"""A provider's prompt cache, simulated for the fake server (``FakeLLMServer(prompt_cache=True)``).

Like OpenAI's: a request's prompt is served from the cache for the longest prefix it shares
with a request already answered when it arrives (requests in flight together do not warm each
other: a prefix is remembered once its request has been answered), counted in 128-token steps
from 1,024 tokens (a shorter common prefix is not cached), and reported as
``usage.prompt_tokens_details.cached_tokens``.
Tokens are the fake server's: four characters each, of the user messages' text; a prefix is
shared only by requests with the same system message.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["MIN_TOKENS", "STEP_TOKENS", "PromptCacheSim", "system_text"]

MIN_TOKENS = 1024
STEP_TOKENS = 128
_CHARS = 4 * STEP_TOKENS  # characters per step (four characters a token)


class PromptCacheSim:
    """The prefixes of the prompts answered so far, in steps of :data:`STEP_TOKENS` tokens."""

    def __init__(self) -> None:
        self._seen: set[int] = set()
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._seen.clear()

    @staticmethod
    def _keys(system: str, prompt: str) -> list[int]:
        return [hash((system, prompt[: k * _CHARS])) for k in range(1, len(prompt) // _CHARS + 1)]

    def cached(self, system: str, prompt: str) -> int:
        """The cached tokens of a request arriving now (system message ``system``, user text ``prompt``).

        >>> sim = PromptCacheSim()
        >>> sim.cached("s", "x" * 6000 + "a")
        0
        >>> sim.remember("s", "x" * 6000 + "a")
        >>> sim.cached("s", "x" * 6000 + "b"), sim.cached("t", "x" * 6000)
        (1408, 0)
        """
        keys = self._keys(system, prompt)
        with self._lock:
            matched = next((k for k in range(len(keys), 0, -1) if keys[k - 1] in self._seen), 0)
        tokens = matched * STEP_TOKENS
        return tokens if tokens >= MIN_TOKENS else 0

    def remember(self, system: str, prompt: str) -> None:
        """A request has been answered: its prefixes are in the cache from now on."""
        keys = self._keys(system, prompt)
        with self._lock:
            self._seen.update(keys)


def system_text(body: dict[str, Any]) -> str:
    """The system messages' text of a chat request body."""
    return "\n".join(str(m.get("content")) for m in body.get("messages", []) if m.get("role") == "system")
