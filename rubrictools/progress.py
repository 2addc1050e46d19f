"""The one progress bar every long-running function shows: tqdm.auto (a widget in a notebook,
text in a terminal), created only when asked for, so ``progress=False`` costs nothing.

>>> progress_bar(10, enabled=False, desc="x", unit="step") is None
True
"""

from __future__ import annotations

from typing import Any

__all__ = ["progress_bar"]


def progress_bar(total: int, *, enabled: bool, desc: str, unit: str) -> Any:
    """A ``tqdm.auto`` bar of ``total`` steps, or None when ``enabled`` is False or there is
    nothing to do (``total`` 0); callers update it with ``bar.update(1)`` and ``bar.close()``."""
    if not enabled or total == 0:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit)
