"""Live grading of one in-memory frame: plan, execute, assemble (what every entry point runs)."""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from rubrictools.grading.bulk import bulk_objects
from rubrictools.grading.executor import Hooks, execute
from rubrictools.grading.inputs import open_cache
from rubrictools.grading.options import GradeOptions
from rubrictools.grading.plan import assign_keys, build_plan
from rubrictools.grading.recording import record_run
from rubrictools.grading.sync import run_sync
from rubrictools.judge import ResponseCache
from rubrictools.judge.transport import clients_in_use
from rubrictools.rubric import Rubric

__all__ = ["grade_frame", "grade_frame_async"]


async def grade_frame_async(
    df: Any,
    rubric: Rubric | None,
    opts: GradeOptions,
    *,
    cancel: threading.Event | None = None,
    record: Path | None = None,
    hooks: Hooks | None = None,
) -> pl.DataFrame:
    """The verdict table of ``df`` under ``opts`` (cache read and written as answers arrive);
    ``record``: the run store to record the run in (:mod:`rubrictools.records`)."""
    started = datetime.now().astimezone()
    with bulk_objects():
        plan = build_plan(df, rubric, opts)
    store = open_cache(opts.cache, plan.judges)
    if store is not None:
        with bulk_objects():
            assign_keys(plan)
    try:
        async with clients_in_use():  # the direct transport's session, shared by concurrent runs
            await execute(
                plan.calls,
                plan.judges,
                store,
                max_cost_usd=opts.max_cost_usd,
                progress=opts.progress,
                cancel=cancel,
                hooks=hooks,
            )
    finally:
        if store is not None and not isinstance(opts.cache, ResponseCache):
            store.close()
    with bulk_objects():
        verdicts = plan.verdicts()
    if record is not None:
        if store is None:
            assign_keys(plan)  # the record's request hash is over the requests' keys
        record_run(
            record, kind="grade_pairs" if opts.pairwise else "grade", plan=plan, verdicts=verdicts, started=started
        )
    return verdicts


def grade_frame(
    df: Any, rubric: Rubric | None, opts: GradeOptions, *, record: Path | None = None, hooks: Hooks | None = None
) -> pl.DataFrame:
    """:func:`grade_frame_async` from sync code (a script or a Jupyter cell); Ctrl-C stops new
    calls, lets calls in flight finish (their answers are cached), then raises."""
    cancel = threading.Event()
    return run_sync(grade_frame_async(df, rubric, opts, cancel=cancel, record=record, hooks=hooks), cancel)
