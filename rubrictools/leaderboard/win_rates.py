"""`win_rates`: how often each system beats each other one, with cluster-bootstrap intervals."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from rubrictools.deprecation import adapted, renamed
from rubrictools.leaderboard.bootstrap import ratio_ci, resample_counts
from rubrictools.leaderboard.table import check_preferences, preference_groups
from rubrictools.metrics import with_ci_level
from rubrictools.metrics.resampling import check_resampling

__all__ = ["win_rates"]


def _both_sides(df: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Each decided comparison twice: from A's side and from B's (``system`` vs ``opponent``)."""
    ok = df.filter(pl.col("value").is_not_null())
    keep: list[str | pl.Expr] = [*by, pl.col("id").cast(pl.String).alias("__cluster")]
    a = ok.select(*keep, pl.col("system_a").alias("system"), pl.col("system_b").alias("opponent"), "value")
    b = ok.select(
        *keep,
        pl.col("system_b").alias("system"),
        pl.col("system_a").alias("opponent"),
        (1 - pl.col("value")).alias("value"),
    )
    return pl.concat([a, b]).with_columns(pl.col("system", "opponent").cast(pl.String))


def _intervals(per_cluster: pl.DataFrame, keys: list[str], n_resamples: int, ci: float, seed: int) -> pl.DataFrame:
    """Percentile intervals of the win rate per group, resampling the group's clusters."""
    rng = np.random.default_rng(seed)
    out = []
    for key, part in per_cluster.group_by(keys, maintain_order=True):
        if n_resamples == 0:  # point estimates only, as length_controlled_win_rates(n_resamples=0)
            out.append((*key, None, None))
            continue
        counts = resample_counts(part.height, n_resamples, rng)
        out.append((*key, *ratio_ci(counts, part["won"].to_numpy(), part["n"].to_numpy(), ci)))
    schema: dict[str, pl.DataType] = {k: per_cluster.schema[k] for k in keys}
    schema.update(ci_low=pl.Float64(), ci_high=pl.Float64())
    return pl.DataFrame(out, schema=schema, orient="row")


@adapted(renamed(n_boot="n_resamples"))
def win_rates(
    prefs: Any,
    *,
    by: str | Sequence[str] | None = ("criterion", "judge"),
    n_resamples: int = 1000,
    ci: float = 0.95,
    seed: int = 0,
) -> pl.DataFrame:
    """Win, tie and loss counts and the win rate of every system against every opponent.

    ``win_rate = mean(value)`` over the decided comparisons (error rows are left out) of each
    (``by`` columns present in ``prefs``, system, opponent): ``(wins + ties / 2) / n`` for hard
    preferences, and AlpacaEval's average of soft preferences (a judge's probability that A is
    better, any value in [0, 1]) otherwise; ``wins`` / ``ties`` / ``losses`` count values above,
    at and below 0.5. Intervals are percentile intervals over ``n_resamples`` resamples of whole
    prompts (``id``): comparisons of one prompt move together (cluster bootstrap), so a prompt
    that every system finds hard does not pass for independent evidence.

    Parameters
    ----------
    prefs
        A preference table (:func:`rubrictools.grade_pairs` or
        :func:`rubrictools.preferences_from_scores`): ``id, system_a, system_b, value`` (A's
        share: 1, 0.5, 0, or a soft preference in between; null for an error row), or
        ``preferred`` (``"A"``, ``"tie"``, ``"B"``) instead of ``value``.
    by
        A column or columns whose groups get win rates of their own (default ``("criterion",
        "judge")``); ``"criterion"`` and ``"judge"`` are skipped when ``prefs`` lacks them, any
        other name must be a column of ``prefs``; ``None`` or ``()``: one table for all rows.
    n_resamples, ci, seed
        The bootstrap's resamples (``0``: point estimates only, intervals null); the interval
        level (written to the table's ``ci_level`` column); its seed (``0`` by default:
        identical calls give identical intervals; ``None`` draws afresh).

    Returns
    -------
    polars.DataFrame
        One row per (``by`` columns, system, opponent): ``wins, ties, losses, n, win_rate,
        n_prompts, ci_low, ci_high, ci_level``. Every pair appears twice, once from each side,
        so ``pivot`` gives the full win-rate matrix.

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> prefs = pl.DataFrame({"id": [1, 2, 3], "system_a": ["x", "x", "y"], "system_b": ["y", "y", "x"],
    ...                       "value": [1.0, 0.5, 0.0]})
    >>> rt.win_rates(prefs, n_resamples=100).select("system", "opponent", "wins", "ties", "losses", "win_rate").rows()
    [('x', 'y', 2, 1, 0, 0.8333333333333334), ('y', 'x', 0, 1, 2, 0.16666666666666666)]
    >>> soft = prefs.with_columns(pl.Series("value", [0.9, 0.6, 0.2]))  # a judge's P(A is better)
    >>> rt.win_rates(soft, n_resamples=100).filter(pl.col("system") == "x")["win_rate"].item()
    0.7666666666666666
    """
    check_resampling(n_resamples=n_resamples, ci=ci, seed=seed)
    df = check_preferences(prefs)
    groups = preference_groups(df, by)
    sides = _both_sides(df, groups)
    keys = [*groups, "system", "opponent"]
    v = pl.col("value")
    table = sides.group_by(keys, maintain_order=True).agg(
        (v > 0.5).sum().cast(pl.Int64).alias("wins"),
        (v == 0.5).sum().cast(pl.Int64).alias("ties"),
        (v < 0.5).sum().cast(pl.Int64).alias("losses"),
        pl.len().cast(pl.Int64).alias("n"),
        v.mean().alias("win_rate"),
        pl.col("__cluster").n_unique().cast(pl.Int64).alias("n_prompts"),
    )
    per_cluster = sides.group_by([*keys, "__cluster"], maintain_order=True).agg(
        v.sum().alias("won"), pl.len().cast(pl.Float64).alias("n")
    )
    ints = _intervals(per_cluster, keys, n_resamples, ci, seed)
    out = table.join(ints, on=keys, how="left", maintain_order="left").sort(keys, maintain_order=True)
    return with_ci_level(out, ci)
