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
...     job = rt.submit_batch(df, rubric, model="openai/gpt-4.1-mini", api_base=srv.url, api_key="sk-fake",
...                           id_column="id", path=f"{tempfile.mkdtemp()}/job", cache=False)
...     verdicts = job.collect(poll_interval=0.01, progress=False)
>>> verdicts.select("id", "verdict").rows()
[(1, 'MET'), (2, 'UNMET')]

In a new session, ``rt.collect_batch(path, api_key=...)`` collects the same job.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import polars as pl

from rubrictools.judge.cache import CachedResponse, ResponseCache, default_cache_path
from rubrictools.judge.client import CallResult
from rubrictools.judge.config import Judge

__all__ = ["BatchGroup", "BatchJob", "collect_batch", "submit_batch"]

HANDLE = "handle.json"
GROUP = "slices.json"
FORMAT = "rubrictools-batch/1"
ENDPOINT = "/v1/chat/completions"
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
PROVIDERS = ("openai", "azure", "hosted_vllm", "litellm_proxy")
MAX_REQUESTS = 50_000  # OpenAI's limit per batch
MAX_BYTES = 190 * 1024 * 1024  # OpenAI's limit is 200 MB per input file
_SETTINGS = ("column", "id_column", "query_column", "reference_column", "rubric_column", "mode", "aggregate",
             "max_examples", "shuffle_options", "seed", "grade_part", "distribution", "evidence", "on_unsupported")  # fmt: skip
_DEFAULTS: dict[str, Any] = {
    "column": "submission", "id_column": None, "query_column": None, "reference_column": None, "rubric_column": None,
    "mode": "per_criterion", "aggregate": "majority", "max_examples": 3, "shuffle_options": False, "seed": 0,
    "grade_part": "output", "distribution": False, "evidence": None, "on_unsupported": "flag",
}  # fmt: skip


# --------------------------------------------------------------------------- helpers
def provider_of(model: str) -> str:
    """litellm's ``custom_llm_provider`` for a judge model's batch API (``openai`` without a prefix)."""
    prefix, _, rest = model.partition("/")
    if not rest:
        return "openai"
    if prefix not in PROVIDERS:
        raise ValueError(
            f"batch grading needs a provider with an OpenAI-style batch API ({', '.join(p + '/' for p in PROVIDERS)}); "
            f"{model!r} is not one: grade it live with rt.grade"
        )
    return prefix


def batch_prices(model: str) -> tuple[float, float] | None:
    """Dollars per prompt and per completion token in a batch: litellm's ``*_batches`` prices,
    else half the live prices (the usual batch discount), else None."""
    from rubrictools.judge.client import _litellm, _unit_prices

    try:
        info = _litellm().get_model_info(model=model)
        pin, pout = info.get("input_cost_per_token_batches"), info.get("output_cost_per_token_batches")
        if pin is not None and pout is not None:
            return float(pin), float(pout)
    except Exception:
        pass
    live = _unit_prices(model)
    return None if live is None else (live[0] / 2, live[1] / 2)


def _credentials(judge: Judge, api_key: str | None) -> dict[str, Any]:
    kw: dict[str, Any] = {"custom_llm_provider": provider_of(judge.model), "max_retries": 0}
    if judge.api_base is not None:
        kw["api_base"] = judge.api_base
    key = api_key if api_key is not None else (judge.api_key.get_secret_value() if judge.api_key is not None else None)
    if key is not None:
        kw["api_key"] = key
    return kw


def _api(judge: Judge, api_key: str | None, what: str, fn: Callable[..., Any], **kwargs: Any) -> Any:
    """Call a litellm files/batches function with the judge's retry policy (429, 5xx,
    connection errors; ``Retry-After`` honoured); errors name ``what`` and never the key."""
    from rubrictools.judge.client import _is_retryable, backoff_delay, scrub

    attempts = 0
    while True:
        attempts += 1
        try:
            return fn(**kwargs, **_credentials(judge, api_key))
        except Exception as exc:  # noqa: BLE001
            if not _is_retryable(exc) or attempts > judge.max_retries:
                msg = scrub(f"{type(exc).__name__}: {exc}", judge)
                if api_key:
                    msg = msg.replace(api_key, "***")
                raise RuntimeError(f"batch API: {what} failed after {attempts} attempt(s): {msg[:500]}") from None
            time.sleep(backoff_delay(judge, exc, attempts))


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str))
    os.replace(tmp, path)  # the handle is always either the old or the new version


def _settings(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {k: kwargs.get(k, _DEFAULTS[k]) for k in _SETTINGS}


def _read_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        if raw.strip():
            try:
                out.append(json.loads(raw))
            except ValueError:
                continue
    return out


def _line_result(line: dict[str, Any], prices: tuple[float, float] | None) -> CallResult:
    """One line of a batch output or error file as a result (answer or explicit error)."""
    resp = line.get("response") or {}
    err = line.get("error")
    status = resp.get("status_code")
    body = resp.get("body")
    if err and not resp:
        code = err.get("code") if isinstance(err, dict) else None
        msg = err.get("message") if isinstance(err, dict) else str(err)
        return CallResult(error=f"batch: {code or 'error'}: {msg}")
    if status != 200 or not isinstance(body, dict):
        detail = body.get("error", body) if isinstance(body, dict) else body
        if isinstance(detail, dict):
            detail = detail.get("message") or json.dumps(detail)
        return CallResult(error=f"batch line failed: HTTP {status}: {str(detail)[:300]}")
    choices = body.get("choices") or []
    if not choices:
        return CallResult(error="batch line failed: the answer has no choices")
    first = choices[0]
    usage = body.get("usage") or {}
    pt, ct = usage.get("prompt_tokens"), usage.get("completion_tokens")
    cost = None if prices is None or pt is None or ct is None else pt * prices[0] + ct * prices[1]
    from rubrictools.judge.distribution import normalise_logprobs

    lp = normalise_logprobs(first.get("logprobs")) if first.get("logprobs") else None
    return CallResult((first.get("message") or {}).get("content"), pt, ct, cost, logprobs=lp)


# --------------------------------------------------------------------------- job
class BatchJob:
    """A submitted batch grading job, backed by its directory (see module docstring).

    Holds no API key on disk: pass ``api_key=`` again (or set the provider's environment
    variable) when a job is reopened in a new session.
    """

    def __init__(self, path: str | Path, *, api_key: str | None = None, _judges: list[Judge] | None = None) -> None:
        self.path = Path(path)
        handle = self.path / HANDLE
        if not handle.exists():
            raise FileNotFoundError(f"no batch job at {self.path} ({HANDLE} missing)")
        self._h: dict[str, Any] = json.loads(handle.read_text())
        if self._h.get("format") != FORMAT:
            raise ValueError(f"{handle} is not a rubrictools batch handle (format {self._h.get('format')!r})")
        self._api_key = api_key
        self._judges = _judges
        self._parsed: dict[int, dict[str, CallResult]] = {}

    # ------------------------------------------------------------------ state
    def __repr__(self) -> str:
        counts: dict[str, int] = {}
        for r in self.rounds:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        state = ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "nothing to submit"
        return (f"BatchJob({str(self.path)!r}: {self._h['calls']} calls, {self._h['precached']} answered from the cache, "
                f"{len(self.rounds)} provider batch(es): {state})")  # fmt: skip

    @property
    def rounds(self) -> list[dict[str, Any]]:
        """One dict per provider batch: id, judge, status, counts, files."""
        return self._h["rounds"]

    @property
    def done(self) -> bool:
        """Every provider batch has reached a final state (completed, failed, expired, cancelled)."""
        return all(r["status"] in TERMINAL for r in self.rounds)

    def _save(self) -> None:
        _write_json(self.path / HANDLE, self._h)

    def judges(self) -> list[Judge]:
        """The job's judges; ``api_key=`` given to this session fills in a judge without a key."""
        if self._judges is None:
            judges = [Judge(**j) for j in self._h["judges"]]
            if self._api_key is not None:
                from pydantic import SecretStr

                key = SecretStr(self._api_key)
                judges = [j if j.api_key is not None else j.model_copy(update={"api_key": key}) for j in judges]
            self._judges = judges
        return self._judges

    def _judge(self, label: str) -> Judge:
        return next(j for j in self.judges() if j.label == label)

    def refresh(self) -> BatchJob:
        """Ask the provider for the status of every unfinished batch."""
        from rubrictools.judge.client import _litellm

        lit = _litellm()
        _resume_creating(self)
        changed = False
        for r in self.rounds:
            if r["status"] in TERMINAL:
                continue
            b = _api(self._judge(r["judge"]), self._api_key, f"status of {r['batch_id']}", lit.retrieve_batch,
                     batch_id=r["batch_id"])  # fmt: skip
            counts = getattr(b, "request_counts", None)
            errors = getattr(b, "errors", None)
            r.update(status=b.status, output_file_id=b.output_file_id, error_file_id=b.error_file_id,
                     completed=getattr(counts, "completed", 0) or 0, failed=getattr(counts, "failed", 0) or 0)  # fmt: skip
            if errors:
                data = getattr(errors, "data", None) or (errors.get("data") if isinstance(errors, dict) else None) or []
                r["errors"] = [getattr(e, "message", None) or (e.get("message") if isinstance(e, dict) else str(e))
                               for e in data][:20]  # fmt: skip
            changed = True
        if changed:
            self._save()
        return self

    def status(self, refresh: bool = True) -> pl.DataFrame:
        """One row per provider batch: ``batch_id, judge, status, requests, completed, failed``."""
        if refresh:
            self.refresh()
        rows = [(r["batch_id"], r["judge"], r["status"], r["requests"], r.get("completed", 0), r.get("failed", 0))
                for r in self.rounds]  # fmt: skip
        return pl.DataFrame(rows, schema={"batch_id": pl.String, "judge": pl.String, "status": pl.String,
                                          "requests": pl.Int64, "completed": pl.Int64, "failed": pl.Int64}, orient="row")

    def wait(self, *, poll_interval: float = 30.0, timeout: float | None = None, progress: bool = True) -> BatchJob:
        """Poll until every batch is final; a progress bar counts answered requests.

        Raises TimeoutError after ``timeout`` seconds (the job keeps running at the provider;
        collect it later).
        """
        t0 = time.monotonic()
        bar = None
        if progress and not self.done:
            from tqdm.auto import tqdm

            bar = tqdm(total=sum(r["requests"] for r in self.rounds), desc="batch", unit="request")
        try:
            while True:
                self.refresh()
                if bar is not None:
                    bar.n = sum(r.get("completed", 0) + r.get("failed", 0) if r["status"] not in TERMINAL else r["requests"]
                                for r in self.rounds)  # fmt: skip
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
        from rubrictools.judge.client import _litellm

        for r in self.rounds:
            if r["status"] not in TERMINAL:
                b = _api(self._judge(r["judge"]), self._api_key, f"cancel {r['batch_id']}", _litellm().cancel_batch,
                         batch_id=r["batch_id"])  # fmt: skip
                r["status"] = b.status
        self._save()
        return self

    # ------------------------------------------------------------------ results
    def _plan(self) -> Any:
        from rubrictools.grading import _assign_keys, _plan
        from rubrictools.rubric import Rubric

        s = self._h["settings"]
        frame = pl.read_parquet(self.path / "inputs.parquet")
        examples = pl.read_parquet(self.path / "examples.parquet") if (self.path / "examples.parquet").exists() else None
        rubric = Rubric.from_dict(self._h["rubric"]) if self._h["rubric"] is not None else None
        plan = _plan(frame, rubric, model=self.judges(), examples=examples, max_cost_usd=None,
                     distribution_samples=0, judge_kwargs={}, **s)  # fmt: skip
        _assign_keys(plan)
        digest = _digest(plan)
        if digest != self._h["digest"]:
            raise ValueError(
                f"the requests rebuilt from {self.path} differ from the submitted ones (rubrictools' prompts changed "
                "since submission?); collect with the rubrictools version that submitted the job"
            )
        return plan

    def _cache(self) -> ResponseCache:
        return ResponseCache(self._h["cache"])

    def _download(self, store: ResponseCache, plan: Any) -> None:
        """Fetch the output and error files of finished batches into the job directory and
        put every valid answer in the response cache."""
        from rubrictools.grading import _dist_extra, _parse
        from rubrictools.judge.client import _litellm

        by_key: dict[str, Any] = {}
        for c in plan.calls:
            if c.key is not None:
                by_key.setdefault(c.key, c)
        for k, r in enumerate(self.rounds):
            if r["status"] not in TERMINAL or r.get("downloaded"):
                continue
            judge = self._judge(r["judge"])
            for kind, fid in (("results", r.get("output_file_id")), ("errors", r.get("error_file_id"))):
                if not fid:
                    continue
                blob = _api(judge, self._api_key, f"download {fid}", _litellm().file_content, file_id=fid)
                target = self.path / f"{kind}-{k:05d}.jsonl"
                tmp = target.with_suffix(".jsonl.tmp")
                tmp.write_bytes(blob.content)
                os.replace(tmp, target)
            parsed = self._round_results(k, r)
            good = []
            for cid, res in parsed.items():
                call = by_key.get(cid)
                if call is None or res.error is not None:
                    continue
                probe = _probe(call, res)
                if _parse(probe):
                    extra = None
                    if call.dist_samples >= 0 and call.kind == "criterion":
                        dist, src = _distribution(probe, res)
                        extra = _dist_extra(dist, src)
                    good.append((cid, judge.model, CachedResponse(res.content or "", res.prompt_tokens,
                                                                  res.completion_tokens, res.cost_usd, extra)))  # fmt: skip
            store.put_many(good)
            r["downloaded"] = True
            self._save()

    def _round_results(self, k: int, r: dict[str, Any]) -> dict[str, CallResult]:
        """custom_id -> result of one downloaded batch (parsed once per session)."""
        if k not in self._parsed:
            prices = batch_prices(r["model"])
            out: dict[str, CallResult] = {}
            for kind in ("errors", "results"):
                for line in _read_lines(self.path / f"{kind}-{k:05d}.jsonl"):
                    cid = line.get("custom_id")
                    if cid:
                        out[cid] = _line_result(line, prices)
            self._parsed[k] = out
        return self._parsed[k]

    def _results(self) -> dict[str, CallResult]:
        """custom_id -> result over every downloaded file (later batches win)."""
        out: dict[str, CallResult] = {}
        for k, r in enumerate(self.rounds):
            if r.get("downloaded"):
                out.update(self._round_results(k, r))
        return out

    def collect(self, *, wait: bool = True, poll_interval: float = 30.0, timeout: float | None = None,
                progress: bool = True) -> pl.DataFrame:
        """The verdict table of the job (see :func:`rubrictools.grade` for its columns).

        With ``wait=True`` polls until every batch is final; with ``wait=False`` returns at
        once, and requests still running are error rows saying so. Rows answered by a batch
        have ``cached=False`` and the batch cost; rows answered from the cache before
        submission have ``cached=True``.
        """
        if wait:
            self.wait(poll_interval=poll_interval, timeout=timeout, progress=progress)
        else:
            self.refresh()
        with self._opened() as (plan, store):
            results = self._results()
            cached = store.get_many(c.key for c in plan.calls if c.key is not None)
        where: dict[str, dict[str, Any]] = {}
        for k, r in enumerate(self.rounds):
            for cid in _submitted_ids(self.path / r["requests_file"]):
                where[cid] = r
        _fill(plan, results, cached, where)
        return plan.verdicts()

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
            _submit_rounds(self, plan, store)
        return self

    def retry(self, *, progress: bool = True, max_cost_usd: float | None = None) -> pl.DataFrame:
        """Grade live (full price) only the requests with no valid answer; the cache answers the
        rest. Returns the complete verdict table."""
        from rubrictools.grading import _execute, run_sync

        self._require_done("retrying live")
        with self._opened() as (plan, store):
            run_sync(_execute(plan.calls, plan.judges, store, max_cost_usd, progress, threading.Event()))
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


def _submitted_ids(path: Path) -> list[str]:
    return [line["custom_id"] for line in _read_lines(path) if "custom_id" in line]


def _probe(call: Any, res: CallResult) -> Any:
    """A copy of ``call`` carrying ``res``'s answer (so parsing never mutates the plan)."""
    import copy

    probe = copy.copy(call)
    probe.content, probe.parsed, probe.problems = res.content, None, {}
    return probe


def _distribution(call: Any, res: CallResult) -> tuple[dict[str, float] | None, str]:
    from rubrictools.judge.distribution import from_logprobs

    dist = from_logprobs(res.content, res.logprobs, call.criterion) if res.logprobs else None
    return (dist, "logprobs") if dist is not None else (None, "unavailable")


def _fill(plan: Any, results: dict[str, CallResult], cached: dict[str, CachedResponse], where: dict[str, dict[str, Any]]) -> None:
    """Set every call's answer or explicit error from batch results and the cache."""
    from rubrictools.grading import _from_cache, _parse

    paid: set[str] = set()
    for c in plan.calls:
        if c.key is None:  # a scripted judge: cannot happen in a batch job
            c.error = "internal: call without a key"
            continue
        res = results.get(c.key)
        if res is not None and res.error is None:
            c.content, c.prompt_tokens, c.completion_tokens, c.cost_usd = (res.content, res.prompt_tokens,
                                                                           res.completion_tokens, res.cost_usd)  # fmt: skip
            # identical requests were sent once: the first row pays, the others count as cached
            c.cached = c.key in paid
            c.attempts, c.latency_s = (0 if c.cached else 1), None
            paid.add(c.key)
            if _parse(c):
                if c.dist_samples >= 0 and c.kind == "criterion":
                    c.dist, c.dist_source = _distribution(c, res)
            elif c.kind != "item" or c.parsed is None:
                c.error = next(iter(c.problems.values()))
            continue
        hit = cached.get(c.key)
        if hit is not None and _from_cache(c, hit):  # answered before this job (or by a live retry)
            continue
        if res is not None:
            c.error = res.error
        elif c.key in where and where[c.key]["status"] not in TERMINAL:
            r = where[c.key]
            c.error = f"pending: batch {r['batch_id']} is {r['status']}"
        elif c.key in where:
            r = where[c.key]
            c.error = f"batch {r['batch_id']} ended {r['status']} without a result for this request"
        else:
            c.error = "not answered: not in any batch of this job (cache cleared?); resubmit() or retry()"
        c.attempts = 0


def _digest(plan: Any) -> str:
    h = hashlib.sha256()
    for c in plan.calls:
        h.update((c.key or "-").encode())
        h.update(b"\0")
    return h.hexdigest()


def _submit_rounds(job: BatchJob, plan: Any, store: ResponseCache, *, max_requests: int = MAX_REQUESTS,
                   max_bytes: int = MAX_BYTES, max_cost_usd: float | None = None, skip: set[str] | None = None) -> None:
    """Upload and create provider batches for every request not answered yet and not in
    ``skip`` (one set per judge)."""
    from rubrictools.judge.client import _litellm, chat_body

    answered = set(store.get_many(c.key for c in plan.calls if c.key is not None))
    lit = _litellm()
    for ji, judge in enumerate(plan.judges):
        lines: dict[str, bytes] = {}
        for c in plan.calls:
            if c.judge_i != ji or c.key in answered or c.key in lines or (skip and c.key in skip):
                continue
            body = chat_body(judge, c.messages, c.response_format, c.extra)
            line = {"custom_id": c.key, "method": "POST", "url": ENDPOINT, "body": body}
            lines[c.key] = (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode()  # type: ignore[index]
        if not lines:
            continue
        if max_cost_usd is not None:
            _check_cost(judge, plan, set(lines), max_cost_usd)
        chunks: list[list[bytes]] = [[]]
        size = 0
        for blob in lines.values():
            if chunks[-1] and (len(chunks[-1]) >= max_requests or size + len(blob) > max_bytes):
                chunks.append([])
                size = 0
            chunks[-1].append(blob)
            size += len(blob)
        for chunk in chunks:
            k = len(job.rounds)
            name = f"requests-{k:05d}.jsonl"
            data = b"".join(chunk)
            (job.path / name).write_bytes(data)
            f = _api(judge, job._api_key, f"upload {name}", lit.create_file, file=(name, data), purpose="batch")
            # recorded before the batch exists: a crash from here on is resumed by adopting the
            # batch made from this file, if the provider has one, instead of paying twice
            job.rounds.append({"batch_id": None, "input_file_id": f.id, "judge": judge.label, "model": judge.model,
                               "requests": len(chunk), "requests_file": name, "status": "creating", "completed": 0,
                               "failed": 0, "output_file_id": None, "error_file_id": None, "created": time.time()})  # fmt: skip
            job._save()
            _create_round(job, job.rounds[-1], judge)


def _find_batch(job: BatchJob, judge: Judge, input_file_id: str) -> Any:
    """The provider's batch made from ``input_file_id`` among its most recent ones, or None."""
    from rubrictools.judge.client import _litellm

    page = _api(judge, job._api_key, "list batches", _litellm().list_batches, limit=100)
    for b in getattr(page, "data", None) or []:
        fid = getattr(b, "input_file_id", None) if not isinstance(b, dict) else b.get("input_file_id")
        if fid == input_file_id:
            return b
    return None


def _create_round(job: BatchJob, r: dict[str, Any], judge: Judge) -> None:
    """Create the batch of a recorded round, idempotently: before every attempt but a fresh
    round's first, look for a batch already made from the round's file (a create whose answer
    was lost, or a crash before the handle was saved) and adopt it."""
    from rubrictools.judge.client import _litellm

    tries = 0

    def create_or_adopt(**credentials: Any) -> Any:
        nonlocal tries
        tries += 1
        if tries > 1 or r.get("status") == "creating-retry":
            found = _find_batch(job, judge, r["input_file_id"])
            if found is not None:
                return found
        return _litellm().create_batch(completion_window="24h", endpoint=ENDPOINT, input_file_id=r["input_file_id"],
                                       metadata={"rubrictools_job": job._h["digest"][:16], "part": r["requests_file"]},
                                       **credentials)  # fmt: skip

    try:
        b = _api(judge, job._api_key, f"create batch from {r['input_file_id']}", create_or_adopt)
    except RuntimeError:
        r["status"] = "creating-retry"  # the next resume looks for the batch first
        job._save()
        raise
    status = getattr(b, "status", None) if not isinstance(b, dict) else b.get("status")
    r.update(batch_id=getattr(b, "id", None) if not isinstance(b, dict) else b.get("id"), status=status)
    job._save()


def _resume_creating(job: BatchJob) -> None:
    """Finish rounds left between upload and batch creation by an interrupted submission."""
    for r in job.rounds:
        if r["status"] in ("creating", "creating-retry"):
            r["status"] = "creating-retry"
            _create_round(job, r, job._judge(r["judge"]))


def _check_cost(judge: Judge, plan: Any, keys: set[str], max_cost_usd: float) -> None:
    """Refuse to submit when the most these requests can cost (prompt tokens plus
    ``max_tokens`` per request, at batch prices) exceeds ``max_cost_usd``."""
    from rubrictools.judge.client import _litellm

    prices = batch_prices(judge.model)
    if prices is None:
        raise ValueError(f"max_cost_usd cannot be enforced: litellm has no price for model {judge.model!r}")
    if judge.max_tokens is None:
        raise ValueError("max_cost_usd in batch mode needs Judge(max_tokens=...) to bound each answer's cost")
    seen: set[str] = set()
    prompt = 0
    for c in plan.calls:
        if c.key in keys and c.key not in seen:
            seen.add(c.key)
            prompt += _litellm().token_counter(model=judge.model, messages=c.messages)
    bound = prompt * prices[0] + len(seen) * judge.max_tokens * prices[1]
    if bound > max_cost_usd:
        raise ValueError(
            f"batch for {judge.label} could cost up to ${bound:,.2f} ({len(seen)} requests, {prompt:,} prompt tokens, "
            f"max_tokens={judge.max_tokens}) > max_cost_usd=${max_cost_usd:,.2f}; nothing was submitted"
        )


# --------------------------------------------------------------------------- slices
class BatchGroup:
    """The batch jobs of one large input, one per slice (``submit_batch(..., slice_rows=N)``).

    ``collect(output=dir)`` writes each slice's verdict table as ``part-NNNNN.parquet`` and
    returns a lazy scan, so collecting millions of rows needs the memory of one slice.
    """

    def __init__(self, path: str | Path, *, api_key: str | None = None) -> None:
        self.path = Path(path)
        meta = json.loads((self.path / GROUP).read_text())
        self.rows, self.slice_rows = meta["rows"], meta["slice_rows"]
        self.jobs = [BatchJob(self.path / name, api_key=api_key) for name in meta["slices"]
                     if (self.path / name / HANDLE).exists()]  # fmt: skip
        self.expected = len(meta["slices"])

    def __repr__(self) -> str:
        rounds = [r["status"] for j in self.jobs for r in j.rounds]
        state = ", ".join(f"{rounds.count(k)} {k}" for k in sorted(set(rounds))) or "nothing to submit"
        return (f"BatchGroup({str(self.path)!r}: {self.rows:,} rows in {len(self.jobs)}/{self.expected} submitted "
                f"slices of {self.slice_rows:,}; provider batches: {state})")  # fmt: skip

    @property
    def done(self) -> bool:
        return len(self.jobs) == self.expected and all(j.done for j in self.jobs)

    def status(self, refresh: bool = True) -> pl.DataFrame:
        """:meth:`BatchJob.status` of every slice, with a ``slice`` column."""
        return pl.concat([j.status(refresh).with_columns(pl.lit(k).alias("slice")) for k, j in enumerate(self.jobs)])

    def wait(self, *, poll_interval: float = 30.0, timeout: float | None = None, progress: bool = True) -> BatchGroup:
        """Poll every slice's batches until all are final (TimeoutError after ``timeout`` s)."""
        if len(self.jobs) != self.expected:
            raise RuntimeError(f"only {len(self.jobs)} of {self.expected} slices were submitted; run the same "
                               "submit_batch call again to submit the rest")  # fmt: skip
        t0 = time.monotonic()
        for j in self.jobs:
            left = None if timeout is None else max(0.0, timeout - (time.monotonic() - t0))
            j.wait(poll_interval=poll_interval, timeout=left, progress=progress)
        return self

    def collect(self, *, output: str | Path | None = None, wait: bool = True, poll_interval: float = 30.0,
                timeout: float | None = None, progress: bool = True) -> pl.DataFrame | pl.LazyFrame:
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


def _submit_slices(df: Any, rubric: Any, *, path: str | Path | None, slice_rows: int, **kwargs: Any) -> BatchGroup:
    from rubrictools.streaming import scan_source

    if path is None:
        raise ValueError("slice_rows needs path= (the directory that holds one job per slice)")
    if slice_rows < 1:
        raise ValueError("slice_rows must be >= 1")
    lf = scan_source(df)
    id_column = kwargs.pop("id_column", None)
    n = lf.select(pl.len()).collect().item()
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    names = [f"slice-{k:05d}" for k in range(max(1, -(-n // slice_rows)))]
    meta = {"rows": n, "slice_rows": slice_rows, "slices": names}
    if (root / GROUP).exists():
        old = json.loads((root / GROUP).read_text())
        if old != meta:
            raise ValueError(f"{root} holds a sliced job of {old['rows']} rows in slices of {old['slice_rows']}; "
                             "choose another path")  # fmt: skip
    else:
        _write_json(root / GROUP, meta)
    for k, name in enumerate(names):
        chunk = lf.slice(k * slice_rows, slice_rows).collect()
        if id_column is None:  # global row numbers stay unique across slices
            chunk = chunk.with_row_index("__rt_row", offset=k * slice_rows).with_columns(pl.col("__rt_row").cast(pl.Int64))
        # an existing slice directory returns its job: an interrupted submission resumes
        submit_batch(chunk, rubric, path=root / name, id_column=id_column or "__rt_row", **kwargs)
    return BatchGroup(root, api_key=kwargs.get("api_key"))


# --------------------------------------------------------------------------- public
def submit_batch(
    df: Any,
    rubric: Any = None,
    *,
    model: Any,
    path: str | Path | None = None,
    cache: bool | str | Path | None = True,
    api_key: str | None = None,
    max_cost_usd: float | None = None,
    max_requests_per_batch: int = MAX_REQUESTS,
    examples: Any = None,
    slice_rows: int | None = None,
    **kwargs: Any,
) -> BatchJob | BatchGroup:
    """Submit the grading of ``df`` as provider batch jobs; returns a :class:`BatchJob`.

    Takes :func:`rubrictools.grade`'s arguments (``column``, ``id_column``, ``mode``,
    ``evidence``, ``distribution`` (from logprobs only), ...) and:

    path
        The job directory (default: ``<cache dir>/batches/<job digest>``). Submitting the
        same job to the same directory again returns the existing job instead of paying twice.
    cache
        Where answers are kept (``True``: the judges' response cache, which live grading
        shares; a path; ``False``: a cache inside the job directory). Requests already
        answered there are not submitted.
    api_key
        Used for this session's calls only; never written to the job directory.
    max_cost_usd
        Refuse to submit when the requests could cost more (prompt tokens plus ``max_tokens``
        per answer, at batch prices).
    max_requests_per_batch
        Larger jobs are split into several provider batches (OpenAI allows 50,000 lines and
        200 MB per file).
    slice_rows
        For inputs too large to plan in memory (``df`` may then be a LazyFrame or a parquet
        path or glob): one job per slice of this many rows under ``path`` (required), so
        memory depends on the slice, not on the input. Returns a :class:`BatchGroup`;
        re-running an interrupted submission submits only the slices not yet submitted.
        ``max_cost_usd`` then applies to each slice.
    """
    from rubrictools.grading import _assign_keys, _cache_path, _plan

    if slice_rows is not None:
        return _submit_slices(df, rubric, model=model, path=path, cache=cache, api_key=api_key,
                              max_cost_usd=max_cost_usd, max_requests_per_batch=max_requests_per_batch,
                              examples=examples, slice_rows=slice_rows, **kwargs)  # fmt: skip
    from rubrictools.judge.scripted import ScriptedJudge
    from rubrictools.rubric import Rubric

    if max_requests_per_batch < 1:
        raise ValueError("max_requests_per_batch must be >= 1")
    unknown = set(kwargs) - set(_SETTINGS) - set(Judge.model_fields)
    if unknown:
        raise TypeError(f"submit_batch got unexpected arguments {sorted(unknown)}")
    settings = _settings(kwargs)
    judge_kwargs = {k: v for k, v in kwargs.items() if k not in _SETTINGS}
    if isinstance(df, (str, Path)) or isinstance(df, pl.LazyFrame):
        from rubrictools.streaming import scan_source

        df = scan_source(df).collect()
    plan = _plan(df, rubric, model=model, examples=examples, max_cost_usd=None, distribution_samples=0,
                 judge_kwargs=judge_kwargs, **settings)  # fmt: skip
    for j in plan.judges:
        if isinstance(j, ScriptedJudge):
            raise ValueError("batch grading sends requests to a provider; a ScriptedJudge answers at once: use rt.grade")
        provider_of(j.model)
    _assign_keys(plan)
    digest = _digest(plan)
    root = Path(path) if path is not None else default_cache_path().parent / "batches" / digest[:16]
    handle = root / HANDLE
    if handle.exists():
        job = BatchJob(root, api_key=api_key)
        if job._h["digest"] != digest:
            raise ValueError(f"{root} holds another batch job (different inputs, rubric or judges); choose another path")
        job._judges = None if api_key is not None else plan.judges  # type: ignore[assignment]
        # a submission interrupted before every request was sent: send the ones never sent
        sent = {cid for r in job.rounds for cid in _submitted_ids(root / r["requests_file"])}
        store = ResponseCache(job._h["cache"])
        try:
            _submit_rounds(job, plan, store, max_requests=max_requests_per_batch, max_cost_usd=max_cost_usd, skip=sent)
        finally:
            store.close()
        return job
    root.mkdir(parents=True, exist_ok=True)
    cache_path = _cache_path(cache, plan.judges) or root / "responses.sqlite"
    # the graded columns only; per-row rubrics as JSON text
    inp = plan.inp
    cols = [c for c in (settings["column"], settings["id_column"], settings["query_column"], settings["reference_column"])
            if c is not None]  # fmt: skip
    frame = inp.frame.select(list(dict.fromkeys(cols)))
    if settings["rubric_column"] is not None:
        frame = frame.with_columns(pl.Series(settings["rubric_column"], [r.to_json(indent=None) for r in inp.rubrics],
                                             dtype=pl.String))  # fmt: skip
    frame.write_parquet(root / "inputs.parquet")
    if examples is not None:
        from rubrictools.verdicts import to_polars

        to_polars(examples, name="examples").write_parquet(root / "examples.parquet")
    base_rubric = None if rubric is None else (rubric if isinstance(rubric, Rubric) else Rubric.from_dict(rubric))
    store = ResponseCache(cache_path)
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
            "judges": [j.model_dump(mode="json", exclude={"api_key"}) for j in plan.judges],  # type: ignore[union-attr]
            "cache": str(cache_path),
            "calls": len(plan.calls),
            "unique_requests": len(set(keys)),
            "precached": precached,
            "rounds": [],
        }
        _write_json(handle, h)
        job = BatchJob(root, api_key=api_key)
        job._judges = None if api_key is not None else plan.judges  # type: ignore[assignment]
        _submit_rounds(job, plan, store, max_requests=max_requests_per_batch, max_cost_usd=max_cost_usd)
    finally:
        store.close()
    return job


def collect_batch(
    job: BatchJob | BatchGroup | str | Path,
    *,
    api_key: str | None = None,
    wait: bool = True,
    poll_interval: float = 30.0,
    timeout: float | None = None,
    progress: bool = True,
) -> pl.DataFrame:
    """The verdict table of a batch job, by object or directory (e.g. from a new session);
    see :meth:`BatchJob.collect`."""
    if isinstance(job, (str, Path)) and (Path(job) / GROUP).exists():
        job = BatchGroup(job, api_key=api_key)
    if isinstance(job, BatchGroup):
        return job.collect(wait=wait, poll_interval=poll_interval, timeout=timeout, progress=progress)
    if not isinstance(job, BatchJob):
        job = BatchJob(job, api_key=api_key)
    elif api_key is not None:
        job._api_key, job._judges = api_key, None
    return job.collect(wait=wait, poll_interval=poll_interval, timeout=timeout, progress=progress)
