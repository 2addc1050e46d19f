"""Grade a Ray Dataset across a cluster with the same call as in a notebook.

``rt.ray.grade(ds, rubric, model=..., id_column="id", output="verdicts/")`` runs
:func:`rubrictools.grade` on every block of ``ds`` inside Ray Data's ``map_batches`` (a pool
of grader actors), so the prompts, parsing, retries, cache keys and verdict table are those
of a notebook run. What Ray adds:

- a **cluster-wide concurrency limit**: one small actor hands out call slots; every grader
  leases slots for a block and returns them after, so the calls in flight across all nodes
  never exceed ``concurrency`` (provider rate limits are per account, not per node);
- a **per-node response cache** (``<cache dir>/ray/node-<id>.sqlite``, or one shared
  ``cache=`` path on a shared filesystem): a re-run after an interrupt repeats no answered
  call on that node;
- output as **parquet verdict tables** under ``output`` (optionally hive-partitioned by
  ``partition_by`` columns), returned as a polars LazyFrame that :func:`rubrictools.score`
  and :func:`rubrictools.agreement` read lazily.

Install with ``pip install 'rubrictools[ray]'``. Connects to the running cluster
(``RAY_ADDRESS``) or starts a local instance when none is initialised. API keys travel to the
graders in memory as task arguments (or come from the workers' environment, e.g.
``OPENAI_API_KEY``); they are never written to the output, the caches or a log.

Example
-------
>>> import rubrictools as rt
>>> lf = rt.ray.grade("answers/*.parquet", rubric, model="openai/gpt-4.1-mini",
...                   id_column="id", output="verdicts/", concurrency=256)  # doctest: +SKIP
>>> rt.score(lf, rubric)  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import math
import shutil
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from rubrictools.conversations import ConversationPart
from rubrictools.deprecation import adapted
from rubrictools.frames import to_polars
from rubrictools.grading.inputs import resolve_judges
from rubrictools.grading.live import grade_frame
from rubrictools.grading.options import (
    CriterionContext,
    GradeOptions,
    GradePart,
    Mode,
    OnNull,
    OnUnsupported,
    moved_judge_settings,
)
from rubrictools.grading.streaming import scan_source
from rubrictools.judge.cache import default_cache_path
from rubrictools.judge.config import Judge
from rubrictools.rubric import Rubric
from rubrictools.rubric.constraints import OutputConstraint

__all__ = ["ConcurrencyLimiter", "grade", "make_limiter"]


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ImportError("rt.ray needs Ray: pip install 'rubrictools[ray]'") from None
    return ray


class ConcurrencyLimiter:
    """Slots for judge calls shared by every grader of a run (a Ray actor; async methods).

    ``acquire(want, minimum)`` waits until at least ``minimum`` slots are free and grants up to
    ``want``; ``release(n)`` gives them back. ``stats()`` reports the peak number of slots
    leased at once, which never exceeds ``limit``.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.free = limit
        self.peak = 0
        self.leases = 0
        self._cond: asyncio.Condition | None = None

    def _condition(self) -> asyncio.Condition:
        if self._cond is None:
            self._cond = asyncio.Condition()
        return self._cond

    async def acquire(self, want: int, minimum: int = 1) -> int:
        minimum = min(max(1, minimum), self.limit)
        cond = self._condition()
        async with cond:
            await cond.wait_for(lambda: self.free >= minimum)
            granted = max(minimum, min(want, self.free))
            self.free -= granted
            self.leases += 1
            self.peak = max(self.peak, self.limit - self.free)
            return granted

    async def release(self, n: int) -> None:
        cond = self._condition()
        async with cond:
            self.free = min(self.limit, self.free + n)
            cond.notify_all()

    async def stats(self) -> dict[str, int]:
        return {"limit": self.limit, "free": self.free, "peak": self.peak, "leases": self.leases}


def make_limiter(limit: int) -> Any:
    """A :class:`ConcurrencyLimiter` actor with ``limit`` slots (pass it as ``grade(limiter=...)``
    to share one limit between runs; ``ray.get(lim.stats.remote())`` reports its peak)."""
    if limit < 1:
        raise ValueError("limit must be >= 1")
    return _ray().remote(num_cpus=0, max_concurrency=10_000)(ConcurrencyLimiter).remote(limit)


class Grader:
    """One Ray Data actor: grades blocks with :func:`rubrictools.grade` under leased slots."""

    def __init__(self, limiter: Any, opts: GradeOptions, rubric: Any, cache: Any, per_worker: int) -> None:
        self.limiter = limiter
        self.opts = opts
        self.judges = list(opts.model)
        self.rubric = rubric
        self.per_worker = per_worker
        self.cache = self._cache_path(cache)
        self._lock = threading.Lock()  # one block at a time per actor; its calls run concurrently inside

    @staticmethod
    def _cache_path(cache: Any) -> Any:
        if cache is False:
            return False
        if cache is None or cache is True:
            import ray

            node = ray.get_runtime_context().get_node_id()[:12]
            return default_cache_path().parent / "ray" / f"node-{node}.sqlite"
        return Path(cache)

    def __call__(self, batch: Any) -> Any:
        frame = pl.from_arrow(batch)
        assert isinstance(frame, pl.DataFrame)
        with self._lock:
            return self._grade(frame).to_arrow()

    def _grade(self, frame: pl.DataFrame) -> pl.DataFrame:
        import ray

        llm = [j for j in self.judges if isinstance(j, Judge)]
        granted = ray.get(self.limiter.acquire.remote(self.per_worker, max(1, len(llm)))) if llm else 0
        try:
            share = max(1, granted // max(1, len(llm)))
            judges = [
                j.model_copy(update={"max_concurrency": share}) if isinstance(j, Judge) else j for j in self.judges
            ]
            return grade_frame(frame, self.rubric, self.opts.replace(model=judges, cache=self.cache))
        finally:
            if granted:
                ray.get(self.limiter.release.remote(granted))


@adapted(moved_judge_settings)
def grade(
    ds: Any,
    rubric: Any = None,
    *,
    model: Any,
    output: str | Path,
    id_column: str,
    column: str = "submission",
    concurrency: int = 64,
    num_workers: int = 2,
    num_cpus: float = 0.25,
    batch_size: int = 1_000,
    cache: bool | str | Path | None = None,
    partition_by: list[str] | None = None,
    overwrite: bool = False,
    limiter: Any = None,
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
    max_cost_usd: float | None = None,
    distribution: bool = False,
    distribution_samples: int = 10,
    evidence: bool | None = None,
    criterion_context: CriterionContext = "focused",
    confidence: bool = False,
    output_constraints: Sequence[OutputConstraint] = (),
    on_unsupported: OnUnsupported = "flag",
) -> pl.LazyFrame:
    """Grade a Ray Dataset (or parquet path/glob, or polars DataFrame) into parquet verdicts.

    Parameters
    ----------
    ds
        ``ray.data.Dataset``, a parquet file/directory/glob (read with ``ray.data.read_parquet``)
        or a polars/pandas DataFrame.
    rubric, model, column
        As for :func:`rubrictools.grade`; the judge's settings go on :class:`rubrictools.Judge`.
    query_column, reference_column, rubric_column, image_column, mode, aggregate, examples, max_examples
        As for :func:`rubrictools.grade`.
    shuffle_options, seed, grade_part, on_null, thinking_markers, conversation_part, max_cost_usd
        As for :func:`rubrictools.grade` (``max_cost_usd`` is per grader actor).
    distribution, distribution_samples, evidence, criterion_context, confidence, output_constraints, on_unsupported
        As for :func:`rubrictools.grade`. Ray Data shows its own progress; provider batch jobs
        are :func:`rubrictools.submit_batch`'s.
    output
        Directory of the parquet verdict files. Must be empty unless ``overwrite=True``
        (resume an interrupted run by re-running with ``overwrite=True``: the caches answer
        every call that had come back).
    id_column
        Required: Ray datasets have no stable row numbers across blocks.
    concurrency
        Judge calls in flight across the whole cluster.
    num_workers, num_cpus, batch_size
        Grader actors, CPUs reserved per actor (graders mostly wait on the network; the
        default leaves CPUs to Ray Data's read and write tasks), rows per block.
    cache
        ``None``/``True``: one SQLite cache per node; a path: one shared cache (a shared
        filesystem); ``False``: none.
    partition_by
        Hive-partition the output by these verdict columns (e.g. ``["judge"]``).
    limiter
        An existing :class:`ConcurrencyLimiter` actor to share one limit between runs.

    Returns
    -------
    polars.LazyFrame
        A scan of every verdict file (rows in no guaranteed order; sort by ``id``).
    """
    ray = _ray()

    if concurrency < 1 or num_workers < 1 or batch_size < 1:
        raise ValueError("concurrency, num_workers and batch_size must be >= 1")
    given = {k: v for k, v in locals().items() if k not in ("cache", "model")}  # cache: one per node, below
    opts = GradeOptions.pick({**given, "progress": False}).replace(model=resolve_judges(model))
    if rubric is not None and not isinstance(rubric, Rubric):
        rubric = Rubric.from_dict(rubric)
    if not ray.is_initialized():
        ray.init(ignore_reinit_error=True, include_dashboard=False, log_to_driver=False)
    if isinstance(ds, (str, Path)):
        rows = scan_source(ds).select(pl.len()).collect().item()  # parquet metadata only
        blocks = max(num_workers, math.ceil(rows / batch_size))  # enough blocks to keep every grader busy
        # a file with one large row group reads as one block: split it (no shuffle)
        ds = ray.data.read_parquet(str(ds), override_num_blocks=blocks).repartition(blocks)
    elif not hasattr(ds, "map_batches"):
        frame = ds.collect() if isinstance(ds, pl.LazyFrame) else to_polars(ds)
        # one block per batch, so every grader gets work (no shuffle needed)
        step = max(1, min(batch_size, math.ceil(frame.height / num_workers)))
        ds = ray.data.from_arrow([frame.slice(i, step).to_arrow() for i in range(0, max(frame.height, 1), step)])
    names = ds.schema().names
    for name in ("column", "id_column", "query_column", "reference_column", "rubric_column"):
        col = getattr(opts, name)
        if col is not None and col not in names:
            raise ValueError(f"{name}={col!r} is not a column of the dataset (columns: {names})")
    out = Path(output)
    existing = list(out.rglob("*.parquet")) if out.exists() else []
    if existing:
        if not overwrite:
            raise ValueError(
                f"{out} already holds {len(existing)} parquet file(s); pass overwrite=True to replace them "
                "(answered calls come from the cache)"
            )
        shutil.rmtree(out)
    if limiter is None:
        limiter = make_limiter(concurrency)
    per_worker = max(1, math.ceil(concurrency / num_workers))
    graded = ds.map_batches(
        Grader,
        fn_constructor_kwargs={
            "limiter": limiter,
            "opts": opts,
            "rubric": rubric,
            "cache": cache,
            "per_worker": per_worker,
        },
        batch_size=batch_size,
        batch_format="pyarrow",
        compute=ray.data.ActorPoolStrategy(size=num_workers),
        num_cpus=num_cpus,
    )
    graded.write_parquet(str(out), partition_cols=partition_by)
    return pl.scan_parquet(
        out / ("**/*.parquet" if partition_by else "*.parquet"), hive_partitioning=bool(partition_by)
    )
