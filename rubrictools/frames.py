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
            if where is not None:
                raise ValueError(
                    f"{name}: {where}: invalid Unicode (an unpaired surrogate); repair the text first"
                ) from e
            mixed = _mixed_column(frame)
            if mixed is None:
                raise
            raise ValueError(f"{name}: {mixed}; convert the column to one type first, e.g. .astype(str)") from e
    if isinstance(df, dict):
        return pl.DataFrame(df)
    raise TypeError(f"{name}: expected a polars or pandas DataFrame, got {type(df).__name__}")


def _mixed_column(frame: Any) -> str | None:
    """``column 'c' mixes str and int values (rows 0 and 1)`` for the first object column whose
    non-null values are of several Python types (pyarrow cannot convert it), else None."""
    for col in frame.columns:
        first: dict[type, int] = {}
        for i, v in enumerate(frame[col].tolist()):
            if v is not None and not (isinstance(v, float) and v != v):
                first.setdefault(type(v), i)
        if len(first) > 1:
            kinds = " and ".join(t.__name__ for t in first)
            rows = " and ".join(str(i) for i in first.values())
            return f"column {col!r} mixes {kinds} values (first at rows {rows})"
    return None


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
