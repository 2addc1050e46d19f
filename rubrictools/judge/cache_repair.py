"""Repairing a damaged response cache: which errors mean damage (and which do not), moving a
damaged file aside without ever overwriting another, and reading back every answer still
written on its pages.

The reader does not ask SQLite: it walks the file's pages itself (SQLite's documented file
format: table-leaf pages, their cells, overflow chains) and the frames of its write-ahead log,
so a page of garbage anywhere, an interior page included, costs only the answers stored on
that page, and it needs no disk space (a damaged cache is often found on a full disk).
"""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
import sqlite3
import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: repairs are not serialised between processes
    fcntl = None  # type: ignore[assignment]  # reason: the module is optional; None means "no locking here"

__all__ = ["COLUMNS", "check_row", "is_damage", "repair_lock", "replace_damaged", "salvage", "truncated"]

COLUMNS = ("key", "model", "content", "prompt_tokens", "completion_tokens", "cost_usd", "created", "extra")
"""The response table's columns, in the order rows are written and salvaged."""

_CORRUPT, _NOTADB = 11, 26  # SQLite's primary result codes for a damaged file


def is_damage(error: BaseException) -> bool:
    """Whether a SQLite error says the file itself is damaged (SQLITE_CORRUPT, SQLITE_NOTADB),
    as opposed to a full disk, a read-only file or one that cannot be opened, which leave a
    healthy file healthy."""
    code = getattr(error, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in (_CORRUPT, _NOTADB)
    text = str(error).lower()
    return "malformed" in text or "not a database" in text


@contextlib.contextmanager
def repair_lock(path: Path) -> Iterator[None]:
    """Hold ``<cache>.lock`` while a damaged file is moved aside and replaced, so two processes
    that find the damage at once repair it once (without it, the second would move the first's
    new file aside)."""
    try:
        fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:  # no room even for an empty file: repair without the lock
        yield
        return
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def replace_damaged(path: Path, fill: Callable[[Path], None]) -> Path:
    """Put a new database in place of the damaged ``path``: ``fill`` writes it under a temporary
    name, then it is renamed over ``path`` in one step, after the damaged file (and its WAL
    files) got a link of their own at ``<name>.corrupt-<time>-<pid>-<tag>``, a name no other
    run uses. Returns that name. Without room for the new file, nothing is moved: the damaged
    file stays where it is (the next run tries again) and the error says so."""
    stamp = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{secrets.token_hex(2)}"
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    fresh = path.with_name(f"{path.name}.repair-{stamp}")
    for stale in path.parent.glob(glob.escape(path.name) + ".repair-*"):  # a repair killed half way
        stale.unlink(missing_ok=True)
    try:
        fill(fresh)
    except (OSError, sqlite3.Error) as e:
        for suffix in ("", "-wal", "-shm", "-journal"):
            fresh.with_name(fresh.name + suffix).unlink(missing_ok=True)
        raise OSError(
            getattr(e, "errno", None),
            f"response cache {path} is damaged and could not be repaired ({e}); it is left as it is, with every "
            "answer still in it: free space (or fix the folder) and re-run",
        ) from e
    _rename_parts(path, aside, ("-wal", "-shm"))  # the old WAL must not be read as the new file's
    try:
        os.link(path, aside)
    except OSError:  # no hard links here: a short moment without a file at ``path``
        os.rename(path, aside)
    os.replace(fresh, path)
    return aside


def _rename_parts(path: Path, aside: Path, suffixes: tuple[str, ...]) -> None:
    for suffix in suffixes:
        part = path.with_name(path.name + suffix)
        if part.exists():
            os.rename(part, aside.with_name(aside.name + suffix))


def truncated(path: Path) -> bool:
    """Whether a SQLite file with no write-ahead log beside it is shorter than the page count
    its header gives (a file cut short by a crash or a copy; SQLite reads what is left of it
    without always saying so). With a WAL, the header may lag behind: never judged here."""
    try:
        wal = path.with_name(path.name + "-wal")
        if wal.exists() and wal.stat().st_size > 0:
            return False
        with open(path, "rb") as f:
            head = f.read(100)
        size = path.stat().st_size
    except OSError:
        return False
    if len(head) < 100 or not head.startswith(b"SQLite format 3\0"):
        return False
    raw = int.from_bytes(head[16:18], "big")
    page = 65536 if raw == 1 else raw
    pages = int.from_bytes(head[28:32], "big")
    return pages * page > size


def _varint(buf: bytes, at: int) -> tuple[int, int]:
    value = 0
    for i in range(8):
        b = buf[at + i]
        value = (value << 7) | (b & 0x7F)
        if b < 0x80:
            return value, at + i + 1
    return (value << 8) | buf[at + 8], at + 9


def _values(record: bytes) -> list[Any]:
    size, at = _varint(record, 0)
    types = []
    while at < size:
        t, at = _varint(record, at)
        types.append(t)
    out: list[Any] = []
    body = size
    for t in types:
        if t == 0:
            out.append(None)
        elif 1 <= t <= 6:
            n = (1, 2, 3, 4, 6, 8)[t - 1]
            out.append(int.from_bytes(record[body : body + n], "big", signed=True))
            body += n
        elif t == 7:
            out.append(struct.unpack(">d", record[body : body + 8])[0])
            body += 8
        elif t in (8, 9):
            out.append(t - 8)
        elif t >= 12:
            n = (t - 12) // 2
            chunk = record[body : body + n]
            out.append(chunk.decode("utf-8") if t % 2 else bytes(chunk))
            body += n
        else:
            raise ValueError("reserved serial type")
        if body > len(record):
            raise ValueError("record runs past its payload")
    return out


class _Pages:
    """The pages of a database file, each read from the newest write-ahead-log frame that
    holds it, else from the main file."""

    def __init__(self, main: bytes, wal: bytes) -> None:
        self.size = 4096
        if main.startswith(b"SQLite format 3\0") and len(main) >= 100:
            raw = int.from_bytes(main[16:18], "big")
            self.size = 65536 if raw == 1 else raw
            self.usable = self.size - main[20]
        self.frames: dict[int, bytes] = {}
        if len(wal) >= 32 and int.from_bytes(wal[:4], "big") in (0x377F0682, 0x377F0683):
            self.size = int.from_bytes(wal[8:12], "big") or self.size
            step = 24 + self.size
            for at in range(32, len(wal) - step + 1, step):
                self.frames[int.from_bytes(wal[at : at + 4], "big")] = wal[at + 24 : at + step]
        self.usable = getattr(self, "usable", self.size)
        self.main = main

    def count(self) -> int:
        return max(len(self.main) // self.size, max(self.frames, default=0))

    def get(self, n: int) -> bytes | None:
        if n in self.frames:
            return self.frames[n]
        start = (n - 1) * self.size
        page = self.main[start : start + self.size]
        return page if len(page) == self.size else None

    def payload(self, page: bytes, at: int) -> bytes:
        """The whole payload of the table-leaf cell at ``at``, following its overflow chain."""
        total, at = _varint(page, at)
        _, at = _varint(page, at)  # the rowid
        u = self.usable
        x = u - 35
        if total <= x:
            return page[at : at + total]
        m = ((u - 12) * 32 // 255) - 23
        k = m + (total - m) % (u - 4)
        local = k if k <= x else m
        data = bytearray(page[at : at + local])
        nxt = int.from_bytes(page[at + local : at + local + 4], "big")
        for _ in range(self.count() + 1):
            if len(data) >= total or nxt == 0:
                break
            over = self.get(nxt)
            if over is None:
                raise ValueError("overflow page missing")
            data += over[4 : 4 + min(u - 4, total - len(data))]
            nxt = int.from_bytes(over[:4], "big")
        if len(data) != total:
            raise ValueError("payload cut short")
        return bytes(data)

    def rows(self, n: int) -> Iterator[list[Any]]:
        page = self.get(n)
        if page is None:
            return
        head = 100 if n == 1 else 0
        if page[head] != 0x0D:  # not a table-leaf page
            return
        cells = int.from_bytes(page[head + 3 : head + 5], "big")
        for i in range(cells):
            try:
                at = int.from_bytes(page[head + 8 + 2 * i : head + 10 + 2 * i], "big")
                yield _values(self.payload(page, at))
            except (ValueError, IndexError, UnicodeDecodeError, struct.error):
                continue  # a damaged cell: the others on the page still read


def _answer(values: list[Any]) -> tuple[Any, ...] | None:
    """A response row from a cell's values, or None for anything else (a schema row, an index
    entry, a damaged cell). Rows written before the ``extra`` column have 7 values."""
    if len(values) == 7:
        values = [*values, None]
    if len(values) != len(COLUMNS):
        return None
    key, model, content, pt, ct, cost, created, extra = values
    ok = (
        isinstance(key, str)
        and key
        and "\x00" not in key
        and isinstance(content, str)
        and all(v is None or isinstance(v, int) for v in (pt, ct))
        and (cost is None or isinstance(cost, (int, float)))
        and (extra is None or isinstance(extra, str))
        and (model is None or isinstance(model, str))
    )
    return (key, model, content, pt, ct, cost, created, extra) if ok else None


def salvage(path: Path) -> list[tuple[Any, ...]]:
    """Every answer still written on the pages of a damaged cache file and its WAL, in the
    order of :data:`COLUMNS`, one per key (the newest page wins)."""
    try:
        main = path.read_bytes()
    except OSError:
        return []
    try:
        wal = path.with_name(path.name + "-wal").read_bytes()
    except OSError:
        wal = b""
    pages = _Pages(main, wal)
    found: dict[str, tuple[Any, ...]] = {}
    order = [n for n in range(1, pages.count() + 1) if n not in pages.frames] + list(pages.frames)
    for n in order:
        for values in pages.rows(n):
            row = _answer(values)
            if row is not None:
                found[row[0]] = row
    return list(found.values())


def check_row(row: Any) -> tuple[Any, ...] | None:
    """A row read back from a reserve file, checked the same way (None when it is not one)."""
    return _answer(list(row)) if isinstance(row, (list, tuple)) else None
