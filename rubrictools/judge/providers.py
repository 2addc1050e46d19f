"""Which provider a judge model names, and how to ask it for structured output.

litellm is imported here, lazily, and nowhere else: ``import rubrictools`` stays fast.
"""

from __future__ import annotations

import os
from typing import Any

from rubrictools.judge.config import Judge

__all__ = ["BATCH_PROVIDERS", "load_litellm", "provider_of", "response_format_for", "wire_model"]

BATCH_PROVIDERS = ("openai", "azure", "hosted_vllm", "litellm_proxy")
_WIRE_PREFIXES = {"openai", "azure", "hosted_vllm", "litellm_proxy", "text-completion-openai"}


def load_litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


def response_format_for(judge: Judge, schema: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The ``response_format`` to send: a JSON schema, JSON mode or nothing."""
    fmt = judge.response_format
    if fmt == "auto":
        try:
            fmt = "json_schema" if load_litellm().supports_response_schema(model=judge.model) else "json_object"
        except Exception:
            fmt = "json_object"
    if fmt == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}
    if fmt == "json_object":
        return {"type": "json_object"}
    return None


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
