"""Run grading's async core from sync code: a script, or a Jupyter cell with its own event loop."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import warnings
from collections.abc import Coroutine
from typing import Any, TypeVar

from rubrictools.stack import user_stacklevel

__all__ = ["run_sync"]

T = TypeVar("T")


GRACE_S = 1.0
"""After Ctrl-C, how long calls in flight may take to finish before they are cancelled."""


def run_sync(coro: Coroutine[Any, Any, T], cancel: threading.Event | None = None) -> T:
    """Run a coroutine to completion from sync code, in a script or inside a running event loop
    (Jupyter): it runs on a private loop in a worker thread. On Ctrl-C, ``cancel`` is
    set (no new calls start), calls in flight get :data:`GRACE_S` seconds to finish (their
    answers are cached as they come), the rest are cancelled (no answer was received for
    them, so nothing paid is lost), then KeyboardInterrupt is re-raised: the cell stops at
    once, not after the slowest call's timeout."""
    # always on a private loop in a worker thread, in a script too: there asyncio.run would
    # cancel every call in flight at the first Ctrl-C, losing the answers on their way back
    result: dict[str, Any] = {}
    finished = threading.Event()
    running: dict[str, Any] = {}

    async def main() -> T:
        running["loop"], running["task"] = asyncio.get_running_loop(), asyncio.current_task()
        return await coro

    def target() -> None:
        try:
            result["value"] = asyncio.run(main())
        except BaseException as e:  # noqa: BLE001  # the worker thread hands every outcome, KeyboardInterrupt included, back to the caller, which re-raises it
            result["error"] = e
        finally:
            finished.set()

    t = threading.Thread(target=target, name="rubrictools-grade", daemon=True)
    # the worker thread's warnings are held and raised again here, so they point at the
    # user's cell (the thread's own stack holds no line of theirs)
    with warnings.catch_warnings(record=True) as caught:  # the filters in force still apply
        t.start()
        try:
            # wait on an Event, not Thread.join: a join interrupted by Ctrl-C can later return early
            while not finished.wait(0.1):
                pass
        except KeyboardInterrupt:
            if cancel is not None:
                cancel.set()  # no new calls; calls in flight may finish and their answers are cached
            _stop(finished, running)
            raise
    for w in caught:
        warnings.warn(w.message, w.category, stacklevel=user_stacklevel())
    if "error" in result:
        raise result["error"]
    return result["value"]


def _stop(finished: threading.Event, running: dict[str, Any]) -> None:
    """Give calls in flight :data:`GRACE_S` to finish (a second Ctrl-C skips the wait), then
    cancel the run, again every 5 s, until it has unwound."""
    _wait(finished, GRACE_S)
    while not finished.is_set():
        if "task" in running:
            with contextlib.suppress(RuntimeError):  # the loop closed between the check and the call
                running["loop"].call_soon_threadsafe(running["task"].cancel)
        _wait(finished, 5.0)


def _wait(event: threading.Event, seconds: float) -> None:
    """``event.wait(seconds)``; a Ctrl-C ends the wait early instead of escaping."""
    with contextlib.suppress(KeyboardInterrupt):
        event.wait(seconds)
