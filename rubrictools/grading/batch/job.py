"""Provider batch grading: half-price, asynchronous, resumable from a closed notebook.

``job = rt.submit_batch(df, rubric, model=...)`` builds exactly the requests :func:`rt.grade`
would send (same prompts, JSON schemas and cache keys), leaves out every request whose answer
is already in the response cache, writes the rest as provider batch files (JSON lines,
``custom_id`` = cache key, so identical requests are sent once) and submits them through
litellm's files and batches API (``/v1/files`` + ``/v1/batches``). The job lives in a
directory: ``handle.json`` (batch ids, settings, rubric; never an API key), the graded columns
in ``inputs.parquet`` and the request files, so ``rt.collect_batch(path)`` in a new session
finds everything again.

``job.collect()`` polls with a progress bar, downloads the result and error files (kept in
the job directory), stores each valid answer in the response cache, and returns the usual
verdict table. Lines that failed (HTTP error, malformed answer) or never ran (the batch
expired or was cancelled) become explicit error rows; ``job.resubmit()`` sends just those
again as a new batch, and ``job.retry()`` grades just those live (the cache answers the rest).

Costs use litellm's batch prices (``input_cost_per_token_batches``...) and half the live
price when a model has none. Providers: OpenAI and OpenAI-compatible endpoints (``openai/``,
``hosted_vllm/``, ``litellm_proxy/``) and Azure (``azure/``).

Example
-------
Against :class:`rubrictools.testing.FakeLLMServer`, a local stand-in for the provider (its
rule, not a model, says MET when the answer contains "good"):

>>> import tempfile
>>> import polars as pl, rubrictools as rt
>>> from rubrictools.testing import FakeLLMServer
>>> rubric = rt.Rubric.from_dict([{"name": "good", "requirement": "The answer is good"}])
>>> df = pl.DataFrame({"id": [1, 2], "submission": ["a good answer", "a poor one"]})
>>> with FakeLLMServer() as srv:
...     judge = rt.Judge(model="openai/gpt-4.1-mini", api_base=srv.url, api_key="sk-fake")
...     job = rt.submit_batch(df, rubric, model=judge, id_column="id", path=f"{tempfile.mkdtemp()}/job", cache=False)
...     verdicts = job.collect(poll_interval=0.01, progress=False)
>>> verdicts.select("id", "verdict").rows()
[(1, 'MET'), (2, 'UNMET')]

In a new session, ``rt.collect_batch(path, api_key=...)`` collects the same job.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import sqlite3
import time
import warnings
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import SecretStr

from rubrictools.grading.answers import apply_result, cache_entry
from rubrictools.grading.batch.files import FORMAT, HANDLE, TERMINAL, submitted_ids, write_json
from rubrictools.grading.batch.results import fill_calls, plan_digest
from rubrictools.grading.batch.rounds import resume_creating, submit_rounds
from rubrictools.grading.executor import execute
from rubrictools.grading.options import GradeOptions
from rubrictools.grading.plan import Plan, assign_keys, build_plan
from rubrictools.grading.recording import record_run
from rubrictools.grading.sync import run_sync
from rubrictools.judge import CallResult, Judge, ResponseCache
from rubrictools.judge.batch_api import batch_call, job_keys, line_result, read_lines, scrubbed_file
from rubrictools.judge.pricing import batch_prices
from rubrictools.judge.providers import load_litellm
from rubrictools.judge.transport import with_clients_closed
from rubrictools.progress import progress_bar
from rubrictools.records import runs_dir
from rubrictools.rubric import Rubric
from rubrictools.stack import user_stacklevel

__all__ = ["BatchJob"]


class BatchJob:
    """A submitted batch grading job, backed by its directory (see module docstring).

    Holds no API key on disk: pass ``api_key=`` again (or set the provider's environment
    variable) when a job is reopened in a new session.

    Parameters
    ----------
    path
        The job's directory, as :func:`~rubrictools.submit_batch` wrote it.
    api_key
        The provider API key for this session's calls (``None``: the provider's environment
        variable).
    judges
        The judges the job was submitted with (kept by a job object from this session; reopened
        from its directory, the judges are rebuilt from the directory's settings).

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
    ...     _ = rt.submit_batch(df, rubric, model=judge, id_column="id", path=path, cache=False)
    ...     job = rt.BatchJob(path, api_key="sk-fake")  # reopened from its directory, e.g. in a new session
    ...     verdicts = job.collect(poll_interval=0.01, progress=False, record=False)
    >>> job.done, verdicts.select("id", "verdict").rows()
    (True, [(1, 'MET'), (2, 'UNMET')])
    """

    def __init__(self, path: str | Path, *, api_key: str | None = None, judges: list[Judge] | None = None) -> None:
        self.path = Path(path)
        handle = self.path / HANDLE
        if not handle.exists():
            raise FileNotFoundError(f"no batch job at {self.path} ({HANDLE} missing)")
        self.handle: dict[str, Any] = json.loads(handle.read_text())
        if self.handle.get("format") != FORMAT:
            raise ValueError(f"{handle} is not a rubrictools batch handle (format {self.handle.get('format')!r})")
        self.api_key = api_key
        self.judge_objects = judges
        self._parsed: dict[int, dict[str, CallResult]] = {}

    # ------------------------------------------------------------------ state
    def __repr__(self) -> str:
        counts: dict[str, int] = {}
        for r in self.rounds:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        state = ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "nothing to submit"
        return (
            f"BatchJob({self.path.name!r}: {self.handle['calls']} calls, {self.handle['precached']} "
            f"answered from the cache, "
            f"{len(self.rounds)} provider batch(es): {state})"
        )

    @property
    def rounds(self) -> list[dict[str, Any]]:
        """The provider batches, one dict each (id, judge, status, counts, files)."""
        return self.handle["rounds"]

    @property
    def done(self) -> bool:
        """Every provider batch has reached a final state (completed, failed, expired, cancelled)."""
        return all(r["status"] in TERMINAL for r in self.rounds)

    def save(self) -> None:
        write_json(self.path / HANDLE, self.handle)

    def judges(self) -> list[Judge]:
        """The job's judges; ``api_key=`` given to this session fills in a judge without a key."""
        if self.judge_objects is None:
            judges = [Judge(**j) for j in self.handle["judges"]]
            if self.api_key is not None:
                key = SecretStr(self.api_key)
                judges = [j if j.api_key is not None else j.model_copy(update={"api_key": key}) for j in judges]
            self.judge_objects = judges
        return self.judge_objects

    def judge(self, label: str) -> Judge:
        return next(j for j in self.judges() if j.label == label)

    def refresh(self) -> BatchJob:
        """Ask the provider for the status of every unfinished batch."""
        lit = load_litellm()
        resume_creating(self)
        changed = False
        for r in self.rounds:
            if r["status"] in TERMINAL:
                continue
            b = batch_call(
                self.judge(r["judge"]),
                self.api_key,
                f"status of {r['batch_id']}",
                lit.retrieve_batch,
                batch_id=r["batch_id"],
            )
            counts = getattr(b, "request_counts", None)
            errors = getattr(b, "errors", None)
            r.update(
                status=b.status,
                output_file_id=b.output_file_id,
                error_file_id=b.error_file_id,
                completed=getattr(counts, "completed", 0) or 0,
                failed=getattr(counts, "failed", 0) or 0,
            )
            if errors:
                data = getattr(errors, "data", None) or (errors.get("data") if isinstance(errors, dict) else None) or []
                r["errors"] = [
                    getattr(e, "message", None) or (e.get("message") if isinstance(e, dict) else str(e)) for e in data
                ][:20]
            changed = True
        if changed:
            self.save()
        return self

    def status(self, refresh: bool = True) -> pl.DataFrame:
        """One row per provider batch: ``batch_id, judge, status, requests, completed, failed``."""
        if refresh:
            self.refresh()
        rows = [
            (r["batch_id"], r["judge"], r["status"], r["requests"], r.get("completed", 0), r.get("failed", 0))
            for r in self.rounds
        ]
        return pl.DataFrame(
            rows,
            schema={
                "batch_id": pl.String,
                "judge": pl.String,
                "status": pl.String,
                "requests": pl.Int64,
                "completed": pl.Int64,
                "failed": pl.Int64,
            },
            orient="row",
        )

    def wait(self, *, poll_interval: float = 30.0, timeout: float | None = None, progress: bool = True) -> BatchJob:
        """Poll until every batch is final; a progress bar counts answered requests.

        Raises TimeoutError after ``timeout`` seconds (the job keeps running at the provider;
        collect it later).
        """
        t0 = time.monotonic()
        total = sum(r["requests"] for r in self.rounds)
        bar = progress_bar(total, enabled=progress and not self.done, desc="batch", unit="request")
        try:
            while True:
                self.refresh()
                if bar is not None:
                    bar.n = sum(
                        r.get("completed", 0) + r.get("failed", 0) if r["status"] not in TERMINAL else r["requests"]
                        for r in self.rounds
                    )
                    bar.set_postfix_str(", ".join(sorted({r["status"] for r in self.rounds})), refresh=False)
                    bar.refresh()
                if self.done:
                    return self
                if timeout is not None and time.monotonic() - t0 >= timeout:
                    raise TimeoutError(
                        f"batch job {self.path} still running after {timeout:g} s; collect it later with "
                        f"rt.collect_batch({str(self.path)!r})"
                    )
                time.sleep(poll_interval)
        finally:
            if bar is not None:
                bar.close()

    def cancel(self) -> BatchJob:
        """Ask the provider to cancel every unfinished batch (answered lines are still collected)."""
        for r in self.rounds:
            if r["status"] not in TERMINAL:
                b = batch_call(
                    self.judge(r["judge"]),
                    self.api_key,
                    f"cancel {r['batch_id']}",
                    load_litellm().cancel_batch,
                    batch_id=r["batch_id"],
                )
                r["status"] = b.status
        self.save()
        return self

    # ------------------------------------------------------------------ results
    def _plan(self) -> Plan:
        s = self.handle["settings"]
        frame = pl.read_parquet(self.path / "inputs.parquet")
        examples = (
            pl.read_parquet(self.path / "examples.parquet") if (self.path / "examples.parquet").exists() else None
        )
        rubric = Rubric.from_dict(self.handle["rubric"]) if self.handle["rubric"] is not None else None
        opts = GradeOptions(model=self.judges(), examples=examples, distribution_samples=0, progress=False, **s)
        plan = build_plan(frame, rubric, opts)
        assign_keys(plan)
        digest = plan_digest(plan)
        if digest != self.handle["digest"]:
            raise ValueError(
                f"the requests rebuilt from {self.path} differ from the submitted ones (rubrictools' prompts changed "
                "since submission?); collect with the rubrictools version that submitted the job"
            )
        return plan

    def _cache(self) -> ResponseCache:
        return ResponseCache(self.handle["cache"])

    def _download(self, store: ResponseCache, plan: Plan) -> None:
        """Fetch the output and error files of finished batches into the job directory and
        put every valid answer in the response cache."""
        by_key: dict[str, Any] = {}
        for c in plan.calls:
            if c.key is not None:
                by_key.setdefault(c.key, c)
        for k, r in enumerate(self.rounds):
            if r["status"] not in TERMINAL or r.get("downloaded"):
                continue
            judge = self.judge(r["judge"])
            for kind, fid in (("results", r.get("output_file_id")), ("errors", r.get("error_file_id"))):
                if not fid:
                    continue
                blob = batch_call(judge, self.api_key, f"download {fid}", load_litellm().file_content, file_id=fid)
                target = self.path / f"{kind}-{k:05d}.jsonl"
                tmp = target.with_suffix(".jsonl.tmp")
                tmp.write_bytes(scrubbed_file(blob.content, job_keys(judge, self.api_key)))
                os.replace(tmp, target)
            parsed = self._round_results(k, r)
            good = []
            for cid, res in parsed.items():
                call = by_key.get(cid)
                if call is None or res.error is not None:
                    continue
                probe = copy.copy(call)  # parsing never mutates the plan
                if apply_result(probe, res, paid=True):
                    good.append((cid, judge.model, cache_entry(probe)))
            try:
                store.put_many(good)
            except (sqlite3.Error, OSError) as e:  # the answers stay in the downloaded result files
                warnings.warn(
                    f"response cache write failed ({type(e).__name__}: {e}); answers are read from {self.path}",
                    RuntimeWarning,
                    stacklevel=user_stacklevel(),
                )
            r["downloaded"] = True
            self.save()

    def _round_results(self, k: int, r: dict[str, Any]) -> dict[str, CallResult]:
        """custom_id -> result of one downloaded batch (parsed once per session)."""
        if k not in self._parsed:
            prices = batch_prices(r["model"])
            keys = job_keys(self.judge(r["judge"]), self.api_key)
            out: dict[str, CallResult] = {}
            for kind in ("errors", "results"):
                for line in read_lines(self.path / f"{kind}-{k:05d}.jsonl"):
                    cid = line.get("custom_id")
                    if cid:
                        out[cid] = line_result(line, prices, keys)
            self._parsed[k] = out
        return self._parsed[k]

    def _results(self) -> dict[str, CallResult]:
        """custom_id -> result over every downloaded file (later batches win)."""
        out: dict[str, CallResult] = {}
        for k, r in enumerate(self.rounds):
            if r.get("downloaded"):
                out.update(self._round_results(k, r))
        return out

    def collect(
        self,
        *,
        wait: bool = True,
        poll_interval: float = 30.0,
        timeout: float | None = None,
        progress: bool = True,
        record: bool | str | Path = True,
    ) -> pl.DataFrame:
        """The verdict table of the job (see :func:`rubrictools.grade` for its columns).

        With ``wait=True`` polls until every batch is final; with ``wait=False`` returns at
        once, and requests still running are error rows saying so. Rows answered by a batch
        have ``cached=False`` and the batch cost; rows answered from the cache before
        submission have ``cached=True``. ``record``: record the run in the run store
        (:mod:`rubrictools.records`), dated from the submission: ``True`` (default, as
        :func:`rubrictools.grade` and :func:`rubrictools.collect_batch` do) in the default
        store, a folder path, or ``False``.
        """
        if wait:
            self.wait(poll_interval=poll_interval, timeout=timeout, progress=progress)
        else:
            self.refresh()
        with self._opened() as (plan, store):
            results = self._results()
            cached = store.get_many(c.key for c in plan.calls if c.key is not None)
        where: dict[str, dict[str, Any]] = {}
        for r in self.rounds:
            for cid in submitted_ids(self.path / r["requests_file"]):
                where[cid] = r
        fill_calls(plan, results, cached, where)
        verdicts = plan.verdicts()
        if (runs := runs_dir(record)) is not None:
            started = datetime.strptime(self.handle["created"], "%Y-%m-%dT%H:%M:%S%z")
            record_run(runs, kind="grade_pairs" if plan.opts.pairwise else "grade", plan=plan, verdicts=verdicts,
                       started=started)  # fmt: skip
        return verdicts

    def unanswered(self) -> int:
        """Requests (distinct cache keys) with no valid answer in the cache yet."""
        with self._opened(download=False) as (plan, store):
            keys = {c.key for c in plan.calls if c.key is not None}
            return len(keys - set(store.get_many(keys)))

    def resubmit(self) -> BatchJob:
        """Submit every request with no valid answer yet (failed, malformed, expired or
        cancelled lines) as new provider batches; answered ones are never sent again."""
        self._require_done("resubmitting")
        with self._opened() as (plan, store):
            submit_rounds(self, plan, store)
        return self

    def retry(self, *, progress: bool = True, max_cost_usd: float | None = None) -> pl.DataFrame:
        """Grade live (full price) only the requests with no valid answer; the cache answers the
        rest. Returns the complete verdict table."""
        self._require_done("retrying live")
        with self._opened() as (plan, store):
            run_sync(
                with_clients_closed(
                    execute(plan.calls, plan.judges, store, max_cost_usd=max_cost_usd, progress=progress)
                )
            )
        return plan.verdicts()

    def _require_done(self, action: str) -> None:
        if not self.done:
            raise RuntimeError(f"batches of this job are still running; wait() or cancel() before {action}")

    @contextlib.contextmanager
    def _opened(self, *, download: bool = True) -> Iterator[tuple[Any, ResponseCache]]:
        """The job's rebuilt plan and its open response cache, with the files of finished
        batches downloaded into it first (unless ``download=False``)."""
        plan = self._plan()
        store = self._cache()
        try:
            if download:
                self._download(store, plan)
            yield plan, store
        finally:
            store.close()
