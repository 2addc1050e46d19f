"""Persistent response cache (SQLite, WAL): re-runs cost nothing and interrupted runs resume.

Keys hash everything that changes a judge's answer (model, api_base, messages, sampling
parameters, response format) and never the API key. Each successful answer is committed as
soon as it arrives, so a run killed mid-way keeps every answer it had received.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from json.encoder import encode_basestring  # json's own escaper for ensure_ascii=False
from pathlib import Path
from typing import Any

from rubrictools.images import image_sha256, is_image_part

__all__ = ["CachedResponse", "RequestKeys", "ResponseCache", "cache_key", "default_cache_path"]

_FORBIDDEN_KEY_FIELDS = {"api_key", "authorization", "headers", "extra_headers"}

_UNSAVED: dict[str, dict[str, tuple[str, CachedResponse]]] = {}
"""Per cache file, the answers whose write failed (a full disk), kept for this process: every
ResponseCache on that file reads them and retries writing them (see ResponseCache._store)."""


def default_cache_path() -> Path:
    """``$RUBRICTOOLS_CACHE_DIR/responses.sqlite`` or the user cache dir's equivalent."""
    base = os.environ.get("RUBRICTOOLS_CACHE_DIR")
    if not base:
        from platformdirs import user_cache_dir

        base = user_cache_dir("rubrictools")
    return Path(base) / "responses.sqlite"


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def _keyed(message: dict[str, Any]) -> dict[str, Any]:
    """A message as its key sees it: an image part's URL (a data URI holds the whole image)
    becomes the SHA-256 of the image's bytes, so a key hashes each image's digest, not its bytes."""
    content = message.get("content")
    if not isinstance(content, list) or not any(is_image_part(p) for p in content):
        return message
    parts = [
        {**p, "image_url": {**p["image_url"], "url": "sha256:" + image_sha256(p["image_url"]["url"])}}
        if is_image_part(p) and isinstance(p.get("image_url"), dict)
        else p
        for p in content
    ]
    return {**message, "content": parts}


def cache_key(request: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of a request (secrets refused; images by their digest)."""
    bad = _FORBIDDEN_KEY_FIELDS & set(request)
    if bad:
        raise ValueError(f"cache keys must not contain secrets: {sorted(bad)}")
    if isinstance(request.get("messages"), list):
        request = {**request, "messages": [_keyed(m) for m in request["messages"]]}
    return hashlib.sha256(_canonical(request).encode("utf-8")).hexdigest()


_HOLE = "\x00messages\x00"


class RequestKeys:
    """:func:`cache_key` of many requests that differ only in their ``messages``, byte for byte
    the same keys, faster: the rest of a request (judge settings, response schema) is
    serialised once per ``share`` value, and a message text seen before (a system prompt sent
    with every call) is escaped once.

    >>> keys = RequestKeys()
    >>> fixed = {"model": "m", "response_format": {"type": "json_object"}}
    >>> msgs = [{"role": "user", "content": "hé"}]
    >>> keys.key(msgs, share="j0", fixed=lambda: fixed) == cache_key({**fixed, "messages": msgs})
    True
    """

    def __init__(self) -> None:
        self._templates: dict[Any, tuple[str, str]] = {}
        self._texts: dict[str, str] = {}

    def key(self, messages: list[dict[str, Any]], *, share: Any, fixed: Callable[[], dict[str, Any]]) -> str:
        """The key of ``{**fixed(), "messages": messages}``; ``fixed()`` (called once per
        ``share``) must be the same for every request with the same ``share``."""
        template = self._templates.get(share)
        if template is None:
            whole = {**fixed(), "messages": _HOLE}
            bad = _FORBIDDEN_KEY_FIELDS & set(whole)
            if bad:
                raise ValueError(f"cache keys must not contain secrets: {sorted(bad)}")
            before, _, after = _canonical(whole).partition(_canonical(_HOLE))
            template = self._templates[share] = (before, after)
        blob = template[0] + self._messages(messages) + template[1]
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def _messages(self, messages: list[dict[str, Any]]) -> str:
        out = []
        for m in messages:
            if all(isinstance(v, str) for v in m.values()):
                out.append("{" + ",".join(f"{encode_basestring(k)}:{self._text(m[k])}" for k in sorted(m)) + "}")
            else:  # content parts, tool calls: the general path
                out.append(_canonical(_keyed(m)))
        return "[" + ",".join(out) + "]"

    def _text(self, text: str) -> str:
        if len(text) < 64:
            return str(encode_basestring(text))
        hit = self._texts.get(text)
        if hit is None:
            hit = self._texts[text] = encode_basestring(text)
        return hit


def _is_lock_error(e: BaseException) -> bool:
    return "locked" in str(e) or "busy" in str(e)


def _connect(path: Path, *, wait_s: float = 30.0) -> sqlite3.Connection:
    """Open (creating if needed) the cache database. Several processes may create the same new
    file at once: a transient "database is locked" while one of them switches it to WAL is
    retried with jittered backoff for up to ``wait_s`` seconds."""
    deadline = time.monotonic() + wait_s
    delay = 0.005
    while True:
        conn = sqlite3.connect(path, check_same_thread=False, timeout=wait_s, isolation_level=None)
        try:
            conn.execute(f"PRAGMA busy_timeout={int(wait_s * 1000)}")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT, content TEXT NOT NULL, "
                "prompt_tokens INTEGER, completion_tokens INTEGER, cost_usd REAL, created REAL, extra TEXT)"
            )
            cols = {row[1] for row in conn.execute("PRAGMA table_info(responses)")}
            if "extra" not in cols:  # a cache written by an earlier version
                conn.execute("ALTER TABLE responses ADD COLUMN extra TEXT")
            return conn
        except sqlite3.OperationalError as e:
            conn.close()
            if not _is_lock_error(e) or time.monotonic() >= deadline:
                raise
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 0.25)
        except sqlite3.DatabaseError:
            conn.close()
            raise


def _move_aside(path: Path) -> Path:
    """Rename an unreadable cache file (and its WAL files) to ``<name>.corrupt-<time>``."""
    aside = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
    for suffix in ("", "-wal", "-shm"):
        part = path.with_name(path.name + suffix)
        if part.exists():
            os.replace(part, aside.with_name(aside.name + suffix))
    return aside


_COLUMNS = "key, model, content, prompt_tokens, completion_tokens, cost_usd, created, extra"
"""The response table's columns, in the order rows are written and salvaged."""


def _readable_copy(path: Path) -> Path | None:
    """A copy of a damaged SQLite file that SQLite will open: a truncated file is padded to a
    whole page and its header's page count set to the pages it really has (otherwise every
    read, even of the schema, fails as "malformed"). None when it is not a SQLite file."""
    try:
        data = bytearray(path.read_bytes())
    except OSError:
        return None
    if len(data) < 100 or not data.startswith(b"SQLite format 3\0"):
        return None
    size = int.from_bytes(data[16:18], "big")
    page = 65536 if size == 1 else size
    data += b"\0" * (-len(data) % page)
    data[28:32] = (len(data) // page).to_bytes(4, "big")
    data[18:20] = b"\x01\x01"  # rollback-journal mode: read without a WAL beside it
    copy = path.with_name(path.name + ".salvage")
    copy.write_bytes(bytes(data))
    return copy


def _salvage(path: Path) -> list[tuple[Any, ...]]:
    """Every row still readable in a damaged cache file (a truncated or partly overwritten
    one): a scan in rowid order that, when it meets an unreadable page, starts again further
    on (1, 3, 7, ... rowids past the last good one), so a bad page costs the answers on it,
    not the whole file."""
    copy = _readable_copy(path)
    if copy is None:
        return []
    rows: list[tuple[Any, ...]] = []
    last, skip = 0, 0
    query = f"SELECT rowid, {_COLUMNS} FROM responses WHERE rowid > ? ORDER BY rowid"
    try:
        conn = sqlite3.connect(f"file:{copy}?mode=ro", uri=True)
        try:
            while skip < 40:
                try:
                    for rowid, *values in conn.execute(query, (last + 2**skip - 1,)):
                        rows.append(tuple(values))
                        last, skip = rowid, 0
                    break  # the scan reached the end
                except sqlite3.DatabaseError:
                    skip += 1
        finally:
            conn.close()
    except sqlite3.Error:
        pass
    finally:
        for suffix in ("", "-wal", "-shm", "-journal"):
            copy.with_name(copy.name + suffix).unlink(missing_ok=True)
    # a row cut by the truncation reads as text ending in the zero padding: leave it out
    return [r for r in rows if all(isinstance(x, str) and "\x00" not in x for x in (r[0], r[2]))]


@dataclass(frozen=True)
class CachedResponse:
    content: str
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: float | None
    extra: str | None = None  # JSON: what else the answer carried (e.g. the judge's label distribution)


class ResponseCache:
    """A small SQLite key-value store of judge replies, safe for concurrent readers."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._ident = str(self.path.resolve())
        self._lock = threading.Lock()
        try:
            self._conn = _connect(self.path)
        except sqlite3.DatabaseError as e:
            if _is_lock_error(e):
                raise sqlite3.OperationalError(f"response cache {self.path}: {e} (another process holds it)") from e
            aside = _move_aside(self.path)
            self._conn = _connect(self.path)
            saved = _salvage(aside)
            if saved:
                self._conn.executemany(self._INSERT, saved)
            warnings.warn(
                f"response cache {self.path} is unreadable or damaged ({e}); moved it to {aside} and started a new "
                "one with the "
                f"{len(saved)} answer(s) still readable in it (the others will be asked again)",
                RuntimeWarning,
                stacklevel=2,
            )

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r})"

    def get_many(self, keys: Iterable[str]) -> dict[str, CachedResponse]:
        """Look up many keys at once (chunked ``IN`` queries)."""
        keys = list(dict.fromkeys(keys))
        out: dict[str, CachedResponse] = {}
        with self._lock:
            for i in range(0, len(keys), 900):
                chunk = keys[i : i + 900]
                marks = ",".join("?" * len(chunk))
                q = (
                    "SELECT key, content, prompt_tokens, completion_tokens, cost_usd, extra FROM responses "
                    f"WHERE key IN ({marks})"
                )
                try:
                    for k, content, pt, ct, cost, extra in self._conn.execute(q, chunk):
                        out[k] = CachedResponse(content, pt, ct, cost, extra)
                except sqlite3.DatabaseError as e:
                    if _is_lock_error(e):
                        raise
                    raise sqlite3.DatabaseError(
                        f"response cache {self.path}: {e}; move the file aside (the next run starts a new one)"
                    ) from e
        pending = _UNSAVED.get(self._ident)
        if pending:
            out.update({k: pending[k][1] for k in keys if k in pending})
        return out

    _INSERT = f"INSERT OR REPLACE INTO responses ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"

    @staticmethod
    def _row(key: str, model: str, r: CachedResponse, now: float) -> tuple[Any, ...]:
        return (key, model, r.content, r.prompt_tokens, r.completion_tokens, r.cost_usd, now, r.extra)

    def _write(self, rows: list[tuple[Any, ...]]) -> None:
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany(self._INSERT, rows)
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def _store(self, items: list[tuple[str, str, CachedResponse]]) -> None:
        """Write ``items`` and any answers kept from an earlier failed write. On failure (a full
        disk) every one of them is kept in memory for this file, where :meth:`get_many` still
        finds it, and the next write tries again: an answer is never lost to a disk error."""
        pending = _UNSAVED.setdefault(self._ident, {})
        for key, model, r in items:
            pending[key] = (model, r)
        now = time.time()
        rows = [self._row(k, m, r, now) for k, (m, r) in pending.items()]
        self._write(rows)
        pending.clear()

    def put(self, key: str, model: str, response: CachedResponse) -> None:
        """Store one reply and commit it immediately (see :meth:`_store` for a failed write)."""
        self._store([(key, model, response)])

    def put_many(self, items: Iterable[tuple[str, str, CachedResponse]]) -> int:
        """Store many ``(key, model, response)`` replies in one transaction; returns how many."""
        batch = list(items)
        self._store(batch)
        return len(batch)

    def flush(self) -> int:
        """Try again to write the answers kept in memory after a failed write; returns how many
        are still unwritten (0: the file holds every answer)."""
        if _UNSAVED.get(self._ident):
            with contextlib.suppress(sqlite3.Error, OSError):
                self._store([])
        return len(_UNSAVED.get(self._ident, {}))

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def keys(self) -> set[str]:
        with self._lock:
            return {k for (k,) in self._conn.execute("SELECT key FROM responses")}

    def clear(self) -> None:
        with self._lock:
            self._conn.execute("DELETE FROM responses")

    def close(self) -> None:
        with self._lock:
            self._conn.close()
