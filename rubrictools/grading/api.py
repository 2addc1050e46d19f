"""`grade` and `agrade`: turn a column of submissions into a verdict table with LLM judges.

Works the same in a script, a Jupyter cell (where an event loop already runs) and async code
(:func:`agrade`). Every (submission, criterion) gets a row; a failed call is an explicit error
row, never a silent verdict. Successful answers are cached on disk as they arrive, so a re-run
makes no calls and an interrupted run resumes where it stopped. ``batch=True`` uses provider
batch jobs (:mod:`rubrictools.grading.batch`); :func:`rubrictools.grade_to_parquet` streams a
source too large for memory into parquet parts.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from rubrictools.conversations import ConversationPart
from rubrictools.deprecation import adapted
from rubrictools.grading.batch import submit_batch_plan
from rubrictools.grading.budget import Budget
from rubrictools.grading.executor import Hooks, OnResult, OnStart, check_callbacks
from rubrictools.grading.live import grade_frame, grade_frame_async
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
from rubrictools.records import runs_dir
from rubrictools.rubric import Rubric
from rubrictools.rubric.constraints import OutputConstraint

__all__ = ["agrade", "grade"]


@adapted(moved_judge_settings)
def grade(
    df: Any,
    rubric: Rubric | None = None,
    *,
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
    batch: bool = False,
    batch_dir: str | Path | None = None,
    poll_interval: float = 30.0,
    record: bool | str | Path = True,
    on_start: OnStart | None = None,
    on_result: OnResult | None = None,
) -> pl.DataFrame:
    """Grade every submission of ``df`` against ``rubric`` with one or more LLM judges.

    Parameters
    ----------
    df
        polars DataFrame or LazyFrame, or pandas DataFrame, one submission per row.
    rubric
        The :class:`~rubrictools.Rubric` (or rubric dict); optional with ``rubric_column``.
    model
        A litellm model string, a :class:`~rubrictools.Judge`, a
        :class:`~rubrictools.ScriptedJudge` (offline, not a model; also ``"rubrictools/scripted"``),
        or a list of them for an ensemble.
    column, id_column
        Submission column (strings, ``{"thinking", "output"}`` structs, or text marked with
        ``<thinking>/<output>`` when ``thinking_markers=True``) and id column (row index when
        None; must be unique). **Every output table calls the id column ``id``** whatever
        ``id_column`` was (``ticket_id`` comes back as ``id``, with its dtype): the verdict,
        score, agreement and preference tables join on that one name. Rename back with
        ``.rename({"id": "ticket_id"})``.
    query_column, reference_column
        Optional prompt and exemplar answer shown to the judge.
    rubric_column
        A column holding each row's own rubric (Rubric, dict/list, or JSON/YAML text).
    image_column
        A column of images that belong to each submission: PNG/JPEG/GIF/WebP bytes (a polars
        Binary column), a file path, an ``http(s)`` URL or a ``data:`` URI, or a list of them
        (null: none). The judge receives them as image parts after the submission and before
        the criteria, each labelled ("Image 1 of the submission (column 'photo'):"), as it
        does the image parts of a conversation's turns. A model litellm says takes no images is
        refused before any call; cache keys hold each image's SHA-256, not its bytes
        (:mod:`rubrictools.images`).
    mode
        ``"per_criterion"`` (one call per submission x criterion), ``"per_item"`` (one call per
        submission, aligned by criterion name), ``"grouped"`` (one per-item call per scoring group
        of criteria and one call per ungrouped criterion: rubrify's grouped strategy) or
        ``"holistic"`` (one 0-100 score).
    aggregate
        Ensemble aggregation (see :mod:`rubrictools.grading.votes`).
    examples, max_examples
        Labelled few-shot examples (``submission, criterion, verdict[, explanation]``).
    criterion_context
        ``"focused"`` (default): a call shows only the criteria it asks about. ``"full"``
        (rubrify's criterion focus): each per-criterion or per-group call also lists the rest of
        the rubric, marked as context not to be judged, so the judge knows what the other
        criteria cover (and does not fold them into this one).
    shuffle_options, seed
        Present multi-choice options in a seeded random order (recorded in ``option_order``).
    thinking_markers
        Read string submissions marked ``<thinking>...</thinking><output>...</output>`` as
        thinking/output pairs (text outside the markers is an error). Off by default: a
        submission is untrusted text, and one that merely contains ``<output>`` tags is graded
        whole, never cut down to them.
    grade_part
        For thinking/output submissions: grade the ``"output"`` (default), ``"thinking"`` or ``"all"``.
    conversation_part
        For conversation submissions (a column of ``{"role", "content"}`` message lists, e.g.
        from :func:`rubrictools.datasets.read_chat_jsonl`): grade the ``"last_assistant"`` turn
        (default, as HealthBench does), ``"all_assistant"`` turns or the ``"whole"``
        conversation. The judge sees every turn, escaped and fenced turn by turn, and is told
        which turns are graded. A conversation with no assistant turn gets error rows (no call).
    cache
        ``True`` (user cache dir), a path, a :class:`ResponseCache` or ``False``.
    max_cost_usd
        Stop making calls once this much has been spent; the rest become error rows.
    progress
        Show a tqdm progress bar.
    distribution, distribution_samples
        ``distribution=True`` (per-criterion mode) also records the judge's probability for
        every allowed label in a ``distribution`` column (list of ``{label, prob}``), from the
        token logprobs at the verdict (``logprobs=True, top_logprobs=20``) or, when those are
        missing or cannot separate the labels, from ``distribution_samples`` answers sampled
        at temperature 1 (``0`` disables sampling). ``distribution_source`` says which
        (``logprobs``, ``samples:n``, ``scripted`` or ``unavailable``). Feed it to
        :mod:`rubrictools.calibration` via ``calibrate.distributions_from_verdicts``.
    evidence, on_unsupported
        ``evidence=True`` asks the judge to quote the passage behind every verdict (``None``:
        only for criteria with ``evidence=True``; ``False``: never). The quote goes in an
        ``evidence`` column and ``evidence_ok`` says whether it is in the submission (exact or
        whitespace-normalised match). A verdict that claims something (MET, or above the
        lowest option) without a matching quote is flagged (``on_unsupported="flag"``) or
        falls to the criterion's lowest label (``"downgrade"``).
    confidence
        ``True`` asks the judge for a 0-1 confidence with every verdict (a ``confidence``
        column; not with ``mode="holistic"``). Not an interval level: intervals are ``ci=``.
    output_constraints
        Rules the judge's reply must follow (:class:`~rubrictools.OutputConstraint`, or mappings
        of its fields), added to the rubric's own ``output_constraints``: the judge is told them,
        and a reply whose explanation or evidence breaks one gets a ``warnings`` entry
        (``"soft"``), an error row (``"hard"``) or, with ``enforcement="disqualify"``, a
        ``disqualified_by`` entry that caps the submission's score at 0 in :func:`score`. Each
        is checked per verdict, per call or over the judge's whole judgment (``scope``).
    on_null
        A null submission: ``"raise"`` (default) stops before any call with an error naming the
        row and id; ``"error_row"`` grades the other rows and gives that row's criteria error
        rows ("submission is null: no call made"), with no call made for it.
    batch, batch_dir, poll_interval
        ``batch=True`` sends the requests as provider batch jobs (about half price, answered
        within 24 h) instead of live calls, waits for them (polling every ``poll_interval``
        seconds) and returns the same verdict table; the job is kept in ``batch_dir`` so a
        closed notebook can collect it later (see :mod:`rubrictools.grading.batch`,
        :func:`~rubrictools.submit_batch` and :func:`~rubrictools.collect_batch`).
    record
        Record the run (:mod:`rubrictools.records`): ``True`` (default) under
        ``$RUBRICTOOLS_RUNS`` or ``./rubrictools-runs``, a folder path, or ``False``. The
        record keeps the rubric, each judge's settings (never the key), versions, counts,
        cost, the inputs and this table; see :func:`~rubrictools.runs`,
        :func:`~rubrictools.load_run`, :func:`~rubrictools.compare_runs`. A batch job is
        recorded when its results are collected here.
    on_start
        Called before each judge call is sent (not for answers from the cache) with what it
        will ask: a dict with ``id`` (the submission's), ``judge``, ``criteria`` (the names
        the call judges) and ``messages`` (the exact chat messages; never an API key)
        (rubrify's ``on_criterion_start``). An exception in it is warned about once and never
        stops the run. Not with ``batch=True``.
    on_result
        Called as each judge call completes (answered from the cache, answered, or failed)
        with that call's verdict rows: a list of dicts with ``id, judge, criterion, verdict,
        value, explanation, error, error_kind`` (rubrify's per-criterion callback). For live
        progress views and early stopping logic; an exception in it is warned about once and
        never stops the run. Not with ``batch=True``.

    Returns
    -------
    polars.DataFrame
        The verdict table (the columns of :data:`rubrictools.VERDICT_SCHEMA`, plus
        ``error_kind``, ``raw_response``, ``reasoning``, ``reasoning_tokens``,
        ``cached_tokens`` and ``cache_write_tokens``, and the columns options add), in input
        order, one row per (submission, criterion, judge) plus ``judge="ensemble"`` rows for
        ensembles. Rule criteria (``Criterion(rule=...)``) are decided without any call, once
        per submission, in rows with ``judge="rule"``.

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> rubric = rt.Rubric.from_dict([{"name": "greets", "requirement": "Says hello"}])
    >>> judge = rt.ScriptedJudge(rule=lambda text, c: "MET" if "hello" in text.lower() else "UNMET")
    >>> df = pl.DataFrame({"id": [1, 2], "response": ["Hello there", "Go away"]})
    >>> v = df.pipe(rt.grade, rubric, model=judge, column="response", id_column="id", progress=False)
    >>> v.select("id", "criterion", "verdict").rows()
    [(1, 'greets', 'MET'), (2, 'greets', 'UNMET')]
    """
    opts = GradeOptions.pick(locals())
    store = runs_dir(record)
    check_callbacks(on_start=on_start, on_result=on_result, batch=batch)
    if batch:
        job = submit_batch_plan(df, rubric, opts, path=batch_dir)
        return job.collect(poll_interval=poll_interval, progress=progress, record=store or False)
    return grade_frame(df, rubric, opts, record=store, hooks=Hooks(on_start=on_start, on_result=on_result))


@adapted(moved_judge_settings)
async def agrade(
    df: Any,
    rubric: Rubric | None = None,
    *,
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
    max_cost_usd: float | Budget | None = None,
    progress: bool = True,
    distribution: bool = False,
    distribution_samples: int = 10,
    evidence: bool | None = None,
    criterion_context: CriterionContext = "focused",
    confidence: bool = False,
    output_constraints: Sequence[OutputConstraint] = (),
    on_unsupported: OnUnsupported = "flag",
    record: bool | str | Path = True,
    on_start: OnStart | None = None,
    on_result: OnResult | None = None,
) -> pl.DataFrame:
    """Async version of :func:`grade` for an in-memory frame (``await rt.agrade(...)``); same
    parameters (except streaming and batch ones) and the same verdict table.

    Parameters
    ----------
    df
        polars DataFrame or LazyFrame, or pandas DataFrame, one submission per row.
    rubric
        The :class:`~rubrictools.Rubric` (or rubric dict); optional with ``rubric_column``.
    model
        As in :func:`grade`: a litellm model string, a :class:`~rubrictools.Judge`, a
        :class:`~rubrictools.ScriptedJudge` (also ``"rubrictools/scripted"``), or a list of them
        for an ensemble.
    column, id_column, query_column, reference_column, rubric_column, image_column, mode, aggregate
        As in :func:`grade`, with the same defaults.
    examples, max_examples, shuffle_options, seed, grade_part, on_null, thinking_markers, conversation_part
        As in :func:`grade`, with the same defaults.
    cache, progress, distribution, distribution_samples, evidence, criterion_context, confidence
        As in :func:`grade`, with the same defaults.
    output_constraints, on_unsupported, record, on_start, on_result
        As in :func:`grade`, with the same defaults.
    max_cost_usd
        Stop making calls once this much has been spent; the rest become error rows. It may
        also be a :class:`rubrictools.grading.budget.Budget`: several ``agrade`` calls running
        on one event loop then draw on that one cap, each request reserving its worst case as
        in a single run.

    Returns
    -------
    polars.DataFrame
        The verdict table, as :func:`grade` returns it.

    Example
    -------
    >>> import asyncio, polars as pl, rubrictools as rt
    >>> rubric = rt.Rubric.from_dict([{"name": "a", "requirement": "Says hello"}])
    >>> df = pl.DataFrame({"submission": ["hello"]})
    >>> v = asyncio.run(rt.agrade(df, rubric, model="rubrictools/scripted", progress=False, record=False))
    >>> v.height
    1
    """
    check_callbacks(on_start=on_start, on_result=on_result, batch=False)
    return await grade_frame_async(
        df,
        rubric,
        GradeOptions.pick(locals()),
        record=runs_dir(record),
        hooks=Hooks(on_start=on_start, on_result=on_result),
    )
