"""Preference tables in, comparisons out: validation, one (criterion, judge) slice, and
preferences built from scores.

A preference table (:func:`rubrictools.grade_pairs`, or :func:`preferences_from_scores`) has
at least ``id, system_a, system_b, value`` (A's share: 1 win, 0.5 tie, 0 loss, or a soft
preference in between, as AlpacaEval's judge probabilities; null for an error row);
``criterion`` and ``judge`` split it into slices.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from rubrictools.frames import to_polars
from rubrictools.judge.tasks import PAIR_VALUES
from rubrictools.rubric import Rubric, score

__all__ = [
    "Games",
    "check_preferences",
    "games_of",
    "one_slice",
    "preference_groups",
    "preferences_from_scores",
    "preferences_from_verdicts",
]

_NEEDED = ("id", "system_a", "system_b", "value")


def _with_value(df: pl.DataFrame, needed: Sequence[str]) -> pl.DataFrame:
    """A table with ``preferred`` (A / tie / B, as README describes preference tables) and no
    ``value`` gets ``value`` from it (A's share: 1, 0.5, 0); any other word is an error."""
    if "value" not in needed or "value" in df.columns or "preferred" not in df.columns:
        return df
    word = pl.col("preferred").cast(pl.String)
    bad = df.filter(word.is_not_null() & ~word.is_in(list(PAIR_VALUES)))
    if bad.height:
        raise ValueError(f"prefs: preferred must be 'A', 'tie' or 'B' (or null); got {bad['preferred'][0]!r}")
    return df.with_columns(word.replace_strict(PAIR_VALUES, default=None, return_dtype=pl.Float64).alias("value"))


def preference_groups(df: pl.DataFrame, by: str | Sequence[str] | None) -> list[str]:
    """The grouping columns ``by`` names in a preference table: a string is one column, ``None``
    none; ``"criterion"`` and ``"judge"`` are skipped when absent, any other name must be a column.

    >>> preference_groups(pl.DataFrame({"id": [1], "criterion": ["a"]}), ("criterion", "judge"))
    ['criterion']
    """
    names = [] if by is None else [by] if isinstance(by, str) else list(by)
    unknown = [c for c in names if c not in df.columns and c not in ("criterion", "judge")]
    if unknown:
        raise ValueError(f"by: {unknown} are not columns of prefs ({df.columns})")
    return [c for c in names if c in df.columns]


def check_preferences(prefs: Any, needed: Sequence[str] = _NEEDED) -> pl.DataFrame:
    """``prefs`` as a polars DataFrame, with a clear error naming any missing column or bad value;
    ``value`` may be given as ``preferred`` (``"A"``, ``"tie"``, ``"B"``)."""
    df = _with_value(to_polars(prefs, name="prefs"), needed)
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise ValueError(
            f"prefs: missing column(s) {missing}; expected a preference table (rt.grade_pairs or "
            f"rt.preferences_from_scores) with {list(needed)}, got {df.columns}"
        )
    if "value" in needed:
        if not df.schema["value"].is_numeric() and df.schema["value"] != pl.Null:
            raise ValueError(f"prefs: value must be a number (A's share), got a {df.schema['value']} column")
        v = pl.col("value").cast(pl.Float64)
        bad = df.filter(v.is_not_null() & (v.is_nan() | (v < 0) | (v > 1)))
        if bad.height:
            raise ValueError(
                "prefs: value is A's share and must be in [0, 1] (1 A wins, 0.5 tie, 0 B wins, soft preferences in "
                f"between); got {bad['value'][0]!r}"
            )
    if "id" in needed and df["id"].null_count():
        raise ValueError(
            f"prefs: {df['id'].null_count()} row(s) have a null id; every comparison needs its prompt's id (the "
            "bootstrap resamples prompts)"
        )
    if {"system_a", "system_b"} <= set(needed):
        same = df.filter(pl.col("system_a") == pl.col("system_b"))
        if same.height:
            raise ValueError(
                f"prefs: {same.height} row(s) compare a system with itself (e.g. {same['system_a'][0]!r}, "
                f"id {same['id'][0]!r})"
            )
    return df


def one_slice(df: pl.DataFrame, criterion: str | None, judge: str | None) -> pl.DataFrame:
    """The rows of one criterion and one judge; an error lists the choices when there are several."""
    for name, want in (("criterion", criterion), ("judge", judge)):
        if name not in df.columns:
            if want is not None:
                raise ValueError(f"prefs has no {name!r} column; {name}= cannot be used")
            continue
        values = df[name].unique(maintain_order=True).to_list()
        if want is None:
            if len(values) > 1:
                raise ValueError(f"prefs holds several {name}s {values}; choose one with {name}=")
            continue
        if want not in values:
            raise ValueError(f"{name}={want!r} is not in prefs; available: {values}")
        df = df.filter(pl.col(name) == want)
    return df


class Games:
    """Decided comparisons as arrays: systems ``i`` (A) and ``j`` (B), A's share ``s``,
    cluster (prompt) codes ``c``; ``names[k]`` is system ``k``."""

    def __init__(self, df: pl.DataFrame) -> None:
        ok = df.filter(pl.col("value").is_not_null())
        self.names: list[str] = sorted(set(ok["system_a"].cast(pl.String)) | set(ok["system_b"].cast(pl.String)))
        code = {n: k for k, n in enumerate(self.names)}
        self.i = ok["system_a"].cast(pl.String).replace_strict(code, return_dtype=pl.Int64).to_numpy()
        self.j = ok["system_b"].cast(pl.String).replace_strict(code, return_dtype=pl.Int64).to_numpy()
        self.s = ok["value"].cast(pl.Float64).to_numpy()
        _, c = np.unique(ok["id"].cast(pl.String).to_numpy(), return_inverse=True)
        self.c = c.astype(np.int64)
        self.m = int(self.c.max()) + 1 if self.c.size else 0
        self.dropped = df.height - ok.height

    @property
    def k(self) -> int:
        return len(self.names)

    @property
    def n(self) -> int:
        return int(self.s.size)


def games_of(prefs: Any, *, criterion: str | None = None, judge: str | None = None) -> Games:
    """The decided comparisons of one (criterion, judge) slice of a preference table."""
    return Games(one_slice(check_preferences(prefs), criterion, judge))


def preferences_from_scores(
    scores: Any,
    *,
    system: str = "system",
    id_column: str = "id",
    score: str = "score",
    criterion: str | None = None,
    tolerance: float = 0.0,
) -> pl.DataFrame:
    """Every pair of systems that answered the same item, compared by score.

    For each item (``id_column``) and each two systems ``x < y`` (sorted names) that both
    have a score: ``preferred = "A"`` (x) when ``score_x - score_y > tolerance``, ``"B"``
    when ``< -tolerance``, else ``"tie"``; ``value`` is A's share (1, 0.5, 0). Use it to
    rank systems graded one at a time, with the same :func:`win_rates` and
    :func:`rank_systems` as judged pairs.

    Parameters
    ----------
    scores
        :func:`rubrictools.score` tables of several systems, stacked, with a system column:
        one score per (item, system[, criterion]); null scores are left out.
    system, id_column, score
        The names of the system, item id and score columns (default ``"system"``, ``"id"``,
        ``"score"``).
    criterion
        The name of a criterion column, when the table has one: items are then paired within
        each criterion and the column is kept (as ``criterion``). ``None`` (default): no
        criterion column.
    tolerance
        Score differences within ``tolerance`` (>= 0; default 0: only equal scores) are ties.

    Returns
    -------
    polars.DataFrame
        A preference table, sorted by ``id, system_a, system_b``: ``id, system_a, system_b,
        [criterion,] preferred, score_a, score_b, value``.

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> s = pl.DataFrame({"id": [1, 1, 2, 2], "system": ["x", "y", "x", "y"], "score": [0.9, 0.5, 0.4, 0.4]})
    >>> rt.preferences_from_scores(s).select("id", "system_a", "system_b", "preferred").rows()
    [(1, 'x', 'y', 'A'), (2, 'x', 'y', 'tie')]
    """
    df = to_polars(scores, name="scores")
    by = [id_column] + ([criterion] if criterion else [])
    missing = [c for c in (*by, system, score) if c not in df.columns]
    if missing:
        raise ValueError(f"scores: missing column(s) {missing} (columns: {df.columns})")
    if not tolerance >= 0:
        raise ValueError(f"tolerance must be >= 0, got {tolerance!r}")
    dup = df.filter(pl.struct(*by, system).is_duplicated())
    if dup.height:
        raise ValueError(f"scores: several scores for one ({', '.join(by)}, {system}), e.g. {dup.row(0)}")
    base = df.select(*by, pl.col(system).cast(pl.String).alias("__sys"), pl.col(score).cast(pl.Float64).alias("__s"))
    base = base.filter(pl.col("__s").is_not_null())
    pairs = base.join(base, on=by, suffix="_b").filter(pl.col("__sys") < pl.col("__sys_b"))
    diff = pl.col("__s") - pl.col("__s_b")
    pref = (
        pl.when(diff > tolerance).then(pl.lit("A")).when(diff < -tolerance).then(pl.lit("B")).otherwise(pl.lit("tie"))
    )
    out = pairs.select(
        pl.col(id_column).alias("id"),
        pl.col("__sys").alias("system_a"),
        pl.col("__sys_b").alias("system_b"),
        *([pl.col(criterion).alias("criterion")] if criterion else []),
        pref.alias("preferred"),
        pl.col("__s").alias("score_a"),
        pl.col("__s_b").alias("score_b"),
    )
    value = pl.col("preferred").replace_strict(PAIR_VALUES, return_dtype=pl.Float64)
    return out.with_columns(value.alias("value")).sort("id", "system_a", "system_b", maintain_order=True)


def preferences_from_verdicts(
    verdicts: Mapping[str, Any],
    rubric: Rubric | None = None,
    *,
    judge: str | None = None,
    tolerance: float = 0.0,
) -> pl.DataFrame:
    """A preference table from the verdict tables of several systems on the same items.

    Each verdict table is scored with :func:`rubrictools.score`, and every two systems are
    compared by rubric score per item (:func:`preferences_from_scores`).

    Parameters
    ----------
    verdicts
        Maps each system's name to its verdict table (:func:`rubrictools.grade` on its
        answers, same ``id`` for the same item); at least two systems.
    rubric
        The rubric that scores every table; without it, each table's own ``weight`` column is
        used.
    judge
        Picks one judge's rows to score, e.g. ``"ensemble"`` (``None``: the ensemble rows when
        present, as :func:`rubrictools.score` does).
    tolerance
        Score differences within ``tolerance`` (>= 0; default 0) are ties.

    Returns
    -------
    polars.DataFrame
        A preference table as :func:`preferences_from_scores` returns it.

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> rubric = rt.Rubric.from_dict([{"name": "a", "requirement": "x"}])
    >>> v = {s: pl.DataFrame({"id": [1, 2], "criterion": "a", "verdict": m}) for s, m in
    ...      {"x": ["MET", "UNMET"], "y": ["UNMET", "UNMET"]}.items()}
    >>> rt.preferences_from_verdicts(v, rubric).select("id", "system_a", "system_b", "preferred").rows()
    [(1, 'x', 'y', 'A'), (2, 'x', 'y', 'tie')]
    """
    if len(verdicts) < 2:
        raise ValueError(f"verdicts: compare at least two systems, got {list(verdicts)}")
    parts = []
    for system, table in verdicts.items():
        scored = score(table, rubric, judge=judge).select("id", "score")
        parts.append(scored.with_columns(pl.lit(str(system)).alias("system")))
    return preferences_from_scores(pl.concat(parts, how="vertical_relaxed"), tolerance=tolerance)
