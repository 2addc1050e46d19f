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

    Each slice's verdict table is written atomically as ``part-NNNNN.parquet``; a part on disk
    is never graded again, and inside an unfinished part the response cache answers every call
    that had come back, so an interrupted run resumes without repeating a paid call. The
    verdict rows are :func:`rubrictools.grade`'s. See :mod:`rubrictools.grading.streaming`.

    Parameters
    ----------
    source
        A polars DataFrame or LazyFrame, a pandas DataFrame, or a parquet file, directory or
        glob; it is never read whole.
    rubric
        The :class:`~rubrictools.Rubric` (or rubric dict); optional with ``rubric_column``.
    output
        The directory of the parts. ``output/_manifest.json`` records the rubric, batch size
        and columns; resuming with other settings is an error, never a mixed table. This
        directory is the run's record: a streamed run is not copied into the run store
        (:mod:`rubrictools.records`; its table can be far larger than memory), so
        ``rt.load_run("last")`` and ``rt.runs()`` do not list it; read it with
        ``pl.scan_parquet(output / "part-*.parquet")`` or the returned LazyFrame.
    batch_size
        Rows graded and written per part (default 10,000): peak memory depends on it, not on
        the size of ``source``.
    retry_errors
        On a resume, ``True`` (default) re-grades the submissions of finished parts that have
        error rows and rewrites those parts; ``False`` keeps finished parts as they are.
    id_column
        As in :func:`rubrictools.grade`; without it the ids are global row numbers.
    model, column, query_column, reference_column, rubric_column, image_column, mode, aggregate
        As in :func:`rubrictools.grade`, with the same defaults.
    examples, max_examples, shuffle_options, seed, grade_part, on_null, thinking_markers, conversation_part
        As in :func:`rubrictools.grade`, with the same defaults.
    max_cost_usd
        As in :func:`rubrictools.grade` (calls beyond the cap become error rows), but the cap
        applies to each part's grading on its own, not to the whole run.
    progress
        Show a tqdm progress bar counting parts.
    cache, distribution, distribution_samples, evidence, criterion_context
        As in :func:`rubrictools.grade`, with the same defaults.
    confidence, output_constraints, on_unsupported, on_start, on_result
        As in :func:`rubrictools.grade`, with the same defaults (there is no ``batch`` here).

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
