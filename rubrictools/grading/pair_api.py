"""`grade_pairs`: which of two answers is better, per criterion or overall, in both orders.

The pairwise counterpart of :func:`rubrictools.grade`: the same judges, cache, retries, budget,
provider batch jobs (``batch=True``) and streaming (:func:`grade_pairs_to_parquet`) run it,
and it returns a preference table (:mod:`rubrictools.grading.preferences`) instead of a verdict
table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import polars as pl

from rubrictools.conversations import ConversationPart
from rubrictools.deprecation import adapted
from rubrictools.grading.batch import submit_batch_plan
from rubrictools.grading.live import grade_frame
from rubrictools.grading.options import (
    CacheSetting,
    GradeOptions,
    GradePart,
    Inconsistent,
    OnNull,
    moved_judge_settings,
)
from rubrictools.grading.streaming import stream_parts
from rubrictools.records import runs_dir
from rubrictools.rubric import Rubric

__all__ = ["grade_pairs", "grade_pairs_to_parquet"]

PairMode = Literal["per_criterion", "holistic"]


@adapted(moved_judge_settings)
def grade_pairs(
    df: Any,
    rubric: Rubric | None = None,
    *,
    a: str = "response_a",
    b: str = "response_b",
    systems: tuple[str, str] | None = None,
    model: Any = None,
    id_column: str | None = None,
    query_column: str | None = None,
    reference_column: str | None = None,
    rubric_column: str | None = None,
    mode: PairMode = "per_criterion",
    swap: bool = True,
    inconsistent: Inconsistent = "tie",
    ties: bool = True,
    grade_part: GradePart = "output",
    on_null: OnNull = "raise",
    thinking_markers: bool = False,
    conversation_part: ConversationPart = "last_assistant",
    cache: CacheSetting = True,
    max_cost_usd: float | None = None,
    progress: bool = True,
    batch: bool = False,
    batch_dir: str | Path | None = None,
    poll_interval: float = 30.0,
    record: bool | str | Path = True,
) -> pl.DataFrame:
    """Compare two answers per row, A (column ``a``) against B (column ``b``), with LLM judges.

    Parameters
    ----------
    df
        polars (or pandas) DataFrame, one pair per row (a source larger than memory:
        :func:`grade_pairs_to_parquet`).
    rubric
        The :class:`~rubrictools.Rubric` (or ``rubric_column``). Rule criteria are refused:
        they need no judge (compare rubric scores with :func:`rubrictools.preferences_from_scores`).
    a, b
        The two answer columns (strings or thinking/output structs; must differ).
    systems
        Two columns naming each row's system of A and of B (for :func:`~rubrictools.win_rates`
        and :func:`~rubrictools.rank_systems`); ``None`` uses the column names ``a`` and ``b``.
        A row pairing a system with itself is an error.
    mode
        ``"per_criterion"``: one question per criterion, which answer meets it better (for a
        penalty criterion: which shows the fault less). ``"holistic"``: one overall preference,
        the rubric as guidance (row ``criterion = HOLISTIC``).
    swap, inconsistent
        ``swap=True`` asks every question in both orders (A first, then B first), which
        doubles the calls and exposes position bias. A pair whose two orders disagree is
        ``consistent=False`` and becomes ``"tie"`` (default), the A-first answer
        (``"first"``) or an error row (``"error"``).
    ties
        Let the judge answer ``"tie"`` (otherwise it must choose).
    model, id_column, query_column, reference_column, rubric_column
        As in :func:`rubrictools.grade`.
    grade_part, thinking_markers, conversation_part, on_null
        As in :func:`rubrictools.grade`.
    cache, max_cost_usd, progress, batch, batch_dir, poll_interval
        As in :func:`rubrictools.grade`: cached answers, a budget, provider batch jobs.
    api_base, api_key, temperature, max_tokens, timeout, max_concurrency, max_retries
        Settings of the :class:`~rubrictools.Judge` built when ``model`` is a string.
    record
        Record the run in the run store as :func:`rubrictools.grade` does (a batch job when
        its results are collected here).
    backoff_base, backoff_max, response_format, structured_output, system_prompt, litellm_kwargs, transport
        Likewise (``None``: the Judge's default).

    Returns
    -------
    polars.DataFrame
        The preference table: one row per (pair, criterion, judge) with ``id, system_a,
        system_b, criterion, judge, preferred`` (``"A"``, ``"B"``, ``"tie"``, from A's side
        whatever order it was shown in), ``value`` (A's share: 1, 0.5, 0), ``preferred_ab``
        and ``preferred_ba`` (each order's answer), ``consistent``, ``explanation``,
        ``explanation_ba``, ``error``, ``weight``, tokens, cost (both orders summed),
        ``cached``, ``attempts``, ``latency_s``, ``raw_response``. Several judges add
        ``judge="ensemble"`` rows (weighted mean of their values).

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> rubric = rt.Rubric.from_dict([{"name": "polite", "requirement": "Says please"}])
    >>> judge = rt.ScriptedJudge(rule=lambda text, c: "MET" if "please" in text else "UNMET")
    >>> pairs = pl.DataFrame({"response_a": ["Sit, please.", "Sit."], "response_b": ["Sit.", "Sit."]})
    >>> prefs = rt.grade_pairs(pairs, rubric, model=judge, progress=False)
    >>> prefs.select("id", "preferred", "preferred_ab", "preferred_ba", "consistent").rows()
    [(0, 'A', 'A', 'A', True), (1, 'tie', 'tie', 'tie', True)]
    """
    opts = GradeOptions.pick({**locals(), "column": a, "pair_column": b})
    store = runs_dir(record)
    if batch:
        job = submit_batch_plan(df, rubric, opts, path=batch_dir)
        return job.collect(poll_interval=poll_interval, progress=progress, record=store or False)
    return grade_frame(df, rubric, opts, record=store)


@adapted(moved_judge_settings)
def grade_pairs_to_parquet(
    source: Any,
    rubric: Rubric | None = None,
    *,
    output: str | Path,
    batch_size: int = 10_000,
    retry_errors: bool = True,
    a: str = "response_a",
    b: str = "response_b",
    systems: tuple[str, str] | None = None,
    model: Any = None,
    id_column: str | None = None,
    query_column: str | None = None,
    reference_column: str | None = None,
    rubric_column: str | None = None,
    mode: PairMode = "per_criterion",
    swap: bool = True,
    inconsistent: Inconsistent = "tie",
    ties: bool = True,
    grade_part: GradePart = "output",
    on_null: OnNull = "raise",
    thinking_markers: bool = False,
    conversation_part: ConversationPart = "last_assistant",
    cache: CacheSetting = True,
    max_cost_usd: float | None = None,
    progress: bool = True,
) -> pl.LazyFrame:
    """:func:`grade_pairs` ``batch_size`` rows at a time into resumable parquet parts under
    ``output``, as :func:`rubrictools.grade_to_parquet` does for single answers (a part on disk
    is never graded again).

    Parameters
    ----------
    source
        A polars DataFrame or LazyFrame, a pandas DataFrame, or a parquet file, directory or
        glob, one pair per row; it is never read whole.
    rubric
        The :class:`~rubrictools.Rubric` (or ``rubric_column``), as in :func:`grade_pairs`.
    output
        The directory of the parts (``part-NNNNN.parquet``); settings are checked against
        ``output/_manifest.json`` on a resume.
    batch_size
        Pairs graded and written per part (default 10,000).
    retry_errors
        On a resume, ``True`` (default) re-grades the pairs of finished parts with error rows
        and rewrites those parts; ``False`` keeps finished parts as they are.
    a, b, systems, model, id_column, query_column, reference_column, rubric_column, mode
        As in :func:`grade_pairs`, with the same defaults (without ``id_column`` the ids are
        global row numbers).
    swap, inconsistent, ties, grade_part, on_null, thinking_markers, conversation_part, cache
        As in :func:`grade_pairs`, with the same defaults.
    max_cost_usd
        As in :func:`grade_pairs`, but the cap applies to each part's grading on its own, not
        to the whole run.
    progress
        Show a tqdm progress bar counting parts.

    Returns
    -------
    polars.LazyFrame
        A scan of every part's preference table, in input order.

    Example
    -------
    >>> import tempfile, polars as pl, rubrictools as rt
    >>> rubric = rt.Rubric.from_dict([{"name": "polite", "requirement": "Says please"}])
    >>> judge = rt.ScriptedJudge(rule=lambda text, c: "MET" if "please" in text else "UNMET")
    >>> pairs = pl.DataFrame({"response_a": ["Sit, please.", "Sit.", "Go."], "response_b": ["Sit."] * 3})
    >>> lf = rt.grade_pairs_to_parquet(pairs, rubric, output=tempfile.mkdtemp(), batch_size=2, model=judge,
    ...                                progress=False)
    >>> lf.collect()["preferred"].to_list()
    ['A', 'tie', 'tie']
    """
    opts = GradeOptions.pick({**locals(), "column": a, "pair_column": b})
    return stream_parts(source, rubric, output, opts=opts, batch_size=batch_size, retry_errors=retry_errors)
