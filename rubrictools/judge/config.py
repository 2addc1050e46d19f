"""`Judge`: everything about how one LLM judge is reached (never stored in outputs)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

__all__ = ["Judge", "check_weight"]


def check_weight(value: Any) -> float:
    """A judge's vote weight: a finite number > 0 (not a bool); the error names ``weight``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"weight must be a number > 0, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"weight must be a finite number > 0, got {value!r}")
    return float(value)


class Judge(BaseModel):
    """Configuration of one LLM judge reached through litellm.

    Parameters
    ----------
    model
        A litellm model string, e.g. ``"openai/gpt-4.1-mini"``.
    api_base, api_key
        Endpoint and key. The key is a :class:`~pydantic.SecretStr`: hidden in reprs and
        never part of a cache key, a verdict table or a log line.
    temperature, max_tokens, timeout
        Sampling and request settings (``timeout`` in seconds per HTTP attempt).
    max_concurrency
        Calls in flight at once for this judge (a real queue across all calls).
    max_retries
        Retries after the first attempt: at most ``1 + max_retries`` HTTP requests per call
        for errors (the SDK's own retries are switched off so they do not multiply).
    max_rate_limit_retries
        Further requests a call may make after 429 answers. A 429 closes the judge's shared
        gate (:mod:`rubrictools.judge.throttle`): every call of the judge waits out the
        ``Retry-After``, jittered, and concurrency halves, so a provider-wide storm delays
        calls rather than failing them.
    shared_backoff
        ``False``: no shared gate; each call waits out its own 429s and they count against
        ``max_retries`` (the 0.1 behaviour).
    backoff_base, backoff_max
        Exponential backoff with full jitter, ``uniform(0, min(max, base * 2**k))`` seconds,
        unless the server sends ``Retry-After``.
    response_format
        ``"auto"`` (JSON schema when litellm says the model supports it, else JSON mode
        instructions), ``"json_schema"``, ``"json_object"`` or ``"text"``.
    system_prompt
        Overrides the built-in system prompt.
    weight, name
        Vote weight in a weighted ensemble and the name used in the ``judge`` column
        (defaults to ``model``).
    litellm_kwargs
        Extra keyword arguments for ``litellm.acompletion`` (part of the cache key).
    cache
        Where this judge's answers are cached (a SQLite path) when ``grade(cache=True)``;
        ``None`` uses the user cache dir (``$RUBRICTOOLS_CACHE_DIR`` overrides it).
    transport
        ``"litellm"`` (default: every provider litellm knows) or ``"direct"``: POST to an
        OpenAI-compatible ``{api_base}/chat/completions`` with one pooled aiohttp session, for
        self-hosted servers (vLLM, TGI, llama.cpp, gateways) and OpenAI itself when
        throughput matters; same retries, cache keys, costs (litellm's price table) and rows.
        ``litellm_kwargs`` are sent as extra body fields.

    Example
    -------
    >>> j = Judge(model="openai/gpt-4.1-mini", api_key="sk-secret")
    >>> "sk-secret" in repr(j)
    False
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    api_base: str | None = None
    api_key: SecretStr | None = Field(default=None, repr=False)
    temperature: float = 0.0
    max_tokens: int | None = 1024
    timeout: float = 120.0
    max_concurrency: int = 16
    max_retries: int = 3
    max_rate_limit_retries: int = 20
    shared_backoff: bool = True
    backoff_base: float = 1.0
    backoff_max: float = 30.0
    response_format: Literal["auto", "json_schema", "json_object", "text"] = "auto"
    system_prompt: str | None = None
    weight: float = 1.0
    name: str | None = None
    litellm_kwargs: dict[str, Any] = Field(default_factory=dict)
    cache: str | None = None
    transport: Literal["litellm", "direct"] = "litellm"

    @field_validator("max_concurrency")
    @classmethod
    def _positive(cls, v: int) -> int:
        if v < 1:
            raise ValueError("max_concurrency must be >= 1")
        return v

    @field_validator("weight", mode="before")
    @classmethod
    def _weight(cls, v: Any) -> float:
        return check_weight(v)

    @field_validator("max_retries")
    @classmethod
    def _non_negative(cls, v: int) -> int:
        if v < 0:
            raise ValueError("max_retries must be >= 0")
        return v

    @field_validator("litellm_kwargs")
    @classmethod
    def _no_secrets(cls, v: dict[str, Any]) -> dict[str, Any]:
        bad = {"api_key", "extra_headers", "headers"} & set(v)
        if bad:
            raise ValueError(f"pass secrets through api_key=, not litellm_kwargs ({sorted(bad)})")
        return v

    @property
    def label(self) -> str:
        """The name written to the ``judge`` column."""
        return self.name or self.model

    def request_identity(self) -> dict[str, Any]:
        """The parts of this judge that change its answers (used in cache keys; no secrets)."""
        return {
            "model": self.model,
            "api_base": self.api_base,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            **({"litellm_kwargs": self.litellm_kwargs} if self.litellm_kwargs else {}),
        }


CacheSetting = bool | str | Path | None
