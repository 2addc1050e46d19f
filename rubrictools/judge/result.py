"""What one logical judge call produced, over however many HTTP attempts it took."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["CallResult"]


@dataclass
class CallResult:
    """What one logical call produced (possibly after several HTTP attempts)."""

    content: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    attempts: int = 0
    latency_s: float = 0.0
    error: str | None = None
    logprobs: list[dict[str, Any]] | None = None
    choices: list[str | None] | None = None
    rate_limited: int = 0  # of ``attempts``, how many met a 429 (retried through the shared gate)
    finish_reason: str | None = None  # "length": the reply was cut off at max_tokens

    def add_usage(self, other: CallResult) -> None:
        """Add ``other``'s HTTP attempts, tokens and cost to this result (a retried call pays for each try)."""
        self.attempts += other.attempts
        for attr in ("prompt_tokens", "completion_tokens", "cost_usd"):
            val = getattr(other, attr)
            if val is not None:
                setattr(self, attr, (getattr(self, attr) or 0) + val)
