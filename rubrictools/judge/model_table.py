"""Does litellm know a model? Answered from its bundled table, without importing litellm.

Importing litellm takes seconds (over a minute on a loaded machine). A judge on a local
OpenAI-compatible server (``openai/smollm2`` at ``api_base=...``) needs litellm for nothing:
the direct transport sends the request, and the model has no price, no token limit and no
capability flag in litellm's table. This module reads that table (the JSON file litellm ships,
``model_prices_and_context_window_backup.json``) to tell such a model apart before anything
imports litellm. For a model the table has, or one whose name litellm resolves by its own
provider logic (any prefix other than the plain OpenAI-compatible ones), the callers ask
litellm as before; so do they once litellm is imported (a user's ``litellm.register_model``
lives there).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import sys
from pathlib import Path

from rubrictools.judge.config import DIRECT_PREFIXES

__all__ = ["bundled_entry", "bundled_models", "litellm_may_know"]

_TABLE = "model_prices_and_context_window_backup.json"


@functools.cache
def _table() -> dict[str, dict[str, object]] | None:
    """litellm's bundled price and context table, read once; None when it cannot be read."""
    spec = importlib.util.find_spec("litellm")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    try:
        data = json.loads((Path(next(iter(spec.submodule_search_locations))) / _TABLE).read_text())
    except (OSError, ValueError, StopIteration):
        return None
    if not isinstance(data, dict):
        return None
    return {k: v for k, v in data.items() if k != "sample_spec" and isinstance(v, dict) and "litellm_provider" in v}


@functools.cache
def bundled_models() -> frozenset[str] | None:
    """The model names in litellm's bundled price and context table; None when it cannot be read."""
    table = _table()
    return None if table is None else frozenset(table)


def bundled_entry(model: str) -> dict[str, object] | None:
    """``model``'s row of litellm's bundled table (its name, else its name without the provider
    prefix when the row belongs to that provider), read without importing litellm; None when
    litellm is already imported (a price a user registered lives there) or the table has no row.

    >>> bundled_entry("openai/gpt-4.1-mini")["litellm_provider"] if bundled_entry("openai/gpt-4.1-mini") else "openai"
    'openai'
    """
    table = _table()
    if table is None or "litellm" in sys.modules:
        return None
    if model in table:
        return table[model]
    prefix, _, rest = model.partition("/")
    row = table.get(rest) if rest else None
    return row if row is not None and row.get("litellm_provider") == prefix else None


def litellm_may_know(model: str) -> bool:
    """False only when litellm surely has nothing on ``model``: litellm is not imported yet, the
    model's prefix is a plain OpenAI-compatible one (``openai/``, ``hosted_vllm/``, ...) and
    neither the name nor the name without the prefix is in the bundled table.

    >>> "smollm2-135m-instruct-local" in (bundled_models() or ())  # so, before litellm is imported, False
    False
    >>> litellm_may_know("anthropic/whatever")  # litellm resolves provider names its own way
    True
    """
    if "litellm" in sys.modules:
        return True
    prefix, _, rest = model.partition("/")
    if not rest or prefix not in DIRECT_PREFIXES:
        return True
    table = bundled_models()
    return table is None or model in table or rest in table
