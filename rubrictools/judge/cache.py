"""Persistent response cache (SQLite, WAL): re-runs cost nothing and interrupted runs resume.

Keys hash everything that changes a judge's answer (model, api_base, messages, sampling
parameters, response format) and never the API key. Each successful answer is committed as
soon as it arrives, so a run killed mid-way keeps every answer it had received.
"""

from __future__ import annotations

import contextlib
import errno
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

from rubrictools.disk import describe_disk, disk_nearly_full, is_disk_full
from rubrictools.images import image_sha256, is_image_part
from rubrictools.judge.cache_repair import (
    COLUMNS,
    check_row,
    is_damage,
    repair_lock,
    replace_damaged,
    salvage,
    truncated,
)
from rubrictools.judge.cache_reserve import Reserve, read_unheld
from rubrictools.stack import user_stacklevel

__all__ = ["CacheWriteError", "CachedResponse", "RequestKeys", "ResponseCache", "cache_key", "default_cache_path"]

_FORBIDDEN_KEY_FIELDS = {"api_key", "authorization", "headers", "extra_headers"}

_UNSAVED: dict[str, dict[str, tuple[str, CachedResponse, bool]]] = {}
"""Per cache file, the answers not yet in its database (a full disk), kept for this process:
``key -> (model, answer, in_a_reserve)``. Every ResponseCache on that file reads them and
retries writing them (see ResponseCache._store)."""

_ABSORBED: dict[str, list[Path]] = {}
"""Per cache file, the reserve files whose answers are in :data:`_UNSAVED` (deleted once the
database holds them)."""


class CacheWriteError(OSError):
    """The response cache could not write an answer (a full disk, a read-only file, a file-size
    limit...). ``saved`` of the unwritten answers are in the cache's reserve file (the next
    run, in any process, reads them); ``held`` are only in this process's memory."""

    def __init__(self, path: Path, error: BaseException, *, saved: int, held: int) -> None:
        kept = f"{saved} answer(s) written to its reserve file, which the next run reads"
        if held:
            kept += f"; {held} held in this session's memory only"
        where = describe_disk(path) if is_disk_full(error) else "cannot be written"
        super().__init__(
            errno.ENOSPC if is_disk_full(error) else getattr(error, "errno", None),
            f"response cache {path}: {where} ({error}); {kept}",
        )
        self.saved, self.held = saved, held
        self.disk_full = is_disk_full(error)


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
        self._heads: dict[tuple[Any, str], Any] = {}  # SHA-256 states after a request's opening

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
        parts = [self._message(m) for m in messages]
        if not parts:
            return hashlib.sha256((template[0] + "[]" + template[1]).encode("utf-8")).hexdigest()
        # the opening (settings and the first message, a system prompt every call shares) is
        # hashed once and its state copied: the same digest as hashing the whole text each time
        head = self._heads.get((share, parts[0]))
        if head is None:
            head = self._heads[(share, parts[0])] = hashlib.sha256((template[0] + "[" + parts[0]).encode("utf-8"))
        h = head.copy()
        h.update(("".join("," + p for p in parts[1:]) + "]" + template[1]).encode("utf-8"))
        return h.hexdigest()

    def _message(self, m: dict[str, Any]) -> str:
        """One message as canonical JSON (as :func:`cache_key` writes it)."""
        if len(m) == 2 and type(m.get("content")) is str and type(m.get("role")) is str:  # the usual message
            return '{"content":' + self._text(m["content"]) + ',"role":' + self._text(m["role"]) + "}"
        if all(isinstance(v, str) for v in m.values()):
            return "{" + ",".join(f"{encode_basestring(k)}:{self._text(m[k])}" for k in sorted(m)) + "}"
        return _canonical(_keyed(m))  # content parts, tool calls: the general path

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


_COLUMNS = ", ".join(COLUMNS)


def _open_error(path: Path, error: sqlite3.DatabaseError) -> sqlite3.OperationalError:
    """A cache that cannot be opened though it is not damaged, said with the file and why."""
    if is_disk_full(error) or disk_nearly_full(path):
        why = f"{describe_disk(path)}, full; free space and re-run"
    elif "readonly" in str(error) or not os.access(path.parent, os.W_OK):
        why = "the file or its folder is read-only; choose a writable cache= path"
    else:
        why = "check that the folder exists, is writable and that this process may open more files"
    return sqlite3.OperationalError(
        f"response cache {path} cannot be opened ({error}): {why}; the file is left as it is"
    )


@dataclass(frozen=True, slots=True)
class CachedResponse:
    content: str
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: float | None
    extra: str | None = None  # JSON: what else the answer carried (e.g. the judge's label distribution)


class ResponseCache:
    """A small SQLite key-value store of judge replies, safe for concurrent readers.

    When the disk fills, an answer is never lost: it goes to the cache's reserve (room set
    aside when the cache opened, see :mod:`rubrictools.judge.cache_reserve`) and a
    :class:`CacheWriteError` says so; the next cache opened on the file moves it into the
    database.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._ident = str(self.path.resolve())
        self._lock = threading.Lock()
        if self.path.is_dir():
            example = self.path / "responses.sqlite"
            raise ValueError(f"cache={str(path)!r} is a folder; name a file in it, e.g. {example}")
        existed = self.path.exists()
        inode = self.path.stat().st_ino if existed else None
        try:
            if existed and truncated(self.path):  # SQLite may read some of it without a word
                raise sqlite3.DatabaseError(
                    "database disk image is malformed (the file is shorter than its header says)"
                )
            self._conn = _connect(self.path)
        except sqlite3.DatabaseError as e:
            if _is_lock_error(e):
                raise sqlite3.OperationalError(f"response cache {self.path}: {e} (another process holds it)") from e
            if not existed and self.path.exists() and self.path.stat().st_size == 0:
                self.path.unlink()  # the empty file this failed open left behind
            if not is_damage(e):  # a full disk, a read-only file: the file is healthy, never moved
                raise _open_error(self.path, e) from e
            self._conn = self._start_again(e, inode)
        self._inode = self.path.stat().st_ino
        self._absorb_reserves()
        self._reserve = Reserve.create(self.path)
        if self._reserve is None:
            warnings.warn(
                f"response cache {self.path}: no room for a reserve ({describe_disk(self.path)}); if the disk fills, "
                "the answers in flight then are kept only in this session's memory",
                RuntimeWarning,
                stacklevel=user_stacklevel(),
            )

    def _start_again(self, error: BaseException, inode: int | None) -> sqlite3.Connection:
        """Replace a damaged file by a new one holding every answer still readable in it (a
        truncated file, a page of garbage), keeping the old one aside; warns saying where.
        Under a lock, and by an atomic rename: another process sees the old file or the whole
        new one, never an empty one; one that finds the file already replaced (``inode``
        differs) opens the new one instead."""
        with repair_lock(self.path):
            current = self.path.stat().st_ino if self.path.exists() else None
            if current is not None and current != inode:
                return _connect(self.path)
            saved = salvage(self.path)
            aside = replace_damaged(self.path, lambda new: self._fill(new, saved))
            # answers another process committed to the old file while this one rebuilt it
            known = {r[0] for r in saved}
            late = [r for r in salvage(aside) if r[0] not in known]
            if late:
                self._fill(self.path, late)
                saved += late
        warnings.warn(
            f"response cache {self.path} is unreadable or damaged ({error}); moved it to {aside} and started a new "
            f"one with the {len(saved)} answer(s) still readable in it (the others will be asked again)",
            RuntimeWarning,
            stacklevel=user_stacklevel(),
        )
        return _connect(self.path)

    def _fill(self, path: Path, rows: list[tuple[Any, ...]]) -> None:
        conn = _connect(path)
        try:
            conn.execute("BEGIN")
            conn.executemany(self._INSERT, rows)
            conn.execute("COMMIT")
        finally:
            conn.close()

    def _absorb_reserves(self) -> None:
        """Move into the database the answers of reserves no live cache holds; when the disk is
        still full they stay in their files and in this process's memory. A damaged reserve
        (cut short, overwritten) gives what it still holds, with a warning naming it."""
        found = read_unheld(self.path)
        rows, damaged = [], []
        for path, _, records, intact in found:
            good = [r for r in map(check_row, records) if r is not None]
            rows += good
            if not intact or len(good) < len(records):
                kept = path.with_name(path.name.replace(".reserve-", ".reserve-damaged-", 1))
                with contextlib.suppress(OSError):
                    os.rename(path, kept)  # kept for a look; no later run reads it again
                damaged.append(f"{path} ({len(good)} answer(s) read, the rest unreadable; the file is kept as {kept})")
        if damaged:
            warnings.warn(f"damaged response cache reserve(s): {'; '.join(damaged)}", RuntimeWarning, stacklevel=3)
        try:
            if rows:
                self._write(rows)
            for path, _, _, _ in found:
                path.unlink(missing_ok=True)
        except (sqlite3.Error, OSError) as e:
            if _is_lock_error(e):
                raise
            pending = _UNSAVED.setdefault(self._ident, {})
            for key, model, content, pt, ct, cost, _, extra in rows:
                pending.setdefault(key, (model, CachedResponse(content, pt, ct, cost, extra), True))
            _ABSORBED.setdefault(self._ident, []).extend(path for path, _, _, _ in found)
        finally:
            for _, fd, _, _ in found:
                os.close(fd)

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r})"

    def get_many(self, keys: Iterable[str]) -> dict[str, CachedResponse]:
        """Look up many keys at once (chunked ``IN`` queries)."""
        keys = list(dict.fromkeys(keys))
        out: dict[str, CachedResponse] = {}
        with self._lock:
            self._follow_repair()
            try:
                out = self._select(keys)
            except sqlite3.DatabaseError as e:
                if _is_lock_error(e) or not is_damage(e):
                    raise
                self._repair(e)  # a page of the file is damaged: salvage it and read again
                out = self._select(keys)
        pending = _UNSAVED.get(self._ident)
        if pending:
            out.update({k: pending[k][1] for k in keys if k in pending})
        return out

    def _repair(self, error: sqlite3.DatabaseError) -> None:
        """Replace this connection's damaged file (see :meth:`_start_again`); the caller holds the lock."""
        self._conn.close()
        self._conn = self._start_again(error, self._inode)
        self._inode = self.path.stat().st_ino

    def _follow_repair(self) -> None:
        """Reopen the file when another process has replaced it with a repaired one (this
        connection would otherwise go on reading the damaged file it moved aside)."""
        try:
            current = self.path.stat().st_ino
        except OSError:
            return
        if current != self._inode:
            self._conn.close()
            self._conn = _connect(self.path)
            self._inode = current

    def _select(self, keys: list[str]) -> dict[str, CachedResponse]:
        out: dict[str, CachedResponse] = {}
        for i in range(0, len(keys), 900):
            chunk = keys[i : i + 900]
            q = (
                "SELECT key, content, prompt_tokens, completion_tokens, cost_usd, extra FROM responses "
                f"WHERE key IN ({','.join('?' * len(chunk))})"
            )
            for k, content, pt, ct, cost, extra in self._conn.execute(q, chunk):
                out[k] = CachedResponse(content, pt, ct, cost, extra)
        return out

    _INSERT = f"INSERT OR REPLACE INTO responses ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"

    @staticmethod
    def _row(key: str, model: str, r: CachedResponse, now: float) -> tuple[Any, ...]:
        return (key, model, r.content, r.prompt_tokens, r.completion_tokens, r.cost_usd, now, r.extra)

    def _write(self, rows: list[tuple[Any, ...]]) -> None:
        try:
            self._write_once(rows)
        except sqlite3.DatabaseError as e:
            if not is_damage(e):
                raise
            with self._lock:  # damage found on write: repair, then write again
                self._repair(e)
            self._write_once(rows)

    def _write_once(self, rows: list[tuple[Any, ...]]) -> None:
        with self._lock:
            self._follow_repair()
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany(self._INSERT, rows)
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:  # SQLite has already rolled back after a full disk
                    with contextlib.suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")
                raise

    def _store(self, items: list[tuple[str, str, CachedResponse]]) -> None:
        """Write ``items`` and any answers kept from an earlier failed write. When the disk is
        full the ones not yet in a reserve go to this cache's reserve (and all stay in memory,
        where :meth:`get_many` finds them), then :class:`CacheWriteError` says how many are where;
        the next write tries the database again."""
        pending = _UNSAVED.setdefault(self._ident, {})
        for key, model, r in items:
            pending[key] = (model, r, False)
        now = time.time()
        try:
            self._write([self._row(k, m, r, now) for k, (m, r, _) in pending.items()])
        except (sqlite3.Error, OSError) as e:
            loose = [(k, m, r) for k, (m, r, kept) in pending.items() if not kept]
            n = self._reserve.append([self._row(k, m, r, now) for k, m, r in loose]) if self._reserve else 0
            for k, m, r in loose[:n]:
                pending[k] = (m, r, True)
            raise CacheWriteError(self.path, e, saved=sum(v[2] for v in pending.values()), held=len(loose) - n) from e
        pending.clear()
        if self._reserve is not None:
            self._reserve.reset()
        for path in _ABSORBED.pop(self._ident, []):
            path.unlink(missing_ok=True)

    def put(self, key: str, model: str, response: CachedResponse) -> None:
        """Store one reply and commit it immediately (see :meth:`_store` for a failed write)."""
        self._store([(key, model, response)])

    def put_many(self, items: Iterable[tuple[str, str, CachedResponse]]) -> int:
        """Store many ``(key, model, response)`` replies in one transaction; returns how many."""
        batch = list(items)
        self._store(batch)
        return len(batch)

    def writable(self) -> bool:
        """Whether the database takes writes now: true unless answers are waiting from an
        earlier failed write and writing them fails again."""
        if not _UNSAVED.get(self._ident):
            return True
        try:
            self._store([])
        except (sqlite3.Error, OSError):
            return False
        return True

    def unsaved(self) -> tuple[int, int]:
        """Answers not in the database: ``(in a reserve file, in this process's memory only)``."""
        kept = [k for _, _, k in _UNSAVED.get(self._ident, {}).values()]
        return sum(kept), len(kept) - sum(kept)

    def flush(self) -> int:
        """Try again to write the answers kept in memory after a failed write; returns how many
        are only in memory (0: the database or a reserve file holds every answer)."""
        if _UNSAVED.get(self._ident):
            with contextlib.suppress(sqlite3.Error, OSError):
                self._store([])
        return sum(not kept for _, _, kept in _UNSAVED.get(self._ident, {}).values())

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
        if self._reserve is not None:
            self._reserve.close()
