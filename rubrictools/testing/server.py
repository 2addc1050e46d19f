"""A loopback OpenAI-compatible server for offline tests, benchmarks and demos.

``rt.testing.FakeLLMServer`` answers on 127.0.0.1 with a random port, so a pipeline built on
rubrictools can be tested end to end (the real litellm path, retries, caching, batch jobs)
without a key or a network. It is not a model: its default script says MET when the
submission contains "good".

Example
-------
>>> from rubrictools.testing import FakeLLMServer
>>> with FakeLLMServer() as srv:  # doctest: +SKIP
...     rt.grade(df, rubric, model=rt.Judge(model="openai/gpt-4.1-mini", api_base=srv.url, api_key="fake"))

It answers with scripted replies and can inject delays, HTTP 429 (with Retry-After), 500,
hangs, malformed JSON and wrong labels; every request is recorded (``server.requests``).
With ``slots=1`` it answers one chat request at a time, as llama-cpp-python's server does,
the others waiting in line (``report_slots=True``: it says so at ``GET /props``, as
llama.cpp's own server does).

It also speaks the provider batch API: ``POST /v1/files`` (multipart upload), ``GET
/v1/files/{id}[/content]``, ``POST /v1/batches``, ``GET /v1/batches[/{id}]`` and ``POST
/v1/batches/{id}/cancel``. Each status poll moves a batch on (all lines at once, or
``batch_lines_per_poll`` at a time); lines are answered by the same script and injected
faults as live calls (a non-200 reply becomes a line of the error file); with
``batch_expire_after`` a batch expires after that many lines and the rest go to the error
file with code ``batch_expired``, as OpenAI's do.

Tests wait on it, never on the clock: :meth:`~FakeLLMServer.hold` keeps requests unanswered
until :meth:`~FakeLLMServer.release`, and :meth:`~FakeLLMServer.arrived` and
:meth:`~FakeLLMServer.answered` are events set when that many chat requests have come in or been
answered (counted in :attr:`~FakeLLMServer.arrivals` and :attr:`~FakeLLMServer.answers`).

>>> with FakeLLMServer() as srv:  # doctest: +SKIP
...     srv.hold(4)  # the next 4 chat requests wait
...     ...  # start a run in a thread
...     assert srv.arrived(4).wait(60)  # all 4 are in the server, none answered
...     srv.release()  # answer them, and hold nothing more
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import deque
from typing import Any

from aiohttp import web

from rubrictools.testing.batches import BatchAPI
from rubrictools.testing.prompt_cache import PromptCacheSim, system_text
from rubrictools.testing.scripts import (
    Reply,
    Script,
    default_script,
    fake_logprobs,
    fake_usage,
    user_text,
)

__all__ = ["FakeLLMServer"]


def _wake(futures: list[asyncio.Future[bool]], counted: bool) -> None:
    """Let held requests go (on the server's loop); ``counted``: recorded and counted as answered."""
    for future in futures:
        if not future.done():
            future.set_result(counted)


class FakeLLMServer(BatchAPI):
    """A loopback OpenAI-compatible server answering from a script (``with FakeLLMServer() as srv:``)."""

    def __init__(
        self,
        script: Script | None = None,
        *,
        latency: float = 0.0,
        dialect: str = "json_schema",
        slots: int | None = None,
        report_slots: bool = False,
        prompt_cache: bool = False,
    ) -> None:
        self.script: Script = script or default_script
        # like OpenAI: the longest prefix shared with an answered request is reported as cached
        # (from 1,024 tokens, in 128-token steps; rubrictools.testing.prompt_cache)
        self.prompt_cache = PromptCacheSim() if prompt_cache else None
        self.latency = latency
        # like llama-cpp-python: at most ``slots`` chat requests answered at once, the rest wait
        # in arrival order (and one whose client gave up is still answered: its slot stays taken)
        self.slots = slots
        self.report_slots = report_slots  # answer GET /props with {"total_slots": slots}, as llama.cpp's server does
        self._slot_gate: asyncio.Semaphore | None = None
        self.dialect = dialect  # the structured-output form this server "enforces" (see _probe_answer)
        self.probes: list[dict[str, Any]] = []  # structured-output probes (kept out of ``requests``)
        self.refuse_other_dialects = False  # answer other dialects' probes with HTTP 500, as llama-cpp-python does
        self.requests: list[dict[str, Any]] = []
        self.headers_seen: list[dict[str, str]] = []
        self.faults: list[Reply] = []
        # provider batch API (/v1/files + /v1/batches)
        self.files: dict[str, dict[str, Any]] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.batch_requests: list[dict[str, Any]] = []  # chat bodies answered inside batches
        self.batch_lines_per_poll: int | None = None  # None: a batch finishes at its first status poll
        self.batch_expire_after: int | None = None  # lines answered before a batch expires
        self.batch_polls = 0
        self.batch_create_lost = 0  # batches created whose answer is then lost (HTTP 502)
        self.in_flight = 0
        self.storm_until = 0.0  # monotonic time until which every chat request gets a 429
        self.storm_retry_after = 1.0
        self.storm_requests = 0  # chat requests answered with the storm's 429
        self.storm_armed: tuple[int, float] | None = None  # (request count, seconds): a storm to start then
        self.peak_in_flight = 0  # most chat requests being answered (or waiting for a slot) at once
        self.peak_serving = 0  # most chat requests being answered at once (not waiting for a slot)
        self._serving = 0
        self.in_flight_seen: list[int] = []  # chat requests in the server as each one arrived, itself included
        self.api_faults: list[Reply] = []  # replies served (in order) to files/batches calls before normal service
        # synchronisation for tests (see hold, release, arrived, answered)
        self.arrivals = 0  # chat requests that reached the server (probes not counted), held ones included
        self.answers = 0  # chat requests answered (any status), after any hold and delay
        self.arrived_at: list[float] = []  # time.monotonic() at each chat request's arrival, in order
        self._hold: tuple[int, int | None] | None = None  # (hold after this many arrivals, how many more; None: all)
        self._held: deque[asyncio.Future[bool]] = deque()  # held requests not yet released, oldest first
        self._arrival_events: list[tuple[int, threading.Event]] = []
        self._answer_events: list[tuple[int, threading.Event]] = []
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self.port = 0

    # ------------------------------------------------------------------ control
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def hits(self) -> int:
        """Chat requests recorded in :attr:`requests`, answered or being answered (a held one once
        released; one waiting for a slot once it has one). :attr:`arrivals` counts them as they come."""
        with self._lock:
            return len(self.requests)

    def storm(self, seconds: float, *, retry_after: float = 1.0, after_requests: int = 0) -> None:
        """A provider-wide rate-limit storm: every chat request for ``seconds`` gets a 429, from
        when ``after_requests`` more requests have come (0: now; no guessing how fast a client starts)."""
        self.storm_retry_after = retry_after
        with self._lock:
            self.storm_armed = (len(self.requests) + after_requests, seconds)

    def hold(self, n: int | None = None, *, after: int = 0) -> None:
        """Keep chat requests unanswered until :meth:`release`: the ``n`` next to arrive (every
        one with None), after ``after`` more have arrived and been answered as usual.

        A held request has arrived (it counts in :attr:`arrivals`, :attr:`in_flight` and
        :attr:`peak_in_flight`) and is answered only once released; on a server with ``slots``
        it holds its slot meanwhile, as a request the server takes forever over does. Its client
        may give up on it (a timeout): it stays held, as on a real server. It is recorded in
        :attr:`requests` (:attr:`hits`) when it is answered. A later call replaces the hold;
        requests already held stay held. :meth:`reset` and :meth:`stop` let every held request
        go with an HTTP 503, neither recorded nor counted.
        """
        with self._lock:
            self._hold = (self.arrivals + max(0, after), n)

    def release(self, n: int | None = None) -> int:
        """Answer the ``n`` oldest held requests (every one with None, and hold no more after
        them); the number released. Requests that have not arrived yet are not released
        ahead: wait for them with :meth:`arrived` first. Safe from any thread."""
        return self._release(n, counted=True)

    def _release(self, n: int | None, *, counted: bool) -> int:
        with self._lock:
            if n is None:
                self._hold = None
            count = len(self._held) if n is None else min(n, len(self._held))
            freed = [self._held.popleft() for _ in range(count)]
        loop = self._loop
        if freed and loop is not None:
            loop.call_soon_threadsafe(_wake, freed, counted)
        return len(freed)

    @property
    def held(self) -> int:
        """How many requests are held now (arrived, not yet released)."""
        with self._lock:
            return len(self._held)

    def arrived(self, n: int) -> threading.Event:
        """An event set once ``n`` chat requests have arrived (:attr:`arrivals`, counted from the
        start or the last :meth:`reset`): ``assert srv.arrived(4).wait(60)``."""
        return self._event(self._arrival_events, n, lambda: self.arrivals)

    def answered(self, n: int) -> threading.Event:
        """An event set once ``n`` chat requests have been answered (:attr:`answers`, any
        status, counted from the start or the last :meth:`reset`)."""
        return self._event(self._answer_events, n, lambda: self.answers)

    def _event(self, waiting: list[tuple[int, threading.Event]], n: int, count: Any) -> threading.Event:
        event = threading.Event()
        with self._lock:
            if count() >= n:
                event.set()
            else:
                waiting.append((n, event))
        return event

    @staticmethod
    def _count(waiting: list[tuple[int, threading.Event]], count: int) -> None:
        """Set the events of ``waiting`` whose count is reached (under the lock)."""
        for n, event in [w for w in waiting if w[0] <= count]:
            event.set()
            waiting.remove((n, event))

    def inject(self, *replies: Reply) -> None:
        """Queue replies served (in order) before the script is consulted again."""
        with self._lock:
            self.faults.extend(replies)

    def reset(self) -> None:
        """Forget what was asked (requests, counts, faults, storms, batches). Every held request is
        released and answered, but neither recorded nor counted: it belongs to what was forgotten."""
        self._release(None, counted=False)
        if self.prompt_cache is not None:
            self.prompt_cache.clear()
        with self._lock:
            self.arrivals = self.answers = 0
            self.arrived_at.clear()
            self._arrival_events.clear()
            self._answer_events.clear()
            self.storm_until, self.storm_requests, self.storm_armed = 0.0, 0, None
            kept_lists = (
                self.requests,
                self.probes,
                self.headers_seen,
                self.faults,
                self.batch_requests,
                self.in_flight_seen,
            )
            for kept in kept_lists:
                kept.clear()
            for table in (self.files, self.batches):
                table.clear()
            self.batch_lines_per_poll = self.batch_expire_after = None
            self.batch_polls = self.peak_in_flight = self.peak_serving = self.batch_create_lost = 0
            self.api_faults.clear()

    # ------------------------------------------------------------------ serving
    def _answer(self, body: dict[str, Any], *, record: bool = True) -> tuple[Reply, int, str | dict[str, Any]]:
        """(reply, HTTP status, JSON payload or raw text) for one chat-completions request body."""
        with self._lock:
            if record:
                self.requests.append(body)
            fault = self.faults.pop(0) if self.faults else None
            if self.storm_armed is not None and len(self.requests) >= self.storm_armed[0]:
                self.storm_until, self.storm_armed = time.monotonic() + self.storm_armed[1], None
            if fault is None and time.monotonic() < self.storm_until:
                self.storm_requests += 1
                fault = Reply(status=429, headers={"Retry-After": f"{self.storm_retry_after:g}"})
        reply = fault
        if reply is None:
            out = self.script(body)
            reply = out if isinstance(out, Reply) else Reply(content=out)
        if reply.status != 200:
            text = reply.body or json.dumps(
                {"error": {"message": f"fake error {reply.status}", "type": "fake", "code": reply.status}}
            )
            return reply, reply.status, text
        if reply.body is not None:
            return reply, 200, reply.body
        content = reply.content or ""
        n = int(body.get("n") or 1)
        contents = (
            [content]
            if n == 1
            else [(reply.samples or [content])[i % len(reply.samples or [content])] for i in range(n)]
        )
        choices = []
        for i, text in enumerate(contents):
            message = {"role": "assistant", "content": text, "reasoning_content": reply.reasoning}
            message = {k: v for k, v in message.items() if v is not None or k == "content"}
            choice: dict[str, Any] = {"index": i, "message": message, "finish_reason": reply.finish_reason}
            if body.get("logprobs") and not reply.no_logprobs:
                choice["logprobs"] = {
                    "content": fake_logprobs(text, reply.label_probs, int(body.get("top_logprobs") or 0))
                }
            choices.append(choice)
        payload = {
            "id": f"chatcmpl-fake-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": choices,
            "usage": self._usage(reply, body, content),
        }
        return reply, 200, payload

    def _usage(self, reply: Reply, body: dict[str, Any], content: str) -> dict[str, Any]:
        usage = fake_usage(reply, user_text(body), content)
        if self.prompt_cache is not None and reply.cached_tokens is None:
            cached = self.prompt_cache.cached(system_text(body), user_text(body))
            if cached:
                usage["prompt_tokens_details"] = {"cached_tokens": cached}
        return usage

    def _probe_answer(self, body: dict[str, Any]) -> dict[str, Any] | int | None:
        """The answer to rubrictools' structured-output probe (a schema whose one property
        ``probe`` allows a single value), or None for any other request. The server honours
        the schema only in its own ``dialect``, as real servers do (llama-cpp-python ignores
        ``json_schema`` and enforces ``{"type": "json_object", "schema": ...}``)."""
        fmt = body.get("response_format") or {}
        sent = {
            "json_schema": (fmt.get("json_schema") or {}).get("schema") if fmt.get("type") == "json_schema" else None,
            "json_object_schema": fmt.get("schema") if fmt.get("type") == "json_object" else None,
            "guided": body.get("guided_json"),
        }
        for dialect, schema in sent.items():
            enum = (((schema or {}).get("properties") or {}).get("probe") or {}).get("enum")
            if isinstance(enum, list) and len(enum) == 1:
                self.probes.append(body)
                if dialect != self.dialect and self.refuse_other_dialects:
                    return 500
                value = enum[0] if dialect == self.dialect else "no"
                message = {"role": "assistant", "content": json.dumps({"probe": value})}
                return {
                    "object": "chat.completion",
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                }
        return None

    async def _answer_in_time(
        self, body: dict[str, Any], held: asyncio.Future[bool] | None
    ) -> tuple[Reply, int, str | dict[str, Any]]:
        with self._lock:
            self._serving += 1
            self.peak_serving = max(self.peak_serving, self._serving)
        try:
            if held is not None and not await held:  # released by reset() or stop(): nothing recorded or counted
                return Reply(status=503), 503, json.dumps({"error": {"message": "fake server reset", "code": 503}})
            reply, status, payload = self._answer(body)
            delay = reply.delay or self.latency
            if delay:
                await asyncio.sleep(delay)
            if self.prompt_cache is not None and status == 200:
                self.prompt_cache.remember(system_text(body), user_text(body))
            with self._lock:
                self.answers += 1
                self._count(self._answer_events, self.answers)
        finally:
            with self._lock:
                self._serving -= 1
        return reply, status, payload

    async def _props(self, request: web.Request) -> web.StreamResponse:
        if not self.report_slots or self.slots is None:
            return web.json_response({"error": {"message": "File Not Found"}}, status=404)
        return web.json_response({"total_slots": self.slots, "model_path": "fake.gguf"})

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        probed = self._probe_answer(body)
        if isinstance(probed, int):
            return web.json_response({"error": {"message": "response_format type not supported"}}, status=probed)
        if probed is not None:
            return web.json_response(probed)
        with self._lock:
            self.headers_seen.append(dict(request.headers))
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            self.in_flight_seen.append(self.in_flight)
            held = self._arrive()
        try:
            if self.slots is not None:
                if self._slot_gate is None:
                    self._slot_gate = asyncio.Semaphore(self.slots)
                async with self._slot_gate:
                    reply, status, payload = await self._answer_in_time(body, held)
            else:
                reply, status, payload = await self._answer_in_time(body, held)
        finally:
            with self._lock:
                self.in_flight -= 1
                if held is not None and held in self._held:  # cancelled while held
                    self._held.remove(held)
        if isinstance(payload, str):
            return web.Response(
                status=status,
                text=payload,
                headers=reply.headers if status != 200 else None,
                content_type="application/json",
            )
        return web.json_response(payload, headers=reply.headers)

    def _arrive(self) -> asyncio.Future[bool] | None:
        """Count a chat request in (under the lock, on the server's loop); a future to wait on
        when it is held."""
        self.arrivals += 1
        self.arrived_at.append(time.monotonic())
        self._count(self._arrival_events, self.arrivals)
        if self._hold is None or self.arrivals <= self._hold[0]:
            return None
        after, left = self._hold
        if left is not None:
            if left <= 0:
                return None
            self._hold = (after, left - 1)
        held: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._held.append(held)
        return held

    async def _start(self, ready: threading.Event) -> None:
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._handle)
        app.router.add_post("/chat/completions", self._handle)
        app.router.add_get("/props", self._props)
        for prefix in ("/v1", ""):
            app.router.add_post(f"{prefix}/files", self._upload)
            app.router.add_get(f"{prefix}/files/{{fid}}", self._file_meta)
            app.router.add_get(f"{prefix}/files/{{fid}}/content", self._file_content)
            app.router.add_post(f"{prefix}/batches", self._create_batch)
            app.router.add_get(f"{prefix}/batches", self._list_batches)
            app.router.add_get(f"{prefix}/batches/{{bid}}", self._get_batch)
            app.router.add_post(f"{prefix}/batches/{{bid}}/cancel", self._cancel_batch)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]  # aiohttp's site has a started server here
        ready.set()

    def start(self) -> FakeLLMServer:
        ready = threading.Event()

        def run() -> None:
            loop = self._loop = asyncio.new_event_loop()
            loop.run_until_complete(self._start(ready))
            loop.run_forever()
            loop.close()  # after stop(): its self-pipe sockets would otherwise wait for the GC

        self._thread = threading.Thread(target=run, name="fake-llm-server", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("fake LLM server did not start")
        return self

    def stop(self) -> None:
        if (loop := self._loop) is None:
            return
        self._release(None, counted=False)  # held requests are let go (into closed connections, most likely)

        async def shutdown() -> None:
            if self._runner is not None:
                await self._runner.cleanup()
            loop.stop()

        asyncio.run_coroutine_threadsafe(shutdown(), loop)
        if self._thread is not None:
            self._thread.join(10)
        self._loop = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
