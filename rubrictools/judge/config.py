"""`Judge`: everything about how one LLM judge is reached (never stored in outputs)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationInfo, field_validator, model_validator

from rubrictools.deprecation import REMOVED_IN, warn_deprecated
from rubrictools.judge.role import Role

__all__ = [
    "DIRECT_PREFIXES",
    "LEGACY_FORMATS",
    "PLAIN_BODY_FIELDS",
    "Judge",
    "StructuredOutput",
    "Transport",
    "check_weight",
]

StructuredOutput = Literal["auto", "json_schema", "json_object_schema", "guided", "json_object", "prompt"]
Transport = Literal["auto", "litellm", "direct"]

DIRECT_PREFIXES = frozenset({"openai", "hosted_vllm", "lm_studio", "llamafile"})
"""litellm provider prefixes that are plain OpenAI chat-completions endpoints when given an ``api_base``."""

PLAIN_BODY_FIELDS = frozenset(
    {"top_p", "seed", "stop", "presence_penalty", "frequency_penalty", "logit_bias", "user", "top_k", "min_p"}
    | {"repetition_penalty", "response_format", "guided_json", "guided_choice", "guided_regex", "guided_grammar"}
)
"""``litellm_kwargs`` keys the direct transport can send as they are (anything else needs litellm)."""


def check_weight(value: Any) -> float:
    """A judge's vote weight: a finite number > 0 (not a bool); the error names ``weight``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"weight must be a number > 0, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"weight must be a finite number > 0, got {value!r}")
    return float(value)


LEGACY_FORMATS = {"auto": "auto", "json_schema": "json_schema", "json_object": "json_object", "text": "prompt"}
"""``response_format`` (deprecated) values and the ``structured_output`` each is read as."""


def _legacy_response_format(data: dict[str, Any]) -> dict[str, Any]:
    """``Judge(response_format=...)`` read as ``structured_output=`` (with a deprecation warning)."""
    data = dict(data)
    value = data.pop("response_format")
    if value not in LEGACY_FORMATS:
        raise ValueError(f"response_format must be one of {', '.join(map(repr, LEGACY_FORMATS))}; got {value!r}")
    new = LEGACY_FORMATS[value]
    if "structured_output" in data:
        raise ValueError("pass structured_output= only (response_format= is its deprecated spelling)")
    warn_deprecated(
        f"Judge(response_format=) is deprecated and will be removed in {REMOVED_IN}: "
        f"use Judge(structured_output={new!r})",
        also=("pydantic",),
    )
    if value != "auto":
        data["structured_output"] = new
    return data


class Judge(BaseModel):
    """Configuration of one LLM judge reached through litellm.

    Parameters
    ----------
    model
        A litellm model string, e.g. ``"openai/gpt-4.1-mini"``.
    api_base, api_key
        Endpoint and key. The key is a :class:`~pydantic.SecretStr`: hidden in reprs and
        never part of a cache key, a verdict table or a log line.
    temperature, timeout
        Sampling temperature and seconds per HTTP attempt.
    max_tokens
        Cap on each reply's tokens. ``"auto"`` (default): the task's own cap (a verdict with a
        one- or two-sentence explanation needs about 100 tokens; see
        :meth:`~rubrictools.judge.tasks.JudgeTask.token_cap`), or no cap for a model litellm
        knows as a reasoning model (its hidden reasoning counts against the cap); an int sets
        one cap for every call; ``None`` sends none.
    max_concurrency
        At most this many requests in flight at once for this judge (a real queue across all
        calls). Where the server reports how many it answers at once (llama.cpp's ``/props``),
        the judge starts there instead.
    adaptive_concurrency
        ``True`` (default): the judge sends fewer at once when the server shows it is queueing
        them (latency climbs while throughput does not, or a request times out while others
        were in flight; :mod:`rubrictools.judge.pace`), and regrows as latency falls; such a
        timeout is retried without counting against ``max_retries``. ``False``: only 429s
        lower it.
    max_retries
        Retries after the first attempt: at most ``1 + max_retries`` HTTP requests per call
        for errors (the SDK's own retries are switched off so they do not multiply).
    max_parse_retries
        Further questions after a reply that does not parse or names a label the criterion does
        not allow. Each one is a *corrective* turn (the previous reply and what was wrong with
        it, appended to the conversation), never the identical request again; with the default
        1 a call whose replies stay unusable costs at most 2 requests.
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
    structured_output
        How the reply's JSON schema reaches the server (:mod:`rubrictools.judge.dialects`):
        ``"json_schema"`` (OpenAI's ``response_format``: OpenAI, vLLM, llama.cpp's server,
        Ollama), ``"json_object_schema"`` (``{"type": "json_object", "schema": ...}``:
        llama-cpp-python's server), ``"guided"`` (vLLM's ``guided_json``), ``"json_object"``
        (JSON mode, schema in the instructions only) or ``"prompt"`` (instructions only).
        ``"auto"`` (default): from litellm's capability data where it knows the model; for an
        OpenAI-compatible ``api_base`` serving a model litellm does not know, one small probe
        request per server and model finds the dialect the server honours (remembered for the
        process and in the cache directory).
    response_format
        Deprecated (removed in 0.4): the older, narrower spelling of ``structured_output``;
        ``"json_schema"``, ``"json_object"`` and ``"text"`` are read as ``structured_output=``
        ``"json_schema"``, ``"json_object"`` and ``"prompt"``, with a warning.
    system_prompt
        Overrides the built-in system prompt.
    role
        A :class:`~rubrictools.Role` (persona, authority, domain, obligations, constraints)
        written as the system message's opening paragraph, before the built-in instructions
        or ``system_prompt`` (it changes the requests, hence the cache keys).
    weight, name
        Vote weight in a weighted ensemble and the name used in the ``judge`` column
        (defaults to ``model``).
    litellm_kwargs
        Extra keyword arguments for ``litellm.acompletion`` (part of the cache key).
    cache
        Where this judge's answers are cached (a SQLite path) when ``grade(cache=True)``;
        ``None`` uses the user cache dir (``$RUBRICTOOLS_CACHE_DIR`` overrides it).
    transport
        ``"auto"`` (default): ``"direct"`` for a plain OpenAI-compatible endpoint (an
        ``api_base`` with an ``openai/``, ``hosted_vllm/``, ``lm_studio/`` or ``llamafile/``
        model, when ``litellm_kwargs`` holds only plain request-body fields), ``"litellm"``
        otherwise (see :attr:`wire_transport`). ``"litellm"``: every provider litellm knows.
        ``"direct"``: POST to an
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
    max_tokens: int | Literal["auto"] | None = "auto"
    timeout: float = 120.0
    max_concurrency: int = 16
    adaptive_concurrency: bool = True
    max_retries: int = 3
    max_parse_retries: int = 1
    max_rate_limit_retries: int = 20
    shared_backoff: bool = True
    backoff_base: float = 1.0
    backoff_max: float = 30.0
    structured_output: StructuredOutput = "auto"
    system_prompt: str | None = None
    role: Role | None = None
    weight: float = 1.0
    name: str | None = None
    litellm_kwargs: dict[str, Any] = Field(default_factory=dict)
    cache: str | None = None
    transport: Transport = "auto"

    @model_validator(mode="before")
    @classmethod
    def _response_format(cls, data: Any) -> Any:
        if isinstance(data, dict) and "response_format" in data:
            return _legacy_response_format(data)
        return data

    @field_validator("model")
    @classmethod
    def _model(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("model must name a model, e.g. 'openai/gpt-4.1-mini' (got an empty string)")
        return v

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

    @field_validator("max_retries", "max_parse_retries", "max_rate_limit_retries")
    @classmethod
    def _non_negative(cls, v: int, info: ValidationInfo) -> int:
        if v < 0:
            raise ValueError(f"{info.field_name} must be >= 0")
        return v

    @field_validator("timeout")
    @classmethod
    def _timeout(cls, v: float) -> float:
        if not math.isfinite(v) or v <= 0:
            raise ValueError(f"timeout must be a finite number of seconds > 0, got {v!r}")
        return v

    @field_validator("temperature")
    @classmethod
    def _temperature(cls, v: float) -> float:
        if not math.isfinite(v) or not 0.0 <= v <= 2.0:
            raise ValueError(f"temperature must be between 0 and 2 (as providers accept), got {v!r}")
        return v

    @field_validator("backoff_base", "backoff_max")
    @classmethod
    def _backoff(cls, v: float, info: ValidationInfo) -> float:
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"{info.field_name} must be a finite number of seconds >= 0, got {v!r}")
        return v

    @field_validator("max_tokens")
    @classmethod
    def _token_cap(cls, v: int | str | None) -> int | str | None:
        if isinstance(v, int) and (isinstance(v, bool) or v < 1):
            raise ValueError(f"max_tokens must be an int >= 1, 'auto' or None; got {v!r}")
        return v

    @field_validator("litellm_kwargs")
    @classmethod
    def _no_secrets(cls, v: dict[str, Any]) -> dict[str, Any]:
        bad = {"api_key", "extra_headers", "headers"} & set(v)
        if bad:
            raise ValueError(f"pass secrets through api_key=, not litellm_kwargs ({sorted(bad)})")
        return v

    @property
    def wire_transport(self) -> Literal["litellm", "direct"]:
        """The transport a call uses, ``transport`` resolved when it is ``"auto"``.

        >>> Judge(model="openai/qwen", api_base="http://127.0.0.1:8000/v1").wire_transport
        'direct'
        >>> Judge(model="openai/gpt-4.1-mini").wire_transport  # no api_base: litellm
        'litellm'
        """
        if self.transport != "auto":
            return self.transport
        prefix, _, rest = self.model.partition("/")
        plain = set(self.litellm_kwargs) <= PLAIN_BODY_FIELDS
        return "direct" if self.api_base and rest and prefix in DIRECT_PREFIXES and plain else "litellm"

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
            # "auto" caps are keyed as 0.1's default of 1024, so 0.1 caches stay valid: only an
            # answer that parsed is cached, and a complete answer fits within any cap it met
            "max_tokens": 1024 if self.max_tokens == "auto" else self.max_tokens,
            **({"litellm_kwargs": self.litellm_kwargs} if self.litellm_kwargs else {}),
        }


CacheSetting = bool | str | Path | None
