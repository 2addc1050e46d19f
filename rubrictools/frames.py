"""Inputs as polars: every public function accepts polars (eager or lazy) and pandas frames.

>>> import polars as pl
>>> to_polars(pl.LazyFrame({"a": [1]})).shape
(1, 1)
"""

from __future__ import annotations

from typing import Any

import polars as pl

__all__ = ["to_polars"]


def to_polars(df: Any, *, name: str = "df") -> pl.DataFrame:
    """Return ``df`` as an eager polars DataFrame (accepts polars eager/lazy and pandas)."""
    if isinstance(df, pl.DataFrame):
        return df
    if isinstance(df, pl.LazyFrame):
        return df.collect()
    mod = type(df).__module__
    if mod.startswith("pandas"):
        frame = df.reset_index(drop=True) if hasattr(df, "reset_index") else df
        try:
            return pl.from_pandas(frame)
        except Exception as e:
            where = _bad_text(frame)
            if where is None:
                raise
            raise ValueError(f"{name}: {where}: invalid Unicode (an unpaired surrogate); repair the text first") from e
    if isinstance(df, dict):
        return pl.DataFrame(df)
    raise TypeError(f"{name}: expected a polars or pandas DataFrame, got {type(df).__name__}")


def _bad_text(frame: Any) -> str | None:
    """``column 'c', row i`` of the first string that cannot be encoded as UTF-8, else None."""
    for col in frame.columns:
        for i, v in enumerate(frame[col].tolist()):
            if isinstance(v, str):
                try:
                    v.encode("utf-8")
                except UnicodeEncodeError:
                    return f"column {col!r}, row {i}"
    return None
