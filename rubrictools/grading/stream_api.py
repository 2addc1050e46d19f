"""`grade_to_parquet`: grade a source larger than memory into resumable parquet parts."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from rubrictools.conversations import ConversationPart
from rubrictools.deprecation import adapted
from rubrictools.grading.executor import Hooks, OnResult, OnStart, check_callbacks
from rubrictools.grading.options import (
    CacheSetting,
    CriterionContext,
    GradeOptions,
    GradePart,
    Mode,
    OnNull,
    OnUnsupported,
    moved_judge_settings,
)
from rubrictools.grading.streaming import stream_parts
from rubrictools.rubric import Rubric
from rubrictools.rubric.constraints import OutputConstraint

__all__ = ["grade_to_parquet"]


@adapted(moved_judge_settings)
def grade_to_parquet(
    source: Any,
    rubric: Rubric | None = None,
    *,
    output: str | Path,
    batch_size: int = 10_000,
    retry_errors: bool = True,
    model: Any = None,
    column: str = "submission",
    id_column: str | None = None,
    query_column: str | None = None,
    reference_column: str | None = None,
    rubric_column: str | None = None,
    image_column: str | None = None,
    mode: Mode = "per_criterion",
    aggregate: str = "majority",
    examples: Any = None,
    max_examples: int = 3,
    shuffle_options: bool = False,
    seed: int = 0,
    grade_part: GradePart = "output",
    on_null: OnNull = "raise",
    thinking_markers: bool = False,
    conversation_part: ConversationPart = "last_assistant",
    cache: CacheSetting = True,
    max_cost_usd: float | None = None,
    progress: bool = True,
    distribution: bool = False,
    distribution_samples: int = 10,
    evidence: bool | None = None,
    criterion_context: CriterionContext = "focused",
    confidence: bool = False,
    output_constraints: Sequence[OutputConstraint] = (),
    on_unsupported: OnUnsupported = "flag",
    on_start: OnStart | None = None,
    on_result: OnResult | None = None,
) -> pl.LazyFrame:
    """Grade ``source`` ``batch_size`` rows at a time into parquet parts under ``output``.

    The parameters after ``retry_errors`` are :func:`rubrictools.grade`'s, with the same
    defaults (``on_start`` and ``on_result`` included; without ``batch``); the verdict rows are the same.
    ``source`` is a polars DataFrame or LazyFrame, a pandas DataFrame, or a parquet file,
    directory or glob; it is never read whole. Each
    slice's verdict table is written atomically as ``part-NNNNN.parquet``; a part on disk is
    never graded again, and inside an unfinished part the response cache answers every call
    that had come back, so an interrupted run resumes without repeating a paid call. On a
    resume, ``retry_errors=True`` re-grades the submissions of finished parts that have error
    rows and rewrites those parts. ``output/_manifest.json`` records the rubric, batch size
    and columns; resuming with other settings is an error, never a mixed table. Without
    ``id_column`` the ids are global row numbers. See :mod:`rubrictools.grading.streaming`.

    Returns
    -------
    polars.LazyFrame
        A scan of every part, in input order (``rt.score`` and ``rt.agreement`` take it).

    Example
    -------
    >>> import tempfile, polars as pl, rubrictools as rt
    >>> rubric = rt.Rubric.from_dict([{"name": "greets", "requirement": "Says hello"}])
    >>> df = pl.DataFrame({"submission": ["hello", "bye", "hello again"]})
    >>> out = tempfile.mkdtemp()
    >>> lf = rt.grade_to_parquet(df, rubric, output=out, batch_size=2, model="rubrictools/scripted", progress=False)
    >>> lf.collect().height, sorted(p.name for p in __import__("pathlib").Path(out).glob("part-*"))
    (3, ['part-00000.parquet', 'part-00001.parquet'])
    """
    check_callbacks(on_start=on_start, on_result=on_result, batch=False)
    opts = GradeOptions.pick(locals())
    return stream_parts(
        source,
        rubric,
        output,
        opts=opts,
        batch_size=batch_size,
        retry_errors=retry_errors,
        hooks=Hooks(on_start=on_start, on_result=on_result),
    )
