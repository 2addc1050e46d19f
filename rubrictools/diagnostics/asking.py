"""One question to a model that writes rubric text (a proposer or a drafter), answered as JSON.

The tools that improve, search and draft rubrics ask a model for text, not verdicts. The
asker is a model string, a :class:`~rubrictools.Judge`, or a function ``messages -> reply``
(offline tests and demos, or your own client); :func:`asker` turns any of them into one
callable returning ``(json object, cost in USD or None)``. A reply that is not a JSON object
raises with the start of the reply, so nothing is silently made up.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rubrictools.grading.options import JUDGE_SETTINGS
from rubrictools.grading.sync import run_sync
from rubrictools.judge import dialects
from rubrictools.judge.config import Judge
from rubrictools.judge.parsing import ParseError, extract_json
from rubrictools.judge.providers import token_limit
from rubrictools.judge.scripted import ScriptedJudge
from rubrictools.judge.transport import complete, with_clients_closed

__all__ = ["Asker", "asker"]

Asker = Callable[[list[dict[str, str]]], tuple[dict[str, Any], float | None]]
"""Messages in, ``(JSON object, cost_usd or None)`` out."""


def _object(content: str | None, who: str) -> dict[str, Any]:
    try:
        obj = extract_json(content)
    except ParseError as e:
        raise RuntimeError(f"{who} reply is not JSON ({e}): {str(content)[:200]!r}") from None
    if not isinstance(obj, dict):
        raise RuntimeError(f"{who} reply is not a JSON object: {str(content)[:200]!r}")
    return obj


def asker(
    p: Any,
    *,
    who: str,
    settings: Mapping[str, Any] | None = None,
    max_tokens: int = 800,
    schema: dict[str, Any] | None = None,
) -> Asker:
    """``p`` as an :data:`Asker`: a model string (a :class:`Judge` built with the judge
    ``settings``), a Judge, or a function ``messages -> str | dict`` (``who`` names it in errors).
    A model is sent ``schema`` (the reply's JSON schema) in the structured-output dialect its
    server honours (:mod:`rubrictools.judge.dialects`), so a grammar-constrained local model
    answers in the shape asked."""
    if isinstance(p, ScriptedJudge):
        raise ValueError(
            f"a ScriptedJudge answers verdicts, not rubric text; pass {who}= (a model, a Judge or a function)"
        )
    if isinstance(p, (list, tuple)):
        raise ValueError(f"with an ensemble, pass {who}= (one model, a Judge or a function)")
    if isinstance(p, str):
        keep = {k: v for k, v in (settings or {}).items() if k in JUDGE_SETTINGS and v is not None}
        p = Judge(model=p, **keep)
    if isinstance(p, Judge):
        judge = p

        def ask_model(messages: list[dict[str, str]]) -> tuple[dict[str, Any], float | None]:
            cap = token_limit(judge, max_tokens)
            output = dialects.format_fields(dialects.resolve(judge), schema, who) if schema is not None else None
            call = complete(judge, messages, output, max_attempts=1 + judge.max_retries, max_tokens=cap)
            res = run_sync(with_clients_closed(call))
            if res.error is not None:
                raise RuntimeError(f"{who} call failed: {res.error}")
            return _object(res.content, who), res.cost_usd

        return ask_model
    if callable(p):
        fn = p

        def ask_function(messages: list[dict[str, str]]) -> tuple[dict[str, Any], float | None]:
            out = fn(messages)
            return (dict(out) if isinstance(out, Mapping) else _object(out, who)), None

        return ask_function
    raise TypeError(f"{who}: expected a model string, a Judge or a function, got {type(p).__name__}")
