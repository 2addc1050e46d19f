"""The response cache's reserve: room set aside while the disk has it, so that answers which
arrive after the disk has filled are still written somewhere the next run reads.

Each open :class:`~rubrictools.judge.cache.ResponseCache` allocates a file beside its
database, ``<cache>.reserve-<pid>-<tag>`` (1 MiB, or a 32nd of the free space when less;
in the temp folder, under a name hashed from the cache's path, when its own disk has no room),
and holds a lock on it while it lives. When SQLite can no longer write (``database or disk is
full``) the answers are written into the reserve's already allocated bytes, which needs no new
space. The next cache opened on that file, in any process, finds the reserves nobody holds,
moves their answers into the database, and deletes them; an empty reserve is deleted when its
cache closes.

The format is a magic line then records, each a 4-byte big-endian length and a JSON array of
the row's columns; a zero length ends it, so a record cut by a crash is never read.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
import re
import secrets
import shutil
import tempfile
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no reserve (answers are held in memory only)
    fcntl = None  # type: ignore[assignment]  # reason: the module is optional; None means "no locking here"

__all__ = ["RESERVE_BYTES", "Reserve", "read_unheld"]

RESERVE_BYTES = 1 << 20
"""The most room a reserve sets aside (a 32nd of the free space when that is less)."""

_MAGIC = b"RTRESV1\n"
_END = b"\0\0\0\0"
_MIN_BYTES = 16 << 10


def _lock(fd: int) -> bool:
    if fcntl is None:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _records(data: bytes) -> tuple[list[list[Any]], bool]:
    """The records of a reserve file, and whether it read to its end mark (False: cut short or
    overwritten; the records before the damage are still returned)."""
    if not data.startswith(_MAGIC):
        return [], not data  # an empty file is a reserve that never got its first bytes
    rows: list[list[Any]] = []
    at = len(_MAGIC)
    while at + 4 <= len(data):
        n = int.from_bytes(data[at : at + 4], "big")
        if n == 0:
            return rows, True
        if at + 4 + n > len(data):
            break
        try:
            row = json.loads(data[at + 4 : at + 4 + n])
        except ValueError:
            break
        rows.append(row if isinstance(row, list) else [])
        at += 4 + n
    return rows, False


class Reserve:
    """This process's reserve file for one cache file; ``None`` from :meth:`create` when there
    is no room (or no file locking) for one."""

    def __init__(self, path: Path, fd: int, size: int) -> None:
        self.path, self._fd, self.size = path, fd, size
        self._pid = os.getpid()
        self._at = len(_MAGIC)
        self.held = 0  # records written since the last reset

    @classmethod
    def create(cls, cache_path: Path) -> Reserve | None:
        """A reserve beside the cache, else (its disk nearly full) in the temp folder under a
        name derived from the cache's path, where the next run also looks; None when neither
        has room."""
        for folder, stem in (
            (cache_path.parent, cache_path.name),
            (Path(tempfile.gettempdir()), _temp_stem(cache_path)),
        ):
            made = cls._create_in(folder, stem)
            if made is not None:
                return made
        return None

    @classmethod
    def _create_in(cls, folder: Path, stem: str) -> Reserve | None:
        try:
            free = shutil.disk_usage(folder).free
        except OSError:
            return None
        size = min(RESERVE_BYTES, free // 32)  # several runs on one disk must not fill it themselves
        if fcntl is None or size < _MIN_BYTES:
            return None
        path = folder / f"{stem}.reserve-{os.getpid()}-{secrets.token_hex(3)}"
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError:  # no room even for an empty file (no inodes left): no reserve here
            return None
        try:
            if not _lock(fd):
                raise OSError("could not lock the reserve")
            if hasattr(os, "posix_fallocate"):
                os.posix_fallocate(fd, 0, size)  # the bytes are the disk's now: writing them needs no room
            else:  # pragma: no cover - macOS: write the zeros
                os.pwrite(fd, b"\0" * size, 0)
            os.pwrite(fd, _MAGIC + _END, 0)
        except OSError:
            os.close(fd)
            path.unlink(missing_ok=True)
            return None
        return cls(path, fd, size)

    def append(self, rows: list[tuple[Any, ...]]) -> int:
        """Write as many of ``rows`` as fit (in order); returns how many."""
        if self._pid != os.getpid():  # a forked child shares the parent's file: not ours to write
            return 0
        done = 0
        for row in rows:
            blob = json.dumps(list(row), ensure_ascii=False, default=str).encode()
            record = len(blob).to_bytes(4, "big") + blob
            if self._at + len(record) + len(_END) > self.size:
                break
            try:
                os.pwrite(self._fd, record + _END, self._at)
            except OSError:
                break
            self._at += len(record)
            done += 1
        if done:
            with contextlib.suppress(OSError):
                os.fsync(self._fd)
        self.held += done
        return done

    def reset(self) -> None:
        """Forget the records (the database holds them now)."""
        if self.held and self._pid == os.getpid():
            os.pwrite(self._fd, _END, len(_MAGIC))
            self._at, self.held = len(_MAGIC), 0

    def close(self) -> None:
        """Release the file; deleted unless it still holds answers (the next run reads them)."""
        if self._fd < 0 or self._pid != os.getpid():
            return
        if not self.held:
            self.path.unlink(missing_ok=True)
        os.close(self._fd)
        self._fd = -1

    def __del__(self) -> None:  # a cache never closed still releases its reserve
        with contextlib.suppress(Exception):
            self.close()


_NAME = re.compile(r"\.reserve-\d+-[0-9a-f]{6}$")
"""The end of every reserve's name (``<stem>.reserve-<pid>-<tag>``)."""


def _temp_stem(cache_path: Path) -> str:
    """The temp-folder name of a cache's reserves: its absolute path, hashed."""
    return "rubrictools-" + hashlib.sha256(str(cache_path.resolve()).encode()).hexdigest()[:16]


def read_unheld(cache_path: Path) -> list[tuple[Path, int, list[list[Any]], bool]]:
    """The reserves of ``cache_path`` that no live cache holds (left by a run that ended while
    the disk was full, or was killed): ``(path, locked fd, rows, intact)`` each; the caller
    unlinks the ones whose rows it saved and closes every fd."""
    found = []
    beside = sorted(cache_path.parent.glob(glob.escape(cache_path.name) + ".reserve-*"))
    in_temp = sorted(Path(tempfile.gettempdir()).glob(f"{_temp_stem(cache_path)}.reserve-*"))
    for path in beside + in_temp:
        if not _NAME.search(path.name):  # only files this module made: never a user's own file
            continue
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError:
            continue
        if not _lock(fd):
            os.close(fd)
            continue
        try:
            data = path.read_bytes()
        except OSError:
            os.close(fd)
            continue
        found.append((path, fd, *_records(data)))
    return found
