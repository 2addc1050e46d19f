"""Which provider a judge model names, and how to ask it for structured output.

litellm is imported here, lazily, and nowhere else: ``import rubrictools`` stays fast.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any

from rubrictools.judge.config import DIRECT_PREFIXES, Judge
from rubrictools.judge.model_table import bundled_entry, bundled_models, litellm_may_know

__all__ = [
    "BATCH_PROVIDERS",
    "ENV_KEYS",
    "api_key_of",
    "chat_url",
    "custom_endpoint",
    "env_api_key",
    "env_key_variable",
    "load_litellm",
    "provider_of",
    "reasoning_model",
    "request_headers",
    "require_credentials",
    "token_limit",
    "wire_model",
]

BATCH_PROVIDERS = ("openai", "azure", "hosted_vllm", "litellm_proxy")
_WIRE_PREFIXES = {"openai", "azure", "hosted_vllm", "litellm_proxy", "text-completion-openai"}


def load_litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


def token_limit(judge: Judge, task_cap: int) -> int | None:
    """The ``max_tokens`` a call sends: the judge's own int (or None: no cap); for ``"auto"``
    the task's cap, except for a model litellm knows as a reasoning model, whose hidden
    reasoning tokens count against the cap (then no cap)."""
    if judge.max_tokens != "auto":
        return judge.max_tokens
    return None if reasoning_model(judge.model) else task_cap


@functools.lru_cache(maxsize=256)
def reasoning_model(model: str) -> bool:
    """Whether litellm knows ``model`` as a reasoning model (asked once per model: a run asks
    it for every call)."""
    if not litellm_may_know(model):
        return False
    row = bundled_entry(model)
    if row is not None:  # the flag litellm reads, without importing litellm
        return row.get("supports_reasoning") is True
    try:
        return bool(load_litellm().supports_reasoning(model=model))
    except Exception:  # noqa: BLE001  # litellm raises assorted errors for a model it does not know; it is then not treated as a reasoning model
        return False


def wire_model(model: str) -> str:
    """The model name an OpenAI-compatible endpoint expects (litellm's provider prefix removed)."""
    prefix, _, rest = model.partition("/")
    return rest if rest and prefix in _WIRE_PREFIXES else model


def provider_of(model: str) -> str:
    """litellm's ``custom_llm_provider`` for a judge model's batch API (``openai`` without a prefix)."""
    prefix, _, rest = model.partition("/")
    if not rest:
        return "openai"
    if prefix not in BATCH_PROVIDERS:
        raise ValueError(
            f"batch grading needs a provider with an OpenAI-style batch API "
            f"({', '.join(p + '/' for p in BATCH_PROVIDERS)}); "
            f"{model!r} is not one: grade it live with rt.grade"
        )
    return prefix


ENV_KEYS = {
    "openai": "OPENAI_API_KEY",
    "text-completion-openai": "OPENAI_API_KEY",
    "hosted_vllm": "HOSTED_VLLM_API_KEY",
    "litellm_proxy": "LITELLM_PROXY_API_KEY",
    "azure": "AZURE_API_KEY",
}
"""Provider prefix -> the environment variable litellm reads its key from (OpenAI-compatible ones)."""


def env_key_variable(model: str) -> str | None:
    """The environment variable litellm reads ``model``'s key from (OpenAI-compatible providers)."""
    prefix, _, rest = model.partition("/")
    return ENV_KEYS.get(prefix if rest else "openai")


def env_api_key(model: str) -> str | None:
    """The key litellm would take from the environment for ``model`` (OpenAI-compatible providers)."""
    var = env_key_variable(model)
    return os.environ.get(var) if var else None


def api_key_of(judge: Judge) -> str | None:
    """The key a call of ``judge`` sends: its own, else the provider's environment variable."""
    return judge.api_key.get_secret_value() if judge.api_key is not None else env_api_key(judge.model)


def custom_endpoint(judge: Judge) -> bool:
    """An OpenAI-compatible ``api_base`` of the user's own (a local or self-hosted server) that
    the judge really reaches (litellm's ``mock_response`` reaches none)."""
    prefix, _, rest = judge.model.partition("/")
    custom = bool(judge.api_base) and bool(rest) and prefix in DIRECT_PREFIXES | {"litellm_proxy"}
    return custom and "mock_response" not in judge.litellm_kwargs


def chat_url(judge: Judge) -> str:
    """The OpenAI-compatible ``chat/completions`` URL of ``judge`` (OpenAI's without an api_base)."""
    return f"{(judge.api_base or 'https://api.openai.com/v1').rstrip('/')}/chat/completions"


def request_headers(judge: Judge) -> dict[str, str]:
    """The headers of a direct request: JSON, and the bearer key when the judge has one."""
    headers = {"Content-Type": "application/json"}
    key = api_key_of(judge)
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return headers


def require_credentials(judges: list[Judge]) -> None:
    """Fail before the first call when a judge has no key to send, naming the variable to set.

    A judge with ``api_key=`` passes; the direct transport to a custom ``api_base`` (a local
    server) may run without one. Otherwise litellm's own check says which variables are missing.
    """
    for j in judges:
        if "mock_response" not in j.litellm_kwargs:
            _require_routable(j)
        if j.api_key is not None or "mock_response" in j.litellm_kwargs:
            continue
        if j.wire_transport == "direct":
            if env_api_key(j.model) is None and (j.api_base is None or "api.openai.com" in j.api_base):
                var = env_key_variable(j.model) or "the provider's key variable"
                raise ValueError(f"judge {j.label!r}: no API key: set {var} or pass api_key=")
            continue
        try:
            info = load_litellm().validate_environment(model=j.model, api_base=j.api_base)
        except Exception:  # noqa: BLE001  # a provider litellm cannot check: let the call say what is wrong
            continue
        missing = list(info.get("missing_keys") or [])
        if missing and not info.get("keys_in_environment"):
            raise ValueError(
                f"judge {j.label!r}: no API key for {j.model!r}: set {' or '.join(missing)} in the environment, or "
                "pass api_key= (for a local server that checks none, any placeholder such as 'sk-local')"
            )


def _require_routable(judge: Judge) -> None:
    """Refuse a model name without a provider prefix that litellm cannot route ("nonsense",
    a typo of a model name): every call would fail with litellm's "LLM Provider NOT provided".
    Read from litellm's bundled model table (or, once litellm is imported, from litellm itself,
    which knows the models a user registered)."""
    model = judge.model
    if "/" in model:
        return
    if "litellm" in sys.modules:
        try:
            load_litellm().get_llm_provider(model=model)
        except Exception:  # noqa: BLE001  # litellm raises its own BadRequestError for a model it cannot route
            pass
        else:
            return
    else:
        known = bundled_models()
        if known is None or model in known:
            return
    raise ValueError(
        f"judge {judge.label!r}: model {model!r} names no provider litellm can route: write it as "
        f"'provider/model', e.g. 'openai/{model}' for an OpenAI-compatible server (with api_base=) or "
        "'anthropic/claude-haiku-4-5'"
    )
