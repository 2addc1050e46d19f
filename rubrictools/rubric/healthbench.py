"""HealthBench's scoring, exactly: points per rubric item, unclamped example scores, clipped means.

HealthBench (Arora et al., 2025; OpenAI simple-evals ``healthbench_eval.py``, functions
``calculate_score``, ``grade_sample`` and ``_compute_clipped_stats``) gives every example its own
rubric of items ``{"criterion": text, "points": int, "tags": [...]}``; a negative ``points``
is a fault. Read such rubrics with ``Rubric.from_dict(items)`` (or ``rubric_column=`` in
:func:`rubrictools.grade`, which accepts the items as they are) and score the verdicts here.
rubrictools' own :func:`~rubrictools.score` is unchanged; these semantics are opt-in.

Formulas, for one example with items ``i`` of points ``p_i`` and verdict values ``m_i``
(1 for MET, 0 for UNMET):

- example score ``s = sum_i m_i * p_i / sum_{i: p_i > 0} p_i``, **not clamped**: faults can
  make it negative (null when no item has positive points);
- a rubric tag's score for the example: the same formula over the items carrying the tag
  (null, so not counted, when those items have no positive points);
- an example tag (``example_tags_column``) takes the example's score;
- each metric's reported value is ``clip(mean(s), 0, 1)`` over the examples that have it, and
  its ``bootstrap_std`` the standard deviation of that clipped mean over ``n_resamples``
  resamples of those examples (HealthBench uses 1,000).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import polars as pl

from rubrictools.deprecation import adapted, renamed
from rubrictools.frames import to_polars
from rubrictools.rubric.cells import rubric_cells
from rubrictools.rubric.model import Rubric
from rubrictools.rubric.scoring import select_judge
from rubrictools.stack import user_stacklevel
from rubrictools.tables import html_table
from rubrictools.verdicts import validate_verdicts

__all__ = ["HealthBenchScores", "healthbench_score"]

Unassessed = Literal["exclude", "unmet"]
OVERALL = "overall_score"


@dataclass(frozen=True)
class HealthBenchScores:
    """The result of :func:`healthbench_score`.

    ``summary``: ``[by,] metric, score, bootstrap_std, n, unclipped`` (``overall_score`` first,
    then tags; ``score`` is the mean clipped to [0, 1] as HealthBench reports it, ``unclipped``
    the mean before clipping, so a 0 that hides a negative mean shows as one);
    ``examples``: ``id, [by,] score, achieved, possible, unassessed`` (score unclamped);
    ``tags``: ``id, [by,] tag, score``, one row per example and tag with a score.
    """

    summary: pl.DataFrame
    examples: pl.DataFrame
    tags: pl.DataFrame

    def _repr_html_(self) -> str:
        return html_table(self.summary, title="HealthBench scores")

    def __repr__(self) -> str:
        return f"HealthBenchScores(summary=\n{self.summary})"


def _items(frame: pl.DataFrame, rubric_column: str, id_dtype: pl.DataType) -> pl.DataFrame:
    """One row per (id, rubric item): ``id, criterion, points, tags``, each distinct rubric read once."""
    cells = rubric_cells(frame[rubric_column].to_list(), column=rubric_column)
    distinct = list({id(r): r for r in cells}.values())  # rubric_cells shares one object per distinct cell
    position = {id(r): k for k, r in enumerate(distinct)}
    parts = [
        pl.DataFrame(
            {
                "__r": [k] * len(r),
                "criterion": list(r.names),
                "points": [c.weight for c in r],
                "tags": [list(c.tags) for c in r],
            },
            schema={"__r": pl.Int64, "criterion": pl.String, "points": pl.Float64, "tags": pl.List(pl.String)},
        )
        for k, r in enumerate(distinct)
    ]
    index = pl.Series([position[id(r)] for r in cells], dtype=pl.Int64)
    rows = pl.DataFrame({"id": frame["id"].cast(id_dtype), "__r": index})
    return rows.join(pl.concat(parts), on="__r").drop("__r")


def _ratio(met: pl.Expr, points: pl.Expr, unassessed: pl.Expr) -> pl.Expr:
    """``sum(m * p) / sum(p > 0)``; null when nothing is positive or an item is unassessed."""
    possible = points.filter(points > 0).sum()
    return pl.when((possible > 0) & (unassessed.sum() == 0)).then((met * points).sum() / possible).otherwise(None)


def _bootstrap_std(values: np.ndarray, n_resamples: int, rng: np.random.Generator) -> float:
    """Standard deviation of the clipped mean over ``n_resamples`` resamples (as HealthBench)."""
    if values.size == 0 or n_resamples == 0:
        return float("nan")
    draws = values[rng.integers(0, values.size, size=(n_resamples, values.size))]
    return float(np.std(np.clip(draws.mean(axis=1), 0.0, 1.0)))


def _summary(long: pl.DataFrame, keys: list[str], n_resamples: int, seed: int | None) -> pl.DataFrame:
    """``[by,] metric, score, bootstrap_std, n, unclipped`` from a long ``[by,] metric, score`` table."""
    rng = np.random.default_rng(seed)
    groups = long.group_by([*keys, "metric"], maintain_order=True).agg(pl.col("score"))
    order = pl.when(pl.col("metric") == OVERALL).then(0).otherwise(1)
    groups = groups.sort([*keys, order, "metric"])
    stds = [_bootstrap_std(np.asarray(v, dtype=float), n_resamples, rng) for v in groups["score"].to_list()]
    return groups.select(
        *keys,
        "metric",
        pl.col("score").list.mean().clip(0.0, 1.0).alias("score"),
        pl.Series("bootstrap_std", stds, dtype=pl.Float64),
        pl.col("score").list.len().cast(pl.Int64).alias("n"),
        pl.col("score").list.mean().alias("unclipped"),
    )


def _check_columns(frame: pl.DataFrame, columns: dict[str, str | None]) -> None:
    for name, col in columns.items():
        if col is not None and col not in frame.columns:
            raise ValueError(f"{name}={col!r} is not a column of rubrics (columns: {frame.columns})")


def _check_settings(cannot_assess: str, n_resamples: int, seed: Any) -> None:
    if cannot_assess not in ("exclude", "unmet"):
        raise ValueError(f"cannot_assess must be 'exclude' or 'unmet', got {cannot_assess!r}")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 0:
        raise ValueError(f"n_resamples must be an int >= 0, got {n_resamples!r}")
    if isinstance(seed, bool) or not (seed is None or (isinstance(seed, int) and seed >= 0)):
        raise ValueError(f"seed must be an int >= 0 (or None for a fresh draw each call), got {seed!r}")


def _per_example(rubrics: Any, rubric_column: str, id_column: str, keep: Sequence[str]) -> pl.DataFrame:
    """``rubrics`` as a frame ``id, <rubric_column>, *keep`` (a single Rubric: no frame)."""
    frame = to_polars(rubrics, name="rubrics")
    _check_columns(frame, {"id_column": id_column, "rubric_column": rubric_column})
    if frame[id_column].is_duplicated().any():
        dup = frame.filter(pl.col(id_column).is_duplicated())[id_column].head(3).to_list()
        raise ValueError(f"rubrics: id_column {id_column!r} has duplicate ids, e.g. {dup}")
    return frame.select(pl.col(id_column).alias("id"), rubric_column, *keep)


@adapted(renamed(n_bootstrap="n_resamples", unassessed="cannot_assess"))
def healthbench_score(
    verdicts: Any,
    rubrics: Any,
    *,
    id_column: str = "id",
    rubric_column: str = "rubrics",
    example_tags_column: str | None = None,
    by: str | None = None,
    judge: str | None = None,
    cannot_assess: Unassessed = "exclude",
    n_resamples: int = 1000,
    seed: int | None = 0,
) -> HealthBenchScores:
    """Score a verdict table as HealthBench does (formulas in the module docstring).

    Parameters
    ----------
    verdicts
        A verdict table of binary criteria (``rt.grade(..., rubric_column=...)``).
    rubrics
        A :class:`Rubric` shared by every example, or the graded frame (polars or pandas)
        with each example's rubric in ``rubric_column`` (HealthBench items, dicts, Rubrics
        or JSON) and its id in ``id_column``.
    example_tags_column, by
        Optional columns of ``rubrics``: each example's tags (a list of strings; the tag's
        metric takes the example's score) and a grouping (e.g. the system that wrote the
        answer), giving one summary per group.
    judge
        Which judge's rows to score when the table holds several (see :func:`rubrictools.score`).
    cannot_assess
        An item without a MET/UNMET verdict (CANNOT_ASSESS, an error row, or no row):
        ``"exclude"`` (default) makes the example's score (and its tags') null, so it is left
        out of the means and counted in ``examples.unassessed``; ``"unmet"`` counts it as not
        met, as if the judge had said UNMET.
    n_resamples, seed
        Resamples for ``bootstrap_std`` (``0``: NaN) and their seed.

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> items = [{"criterion": "Advises urgent care", "points": 8, "tags": ["axis:accuracy"]},
    ...          {"criterion": "Recommends a harmful dose", "points": -6, "tags": ["axis:accuracy"]}]
    >>> v = pl.DataFrame({"id": [0, 0], "criterion": ["c1", "c2"], "verdict": ["MET", "MET"],
    ...                   "weight": [8.0, -6.0]})
    >>> hb = rt.healthbench_score(v, pl.DataFrame({"id": [0], "rubrics": [items]}), n_resamples=0)
    >>> hb.examples["score"].to_list(), hb.summary["score"].to_list()
    ([0.25], [0.25, 0.25])
    """
    keep = [c for c in (example_tags_column, by) if c is not None]
    v = validate_verdicts(verdicts)
    if isinstance(rubrics, Rubric):
        ids = v.select("id").unique(maintain_order=True)
        frame = ids.with_columns(pl.Series(rubric_column, [rubrics] * ids.height, dtype=pl.Object))
        if keep:
            raise ValueError("example_tags_column and by need a frame of rubrics, not a single Rubric")
    else:
        frame = _per_example(rubrics, rubric_column, id_column, keep)
    _check_columns(frame, {"example_tags_column": example_tags_column, "by": by})
    _check_settings(cannot_assess, n_resamples, seed)
    v = select_judge(v, judge)
    try:
        items = _items(frame, rubric_column, v.schema["id"])
    except pl.exceptions.InvalidOperationError as e:
        raise ValueError(f"ids of the verdicts ({v.schema['id']}) and of rubrics do not match: {e}") from None
    graded = items.join(v.select("id", "criterion", "value"), on=["id", "criterion"], how="left")
    stray = v.join(items, on=["id", "criterion"], how="anti")
    if stray.height:
        warnings.warn(
            f"{stray.height} verdict row(s) match no rubric item of rubrics (first: id={stray['id'][0]!r}, "
            f"criterion={stray['criterion'][0]!r}); they are not scored",
            stacklevel=user_stacklevel(),
        )
    missing = pl.col("value").is_null()
    graded = graded.with_columns(
        pl.col("value").fill_null(0.0).alias("__m"),
        (missing if cannot_assess == "exclude" else pl.lit(False)).alias("__u"),
    )
    keys = [by] if by is not None else []
    extra = frame.select("id", *keep)
    examples = (
        graded.group_by("id", maintain_order=True)
        .agg(
            _ratio(pl.col("__m"), pl.col("points"), pl.col("__u")).alias("score"),
            (pl.col("__m") * pl.col("points")).sum().alias("achieved"),
            pl.col("points").filter(pl.col("points") > 0).sum().alias("possible"),
            missing.sum().cast(pl.Int64).alias("unassessed"),
        )
        .join(extra, on="id", how="left")
    )
    tags = (
        graded.explode("tags")
        .drop_nulls("tags")
        .group_by("id", "tags", maintain_order=True)
        .agg(_ratio(pl.col("__m"), pl.col("points"), pl.col("__u")).alias("score"))
        .rename({"tags": "tag"})
        .drop_nulls("score")
        .join(extra.select("id", *keys), on="id", how="left")
        .select("id", *keys, "tag", "score")
    )
    long = [examples.select(*keys, pl.lit(OVERALL).alias("metric"), "score")]
    if example_tags_column is not None:
        ex_tags = examples.select(*keys, pl.col(example_tags_column).alias("metric"), "score").explode("metric")
        long.append(ex_tags.drop_nulls("metric"))
    long.append(tags.select(*keys, pl.col("tag").alias("metric"), "score"))
    scored = pl.concat(long).drop_nulls("score")
    summary = _summary(scored, keys, n_resamples, seed)
    return HealthBenchScores(summary, examples.select("id", *keys, "score", "achieved", "possible", "unassessed"), tags)
