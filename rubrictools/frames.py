"""Inputs as polars: every public function accepts polars (eager or lazy) and pandas frames,
and Hugging Face ``datasets.Dataset`` objects (through Arrow: no copy of a memory-mapped table).

>>> import polars as pl
>>> to_polars(pl.LazyFrame({"a": [1]})).shape
(1, 1)
"""

from __future__ import annotations

from typing import Any

import polars as pl

__all__ = ["to_polars"]


def to_polars(df: Any, *, name: str = "df") -> pl.DataFrame:
    """Return ``df`` as an eager polars DataFrame (accepts polars eager/lazy, pandas and a
    Hugging Face ``datasets.Dataset``)."""
    if isinstance(df, pl.DataFrame):
        return df
    if isinstance(df, pl.LazyFrame):
        return df.collect()
    mod = type(df).__module__
    if mod.startswith("datasets"):
        return _from_hf(df, name)
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
            if mixed is not None:
                raise ValueError(f"{name}: {mixed}; convert the column to one type first, e.g. .astype(str)") from e
            chats = _chat_columns_with_mixed_content(frame)
            if not chats:
                raise
            try:  # text turns written as one text part each: the same conversation, one type
                return pl.from_pandas(frame.assign(**{c: frame[c].map(_as_parts) for c in chats}))
            except Exception:  # noqa: BLE001  # pyarrow's own errors: the named error below says what to fix
                raise ValueError(
                    f"{name}: column(s) {chats} hold conversations whose turns mix text and content-part lists "
                    "that could not be made one type; give every turn's content as a list of parts"
                ) from e
    if isinstance(df, dict):
        return pl.DataFrame(df)
    raise TypeError(f"{name}: expected a polars or pandas DataFrame (or a datasets.Dataset), got {type(df).__name__}")


def _from_hf(ds: Any, name: str) -> pl.DataFrame:
    """A Hugging Face ``Dataset`` as polars, through its Arrow table (its own ``to_polars``,
    which honours a selection or shuffle); a ``DatasetDict`` or a streaming dataset is refused
    with what to pass instead."""
    kind = type(ds).__name__
    if kind in ("DatasetDict", "IterableDatasetDict"):
        raise TypeError(f"{name}: a {kind} holds several splits ({list(ds)}); pass one, e.g. ds[{next(iter(ds))!r}]")
    if kind == "IterableDataset":
        raise TypeError(f"{name}: a streaming IterableDataset has no table to grade; load it without streaming=True")
    if not hasattr(ds, "to_polars"):
        raise TypeError(f"{name}: expected a datasets.Dataset, got {kind}")
    out = ds.to_polars()
    return out if isinstance(out, pl.DataFrame) else pl.DataFrame(out)


def _chat_columns_with_mixed_content(frame: Any) -> list[str]:
    """Object columns of conversations (lists of messages) whose ``content`` is text in some
    turns and a list of content parts in others (pyarrow cannot make that one column)."""
    out = []
    for col in frame.columns:
        kinds = {
            type(m.get("content")).__name__
            for v in frame[col].tolist()
            if isinstance(v, list)
            for m in v
            if isinstance(m, dict) and m.get("content") is not None
        }
        if {"str", "list"} <= kinds:
            out.append(str(col))
    return out


def _as_parts(turns: Any) -> Any:
    """A conversation with every text ``content`` written as ``[{"type": "text", "text": ...}]``."""
    if not isinstance(turns, list):
        return turns
    return [
        {**m, "content": [{"type": "text", "text": m["content"]}]}
        if isinstance(m, dict) and isinstance(m.get("content"), str)
        else m
        for m in turns
    ]


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
