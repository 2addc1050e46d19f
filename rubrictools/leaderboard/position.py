"""`position_bias`: does the judge prefer whichever answer it sees first?"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import polars as pl

from rubrictools.deprecation import adapted, renamed
from rubrictools.leaderboard.bootstrap import ratio_ci, resample_counts
from rubrictools.leaderboard.table import check_preferences, preference_groups
from rubrictools.metrics import with_ci_level
from rubrictools.metrics.resampling import check_resampling
from rubrictools.stack import user_stacklevel

__all__ = ["position_bias"]


def _per_cluster(df: pl.DataFrame, groups: list[str], on_error: str) -> pl.DataFrame:
    ab, ba = pl.col("preferred_ab"), pl.col("preferred_ba")
    if on_error == "exclude":
        df = df.filter(ab.is_not_null() & ba.is_not_null())
        same = ab == ba
    else:  # LLMBar: a missing answer is an answer of its own ("no winner")
        same = ab.fill_null("") == ba.fill_null("")
    first_won = (ab == "A").cast(pl.Int64).fill_null(0) + (ba == "B").cast(pl.Int64).fill_null(0)
    decisive = ab.is_in(["A", "B"]).cast(pl.Int64).fill_null(0) + ba.is_in(["A", "B"]).cast(pl.Int64).fill_null(0)
    return df.group_by([*groups, pl.col("id").cast(pl.String).alias("__cluster")], maintain_order=True).agg(
        same.cast(pl.Float64).sum().alias("same"),
        pl.len().cast(pl.Float64).alias("pairs"),
        first_won.sum().cast(pl.Float64).alias("first"),
        decisive.sum().cast(pl.Float64).alias("decisive"),
    )


def _cis(pc: pl.DataFrame, groups: list[str], n_resamples: int, ci: float, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    parts = pc.group_by(groups, maintain_order=True) if groups else [((), pc)]
    for key, part in parts:
        if n_resamples == 0 or part.height < 2:  # point estimates only; one prompt has no spread to resample
            rows.append((*key, None, None, None, None))
            continue
        counts = resample_counts(part.height, n_resamples, rng)  # the same resamples for both statistics
        col = {c: part[c].to_numpy() for c in ("same", "pairs", "first", "decisive")}
        agree = ratio_ci(counts, col["same"], col["pairs"], ci)
        first = ratio_ci(counts, col["first"], col["decisive"], ci)
        rows.append((*key, *agree, *first))
    names = ["agreement_ci_low", "agreement_ci_high", "first_ci_low", "first_ci_high"]
    schema: dict[str, pl.DataType] = {g: pc.schema[g] for g in groups}
    schema.update(dict.fromkeys(names, pl.Float64()))
    return pl.DataFrame(rows, schema=schema, orient="row")


@adapted(renamed(n_boot="n_resamples", missing="on_error"))
def position_bias(
    prefs: Any,
    *,
    by: str | Sequence[str] | None = ("judge", "criterion"),
    on_error: Literal["exclude", "as_answer"] = "exclude",
    n_resamples: int = 1000,
    ci: float = 0.95,
    seed: int = 0,
) -> pl.DataFrame:
    """Position bias of pairwise judgments asked in both orders, per group (``by``).

    - ``positional_agreement``: share of pairs whose two orders gave the same answer
      (LLMBar's "positional agreement", Zeng et al. 2024); ``inconsistent = 1 - agreement``.
    - ``first_win_rate``: among decisive answers (not ties) in both orders, the share that
      chose the answer shown first (A in the A-first order, B in the B-first order). An
      unbiased judge scores 0.5 whatever the systems' quality, since each answer is shown
      first once; null for a group with no decisive answer (every order a tie).

    Parameters
    ----------
    prefs
        A preference table graded in both orders (``rt.grade_pairs(..., swap=True)``): ``id,
        preferred_ab, preferred_ba`` (each order's answer, ``"A"``, ``"B"`` or ``"tie"``, from
        A's side: ``"A"`` always means ``system_a``'s answer, whichever was shown first). A
        pair's ``decisive`` count is how many of its two orders gave a non-tie answer (0-2).
    by
        A column or columns to group by (default ``("judge", "criterion")``); ``"criterion"``
        and ``"judge"`` are skipped when ``prefs`` lacks them, any other name must be a column;
        ``None`` or ``()``: the whole table is one group.
    on_error
        ``"exclude"`` (default) leaves out pairs where an order has no answer (an error row);
        ``"as_answer"`` counts "no answer" as an answer (two missing agree, one missing does
        not), which is how the LLMBar repository computes its published figures.
    n_resamples, ci, seed
        The bootstrap's resamples of prompts (``id``; 0: point estimates only, intervals null,
        as they are for a group of a single prompt);
        the interval level (written to the table's ``ci_level`` column); its seed (``0`` by
        default: identical calls give identical intervals; ``None`` draws afresh).

    Returns
    -------
    polars.DataFrame
        One row per group: ``<by...>, pairs, positional_agreement, agreement_ci_low,
        agreement_ci_high, inconsistent, decisive, first_win_rate, first_ci_low,
        first_ci_high, ci_level``.

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> prefs = pl.DataFrame({"id": [1, 2, 3, 4], "preferred_ab": ["A", "A", "B", "A"],
    ...                       "preferred_ba": ["A", "B", "B", "B"]})
    >>> rt.position_bias(prefs, n_resamples=50).select("pairs", "positional_agreement", "first_win_rate").rows()
    [(4, 0.5, 0.75)]
    """
    check_resampling(n_resamples=n_resamples, ci=ci, seed=seed)
    if on_error not in ("exclude", "as_answer"):
        raise ValueError(f"on_error must be 'exclude' or 'as_answer'; got {on_error!r}")
    df = check_preferences(prefs, needed=("id", "preferred_ab", "preferred_ba"))
    for col in ("preferred_ab", "preferred_ba"):
        bad = df.filter(pl.col(col).is_not_null() & ~pl.col(col).cast(pl.String).is_in(["A", "B", "tie"]))[col]
        if bad.len():
            raise ValueError(
                f"{col} holds {bad.unique().head(3).to_list()}: each order's answer must be 'A', 'B' or 'tie' "
                "(from A's side: 'A' is system_a's answer whichever was shown first), or null for no answer"
            )
    if df["preferred_ba"].null_count() == df.height and df.height:
        raise ValueError("prefs has no B-first answers (preferred_ba is empty): grade with swap=True")
    if df.height == 0:
        raise ValueError("prefs is empty: no pair to measure")
    groups = preference_groups(df, by)  # "criterion" is one column, not letters
    if nulls := {g: n for g in groups if (n := df[g].null_count())}:
        warnings.warn(
            f"position_bias: null values in the grouping column(s) {nulls} form a group of their own (null); "
            "fill or drop them to attribute those pairs",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    pc = _per_cluster(df, groups, on_error)
    agg = [pl.col(c).sum() for c in ("same", "pairs", "first", "decisive")]
    table = pc.group_by(groups, maintain_order=True).agg(agg) if groups else pc.select(agg)
    table = table.with_columns(
        pl.col("pairs").cast(pl.Int64),
        (pl.col("same") / pl.col("pairs")).alias("positional_agreement"),
        (1 - pl.col("same") / pl.col("pairs")).alias("inconsistent"),
        pl.col("decisive").cast(pl.Int64),
        (pl.col("first") / pl.col("decisive")).alias("first_win_rate"),
    ).drop("same", "first")
    cis = _cis(pc, groups, n_resamples, ci, seed)
    table = (
        table.join(cis, on=groups, how="left", maintain_order="left")
        if groups
        else pl.concat([table, cis], how="horizontal")
    )
    cols = ["pairs", "positional_agreement", "agreement_ci_low", "agreement_ci_high", "inconsistent"]
    cols += ["decisive", "first_win_rate", "first_ci_low", "first_ci_high"]
    # a group with no decisive answer (every order a tie) has no first-position win rate: null, not NaN
    table = table.with_columns(pl.col("first_win_rate", "first_ci_low", "first_ci_high").fill_nan(None))
    return with_ci_level(table.select(*groups, *cols), ci, after="first_ci_high")
