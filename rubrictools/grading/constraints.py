"""Checks of the judges' replies over the whole verdict table: output constraints and warnings.

A row's ``warnings`` (a list of strings) says what is doubtful about an answered verdict
without making it an error (rubrify's ``CriterionJudgment.warnings`` and ``Judgment
.constraint_warnings``):

- ``constraint <id>: ...`` a soft :class:`~rubrictools.OutputConstraint` the reply breaks;
- ``confidence: ...`` a confidence was asked for (``confidence=True``) and the reply gave none
  from 0 to 1;
- ``evidence: ...`` the quoted passage is not in the submission (``evidence_ok`` is false).

A hard constraint that a reply breaks makes its row an error row (``error_kind
"constraint"``, verdict and value null), its reply kept in ``raw_response``. Every check is a
polars expression over all rows at once.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from rubrictools.judge.constraints import OutputConstraint

__all__ = ["check_replies"]

_ANSWERED = pl.col("error").is_null() & pl.col("verdict").is_not_null()


def _broken(c: OutputConstraint) -> pl.Expr:
    """True where a row breaks ``c``; a constraint on the evidence applies to rows that asked for one."""
    return (pl.col("__ev") & c.broken()) if c.target == "evidence" else c.broken()


def _hard(df: pl.DataFrame, hard: Sequence[OutputConstraint]) -> pl.DataFrame:
    if not hard:
        return df
    why = pl.concat_list([pl.when(_broken(c)).then(pl.lit(c.message())) for c in hard]).list.drop_nulls()
    df = df.with_columns(pl.when(_ANSWERED).then(why).otherwise(pl.lit([], dtype=pl.List(pl.String))).alias("__hard"))
    bad = pl.col("__hard").list.len() > 0
    return df.with_columns(
        pl.when(bad).then(None).otherwise(pl.col("verdict")).alias("verdict"),
        pl.when(bad).then(None).otherwise(pl.col("value")).alias("value"),
        pl.when(bad).then(pl.col("__hard").list.join("; ")).otherwise(pl.col("error")).alias("error"),
        pl.when(bad).then(pl.lit("constraint")).otherwise(pl.col("error_kind")).alias("error_kind"),
        pl.when(bad).then(None).otherwise(pl.col("confidence")).alias("confidence"),
    ).drop("__hard")


def check_replies(df: pl.DataFrame, constraints: Sequence[OutputConstraint], *, confidence: bool) -> pl.DataFrame:
    """Apply the hard ``constraints`` and add ``warnings`` (see the module docstring). The
    replies of rows still answered after the check are dropped from ``raw_response`` (only
    error rows keep theirs, as without constraints)."""
    df = _hard(df, [c for c in constraints if c.enforcement == "hard"])
    notes = [pl.when(_broken(c)).then(pl.lit(c.message())) for c in constraints if c.enforcement == "soft"]
    if confidence:
        notes.append(
            pl.when(pl.col("confidence").is_null()).then(pl.lit("confidence: the reply gave none from 0 to 1"))
        )
    notes.append(
        pl.when(pl.col("evidence_ok") == False).then(pl.lit("evidence: the quoted passage is not in the submission"))  # noqa: E712 - null (no quote asked) stays null
    )
    warnings = pl.concat_list([n.otherwise(None).cast(pl.String) for n in notes]).list.drop_nulls()
    return df.with_columns(
        pl.when(_ANSWERED).then(warnings).otherwise(None).alias("warnings"),
        pl.when(pl.col("error").is_null()).then(None).otherwise(pl.col("raw_response")).alias("raw_response"),
    )
