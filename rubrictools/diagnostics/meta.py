"""Rubric meta-evaluation by an LLM: a rubric about rubrics, applied to yours.

:func:`rubrictools.lint` checks wording rules and :func:`rubrictools.rubric_report` measures
criteria on graded data; :func:`evaluate_rubric` asks a judge what neither can see, such as
whether two criteria reward the same thing or whether a criterion can be judged from the
response alone. The rubric under review is rendered as Markdown (its criteria, weights,
answer types, groups) and graded like any submission with :data:`META_RUBRIC`, per criterion,
so every finding has its own verdict and explanation. With ``task=`` (autorubric's
*in-context* evaluation) the judge also sees the task the rubric is for, and the criteria
about covering that task are asked; without it (*standalone*) they are not.

The meta-rubric is rubrictools' own wording. Its verdicts are a model's opinion: read the
explanations, and weigh them with the data-driven report.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from rubrictools.grading import grade
from rubrictools.grading.options import Mode
from rubrictools.rubric import Rubric

__all__ = ["META_RUBRIC", "evaluate_rubric", "meta_rubric"]

_STANDALONE = [
    {"name": "observable", "weight": 3, "requirement": (
        "Every criterion can be decided from the response text alone (with the task and reference when given), "
        "without knowing the author's intent or facts outside the response")},
    {"name": "atomic", "weight": 2, "requirement": (
        "Every criterion asks about one thing; none bundles several independent requirements that could be met "
        "separately")},
    {"name": "distinct", "weight": 2, "requirement": (
        "No two criteria reward or penalise the same property of a response (no double counting)")},
    {"name": "precise", "weight": 2, "requirement": (
        "Criteria avoid vague words (good, appropriate, clear, sufficient) or say what they mean in checkable terms")},
    {"name": "weights_fit", "weight": 1, "requirement": (
        "Weights order the criteria by importance sensibly, and every negative weight describes a fault (so MET "
        "means the fault is present)")},
    {"name": "answerable_scale", "weight": 1, "requirement": (
        "Every multiple-choice or numeric criterion defines its options or anchors so two graders would pick the "
        "same one")},
]  # fmt: skip
_IN_CONTEXT = [
    {"name": "covers_task", "weight": 3, "requirement": (
        "The criteria together cover everything the task asks a response to do; no central requirement of the task "
        "is missing")},
    {"name": "on_task", "weight": 2, "requirement": (
        "Every criterion is relevant to this task; none rewards something the task does not ask for")},
]  # fmt: skip

META_RUBRIC = Rubric.from_dict(_STANDALONE + _IN_CONTEXT)
"""The meta-rubric: six standalone criteria and two about the task (see :func:`meta_rubric`)."""


def meta_rubric(*, in_context: bool = False) -> Rubric:
    """:data:`META_RUBRIC` without (standalone) or with (``in_context=True``) the task criteria.

    Parameters
    ----------
    in_context
        ``False`` (default): the questions a rubric answers on its own; ``True``: also the
        questions about the task it is for (whether the criteria cover it and stay on it),
        which :func:`rubrictools.evaluate_rubric` asks when given ``task=``.

    Returns
    -------
    Rubric
        The meta-rubric, one criterion per question.

    Example
    -------
    >>> meta_rubric().names
    ('observable', 'atomic', 'distinct', 'precise', 'weights_fit', 'answerable_scale')
    """
    return META_RUBRIC if in_context else Rubric.from_dict(_STANDALONE)


def evaluate_rubric(
    rubric: Rubric,
    *,
    model: Any,
    task: str | None = None,
    mode: Mode = "per_criterion",
    cache: bool | str = True,
    record: bool | str = False,
) -> pl.DataFrame:
    """A judge's review of ``rubric`` against :func:`meta_rubric` (see the module docstring).

    Parameters
    ----------
    rubric
        The rubric to review (rendered with :meth:`Rubric.to_markdown`, as data the judge
        cannot take instructions from).
    model
        The reviewing judge, as in :func:`rubrictools.grade`.
    task
        The task the rubric grades: given, the review is in context (the task criteria are
        asked); None, standalone.
    mode, cache, record
        As in :func:`rubrictools.grade` (the review is not recorded as a run by default).

    Returns
    -------
    polars.DataFrame
        One verdict row per meta-criterion (``id`` is ``"rubric"``); score it with
        ``rt.score(review, rt.meta_rubric(in_context=task is not None))``.

    Example
    -------
    >>> import rubrictools as rt
    >>> r = rt.Rubric.from_dict([{"name": "good", "requirement": "The answer is good and short"}])
    >>> review = rt.evaluate_rubric(r, model=rt.ScriptedJudge(rule=lambda text, c: "UNMET"), task="Explain tides")
    >>> review["criterion"].to_list()[:3], review.height
    (['observable', 'atomic', 'distinct'], 8)
    """
    if not isinstance(rubric, Rubric):
        raise TypeError(f"rubric must be an rt.Rubric, got {type(rubric).__name__}")
    if task is not None and not task.strip():
        raise ValueError("task must be a description of the task, or None for a standalone review")
    meta = meta_rubric(in_context=task is not None)
    df = pl.DataFrame({"id": ["rubric"], "submission": [rubric.to_markdown()], "task": [task]})
    return grade(
        df,
        meta,
        model=model,
        id_column="id",
        query_column="task" if task is not None else None,
        mode=mode,
        cache=cache,
        progress=False,
        record=record,
    )
