"""The one executor: runs judge calls with a bounded worker pool, retries, budget and cache.

It never looks at the judge mode: a call's task parses its reply, and everything else
(concurrency per judge, the cost budget, cancellation, cache reads and writes, distributions)
is the same for every mode, for live grading, streaming slices, batch retries and Ray blocks.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rubrictools.grading.answers import cache_entry, from_cache
from rubrictools.grading.budget import Budget
from rubrictools.grading.bulk import bulk_objects
from rubrictools.grading.inputs import AnyJudge
from rubrictools.grading.schedule import WarmFirst
from rubrictools.judge import (
    CacheWriteError,
    Call,
    CallResult,
    Grader,
    Judge,
    ResponseCache,
    RowSink,
    ScriptedJudge,
    apply_answer,
)
from rubrictools.judge.correction import corrective_messages, describe_problems
from rubrictools.judge.providers import require_credentials
from rubrictools.judge.retry import scrub_secrets
from rubrictools.judge.slots import server_slots
from rubrictools.judge.throttle import Throttle
from rubrictools.judge.transport import complete
from rubrictools.progress import progress_bar
from rubrictools.stack import user_stacklevel

__all__ = [
    "BUDGET_ERROR",
    "CANCELLED_ERROR",
    "EMPTY_ERROR",
    "UNWRITABLE_ERROR",
    "Hooks",
    "OnResult",
    "OnStart",
    "check_callbacks",
    "execute",
]

OnResult = Callable[[list[dict[str, Any]]], Any]
"""``grade(on_result=...)``: called with each completed call's verdict rows."""

OnStart = Callable[[dict[str, Any]], Any]
"""``grade(on_start=...)``: called before each call is asked, with what it will ask."""


@dataclass(frozen=True)
class Hooks:
    """The user's callbacks of a grading run: ``on_start`` before each call is sent,
    ``on_result`` as each call completes (cache hits too)."""

    on_start: OnStart | None = None
    on_result: OnResult | None = None


_REPORTED = ("id", "judge", "criterion", "verdict", "value", "explanation", "error", "error_kind")


def check_callbacks(*, on_start: Any, on_result: Any, batch: bool) -> None:
    """The user's callbacks, checked before any call: functions of one argument, and none with
    a batch job (which reports nothing as it runs)."""
    for name, fn in (("on_start", on_start), ("on_result", on_result)):
        if fn is None:
            continue
        if not callable(fn):
            raise TypeError(f"{name} must be a function (or None), got {type(fn).__name__}")
        try:
            inspect.signature(fn).bind(None)
        except TypeError:
            raise TypeError(f"{name} must take one argument (what it is given each call)") from None
        except ValueError:  # a builtin without a signature (print): called as it is
            pass
        if batch:
            raise ValueError(f"{name}= reports calls as they run in live grading; a batch job has none to report")


class _Reporter:
    """Hands the user's callbacks what each call will ask (``on_start``) and each completed
    call's verdict rows (``on_result``); an exception in either is warned about once and never
    stops the run."""

    def __init__(self, hooks: Hooks, judges: Sequence[AnyJudge]) -> None:
        self.hooks = hooks
        self.labels = [j.label for j in judges]
        self.failed: set[str] = set()

    def start(self, call: Call) -> None:
        if self.hooks.on_start is not None:
            subject = call.task.subject
            what = {"id": subject.sid, "judge": self.labels[call.judge_i], "criteria": call.task.asks(),
                    "messages": call.messages}  # fmt: skip
            self._safely("on_start", self.hooks.on_start, what)

    def __call__(self, call: Call) -> None:
        if self.hooks.on_result is None:
            return
        sink = RowSink(self.labels)
        call.task.rows(call, sink)
        cols = [sink.cols[k] for k in _REPORTED]
        rows = [dict(zip(_REPORTED, row, strict=True)) for row in zip(*cols, strict=True)]
        self._safely("on_result", self.hooks.on_result, rows)

    def _safely(self, name: str, fn: Callable[[Any], Any], arg: Any) -> None:
        try:
            fn(arg)
        except Exception as e:  # noqa: BLE001  # a user's callback may raise anything; it is warned about once and never stops the run
            if name not in self.failed:
                self.failed.add(name)
                msg = f"{name} raised {type(e).__name__}: {e} (the run goes on)"
                warnings.warn(msg, RuntimeWarning, stacklevel=user_stacklevel())


BUDGET_ERROR = "budget exceeded: call not made (its worst-case cost does not fit in what is left of max_cost_usd)"
CANCELLED_ERROR = "cancelled: call not made (run interrupted)"
UNWRITABLE_ERROR = (
    "call not made: the response cache cannot be written (see the warning: a full disk, a read-only file), so its "
    "answer could not be kept for a re-run; fix that and re-run (no answer already received is asked again)"
)
EMPTY_ERROR = (
    "the model returned nothing (an empty reply, 0 completion tokens): check its chat template "
    "(a GGUF without one makes llama-cpp-python fall back to llama-2 formatting; start the server with "
    "its --chat_format, e.g. LocalModelServer(chat_format='gemma'))"
)


class _Run:
    """Shared state of one execution: a throttle per judge, money spent, progress."""

    def __init__(
        self,
        judges: Sequence[AnyJudge],
        cache: ResponseCache | None,
        max_cost_usd: float | Budget | None,
        progress: Any,
        cancel: threading.Event,
        slots: Sequence[int | None],
        report: _Reporter | None = None,
    ) -> None:
        self.judges = judges
        self.report = report
        self.cache = cache
        self.budget = max_cost_usd if isinstance(max_cost_usd, Budget) else Budget(max_cost_usd)
        self.bar = progress
        self.cancel = cancel
        # one shared gate and adaptive concurrency limit per judge (see rubrictools.judge.throttle)
        self.throttles = [
            Throttle(j.max_concurrency, slots=s, adaptive=j.adaptive_concurrency)
            if isinstance(j, Judge)
            else Throttle(1)
            for j, s in zip(judges, slots, strict=True)
        ]
        # a judge you wrote (rt.Grader) answers at most max_concurrency questions at once
        self.gates = [asyncio.Semaphore(j.max_concurrency) if isinstance(j, Grader) else None for j in judges]
        self.stats = {"calls": 0, "errors": 0, "empty": 0}
        self.write_failed = False
        # once set, no more paid calls: their answers could not be kept (a cache that still
        # cannot write what an earlier run left in memory stops this run before its first call)
        self.unwritable = cache is not None and not cache.writable()
        self.keys = [j.api_key.get_secret_value() for j in judges if isinstance(j, Judge) and j.api_key is not None]

    def _tick(self, call: Call) -> None:
        if self.report is not None:
            self.report(call)
        if self.bar is None:
            return
        if call.error or not call.answered:
            self.stats["errors"] += 1
        self.bar.update(1)
        self.bar.set_postfix(
            calls=self.stats["calls"], errors=self.stats["errors"], cost=f"${self.budget.spent:.4f}", refresh=False
        )

    async def _send(
        self,
        judge: Judge,
        call: Call,
        budget: int,
        extra: dict[str, Any] | None,
        messages: list[dict[str, str]] | None = None,
    ) -> CallResult | None:
        """One request (with its HTTP retries); None, with nothing sent, when its worst-case
        cost does not fit in what is left of the budget."""
        sent = messages or call.messages
        held = await self.budget.acquire(judge, sent, call.max_tokens, int((extra or {}).get("n", 1)))
        if held is None:
            return None
        self.stats["calls"] += 1
        try:
            res = await complete(
                judge,
                sent,
                call.output,
                max_attempts=budget,
                max_tokens=call.max_tokens,
                extra=extra,
                throttle=self.throttles[call.judge_i],
            )
        except BaseException:
            self.budget.settle(held, None)
            raise
        self.budget.settle(held, res.cost_usd)
        call.add_usage(res)
        if res.error is None:  # the trace of the reply the call now holds (a corrective turn's replaces it)
            call.reasoning = res.reasoning
        return res

    def _scripted(self, judge: ScriptedJudge, call: Call) -> None:
        call.attempts = 0  # no HTTP request: rt.usage counts none for a scripted judge
        if apply_answer(call, judge.reply(call.task)) and call.wants_distribution and call.parsed is not None:
            call.dist, call.dist_source = call.task.certain_distribution(call.parsed), "scripted"

    async def _custom(self, judge: Grader, call: Call, gate: asyncio.Semaphore) -> None:
        """Ask a judge you wrote once: its reply is parsed like a model's; an exception in it
        is this call's ``provider`` error row (its message scrubbed of keys)."""
        self.stats["calls"] += 1
        call.attempts = 1
        async with gate:
            t0 = time.perf_counter()
            try:
                reply = await judge.respond(call.messages, call.task.schema()[0])
            except Exception as e:  # noqa: BLE001  # a custom judge (rt.Grader) may raise anything; it becomes this call's error row, key scrubbed
                call.error = scrub_secrets(f"{judge.label}: {type(e).__name__}: {e}", self.keys)
                call.error_kind = "provider"
                return
            finally:
                call.latency_s = time.perf_counter() - t0
        if apply_answer(call, reply):
            if call.wants_distribution and call.parsed is not None:
                call.dist, call.dist_source = call.task.certain_distribution(call.parsed), "custom"
            self._store(judge, call)

    async def run_one(self, call: Call) -> None:
        judge = self.judges[call.judge_i]
        gate = self.gates[call.judge_i]
        if self.unwritable and not isinstance(judge, ScriptedJudge):
            call.error, call.error_kind = UNWRITABLE_ERROR, "cache_unwritable"
            self._tick(call)
            return
        if self.report is not None:
            self.report.start(call)
        if isinstance(judge, ScriptedJudge):
            self._scripted(judge, call)
        elif isinstance(judge, Grader):
            assert gate is not None  # every Grader has its gate (see __init__)
            await self._custom(judge, call, gate)
        else:  # latency_s: the sum of its requests' own times (added up as they come back)
            await self._ask(judge, call)
        self._tick(call)

    async def _ask(self, judge: Judge, call: Call) -> None:
        """Ask until the reply parses: at most ``1 + max_retries`` HTTP requests for errors and
        ``1 + max_parse_retries`` questions, each retry of an unusable reply a corrective turn."""
        budget = 1 + judge.max_retries
        asks = 1 + judge.max_parse_retries
        messages = call.messages
        while budget > 0 and asks > 0:
            if self.cancel.is_set():
                if call.error is None:
                    call.error, call.error_kind = CANCELLED_ERROR, "cancelled"
                return
            res = await self._send(judge, call, budget, call.extra, messages)
            if res is None:
                call.error, call.error_kind = BUDGET_ERROR, "budget"
                return
            budget -= res.attempts - res.uncharged
            asks -= 1
            if res.error is not None:
                call.error, call.error_kind = res.error, "provider"
                return
            if _empty(res):  # not a parse problem: a corrective turn would get nothing again
                call.content, call.error, call.error_kind = res.content, EMPTY_ERROR, "empty_reply"
                self.stats["empty"] += 1
                return
            if apply_answer(call, res.content):
                if call.wants_distribution:
                    budget = await self._distribution(call, judge, res, budget)
                self._store(judge, call)
                return
            truncated = res.finish_reason == "length" and call.max_tokens is not None
            problems = describe_problems(call.parsed.problems if call.parsed else {}, truncated=truncated)
            if call.error is not None and truncated:
                call.error = f"{call.error} (reply cut off at max_tokens={call.max_tokens})"
            messages = corrective_messages(call.messages, res.content, problems)

    def _store(self, judge: Judge | Grader, call: Call) -> None:
        """Cache an answer. A cache that cannot be written never costs the answer: the cache
        keeps it (in its reserve file, and in memory for this process) and retries the write
        with each later answer; the run warns once and stops its paid calls (the ones not yet
        made become ``cache_unwritable`` error rows)."""
        if self.cache is None or call.key is None:
            return
        try:
            self.cache.put(call.key, judge.model, cache_entry(call))
        except (sqlite3.Error, OSError) as e:
            if not self.write_failed:
                self.write_failed = True
                fix = "free space and re-run" if getattr(e, "disk_full", False) else "fix that and re-run"
                text = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
                warnings.warn(
                    f"response cache write failed: {text}. The verdicts are kept; no more calls are made (they become "
                    "cache_unwritable error rows): "
                    f"{fix}, no answer received is asked again",
                    RuntimeWarning,
                    stacklevel=user_stacklevel(),
                )
            self.unwritable = self.unwritable or isinstance(e, CacheWriteError)

    async def _distribution(self, call: Call, judge: Judge, res: CallResult, budget: int) -> int:
        """Fill ``call.dist`` from the answer's logprobs, else from ``dist_samples`` sampled answers."""
        dist = call.task.distribution_from_logprobs(res.content, res.logprobs)
        if dist is not None:
            call.dist, call.dist_source = dist, "logprobs"
            return budget
        if call.dist_samples > 0 and budget > 0:
            more = await self._send(judge, call, budget, {"n": call.dist_samples, "temperature": 1.0})
            if more is None:
                call.dist, call.dist_source = None, "unavailable (budget)"
                return budget
            budget -= more.attempts - more.uncharged
            if more.error is None:
                samples = more.choices or [more.content]
                dist = call.task.distribution_from_samples(samples)
                if dist is not None:
                    call.dist, call.dist_source = dist, f"samples:{len(samples)}"
                    return budget
        call.dist, call.dist_source = None, "unavailable"
        return budget


def _empty(res: CallResult) -> bool:
    """A reply with no text that also cost no completion tokens (or says nothing of them)."""
    return not (res.content or "").strip() and not res.completion_tokens and not res.choices


def _answer_from_cache(calls: list[Call], cache: ResponseCache) -> None:
    keyed = [c for c in calls if c.key is not None]
    hits = cache.get_many(c.key for c in keyed if c.key is not None)
    for c in keyed:
        hit = hits.get(c.key or "")
        if hit is not None:
            from_cache(c, hit)  # when it does not parse, the call is asked again


def _identity(call: Call) -> str:
    """What makes two calls the same request: the judge and every byte it is sent."""
    if call.key is not None:
        return call.key
    body = [call.judge_i, call.messages, call.output, call.max_tokens, call.extra, call.dist_samples]
    return json.dumps(body, sort_keys=True, default=str)


def _dedupe(todo: list[Call], judges: Sequence[AnyJudge]) -> tuple[list[Call], list[tuple[Call, Call]]]:
    """The calls to send (one per distinct request to an LLM judge) and (sent, copy) pairs
    for the identical requests that share its answer."""
    first: dict[str, Call] = {}
    send: list[Call] = []
    copies: list[tuple[Call, Call]] = []
    for c in todo:
        if not isinstance(judges[c.judge_i], Judge):
            send.append(c)
            continue
        ident = _identity(c)
        if ident in first:
            copies.append((first[ident], c))
        else:
            first[ident] = c
            send.append(c)
    return send, copies


def _share(sent: Call, copy: Call) -> None:
    """Give ``copy`` the answer (or the error) of the identical request ``sent``. It made no
    request: no attempts, tokens or cost of its own."""
    copy.content = sent.content
    copy.parsed = copy.task.parse(sent.content) if sent.content is not None else None
    copy.error, copy.error_kind = sent.error, sent.error_kind
    copy.dist, copy.dist_source = sent.dist, sent.dist_source
    copy.reasoning = sent.reasoning


async def execute(
    calls: list[Call],
    judges: Sequence[AnyJudge],
    cache: ResponseCache | None,
    *,
    max_cost_usd: float | Budget | None = None,
    progress: bool = False,
    cancel: threading.Event | None = None,
    hooks: Hooks | None = None,
) -> None:
    """Answer every call: from the cache where it can, else by asking its judge.

    Every call ends answered or with an explicit ``error`` (failed, over budget, cancelled);
    an exception inside one call becomes that call's ``internal:`` error, never a lost row.
    Identical requests (same judge, same messages: the same text in two rows) are sent once
    and share the answer; the copies record no attempts, tokens or cost.
    """
    if cache is not None:
        with bulk_objects():
            _answer_from_cache(calls, cache)
    report = _Reporter(hooks, judges) if hooks is not None else None
    if report is not None:
        for c in calls:
            if c.cached:
                report(c)
    todo, copies = _dedupe([c for c in calls if not c.cached], judges)
    asked = {c.judge_i for c in todo}
    require_credentials([j for i, j in enumerate(judges) if i in asked and isinstance(j, Judge)])
    # the slots each asked judge's server reports (a blocking GET, once per server and process)
    slots = [
        await asyncio.to_thread(server_slots, j) if isinstance(j, Judge) and i in asked else None
        for i, j in enumerate(judges)
    ]
    bar = progress_bar(len(todo), enabled=progress, desc="grading", unit="call")
    run = _Run(judges, cache, max_cost_usd, bar, cancel or threading.Event(), slots, report)
    if run.unwritable and todo:
        warnings.warn(
            f"response cache {cache.path if cache else ''} still cannot be written (answers of an earlier run wait "
            "in memory): no call is made, the rows become cache_unwritable errors; free space (or fix the file) and "
            "re-run",
            RuntimeWarning,
            stacklevel=user_stacklevel(),
        )
    queue = WarmFirst(todo, judges)  # a shared prompt prefix: one call warms the provider's cache first
    n_workers = max(1, min(len(todo), sum(min(getattr(j, "max_concurrency", 16), 512) for j in judges)))

    async def worker() -> None:
        while (c := await queue.next()) is not None:
            try:
                await run.run_one(c)
            except asyncio.CancelledError:
                if c.error is None:
                    c.error, c.error_kind = CANCELLED_ERROR, "cancelled"
                raise
            except Exception as e:  # noqa: BLE001  # a bug of ours in one call must become that call's error row (error_kind='internal'), not lose the run
                c.error = scrub_secrets(f"internal: {type(e).__name__}: {e}", run.keys)
                c.error_kind = "internal"
            finally:
                queue.done(c)

    try:
        await asyncio.gather(*(worker() for _ in range(n_workers)))
    finally:
        for c in todo:
            if c.content is None and c.error is None:
                c.error, c.error_kind = CANCELLED_ERROR, "cancelled"
        for sent, copy in copies:
            _share(sent, copy)
            if report is not None:
                report(copy)
        if bar is not None:
            bar.close()
        if run.stats["empty"]:
            warnings.warn(f"{run.stats['empty']} call(s): {EMPTY_ERROR}", RuntimeWarning, stacklevel=user_stacklevel())
        if cache is not None and (run.write_failed or run.unwritable):
            cache.flush()
            reserve, memory = cache.unsaved()
            if reserve or memory:
                warnings.warn(
                    f"response cache {cache.path}: {reserve} answer(s) not yet in the database are in its reserve file "
                    f"(the next run reads them)"
                    + (
                        f"; {memory} are held in this session's memory only (re-run here once it can be written)"
                        if memory
                        else ""
                    ),
                    RuntimeWarning,
                    stacklevel=user_stacklevel(),
                )
