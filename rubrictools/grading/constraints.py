"""Checks of the judges' replies over the whole verdict table: output constraints and warnings.

A row's ``warnings`` (a list of strings) says what is doubtful about an answered verdict
without making it an error (rubrify's ``CriterionJudgment.warnings`` and ``Judgment
.constraint_warnings``):

- ``constraint <id>: ...`` a soft :class:`~rubrictools.OutputConstraint` the reply breaks;
- ``confidence: ...`` a confidence was asked for (``confidence=True``) and the reply gave none
  from 0 to 1;
- ``evidence: ...`` the quoted passage is not in the submission (``evidence_ok`` is false).

A hard constraint that a reply breaks makes its row an error row (``error_kind
"constraint"``, verdict and value null), its reply kept in ``raw_response``; a
``"disqualify"`` one keeps the verdict and names the constraint in ``disqualified_by``. A
constraint's ``scope`` says over which rows its field is joined and checked once (the row,
its call, or the judge's whole judgment of the submission; see
:mod:`rubrictools.rubric.constraints`). Every check is a polars expression over all rows at once.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from rubrictools.rubric.constraints import OutputConstraint

__all__ = ["check_replies"]

_ANSWERED = pl.col("error").is_null() & pl.col("verdict").is_not_null()
_SCOPE_KEYS = {"call": ["__call"], "judgment": ["__row", "__judge", "__variant"]}


def _broken(c: OutputConstraint) -> pl.Expr:
    """True where a row breaks ``c``: its own field (scope ``criterion``), or the answered
    rows' fields of its call or judgment joined by newlines, each distinct text once. A
    constraint on the evidence applies to rows that asked for one."""
    if c.scope == "criterion":
        broken = c.broken()
    else:  # the rows answered before any check (whatever the enforcement); a text repeated on
        # the rows of one call (a shared rationale) counts once
        valid = pl.col("__answered") & pl.col(c.target).is_not_null()
        once = pl.when(valid).then(pl.col(c.target)).is_first_distinct().over("__call") & valid
        broken = c.broken(pl.col(c.target).filter(once).str.join("\n").over(_SCOPE_KEYS[c.scope]))
    return (pl.col("__ev") & broken) if c.target == "evidence" else broken


def _messages(constraints: Sequence[OutputConstraint]) -> pl.Expr:
    """The messages of the ``constraints`` a row breaks (an empty list when none)."""
    return pl.concat_list([pl.when(_broken(c)).then(pl.lit(c.message())) for c in constraints]).list.drop_nulls()


def _hard(df: pl.DataFrame, hard: Sequence[OutputConstraint]) -> pl.DataFrame:
    if not hard:
        return df
    empty = pl.lit([], dtype=pl.List(pl.String))
    df = df.with_columns(pl.when(_ANSWERED).then(_messages(hard)).otherwise(empty).alias("__hard"))
    bad = pl.col("__hard").list.len() > 0
    return df.with_columns(
        pl.when(bad).then(None).otherwise(pl.col("verdict")).alias("verdict"),
        pl.when(bad).then(None).otherwise(pl.col("value")).alias("value"),
        pl.when(bad).then(pl.col("__hard").list.join("; ")).otherwise(pl.col("error")).alias("error"),
        pl.when(bad).then(pl.lit("constraint")).otherwise(pl.col("error_kind")).alias("error_kind"),
        pl.when(bad).then(None).otherwise(pl.col("confidence")).alias("confidence"),
    ).drop("__hard")


def _disqualifying(df: pl.DataFrame, constraints: Sequence[OutputConstraint]) -> pl.DataFrame:
    """The ``disqualified_by`` column: the disqualifying constraints an answered row breaks."""
    if not constraints:
        return df
    why = _messages(constraints)
    return df.with_columns(
        pl.when(_ANSWERED & (why.list.len() > 0)).then(why.list.join("; ")).otherwise(None).alias("disqualified_by")
    )


def check_replies(df: pl.DataFrame, constraints: Sequence[OutputConstraint], *, confidence: bool) -> pl.DataFrame:
    """Apply the hard and disqualifying ``constraints`` and add ``warnings`` (see the module
    docstring). The replies of rows still answered after the check are dropped from
    ``raw_response`` (only error rows keep theirs, as without constraints)."""
    # disqualification first: a reply that also breaks a hard rule becomes an error row, and its
    # disqualification must not vanish with its verdict
    df = df.with_columns(_ANSWERED.alias("__answered"))
    df = _disqualifying(df, [c for c in constraints if c.enforcement == "disqualify"])
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
    ).drop("__answered")
