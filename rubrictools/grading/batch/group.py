"""Sliced batch jobs (one job per slice of a large input) and collecting any job by its directory."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import polars as pl

from rubrictools.grading.batch.files import GROUP, HANDLE
from rubrictools.grading.batch.job import BatchJob

__all__ = ["BatchGroup", "collect_batch"]


class BatchGroup:
    """The batch jobs of one large input, one per slice (``submit_batch(..., slice_rows=N)``).

    ``collect(output=dir)`` writes each slice's verdict table as ``part-NNNNN.parquet`` and
    returns a lazy scan, so collecting millions of rows needs the memory of one slice.

    Parameters
    ----------
    path
        The group's directory, as ``submit_batch(..., slice_rows=N)`` wrote it (one
        sub-directory per slice).
    api_key
        The provider API key for this session's calls (``None``: the provider's environment
        variable).

    Example
    -------
    >>> import tempfile, polars as pl, rubrictools as rt
    >>> from rubrictools.testing import FakeLLMServer
    >>> rubric = rt.Rubric.from_dict([{"name": "good", "requirement": "The answer is good"}])
    >>> df = pl.DataFrame({"id": [1, 2, 3], "submission": ["a good answer", "a poor one", "good"]})
    >>> path = f"{tempfile.mkdtemp()}/jobs"
    >>> with FakeLLMServer() as srv:
    ...     judge = rt.Judge(model="openai/gpt-4.1-mini", api_base=srv.url, api_key="sk-fake")
    ...     group = rt.submit_batch(df, rubric, model=judge, id_column="id", path=path, slice_rows=2, cache=False)
    ...     verdicts = group.collect(poll_interval=0.01, progress=False)
    >>> len(group.jobs), verdicts.height
    (2, 3)
    """

    def __init__(self, path: str | Path, *, api_key: str | None = None) -> None:
        self.path = Path(path)
        meta = json.loads((self.path / GROUP).read_text())
        self.rows, self.slice_rows = meta["rows"], meta["slice_rows"]
        self.jobs = [
            BatchJob(self.path / name, api_key=api_key)
            for name in meta["slices"]
            if (self.path / name / HANDLE).exists()
        ]
        self.expected = len(meta["slices"])

    def __repr__(self) -> str:
        rounds = [r["status"] for j in self.jobs for r in j.rounds]
        state = ", ".join(f"{rounds.count(k)} {k}" for k in sorted(set(rounds))) or "nothing to submit"
        return (
            f"BatchGroup({str(self.path)!r}: {self.rows:,} rows in {len(self.jobs)}/{self.expected} submitted "
            f"slices of {self.slice_rows:,}; provider batches: {state})"
        )

    @property
    def done(self) -> bool:
        return len(self.jobs) == self.expected and all(j.done for j in self.jobs)

    def status(self, refresh: bool = True) -> pl.DataFrame:
        """:meth:`BatchJob.status` of every slice, with a ``slice`` column."""
        return pl.concat([j.status(refresh).with_columns(pl.lit(k).alias("slice")) for k, j in enumerate(self.jobs)])

    def wait(self, *, poll_interval: float = 30.0, timeout: float | None = None, progress: bool = True) -> BatchGroup:
        """Poll every slice's batches until all are final (TimeoutError after ``timeout`` s)."""
        if len(self.jobs) != self.expected:
            raise RuntimeError(
                f"only {len(self.jobs)} of {self.expected} slices were submitted; run the same "
                "submit_batch call again to submit the rest"
            )
        t0 = time.monotonic()
        for j in self.jobs:
            left = None if timeout is None else max(0.0, timeout - (time.monotonic() - t0))
            j.wait(poll_interval=poll_interval, timeout=left, progress=progress)
        return self

    def collect(
        self,
        *,
        output: str | Path | None = None,
        wait: bool = True,
        poll_interval: float = 30.0,
        timeout: float | None = None,
        progress: bool = True,
    ) -> pl.DataFrame | pl.LazyFrame:
        """Every slice's verdict table: concatenated, or written to ``output`` as parquet parts
        and returned as a LazyFrame."""
        if wait:
            self.wait(poll_interval=poll_interval, timeout=timeout, progress=progress)
        if output is None:
            return pl.concat([j.collect(wait=False, progress=False) for j in self.jobs], how="vertical_relaxed")
        out = Path(output)
        out.mkdir(parents=True, exist_ok=True)
        for k, j in enumerate(self.jobs):
            part = out / f"part-{k:05d}.parquet"
            tmp = part.with_suffix(".parquet.tmp")
            j.collect(wait=False, progress=False).write_parquet(tmp)
            os.replace(tmp, part)
        return pl.scan_parquet(out / "part-*.parquet")

    def unanswered(self) -> int:
        return sum(j.unanswered() for j in self.jobs)

    def resubmit(self) -> BatchGroup:
        """:meth:`BatchJob.resubmit` for every slice."""
        for j in self.jobs:
            j.resubmit()  # submits nothing for a slice that is fully answered
        return self


def collect_batch(
    job: BatchJob | BatchGroup | str | Path,
    *,
    api_key: str | None = None,
    wait: bool = True,
    poll_interval: float = 30.0,
    timeout: float | None = None,
    progress: bool = True,
    record: bool | str | Path = True,
) -> pl.DataFrame:
    """The verdict table of a batch job, by object or directory (e.g. from a new session);
    see :meth:`BatchJob.collect`.

    Parameters
    ----------
    job
        A :class:`BatchJob` or :class:`BatchGroup` (from :func:`~rubrictools.submit_batch`), or
        the directory of either.
    api_key
        The provider API key for this session's calls (a job directory never holds one).
        ``None``: a job object from this session keeps its judges' keys, and a job read from
        its directory uses the provider's environment variable.
    wait, poll_interval, timeout
        ``wait=True`` (default) polls every ``poll_interval`` seconds until every batch is final,
        raising ``TimeoutError`` after ``timeout`` seconds (``None``: no limit; the job keeps
        running at the provider, collect it later); ``wait=False`` returns at once, and
        requests still running are error rows saying so.
    progress
        Show a progress bar counting answered requests while waiting.
    record
        Record the run (:mod:`rubrictools.records`) as :func:`rubrictools.grade` does:
        ``True`` (default) in the default store, a folder path, or ``False``; a group of jobs
        (``slice_rows``) is not recorded.

    Returns
    -------
    polars.DataFrame
        The verdict table, as :func:`rubrictools.grade` returns it (a group's slices
        concatenated).

    Example
    -------
    Against :class:`rubrictools.testing.FakeLLMServer`, a local stand-in for the provider:

    >>> import tempfile, polars as pl, rubrictools as rt
    >>> from rubrictools.testing import FakeLLMServer
    >>> rubric = rt.Rubric.from_dict([{"name": "good", "requirement": "The answer is good"}])
    >>> df = pl.DataFrame({"id": [1, 2], "submission": ["a good answer", "a poor one"]})
    >>> path = f"{tempfile.mkdtemp()}/job"
    >>> with FakeLLMServer() as srv:
    ...     judge = rt.Judge(model="openai/gpt-4.1-mini", api_base=srv.url, api_key="sk-fake")
    ...     job = rt.submit_batch(df, rubric, model=judge, id_column="id", path=path, cache=False)
    ...     verdicts = rt.collect_batch(path, api_key="sk-fake", poll_interval=0.01, progress=False, record=False)
    >>> verdicts.select("id", "verdict").rows()
    [(1, 'MET'), (2, 'UNMET')]
    """
    if isinstance(job, (str, Path)) and (Path(job) / GROUP).exists():
        job = BatchGroup(job, api_key=api_key)
    if isinstance(job, BatchGroup):
        out = job.collect(wait=wait, poll_interval=poll_interval, timeout=timeout, progress=progress)
        return out if isinstance(out, pl.DataFrame) else out.collect()
    if not isinstance(job, BatchJob):
        job = BatchJob(job, api_key=api_key)
    elif api_key is not None:
        job.api_key, job.judge_objects = api_key, None
    return job.collect(wait=wait, poll_interval=poll_interval, timeout=timeout, progress=progress, record=record)
