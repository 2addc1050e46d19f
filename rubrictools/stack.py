"""Where a warning points: at the user's line, however deep inside rubrictools it is raised.

A fixed ``stacklevel`` breaks as soon as a call passes through one more (or one less) frame of
the package, e.g. the wrapper that reads a deprecated keyword. :func:`user_stacklevel` counts
the frames instead, as pandas' ``find_stack_level`` does.

>>> import warnings
>>> def public():
...     warnings.warn("look here", UserWarning, stacklevel=user_stacklevel())
>>> with warnings.catch_warnings(record=True) as w:
...     warnings.simplefilter("always")
...     public()
>>> w[0].filename.endswith("stack.py")  # a doctest runs in this module: the warning points past it
False
"""

from __future__ import annotations

import sys

__all__ = ["user_stacklevel"]

_OURS = ("rubrictools", "asyncio")
"""Frames a warning never points at: ours, and the event loop running our coroutines (a
warning raised in a call's coroutine points through ``asyncio.run`` to the user's line)."""


def _internal(module: str, also: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in (*_OURS, *also))


def user_stacklevel(*, also: tuple[str, ...] = ()) -> int:
    """The ``stacklevel`` for a ``warnings.warn`` called by the caller of this function, so the
    warning names the first frame outside rubrictools (and outside the modules ``also`` names,
    e.g. ``("pydantic",)`` for a warning raised inside a model validator)."""
    frame = sys._getframe(1)  # the function that will call warnings.warn: stacklevel 1
    level = 1
    while frame.f_back is not None and _internal(frame.f_globals.get("__name__", ""), also):
        frame = frame.f_back
        level += 1
    return level
