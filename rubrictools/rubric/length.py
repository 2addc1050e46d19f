"""Verbosity penalties: the penalty curve and the counts it is applied to.

A submission is a string (all of it is *output*) or a ``{thinking, output}`` struct (a
reasoning trace beside the answer, as autorubric's ``ThinkingOutputDict``). :func:`word_count`
counts the ``part`` asked for, ``"all"`` (``thinking + " " + output``), ``"output"`` or
``"thinking"``, with whitespace-separated words or a ``count_fn`` of the user's (a tokenizer);
:class:`LengthPenalty` turns counts into the penalty :func:`rubrictools.score` subtracts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np
import polars as pl
from pydantic import BaseModel, ConfigDict, model_validator

from rubrictools.frames import to_polars

__all__ = ["PART_ALIASES", "LengthPart", "LengthPenalty", "word_count"]

LengthPart = Literal["all", "output", "thinking"]
# autorubric's penalty_type spellings
PART_ALIASES: dict[str, LengthPart] = {
    "all": "all",
    "output": "output",
    "thinking": "thinking",
    "ALL": "all",
    "OUTPUT_ONLY": "output",
    "THINKING_ONLY": "thinking",
}


class LengthPenalty(BaseModel):
    """A verbosity penalty subtracted from the score.

    ``penalty(n) = 0`` for ``n <= free_budget``, ``penalty_at_cap`` for ``n >= max_cap``, and
    ``penalty_at_cap * ((n - free_budget) / (max_cap - free_budget)) ** exponent`` between.
    With normalised scores the result is floored at 0; with raw scores it is subtracted as is
    (use an absolute ``penalty_at_cap`` then). ``penalty_type`` records which part of a
    ``{thinking, output}`` submission is counted (``"all"``, ``"output"``, ``"thinking"``;
    autorubric's ``ALL`` / ``OUTPUT_ONLY`` / ``THINKING_ONLY`` are read too).
    :func:`rubrictools.score` applies it: given the submissions as ``lengths=`` it counts that
    part itself, and counts from :func:`word_count` of another part are refused.

    Parameters
    ----------
    free_budget
        Counts up to this are free (default 6,000).
    max_cap
        The count at which the penalty reaches ``penalty_at_cap`` (default 8,000; above
        ``free_budget``).
    penalty_at_cap
        The penalty at and beyond ``max_cap`` (default 0.5 of a normalised score).
    exponent
        The curve between the two counts (default 1.6; 1 is linear).
    penalty_type
        The part of a ``{thinking, output}`` submission counted: ``"all"`` (default),
        ``"output"`` or ``"thinking"``.

    >>> LengthPenalty(free_budget=10, max_cap=20, penalty_at_cap=0.5, exponent=1).penalty([5, 15, 30]).tolist()
    [0.0, 0.25, 0.5]
    >>> LengthPenalty(penalty_type="OUTPUT_ONLY").penalty_type
    'output'
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    free_budget: int = 6000
    max_cap: int = 8000
    penalty_at_cap: float = 0.5
    exponent: float = 1.6
    penalty_type: LengthPart = "all"

    @model_validator(mode="before")
    @classmethod
    def _peer_spelling(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("penalty_type"), str):
            part = PART_ALIASES.get(data["penalty_type"])
            if part is None:
                raise ValueError(
                    f"LengthPenalty: penalty_type must be one of {sorted(PART_ALIASES)}, got {data['penalty_type']!r}"
                )
            data = {**data, "penalty_type": part}
        return data

    @model_validator(mode="after")
    def _check(self) -> LengthPenalty:
        if self.free_budget < 0 or self.max_cap <= self.free_budget:
            raise ValueError("LengthPenalty: need 0 <= free_budget < max_cap")
        if self.penalty_at_cap < 0 or self.exponent <= 0:
            raise ValueError("LengthPenalty: penalty_at_cap must be >= 0 and exponent > 0")
        return self

    def penalty(self, counts: Any) -> np.ndarray:
        """Vectorised penalty for an array of word/token counts."""
        n = np.asarray(counts, dtype=float)
        frac = np.clip((n - self.free_budget) / float(self.max_cap - self.free_budget), 0.0, 1.0)
        return self.penalty_at_cap * frac**self.exponent

    def expr(self, counts: pl.Expr) -> pl.Expr:
        """The same penalty as a polars expression."""
        frac = ((counts.cast(pl.Float64) - self.free_budget) / float(self.max_cap - self.free_budget)).clip(0.0, 1.0)
        return self.penalty_at_cap * frac.pow(self.exponent)


def _part_text(frame: pl.DataFrame, column: str, part: LengthPart) -> pl.Expr:
    """The text to count: a string column is all output; a struct needs ``thinking``/``output``
    fields (a missing or null one counts as empty, as autorubric treats it)."""
    dtype = frame.schema[column]
    if isinstance(dtype, pl.Struct):
        fields = {f.name for f in dtype.fields}
        if not fields & {"thinking", "output"}:
            raise ValueError(
                f"word_count: column {column!r} is a struct without 'thinking' or 'output' fields "
                f"(fields: {sorted(fields)})"
            )
        thinking = pl.col(column).struct.field("thinking") if "thinking" in fields else pl.lit("")
        output = pl.col(column).struct.field("output") if "output" in fields else pl.lit("")
    elif dtype == pl.String:
        thinking, output = pl.lit(""), pl.col(column)
    else:
        raise ValueError(f"word_count: column {column!r} must hold text or {{thinking, output}} structs, got {dtype}")
    thinking, output = thinking.cast(pl.String).fill_null(""), output.cast(pl.String).fill_null("")
    if part == "output":
        return output
    if part == "thinking":
        return thinking
    return pl.concat_str([thinking, output], separator=" ")


def word_count(
    df: Any,
    *,
    column: str = "submission",
    id_column: str | None = None,
    part: LengthPart | str = "all",
    count_fn: Callable[[str], int] | None = None,
) -> pl.DataFrame:
    """Counts per submission (``id, length, part``), as the ``lengths`` input of :func:`rubrictools.score`.

    Parameters
    ----------
    df
        polars or pandas DataFrame, one submission per row.
    column, id_column
        The submission column (strings, or ``{thinking, output}`` structs; default
        ``"submission"``) and the id column (it becomes ``id``). ``None`` (default): the row
        index, as :func:`rubrictools.grade` numbers submissions without ``id_column=``, so
        ``word_count(df)`` lines up with ``grade(df, ...)``; give the same ``id_column`` to
        both otherwise. Ids must be unique and not null.
    part
        What is counted in a ``{thinking, output}`` struct column (a string column is all
        output): ``"all"`` (default) counts ``thinking + " " + output``, ``"output"`` or
        ``"thinking"`` one part (autorubric's ``ALL`` / ``OUTPUT_ONLY`` / ``THINKING_ONLY`` are
        read too).
    count_fn
        Counts with any function of a string (e.g. ``lambda s: len(tokenizer.encode(s))``),
        called once per submission. ``None`` (default): whitespace-separated words
        (vectorised).

    Returns
    -------
    polars.DataFrame
        ``id, length, part``, one row per submission in input order; a null submission has a
        null length (not 0 words: :func:`rubrictools.score` then refuses to penalise it).

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> rt.word_count(pl.DataFrame({"submission": ["two words", None]})).rows()
    [(0, 2, 'all'), (1, None, 'all')]
    >>> sub = pl.DataFrame({"id": [1], "submission": [{"thinking": "a b c", "output": "d"}]})
    >>> [rt.word_count(sub, part=p)["length"].item() for p in ("all", "output", "thinking")]
    [4, 1, 3]
    """
    if part not in PART_ALIASES:
        raise ValueError(f"word_count: part must be one of {sorted(PART_ALIASES)}, got {part!r}")
    frame = to_polars(df)
    for name, col in (("column", column), ("id_column", id_column)):
        if col is not None and col not in frame.columns:
            raise ValueError(f"word_count: {name}={col!r} is not a column; columns: {frame.columns}")
    ids = pl.int_range(pl.len(), dtype=pl.Int64) if id_column is None else pl.col(id_column)
    if id_column is not None and (frame[id_column].null_count() or frame[id_column].is_duplicated().any()):
        raise ValueError(f"word_count: id_column={id_column!r} has null or duplicate ids")
    text = _part_text(frame, column, PART_ALIASES[part])
    if count_fn is None:
        length = text.str.count_matches(r"\S+").cast(pl.Int64)
    else:
        length = text.map_elements(lambda s: int(count_fn(s)), return_dtype=pl.Int64)
    length = pl.when(pl.col(column).is_null()).then(None).otherwise(length)  # nothing to count is not 0 words
    return frame.select(ids.alias("id"), length.alias("length"), pl.lit(PART_ALIASES[part]).alias("part"))
