"""Conditional criteria (``Criterion(applies_when={column: [values]})``): which rows ask them.

A row that does not meet a criterion's condition gets a rubric without that criterion (so no
mode asks it, and a holistic judge is shown only the criteria that apply), and a
``NOT_APPLICABLE`` verdict row (``judge="rule"``: decided without a judge) saying why. The
conditions are polars expressions over the graded frame, evaluated once per distinct rubric;
rows with the same pattern of applicable criteria share one restricted rubric.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from rubrictools.grading.rules import no_judge_rows
from rubrictools.rubric import Criterion, Rubric
from rubrictools.verdicts import NOT_APPLICABLE

__all__ = ["applicable_rubrics", "check_conditions", "not_applicable_table"]

# not-applicable rows sort after the asked criteria of their submission
_NA_POSITION = 1 << 20


def check_conditions(frame: pl.DataFrame, rubrics: list[Rubric]) -> None:
    """Every column a condition names must be in the graded frame (checked before any call)."""
    seen: set[int] = set()
    for r in rubrics:
        if id(r) in seen:
            continue
        seen.add(id(r))
        for c in r:
            for col in c.applies_when or {}:
                if col not in frame.columns:
                    raise ValueError(
                        f"criterion {c.name!r}: field 'applies_when' names the column {col!r}, which the graded "
                        f"frame does not have; its columns: {frame.columns}"
                    )


def _applies(c: Criterion) -> pl.Expr:
    conds = [
        pl.col(col).cast(pl.String).is_in(list(vals)).fill_null(False) for col, vals in (c.applies_when or {}).items()
    ]
    return pl.all_horizontal(conds)


def applicable_rubrics(frame: pl.DataFrame, rubrics: list[Rubric]) -> tuple[list[Rubric], pl.DataFrame | None]:
    """Each row's rubric without the conditional criteria it does not meet, and the frame of
    those (``__row, criterion, __pos, why``); ``None`` when no rubric has conditions."""
    if not any(c.applies_when for r in {id(r): r for r in rubrics}.values() for c in r):
        return rubrics, None
    out = list(rubrics)
    skipped: list[pl.DataFrame] = []
    by_rubric: dict[int, list[int]] = {}
    for i, r in enumerate(rubrics):
        by_rubric.setdefault(id(r), []).append(i)
    for rows in by_rubric.values():
        rubric = rubrics[rows[0]]
        conditional = [(pos, c) for pos, c in enumerate(rubric) if c.applies_when]
        if not conditional:
            continue
        sub = frame[rows].with_columns(pl.Series("__row", rows, dtype=pl.Int64))
        flags = sub.select("__row", *[_applies(c).alias(str(pos)) for pos, c in conditional])
        patterns = flags.group_by([str(pos) for pos, _ in conditional]).agg(pl.col("__row"))
        for *keep, pattern_rows in patterns.iter_rows():  # one restricted rubric per pattern
            dropped = {pos for (pos, _), kept in zip(conditional, keep, strict=True) if not kept}
            restricted = rubric.model_copy(
                update={"criteria": tuple(c for p, c in enumerate(rubric) if p not in dropped)}
            )
            for row in pattern_rows:
                out[row] = restricted
        for pos, c in conditional:
            miss = flags.filter(~pl.col(str(pos))).select("__row")
            if miss.height:
                why = "not applicable: applies when " + "; ".join(
                    f"{k} is one of {list(v)}" for k, v in (c.applies_when or {}).items()
                )
                skipped.append(
                    miss.with_columns(
                        pl.lit(c.name).alias("criterion"),
                        pl.lit(_NA_POSITION + pos).cast(pl.Int64).alias("__pos"),
                        pl.lit(why).alias("why"),
                        pl.lit(c.weight).alias("weight"),
                    )
                )
    return out, (pl.concat(skipped) if skipped else None)


def not_applicable_table(skipped: pl.DataFrame, ids: list[Any], id_dtype: pl.DataType) -> pl.DataFrame:
    """The ``NOT_APPLICABLE`` verdict rows of :func:`applicable_rubrics`' frame, as rows decided
    without a judge (:func:`~rubrictools.grading.rules.no_judge_rows`)."""
    id_of = pl.Series("id", ids, dtype=id_dtype)
    rows = skipped.with_columns(
        id_of.gather(skipped["__row"]).alias("id"),
        pl.lit(NOT_APPLICABLE).alias("verdict"),
        pl.lit(None, pl.Float64).alias("value"),
        pl.col("why").alias("explanation"),
    )
    return no_judge_rows(rows, id_dtype)
