"""Live grading of one in-memory frame: plan, execute, assemble (what every entry point runs)."""

from __future__ import annotations

import threading
from typing import Any

import polars as pl

from rubrictools.grading.bulk import bulk_objects
from rubrictools.grading.executor import execute
from rubrictools.grading.inputs import open_cache
from rubrictools.grading.options import GradeOptions
from rubrictools.grading.plan import assign_keys, build_plan
from rubrictools.grading.sync import run_sync
from rubrictools.judge import Judge, ResponseCache
from rubrictools.judge.transport import aclose_clients
from rubrictools.rubric import Rubric

__all__ = ["grade_frame", "grade_frame_async"]


async def grade_frame_async(
    df: Any, rubric: Rubric | None, opts: GradeOptions, *, cancel: threading.Event | None = None
) -> pl.DataFrame:
    """The verdict table of ``df`` under ``opts`` (cache read and written as answers arrive)."""
    with bulk_objects():
        plan = build_plan(df, rubric, opts)
    store = open_cache(opts.cache, plan.judges)
    if store is not None:
        with bulk_objects():
            assign_keys(plan)
    try:
        await execute(
            plan.calls, plan.judges, store, max_cost_usd=opts.max_cost_usd, progress=opts.progress, cancel=cancel
        )
    finally:
        if store is not None and not isinstance(opts.cache, ResponseCache):
            store.close()
        if any(isinstance(j, Judge) and j.wire_transport == "direct" for j in plan.judges):
            await aclose_clients()
    with bulk_objects():
        return plan.verdicts()


def grade_frame(df: Any, rubric: Rubric | None, opts: GradeOptions) -> pl.DataFrame:
    """:func:`grade_frame_async` from sync code (a script or a Jupyter cell); Ctrl-C stops new
    calls, lets calls in flight finish (their answers are cached), then raises."""
    cancel = threading.Event()
    return run_sync(grade_frame_async(df, rubric, opts, cancel=cancel), cancel)
