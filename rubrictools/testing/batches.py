"""The provider batch API of :class:`~rubrictools.testing.FakeLLMServer`: files and batches.

``POST /v1/files`` (multipart upload), ``GET /v1/files/{id}[/content]``, ``POST /v1/batches``,
``GET /v1/batches[/{id}]`` and ``POST /v1/batches/{id}/cancel``, answered from the server's
state; each line of a batch is answered by the server's script and faults like a live call.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from aiohttp import web

from rubrictools.testing.scripts import Reply, json_or_text

__all__ = ["BatchAPI"]


class BatchAPI:
    """The batch endpoints, mixed into the fake server (which owns the state they read)."""

    _lock: threading.Lock
    files: dict[str, dict[str, Any]]
    batches: dict[str, dict[str, Any]]
    batch_requests: list[dict[str, Any]]
    batch_lines_per_poll: int | None
    batch_expire_after: int | None
    batch_polls: int
    batch_create_lost: int
    api_faults: list[Reply]
    headers_seen: list[dict[str, str]]

    def _answer(self, body: dict[str, Any], *, record: bool = True) -> tuple[Reply, int, str | dict[str, Any]]:
        raise NotImplementedError  # the server's chat answer

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
