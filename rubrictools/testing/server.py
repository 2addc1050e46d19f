"""A loopback OpenAI-compatible server for offline tests, benchmarks and demos.

``rt.testing.FakeLLMServer`` answers on 127.0.0.1 with a random port, so a pipeline built on
rubrictools can be tested end to end (the real litellm path, retries, caching, batch jobs)
without a key or a network. It is not a model: its default script says MET when the
submission contains "good".

Example
-------
>>> from rubrictools.testing import FakeLLMServer
>>> with FakeLLMServer() as srv:  # doctest: +SKIP
...     rt.grade(df, rubric, model="openai/gpt-4.1-mini", api_base=srv.url, api_key="fake")

It answers with scripted replies and can inject delays, HTTP 429 (with Retry-After), 500,
hangs, malformed JSON and wrong labels; every request is recorded (``server.requests``).

It also speaks the provider batch API: ``POST /v1/files`` (multipart upload), ``GET
/v1/files/{id}[/content]``, ``POST /v1/batches``, ``GET /v1/batches[/{id}]`` and ``POST
/v1/batches/{id}/cancel``. Each status poll moves a batch on (all lines at once, or
``batch_lines_per_poll`` at a time); lines are answered by the same script and injected
faults as live calls (a non-200 reply becomes a line of the error file); with
``batch_expire_after`` a batch expires after that many lines and the rest go to the error
file with code ``batch_expired``, as OpenAI's do.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

from aiohttp import web

from rubrictools.testing.scripts import (
    Reply,
    Script,
    default_script,
    fake_logprobs,
    fake_usage,
    json_or_text,
    user_text,
)

__all__ = ["FakeLLMServer"]


class FakeLLMServer:
    """Run with ``with FakeLLMServer() as srv: ... srv.url ...``."""

    def __init__(self, script: Script | None = None, *, latency: float = 0.0, dialect: str = "json_schema") -> None:
        self.script: Script = script or default_script
        self.latency = latency
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
        self.peak_in_flight = 0  # most chat requests being answered at once
        self.api_faults: list[Reply] = []  # replies served (in order) to files/batches calls before normal service
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
        with self._lock:
            return len(self.requests)

    def storm(self, seconds: float, *, retry_after: float = 1.0, after_requests: int = 0) -> None:
        """A provider-wide rate-limit storm: every chat request for ``seconds`` gets a 429, from
        when ``after_requests`` more requests have come (0: now; no guessing how fast a client starts)."""
        self.storm_retry_after = retry_after
        with self._lock:
            self.storm_armed = (len(self.requests) + after_requests, seconds)

    def inject(self, *replies: Reply) -> None:
        """Queue replies served (in order) before the script is consulted again."""
        with self._lock:
            self.faults.extend(replies)

    def reset(self) -> None:
        with self._lock:
            self.storm_until, self.storm_requests, self.storm_armed = 0.0, 0, None
            for kept in (self.requests, self.probes, self.headers_seen, self.faults, self.batch_requests):
                kept.clear()
            for table in (self.files, self.batches):
                table.clear()
            self.batch_lines_per_poll = self.batch_expire_after = None
            self.batch_polls = self.peak_in_flight = self.batch_create_lost = 0
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
            "usage": fake_usage(reply, user_text(body), content),
        }
        return reply, 200, payload

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
        try:
            reply, status, payload = self._answer(body)
            delay = reply.delay or self.latency
            if delay:
                await asyncio.sleep(delay)
        finally:
            with self._lock:
                self.in_flight -= 1
        if isinstance(payload, str):
            return web.Response(
                status=status,
                text=payload,
                headers=reply.headers if status != 200 else None,
                content_type="application/json",
            )
        return web.json_response(payload, headers=reply.headers)

    # ------------------------------------------------------------------ batch API
    def _new_file(self, content: bytes, filename: str, purpose: str) -> dict[str, Any]:
        fid = f"file-fake{len(self.files) + 1:04d}"
        meta = {
            "id": fid,
            "object": "file",
            "bytes": len(content),
            "created_at": int(time.time()),
            "filename": filename,
            "purpose": purpose,
            "status": "processed",
        }
        self.files[fid] = {"meta": meta, "content": content}
        return meta

    def file_lines(self, file_id: str) -> list[dict[str, Any]]:
        """The JSON lines of an uploaded or produced file (for tests)."""
        return [json.loads(x) for x in self.files[file_id]["content"].decode().splitlines() if x.strip()]

    def _api_fault(self) -> web.StreamResponse | None:
        with self._lock:
            fault = self.api_faults.pop(0) if self.api_faults else None
        if fault is None:
            return None
        text = fault.body or json.dumps({"error": {"message": f"fake error {fault.status}", "type": "fake"}})
        return web.Response(status=fault.status, text=text, headers=fault.headers, content_type="application/json")

    async def _upload(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        if (fault := self._api_fault()) is not None:
            return fault
        f = form.get("file")
        if f is None or not hasattr(f, "file"):
            return web.json_response({"error": {"message": "no file", "type": "invalid_request_error"}}, status=400)
        with self._lock:
            meta = self._new_file(f.file.read(), getattr(f, "filename", "upload.jsonl"), str(form.get("purpose", "")))
        return web.json_response(meta)

    async def _file_meta(self, request: web.Request) -> web.StreamResponse:
        f = self.files.get(request.match_info["fid"])
        if f is None:
            return web.json_response(
                {"error": {"message": "no such file", "type": "invalid_request_error"}}, status=404
            )
        return web.json_response(f["meta"])

    async def _file_content(self, request: web.Request) -> web.StreamResponse:
        f = self.files.get(request.match_info["fid"])
        if f is None:
            return web.json_response(
                {"error": {"message": "no such file", "type": "invalid_request_error"}}, status=404
            )
        return web.Response(body=f["content"], content_type="application/octet-stream")

    async def _create_batch(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if (fault := self._api_fault()) is not None:
            return fault
        with self._lock:
            self.headers_seen.append(dict(request.headers))
            f = self.files.get(body.get("input_file_id", ""))
            if f is None:
                return web.json_response(
                    {"error": {"message": "input file not found", "type": "invalid_request_error"}}, status=400
                )
            errors, lines, seen = [], [], set()
            for i, raw in enumerate(f["content"].decode().splitlines(), start=1):
                if not raw.strip():
                    continue
                try:
                    line = json.loads(raw)
                except ValueError:
                    errors.append({"code": "invalid_json_line", "message": "not JSON", "line": i})
                    continue
                cid = line.get("custom_id")
                if not cid:
                    errors.append({"code": "missing_custom_id", "message": "custom_id is required", "line": i})
                elif cid in seen:
                    errors.append({"code": "duplicate_custom_id", "message": f"duplicate custom_id {cid}", "line": i})
                elif line.get("url") != body.get("endpoint"):
                    errors.append(
                        {"code": "mismatched_url", "message": "url differs from the batch endpoint", "line": i}
                    )
                seen.add(cid)
                lines.append(line)
            now = int(time.time())
            bid = f"batch_fake{len(self.batches) + 1:04d}"
            b: dict[str, Any] = {
                "id": bid,
                "object": "batch",
                "endpoint": body.get("endpoint"),
                "input_file_id": f["meta"]["id"],
                "completion_window": body.get("completion_window", "24h"),
                "status": "validating",
                "errors": {"object": "list", "data": errors} if errors else None,
                "output_file_id": None,
                "error_file_id": None,
                "created_at": now,
                "in_progress_at": None,
                "expires_at": now + 86400,
                "finalizing_at": None,
                "completed_at": None,
                "failed_at": None,
                "expired_at": None,
                "cancelling_at": None,
                "cancelled_at": None,
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                "metadata": body.get("metadata"),
                "_pending": [] if errors else lines,
                "_out": [],
                "_err": [],
                "_answered": 0,
            }
            self.batches[bid] = b
            lost = self.batch_create_lost > 0
            if lost:
                self.batch_create_lost -= 1
        if lost:  # the batch exists, but the client never hears of it
            return web.json_response({"error": {"message": "bad gateway", "type": "fake"}}, status=502)
        return web.json_response(self._public(b))

    async def _list_batches(self, request: web.Request) -> web.StreamResponse:
        limit = int(request.query.get("limit", 20))
        with self._lock:
            data = [self._public(b) for b in reversed(list(self.batches.values()))][:limit]
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "first_id": data[0]["id"] if data else None,
                "last_id": data[-1]["id"] if data else None,
                "has_more": False,
            }
        )

    @staticmethod
    def _public(b: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in b.items() if not k.startswith("_")}

    def _finish(self, b: dict[str, Any], status: str) -> None:
        now = int(time.time())
        code = {"expired": "batch_expired", "cancelled": "batch_cancelled"}.get(status)
        for line in b["_pending"]:
            b["_err"].append(
                {
                    "id": f"batch_req_{line['custom_id']}",
                    "custom_id": line["custom_id"],
                    "response": None,
                    "error": {"code": code, "message": f"request not executed: batch {status}"},
                }
            )
        b["_pending"] = []
        for kind in ("_out", "_err"):
            if b[kind]:
                content = "".join(json.dumps(x) + "\n" for x in b[kind]).encode()
                meta = self._new_file(content, f"{b['id']}{kind}.jsonl", "batch_output")
                b["output_file_id" if kind == "_out" else "error_file_id"] = meta["id"]
        b["request_counts"] = {
            "total": b["request_counts"]["total"],
            "completed": len(b["_out"]),
            "failed": len(b["_err"]),
        }
        b["status"] = status
        b[f"{status}_at"] = now
        b["finalizing_at"] = b["finalizing_at"] or now

    def _advance(self, b: dict[str, Any]) -> None:
        """One status poll moves a batch on: validating -> in_progress -> completed (or expired)."""
        if b["status"] in ("completed", "failed", "expired", "cancelled"):
            return
        if b["status"] == "cancelling":
            self._finish(b, "cancelled")
            return
        if b["status"] == "validating":
            if b["errors"]:
                b["status"], b["failed_at"] = "failed", int(time.time())
                return
            b["status"], b["in_progress_at"] = "in_progress", int(time.time())
            if self.batch_lines_per_poll is not None:
                return
        k = len(b["_pending"]) if self.batch_lines_per_poll is None else self.batch_lines_per_poll
        if self.batch_expire_after is not None:
            k = min(k, max(0, self.batch_expire_after - b["_answered"]))
        for line in b["_pending"][:k]:
            chat = line.get("body") or {}
            self.batch_requests.append(chat)
            _, status, payload = self._answer(chat, record=False)
            body = payload if isinstance(payload, dict) else json_or_text(payload)
            entry = {
                "id": f"batch_req_{line['custom_id']}",
                "custom_id": line["custom_id"],
                "response": {"status_code": status, "request_id": f"req_{b['_answered']}", "body": body},
                "error": None,
            }
            (b["_out"] if status == 200 else b["_err"]).append(entry)
            b["_answered"] += 1
        del b["_pending"][:k]
        b["request_counts"]["completed"] = len(b["_out"])
        b["request_counts"]["failed"] = len(b["_err"])
        if not b["_pending"]:
            self._finish(b, "completed")
        elif self.batch_expire_after is not None and b["_answered"] >= self.batch_expire_after:
            self._finish(b, "expired")

    async def _get_batch(self, request: web.Request) -> web.StreamResponse:
        if (fault := self._api_fault()) is not None:
            return fault
        with self._lock:
            b = self.batches.get(request.match_info["bid"])
            if b is None:
                return web.json_response(
                    {"error": {"message": "no such batch", "type": "invalid_request_error"}}, status=404
                )
            self.batch_polls += 1
        self._advance(b)
        return web.json_response(self._public(b))

    async def _cancel_batch(self, request: web.Request) -> web.StreamResponse:
        b = self.batches.get(request.match_info["bid"])
        if b is None:
            return web.json_response(
                {"error": {"message": "no such batch", "type": "invalid_request_error"}}, status=404
            )
        if b["status"] in ("validating", "in_progress"):
            b["status"], b["cancelling_at"] = "cancelling", int(time.time())
        return web.json_response(self._public(b))

    async def _start(self, ready: threading.Event) -> None:
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._handle)
        app.router.add_post("/chat/completions", self._handle)
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
