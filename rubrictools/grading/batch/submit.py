"""Submit a grading run as provider batch jobs: the requests live grading would send, at batch prices."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from rubrictools.conversations import ConversationPart
from rubrictools.deprecation import adapted
from rubrictools.frames import to_polars
from rubrictools.grading.batch.files import FORMAT, GROUP, HANDLE, MAX_REQUESTS, submitted_ids, write_json
from rubrictools.grading.batch.group import BatchGroup
from rubrictools.grading.batch.job import BatchJob
from rubrictools.grading.batch.results import plan_digest
from rubrictools.grading.batch.rounds import submit_rounds
from rubrictools.grading.budget import budget_limit
from rubrictools.grading.inputs import cache_path, resolve_judges
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
from rubrictools.grading.plan import assign_keys, build_plan
from rubrictools.grading.streaming import ROW_ID, scan_source, slice_of
from rubrictools.judge import Judge, ResponseCache, default_cache_path
from rubrictools.judge.providers import provider_of
from rubrictools.rubric import Rubric
from rubrictools.rubric.constraints import OutputConstraint

__all__ = ["submit_batch", "submit_batch_plan"]


@adapted(moved_judge_settings)
def submit_batch(
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
    path: str | Path | None = None,
    max_requests_per_batch: int = MAX_REQUESTS,
    slice_rows: int | None = None,
) -> BatchJob | BatchGroup:
    """Submit the grading of ``df`` as provider batch jobs; returns a :class:`BatchJob`.

    The requests are exactly those :func:`rubrictools.grade` would send, less those already
    answered in the response cache; ``job.collect()`` (or :func:`~rubrictools.collect_batch`
    with the job's directory, from a new session) waits for them and returns the usual verdict
    table. See :mod:`rubrictools.grading.batch`.

    Parameters
    ----------
    df
        polars or pandas DataFrame, one submission per row (with ``slice_rows``, also a
        LazyFrame or a parquet path or glob).
    rubric
        The :class:`~rubrictools.Rubric` (or rubric dict); optional with ``rubric_column``.
    model
        As in :func:`rubrictools.grade`, but every judge must be a provider model (a
        :class:`~rubrictools.Judge` or model string; a scripted or custom judge is refused).
        A judge's ``api_key`` is used for this session's calls only; it is never written to
        the job directory.
    column, id_column, query_column, reference_column, rubric_column, image_column, mode, aggregate
        As in :func:`rubrictools.grade`, with the same defaults.
    examples, max_examples, shuffle_options, seed, grade_part, on_null, thinking_markers, conversation_part
        As in :func:`rubrictools.grade`, with the same defaults.
    evidence, criterion_context, confidence, output_constraints, on_unsupported
        As in :func:`rubrictools.grade`, with the same defaults.
    progress
        Checked but unused: submitting waits for no answer (``job.collect(progress=...)``
        shows the polling bar).
    distribution, distribution_samples
        As in :func:`rubrictools.grade`, but the distribution comes from logprobs only:
        ``distribution_samples`` is not used.
    cache
        Where answers are kept (``True``: the judges' response cache, which live grading
        shares; a path; ``False``: a cache inside the job directory). Requests already
        answered there are not submitted.
    max_cost_usd
        Refuse to submit when the requests could cost more (prompt tokens plus ``max_tokens``
        per answer, at batch prices).
    path
        The job directory (default: ``<cache dir>/batches/<job digest>``). Submitting the
        same job to the same directory again returns the existing job instead of paying twice.
    max_requests_per_batch
        Larger jobs are split into several provider batches (OpenAI allows 50,000 lines and
        200 MB per file).
    slice_rows
        For inputs too large to plan in memory (``df`` may then be a LazyFrame or a parquet
        path or glob): one job per slice of this many rows under ``path`` (required), so
        memory depends on the slice, not on the input. Returns a :class:`BatchGroup`;
        re-running an interrupted submission submits only the slices not yet submitted.
        ``max_cost_usd`` then applies to each slice.

    Returns
    -------
    BatchJob or BatchGroup
        The submitted job (a :class:`BatchGroup` of one job per slice with ``slice_rows``).

    Example
    -------
    Against :class:`rubrictools.testing.FakeLLMServer`, a local stand-in for the provider (its
    rule, not a model, says MET when the answer contains "good"):

    >>> import tempfile, polars as pl, rubrictools as rt
    >>> from rubrictools.testing import FakeLLMServer
    >>> rubric = rt.Rubric.from_dict([{"name": "good", "requirement": "The answer is good"}])
    >>> df = pl.DataFrame({"id": [1, 2], "submission": ["a good answer", "a poor one"]})
    >>> with FakeLLMServer() as srv:
    ...     judge = rt.Judge(model="openai/gpt-4.1-mini", api_base=srv.url, api_key="sk-fake")
    ...     job = rt.submit_batch(df, rubric, model=judge, id_column="id", path=f"{tempfile.mkdtemp()}/job",
    ...                           cache=False)
    ...     verdicts = job.collect(poll_interval=0.01, progress=False)
    >>> verdicts.select("id", "verdict").rows()
    [(1, 'MET'), (2, 'UNMET')]
    """
    opts = GradeOptions.pick(locals())
    if slice_rows is not None:
        return _submit_slices(
            df, rubric, opts, path=path, slice_rows=slice_rows, max_requests_per_batch=max_requests_per_batch
        )
    return submit_batch_plan(df, rubric, opts, path=path, max_requests_per_batch=max_requests_per_batch)


def _submit_slices(
    df: Any,
    rubric: Rubric | None,
    opts: GradeOptions,
    *,
    path: str | Path | None,
    slice_rows: int,
    max_requests_per_batch: int,
) -> BatchGroup:
    if path is None:
        raise ValueError("slice_rows needs path= (the directory that holds one job per slice)")
    if slice_rows < 1:
        raise ValueError(f"slice_rows must be >= 1, got {slice_rows}")
    lf = scan_source(df)
    n = lf.select(pl.len()).collect().item()
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    names = [f"slice-{k:05d}" for k in range(max(1, -(-n // slice_rows)))]
    meta = {"rows": n, "slice_rows": slice_rows, "slices": names}
    if (root / GROUP).exists():
        old = json.loads((root / GROUP).read_text())
        if old != meta:
            raise ValueError(
                f"{root} holds a sliced job of {old['rows']} rows in slices of {old['slice_rows']}; choose another path"
            )
    else:
        write_json(root / GROUP, meta)
    slice_opts = opts.replace(id_column=opts.id_column or ROW_ID)
    for k, name in enumerate(names):
        chunk = slice_of(lf, k, slice_rows, opts.id_column)
        # an existing slice directory returns its job: an interrupted submission resumes
        submit_batch_plan(chunk, rubric, slice_opts, path=root / name, max_requests_per_batch=max_requests_per_batch)
    return BatchGroup(root, api_key=shared_key(resolve_judges(opts.model)))


def shared_key(judges: Sequence[Any]) -> str | None:
    """The API key the judges share (a job collects its files with it), or None."""
    keys = {j.api_key.get_secret_value() for j in judges if isinstance(j, Judge) and j.api_key is not None}
    return keys.pop() if len(keys) == 1 else None


def submit_batch_plan(
    df: Any,
    rubric: Rubric | None,
    opts: GradeOptions,
    *,
    path: str | Path | None,
    max_requests_per_batch: int = MAX_REQUESTS,
) -> BatchJob:
    """Plan ``df`` under ``opts`` and submit every request not answered yet as provider batches."""
    if max_requests_per_batch < 1:
        raise ValueError("max_requests_per_batch must be >= 1")
    settings = opts.settings()
    if isinstance(df, (str, Path, pl.LazyFrame)):
        df = scan_source(df).collect()
    plan = build_plan(df, rubric, opts.replace(max_cost_usd=None, distribution_samples=0))
    for j in plan.judges:
        if not isinstance(j, Judge):
            raise ValueError(f"batch grading sends requests to a provider; {j!r} answers at once: use rt.grade")
        provider_of(j.model)
    assign_keys(plan)
    digest = plan_digest(plan)
    root = Path(path) if path is not None else default_cache_path().parent / "batches" / digest[:16]
    handle = root / HANDLE
    if handle.exists():
        job = BatchJob(root, api_key=shared_key(plan.judges))
        if job.handle["digest"] != digest:
            raise ValueError(
                f"{root} holds another batch job (different inputs, rubric or judges); choose another path"
            )
        job.judge_objects = plan.judges  # type: ignore[assignment]  # a batch plan holds Judge objects only (a ScriptedJudge is refused above)
        # a submission interrupted before every request was sent: send the ones never sent
        sent = {cid for r in job.rounds for cid in submitted_ids(root / r["requests_file"])}
        store = ResponseCache(job.handle["cache"])
        try:
            submit_rounds(
                job,
                plan,
                store,
                max_requests=max_requests_per_batch,
                max_cost_usd=budget_limit(opts.max_cost_usd),
                skip=sent,
            )
        finally:
            store.close()
        return job
    root.mkdir(parents=True, exist_ok=True)
    store_path = cache_path(opts.cache, plan.judges) or root / "responses.sqlite"
    # the graded columns only; per-row rubrics as JSON text
    inp = plan.inp
    frame = inp.frame.select([c for c in opts.input_columns() if c != settings["rubric_column"]])
    if settings["rubric_column"] is not None:
        frame = frame.with_columns(
            pl.Series(settings["rubric_column"], [r.to_json(indent=None) for r in inp.rubrics], dtype=pl.String)
        )
    frame.write_parquet(root / "inputs.parquet")
    if opts.examples is not None:
        to_polars(opts.examples, name="examples").write_parquet(root / "examples.parquet")
    base_rubric = None if rubric is None else (rubric if isinstance(rubric, Rubric) else Rubric.from_dict(rubric))
    store = ResponseCache(store_path)
    try:
        keys = [c.key for c in plan.calls if c.key is not None]
        hits = store.get_many(keys)
        precached = sum(1 for k in keys if k in hits)
        h = {
            "format": FORMAT,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "digest": digest,
            "settings": settings,
            "rubric": None if base_rubric is None else base_rubric.to_dict(),
            "judges": [j.model_dump(mode="json", exclude={"api_key"}) for j in plan.judges],  # type: ignore[union-attr]  # a batch plan holds Judge objects only (a ScriptedJudge is refused above)
            "cache": str(store_path),
            "calls": len(plan.calls),
            "unique_requests": len(set(keys)),
            "precached": precached,
            "rounds": [],
        }
        write_json(handle, h)
        job = BatchJob(root, api_key=shared_key(plan.judges))
        job.judge_objects = plan.judges  # type: ignore[assignment]  # a batch plan holds Judge objects only (a ScriptedJudge is refused above)
        submit_rounds(
            job, plan, store, max_requests=max_requests_per_batch, max_cost_usd=budget_limit(opts.max_cost_usd)
        )
    finally:
        store.close()
    return job
