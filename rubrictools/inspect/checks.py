"""The scorer's settings, checked when the scorer is built: a typo fails before Inspect runs a sample.

Inspect runs the model under test on every sample before it scores any: a setting that could
only fail inside the scorer would cost that whole run. So the rubric, the judge (its provider,
its key, its price when there is a budget), the cache and every option are checked here.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from rubrictools.conversations import CONVERSATION_PARTS
from rubrictools.grading.inputs import open_cache, resolve_judges, rubric_argument
from rubrictools.grading.options import GradeOptions
from rubrictools.judge import Judge, ResponseCache
from rubrictools.judge.pricing import require_prices
from rubrictools.judge.providers import load_litellm, require_credentials
from rubrictools.rubric import Rubric

__all__ = ["MODES", "check_settings"]

MODES: tuple[str, ...] = ("per_criterion", "per_item", "grouped", "holistic")


def _options(s: dict[str, Any]) -> None:
    for flag in ("query", "reference"):
        if not isinstance(s[flag], bool):
            raise TypeError(f"{flag} must be True or False, got {s[flag]!r}")
    name = s["name"]
    if not isinstance(name, str) or not name.strip() or "/" in name:
        raise ValueError(f"name must be a non-empty name without '/' (the scorer's name in the log), got {name!r}")
    if s["mode"] not in MODES:
        raise ValueError(f"mode must be one of {list(MODES)}, got {s['mode']!r}")
    if s["submission"] not in ("output", "messages"):
        raise ValueError(
            f"submission must be 'output' (the final completion) or 'messages' (the history), got {s['submission']!r}"
        )
    if s["conversation_part"] not in CONVERSATION_PARTS:
        raise ValueError(f"conversation_part must be one of {list(CONVERSATION_PARTS)}, got {s['conversation_part']!r}")
    if s["submission"] == "output" and s["conversation_part"] != "last_assistant":
        raise ValueError("conversation_part= applies to submission='messages' (the history); with 'output' drop it")
    cap = s["max_cost_usd"]
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, (int, float))):
        raise TypeError(f"max_cost_usd must be a number of US dollars or None, got {cap!r}")


def _judges(model: Any, max_cost_usd: float | None) -> None:
    """The judges exist, their provider is known, their key is set, their price is known under a budget."""
    if model is None or (isinstance(model, (list, tuple)) and not model):
        raise ValueError("rt.inspect.rubric_scorer needs model= (a litellm model string, a Judge or a ScriptedJudge)")
    judges = [j for j in resolve_judges(model) if isinstance(j, Judge)]
    for j in judges:
        if j.api_base is None:
            try:
                load_litellm().get_llm_provider(j.model)
            except Exception as e:  # litellm's error types vary by version; any of them means no provider
                hint = (
                    " (the offline stand-in is 'rubrictools/scripted')"
                    if j.model.lower().startswith("rubrictools/")
                    else ""
                )
                raise ValueError(f"model {j.model!r}: litellm knows no provider for it{hint}") from e
    require_credentials(judges)
    require_prices(judges, max_cost_usd)


def _cache(cache: Any, model: Any) -> None:
    """The cache setting names a cache that opens (a wrong type or an unwritable path fails now)."""
    if cache is None or cache is False or isinstance(cache, ResponseCache):
        return
    if not isinstance(cache, (bool, str, Path)):
        raise TypeError(f"cache must be True, False, a file path or a ResponseCache, got {type(cache).__name__}")
    try:
        store = open_cache(cache, resolve_judges(model))
    except (OSError, ValueError, sqlite3.Error) as e:
        raise ValueError(f"cache={str(cache)!r} cannot be opened: {e}") from e
    if store is not None:
        store.close()


def check_settings(s: dict[str, Any]) -> Rubric:
    """Every argument of :func:`rubric_scorer` (``s``: its ``locals()``) checked; the rubric."""
    _options(s)
    rub = rubric_argument(s["rubric"])
    if rub is None:
        raise ValueError("rubric_scorer needs a rubric (a Rubric, a rubric dict/list or a .yaml/.json path)")
    _judges(s["model"], s["max_cost_usd"])
    GradeOptions(
        model=s["model"], mode=s["mode"], conversation_part=s["conversation_part"], max_cost_usd=s["max_cost_usd"]
    )
    _cache(s["cache"], s["model"])
    return rub
