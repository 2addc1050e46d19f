"""Wide human-label sheets -> the long label table ``id, criterion, rater, label``.

Spreadsheets of human labels are usually wide: one column per (rater, criterion)
(``ann_clarity``, ``bob_clarity``, ``ann_tone``...) or, for one criterion, one column per
rater. :func:`labels_from_wide` turns either into the long table that
:func:`~rubrictools.agreement`, :func:`~rubrictools.inter_rater` and
:func:`~rubrictools.compare` read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from rubrictools.frames import to_polars
from rubrictools.rubric import Rubric

__all__ = ["labels_from_wide"]


def _split(columns: Sequence[str], criteria: Sequence[str], sep: str) -> dict[str, tuple[str, str]]:
    """Column -> (rater, criterion) for columns named ``{rater}{sep}{criterion}`` (longest
    criterion name first, so ``tone`` never claims ``ann_overall_tone`` from ``overall_tone``)."""
    out: dict[str, tuple[str, str]] = {}
    longest_first = sorted(criteria, key=len, reverse=True)
    for col in columns:
        for crit in longest_first:
            suffix = f"{sep}{crit}"
            if col.endswith(suffix) and len(col) > len(suffix):
                out[col] = (col[: -len(suffix)], crit)
                break
    return out


def labels_from_wide(
    df: Any,
    *,
    id_column: str = "id",
    criteria: Sequence[str] | Rubric | None = None,
    criterion: str | None = None,
    raters: Sequence[str] | None = None,
    sep: str = "_",
) -> pl.DataFrame:
    """The long label table ``id, criterion, rater, label`` of a wide sheet.

    Two layouts: ``criteria=`` for columns named ``{rater}{sep}{criterion}``, or
    ``criterion=`` with ``raters=`` for one column per rater of a single criterion (give one
    of ``criteria`` and ``criterion``).

    Parameters
    ----------
    df
        The wide sheet (polars or pandas DataFrame), one row per item.
    id_column
        The column of item ids (default ``"id"``); it becomes ``id``.
    criteria
        Criterion names, or a :class:`~rubrictools.Rubric` (its criteria's names): columns are
        named ``{rater}{sep}{criterion}``, e.g. ``rater_a_clarity`` is rater ``rater_a``'s label
        for ``clarity``. Other columns are ignored.
    criterion
        The one criterion that every rater column holds (with ``raters=``).
    raters
        With ``criterion``: the columns holding each rater's labels (the column name is the
        rater). With ``criteria``: limits which raters are read (default: all found).
    sep
        The separator between rater and criterion in a column name (default ``"_"``).

    Returns
    -------
    polars.DataFrame
        ``id, criterion, rater, label`` in sheet order. Empty cells (null) are left out; labels
        become strings (``4`` -> ``"4"``), which :func:`~rubrictools.agreement` matches to the
        rubric's options.

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> wide = pl.DataFrame({"id": [1, 2], "ann_clarity": [4, 5], "bob_clarity": [4, None],
    ...                      "ann_tone": ["ok", "poor"]})
    >>> long = rt.labels_from_wide(wide, criteria=["clarity", "tone"])
    >>> long.rows()[:3]
    [(1, 'clarity', 'ann', '4'), (1, 'clarity', 'bob', '4'), (1, 'tone', 'ann', 'ok')]
    >>> long.height  # bob's empty cell is left out
    5
    """
    frame = to_polars(df, name="df")
    if id_column not in frame.columns:
        raise ValueError(f"id_column: {id_column!r} is not a column (columns: {frame.columns[:10]})")
    if (criteria is None) == (criterion is None):
        raise ValueError("give criteria= (columns named {rater}{sep}{criterion}) or criterion= with raters=")
    if criterion is not None:
        if not raters:
            raise ValueError("criterion= needs raters=: the columns holding each rater's labels")
        missing = [r for r in raters if r not in frame.columns]
        if missing:
            raise ValueError(f"raters: {missing} are not columns")
        mapping = {r: (r, criterion) for r in raters}
    else:
        names = list(criteria.names) if isinstance(criteria, Rubric) else list(criteria or [])
        mapping = _split([c for c in frame.columns if c != id_column], names, sep)
        if raters is not None:
            mapping = {c: rc for c, rc in mapping.items() if rc[0] in set(raters)}
        if not mapping:
            raise ValueError(
                f"no column is named {{rater}}{sep}{{criterion}} for criteria {names[:5]} "
                f"(columns: {frame.columns[:10]})"
            )
    parts = [
        frame.select(
            pl.col(id_column).alias("id"),
            pl.lit(crit).alias("criterion"),
            pl.lit(rater).alias("rater"),
            _as_label(frame[col]).alias("label"),
        )
        for col, (rater, crit) in mapping.items()
    ]
    order = {c: i for i, c in enumerate(dict.fromkeys(crit for _, crit in mapping.values()))}
    long = pl.concat(parts).filter(pl.col("label").is_not_null()).with_row_index("__k")
    return _in_sheet_order(long, frame, id_column, order)


def _in_sheet_order(long: pl.DataFrame, frame: pl.DataFrame, id_column: str, order: dict[str, int]) -> pl.DataFrame:
    """Rows by the sheet's row order, then criterion (first appearance), then column order."""
    pos = frame.select(pl.col(id_column).alias("id")).with_row_index("__row").unique("id", keep="first")
    crit = pl.DataFrame(
        {"criterion": list(order), "__c": list(order.values())}, schema={"criterion": pl.String, "__c": pl.Int64}
    )
    out = long.join(pos, on="id", how="left").join(crit, on="criterion", how="left")
    return out.sort("__row", "__c", "__k").drop("__row", "__c", "__k")


def _as_label(col: pl.Series) -> pl.Expr:
    """A label column as text: whole numbers stored as floats (a pandas column with a blank cell)
    read ``4``, not ``4.0``, so they match the rubric's options.

    >>> pl.select(_as_label(pl.Series("x", [4.0, None, 2.0]))).to_series().to_list()
    ['4', None, '2']
    """
    if col.dtype.is_float() and ((col.drop_nulls() % 1) == 0).all():
        return pl.lit(col).cast(pl.Int64).cast(pl.String)
    return pl.lit(col).cast(pl.String)
