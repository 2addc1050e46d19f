"""A loopback OpenAI-compatible chat-completions server for tests and benchmarks.

Started and stopped by the test suite on 127.0.0.1 with a random port. It answers with
scripted replies and can inject delays, HTTP 429 (with Retry-After), 500, hangs (timeouts),
malformed JSON and wrong labels. Every request is recorded (``server.requests``).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass
class Reply:
    """What the server sends for one request."""

    content: str | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    body: str | None = None  # raw body override (e.g. an error JSON)
    label_probs: dict[str, float] | None = None  # top alternatives at the verdict token when logprobs are asked
    samples: list[str] | None = None  # contents of the n choices when n > 1 is asked (cycled)
    no_logprobs: bool = False  # behave like a provider that ignores the logprobs request


Script = Callable[[dict[str, Any]], "Reply | str"]


def user_text(request: dict[str, Any]) -> str:
    return "\n".join(m.get("content", "") for m in request["messages"] if m["role"] == "user")


def criterion_name(request: dict[str, Any]) -> str | None:
    m = re.search(r"^Criterion name: (.+)$", user_text(request), re.M)
    return m.group(1).strip() if m else None


def submission_text(request: dict[str, Any]) -> str:
    m = re.search(r"<submission>\n(.*)\n</submission>", user_text(request), re.S)
    return m.group(1) if m else ""


def default_script(request: dict[str, Any]) -> str:
    """MET when the submission contains 'good', per criterion; per-item and holistic too."""
    sub = submission_text(request).lower()
    verdict = "MET" if "good" in sub else "UNMET"
    system = request["messages"][0]["content"]
    if "ONE overall score" in system:
        return json.dumps({"score": 80 if verdict == "MET" else 20, "explanation": "fake holistic"})
    if "EVERY criterion" in system:
        names = re.findall(r"^Criterion name: (.+)$", user_text(request), re.M)
        return json.dumps({"verdicts": [{"criterion": n, "verdict": verdict, "explanation": "fake"} for n in names]})
    return json.dumps({"verdict": verdict, "explanation": f"fake judge saw {len(sub)} chars"})


def fake_logprobs(text: str, label_probs: dict[str, float] | None, top: int) -> list[dict[str, Any]]:
    """OpenAI-style token logprobs for ``text``: the verdict's value is one token whose top
    alternatives follow ``label_probs``; every other token is certain. Tokens are split so
    that the value's opening quote belongs to the token before it, as real tokenizers often do."""
    import math
    import re

    m = re.search(r'"verdict"\s*:\s*"', text)
    if m is None:
        return [{"token": text, "logprob": 0.0, "top_logprobs": []}]
    start = m.end()
    end = text.find('"', start)
    value = text[start:end]
    pieces = [(text[:start], None), (value, label_probs), (text[end:], None)]
    out = []
    for tok, probs in pieces:
        if not tok:
            continue
        if probs:
            alts = sorted(probs.items(), key=lambda kv: -kv[1])[: max(top, 1)]
            lp = math.log(probs.get(tok, max(min(probs.values()), 1e-9)))
            out.append({"token": tok, "logprob": lp, "top_logprobs": [{"token": k, "logprob": math.log(v)} for k, v in alts if v > 0]})
        else:
            out.append({"token": tok, "logprob": 0.0, "top_logprobs": [{"token": tok, "logprob": 0.0}]})
    return out


class FakeLLMServer:
    """Run with ``with FakeLLMServer() as srv: ... srv.url ...``."""

    def __init__(self, script: Script | None = None, *, latency: float = 0.0) -> None:
        self.script: Script = script or default_script
        self.latency = latency
        self.requests: list[dict[str, Any]] = []
        self.headers_seen: list[dict[str, str]] = []
        self.faults: list[Reply] = []
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

    def inject(self, *replies: Reply) -> None:
        """Queue replies served (in order) before the script is consulted again."""
        with self._lock:
            self.faults.extend(replies)

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.headers_seen.clear()
            self.faults.clear()

    # ------------------------------------------------------------------ serving
    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        with self._lock:
            self.requests.append(body)
            self.headers_seen.append(dict(request.headers))
            fault = self.faults.pop(0) if self.faults else None
        reply = fault
        if reply is None:
            out = self.script(body)
            reply = out if isinstance(out, Reply) else Reply(content=out)
        delay = reply.delay or self.latency
        if delay:
            await asyncio.sleep(delay)
        if reply.status != 200:
            text = reply.body or json.dumps({"error": {"message": f"fake error {reply.status}", "type": "fake", "code": reply.status}})
            return web.Response(status=reply.status, text=text, headers=reply.headers, content_type="application/json")
        if reply.body is not None:
            return web.Response(status=200, text=reply.body, content_type="application/json")
        content = reply.content or ""
        n = int(body.get("n") or 1)
        contents = [content] if n == 1 else [(reply.samples or [content])[i % len(reply.samples or [content])] for i in range(n)]
        choices = []
        for i, text in enumerate(contents):
            choice: dict[str, Any] = {"index": i, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            if body.get("logprobs") and not reply.no_logprobs:
                choice["logprobs"] = {"content": fake_logprobs(text, reply.label_probs, int(body.get("top_logprobs") or 0))}
            choices.append(choice)
        payload = {
            "id": f"chatcmpl-fake-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": choices,
            "usage": {"prompt_tokens": max(1, len(user_text(body)) // 4), "completion_tokens": max(1, len(content) // 4),
                      "total_tokens": max(1, len(user_text(body)) // 4) + max(1, len(content) // 4)},
        }
        return web.json_response(payload, headers=reply.headers)

    async def _start(self, ready: threading.Event) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._handle)
        app.router.add_post("/chat/completions", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        ready.set()

    def start(self) -> FakeLLMServer:
        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self._start(ready))
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="fake-llm-server", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("fake LLM server did not start")
        return self

    def stop(self) -> None:
        if self._loop is None:
            return
        loop = self._loop

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


if __name__ == "__main__":  # serve for manual experiments / subprocess tests
    import sys

    latency = float(sys.argv[1]) if len(sys.argv) > 1 else 0.0
    srv = FakeLLMServer(latency=latency).start()
    print(srv.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        srv.stop()
