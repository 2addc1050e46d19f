"""Run grading's async core from sync code: a script, or a Jupyter cell with its own event loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["run_sync"]

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T], cancel: threading.Event | None = None) -> T:
    """Run a coroutine to completion from sync code, also inside a running event loop
    (Jupyter): there it runs on a private loop in a worker thread. On Ctrl-C, ``cancel`` is
    set (no new calls start), calls in flight finish, then KeyboardInterrupt is re-raised."""
    try:
        asyncio.get_running_loop()
        in_loop = True
    except RuntimeError:
        in_loop = False
    if not in_loop:  # outside the except block, so a failure is not chained to "no running event loop"
        return asyncio.run(coro)
    result: dict[str, Any] = {}
    finished = threading.Event()

    def target() -> None:
        try:
            result["value"] = asyncio.run(coro)
        except BaseException as e:
            result["error"] = e
        finally:
            finished.set()

    t = threading.Thread(target=target, name="rubrictools-grade", daemon=True)
    t.start()
    try:
        # wait on an Event, not Thread.join: a join interrupted by Ctrl-C can later return early
        while not finished.wait(0.1):
            pass
    except KeyboardInterrupt:
        if cancel is not None:
            cancel.set()  # no new calls; calls in flight finish and their answers are cached
        while True:
            try:
                finished.wait()
                break
            except KeyboardInterrupt:  # a second Ctrl-C while in-flight calls finish
                continue
        raise
    if "error" in result:
        raise result["error"]
    return result["value"]
