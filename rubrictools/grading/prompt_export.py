"""`prompts`: every request a grading run would send, as a table, without sending any."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import polars as pl

from rubrictools.conversations import ConversationPart
from rubrictools.deprecation import adapted
from rubrictools.grading.options import CriterionContext, GradeOptions, GradePart, Mode, moved_judge_settings
from rubrictools.grading.plan import assign_keys, build_plan
from rubrictools.judge.image_parts import content_text, request_images
from rubrictools.rubric import Rubric
from rubrictools.rubric.constraints import OutputConstraint

__all__ = ["PROMPT_COLUMNS", "prompts"]

PROMPT_COLUMNS: dict[str, Any] = {
    "id": None,  # the input's id dtype
    "judge": pl.String,
    "mode": pl.String,
    "criteria": pl.List(pl.String),
    "system": pl.String,
    "user": pl.String,
    "messages": pl.List(pl.Struct({"role": pl.String, "content": pl.String})),
    "images": pl.List(pl.String),
    "schema": pl.String,
    "request_fields": pl.String,
    "max_tokens": pl.Int64,
    "cache_key": pl.String,
}
"""Columns of :func:`prompts` (``id`` keeps the input's id dtype)."""


def _role_text(messages: list[dict[str, Any]], role: str) -> str | None:
    parts = [content_text(m["content"]) for m in messages if m["role"] == role]
    return "\n\n".join(parts) if parts else None


@adapted(moved_judge_settings)
def prompts(
    df: Any,
    rubric: Rubric | None = None,
    *,
    model: Any,
    column: str = "submission",
    id_column: str | None = None,
    query_column: str | None = None,
    reference_column: str | None = None,
    rubric_column: str | None = None,
    image_column: str | None = None,
    mode: Mode = "per_criterion",
    examples: Any = None,
    max_examples: int = 3,
    shuffle_options: bool = False,
    seed: int = 0,
    grade_part: GradePart = "output",
    thinking_markers: bool = False,
    conversation_part: ConversationPart = "last_assistant",
    evidence: bool | None = None,
    criterion_context: CriterionContext = "focused",
    confidence: bool = False,
    output_constraints: Sequence[OutputConstraint] = (),
) -> pl.DataFrame:
    """The exact requests :func:`rubrictools.grade` would send with these settings; none is sent.

    Submissions are escaped and fenced exactly as when grading, so the table is what to read,
    diff and version when a rubric or prompt changes. Rule criteria and null submissions make
    no call and have no row. Inputs are checked as in ``grade``.

    Parameters
    ----------
    df, rubric
        The submissions and the rubric, as :func:`rubrictools.grade` would be given them.
    model
        The judge(s), as in :func:`rubrictools.grade` (required). A
        :class:`~rubrictools.ScriptedJudge` sends nothing, but its rows show what a model would
        be sent (``request_fields`` ``{}``, ``cache_key`` null).
    column, id_column, query_column, reference_column, rubric_column, image_column, mode
        As in :func:`rubrictools.grade`, with the same defaults.
    examples, max_examples, shuffle_options, seed, grade_part, thinking_markers, conversation_part
        As in :func:`rubrictools.grade`, with the same defaults.
    evidence, criterion_context, confidence, output_constraints
        As in :func:`rubrictools.grade`, with the same defaults: each changes what the judge is
        asked, hence the prompts.

    Returns
    -------
    polars.DataFrame
        One row per call (:data:`PROMPT_COLUMNS`): ``id``, ``judge``, ``mode``, ``criteria``
        (what the call asks about), ``system`` and ``user`` (the messages' text by role),
        ``messages`` (every message, in order; an image shows as
        ``[image: type, size, sha256 ...]``), ``images`` (the SHA-256 of each image sent),
        ``schema`` (the JSON schema a valid reply follows), ``request_fields`` (the
        structured-output fields in the judge's dialect, e.g. ``response_format``, as JSON),
        ``max_tokens`` and ``cache_key`` (the answer's key in the response cache: equal keys,
        equal requests).

    Example
    -------
    >>> import json, polars as pl, rubrictools as rt
    >>> rubric = rt.Rubric.from_dict([{"name": "greets", "requirement": "Says hello"}])
    >>> p = rt.prompts(pl.DataFrame({"submission": ["hi"]}), rubric, model="openai/gpt-4.1-mini")
    >>> p.select("id", "criteria", "max_tokens").row(0)
    (0, ['greets'], 250)
    >>> "Says hello" in p["user"][0], json.loads(p["schema"][0])["type"]
    (True, 'object')
    """
    opts = GradeOptions.pick({**locals(), "on_null": "error_row", "progress": False, "cache": False})
    plan = build_plan(df, rubric, opts)
    assign_keys(plan)
    llm = plan.calls
    names = [j.label for j in plan.judges]
    rows = {
        "id": [c.task.subject.sid for c in llm],
        "judge": [names[c.judge_i] for c in llm],
        "mode": [c.task.kind for c in llm],
        "criteria": [c.task.asks() for c in llm],
        "system": [_role_text(c.messages, "system") for c in llm],
        "user": [_role_text(c.messages, "user") for c in llm],
        "messages": [[{"role": m["role"], "content": content_text(m["content"])} for m in c.messages] for c in llm],
        "images": [request_images(c.messages) for c in llm],
        "schema": [json.dumps(c.task.schema()[0], sort_keys=True) for c in llm],
        "request_fields": [json.dumps(c.output, sort_keys=True) for c in llm],
        "max_tokens": [c.max_tokens for c in llm],
        "cache_key": [c.key for c in llm],
    }
    schema = {k: (v if v is not None else plan.inp.id_dtype) for k, v in PROMPT_COLUMNS.items()}
    return pl.DataFrame(rows, schema=schema)
