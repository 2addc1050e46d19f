"""A full disk, recognised and named: which errors mean "no space left", and a sentence that
says which disk it is and how much room it has."""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
from pathlib import Path

__all__ = ["describe_disk", "disk_nearly_full", "is_disk_full"]

_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
_FULL_WORDS = ("no space left", "disk is full", "disk quota exceeded", "file too large", "os error 28")


def is_disk_full(error: BaseException) -> bool:
    """Whether ``error`` says the disk (or the user's quota) has no room: an ``OSError`` with
    ``ENOSPC``/``EDQUOT``/``EFBIG``, SQLite's "database or disk is full", or a library's error
    that wraps one (polars reports a failed parquet write as a ``ComputeError``).

    >>> is_disk_full(OSError(28, "No space left on device"))
    True
    >>> is_disk_full(ValueError("bad value"))
    False
    """
    if isinstance(error, OSError) and error.errno in _FULL_ERRNOS:
        return True
    if isinstance(error, (OSError, sqlite3.Error)) or type(error).__module__.startswith("polars"):
        text = str(error).lower()
        return any(w in text for w in _FULL_WORDS)
    return False


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover - the loop returns at GiB


def _mount_point(path: Path) -> Path:
    path = path.resolve()
    while not path.is_mount() and path.parent != path:
        path = path.parent
    return path


def describe_disk(path: str | Path) -> str:
    """ "the disk holding <path> (mounted at <mount>): <free> free of <total>" for the nearest
    existing folder of ``path``.

    >>> describe_disk(".").startswith("the disk holding ")
    True
    """
    p = Path(path)
    where = p if p.is_dir() else p.parent
    while not where.exists() and where.parent != where:
        where = where.parent
    try:
        usage = shutil.disk_usage(where)
        room = f"{_size(usage.free)} free of {_size(usage.total)}"
    except OSError:
        room = "its size unknown"
    return f"the disk holding {p} (mounted at {_mount_point(where)}): {room}"


def disk_nearly_full(path: str | Path, *, below: int = 256 << 10) -> bool:
    """Whether the disk holding ``path`` has less than ``below`` bytes, or no inode, left for
    this user (SQLite reports such a disk as a vague "disk I/O error" at times).

    >>> disk_nearly_full(".", below=0)
    False
    """
    p = Path(path)
    where = p if p.is_dir() else p.parent
    try:
        st = os.statvfs(where)
    except (OSError, AttributeError):
        return False
    return st.f_bavail * st.f_frsize < below or (st.f_files > 0 and st.f_favail == 0)
