"""The verdict table at a glance: a submission x criterion heatmap where colour means good or bad."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from rubrictools.charts.base import alt_module as _alt
from rubrictools.charts.base import chart_frame, require_columns
from rubrictools.charts.base import values as _values
from rubrictools.verdicts import HOLISTIC

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

    from rubrictools.rubric import Rubric

__all__ = ["verdicts"]

_STATES = ["good", "partly", "bad", "cannot assess", "error"]
_COLOURS = ["#1a9850", "#fee08b", "#d73027", "#bdbdbd", "#525252"]


def _pick_judge(v: pl.DataFrame, judge: str | None) -> pl.DataFrame:
    if "judge" not in v.columns:
        return v
    judges = v["judge"].unique(maintain_order=True).to_list()
    if judge is None:
        judge = "ensemble" if "ensemble" in judges else judges[0]
    if judge not in judges:
        raise ValueError(f"judge={judge!r} is not in the verdict table (judges: {judges})")
    return v.filter(pl.col("judge") == judge)


def verdicts(
    verdict_table: Any,
    rubric: Rubric,
    *,
    judge: str | None = None,
    max_submissions: int = 60,
    title: str | None = None,
) -> alt.Chart:
    """Submission x criterion heatmap of a verdict table, coloured by what each verdict does
    to the score: green is good, red is bad, whatever the sign of the weight.

    A cell's *goodness* is ``value`` for a criterion with a positive weight and
    ``1 - value`` for a penalty (negative weight), so a MET penalty is red, never the green
    of a MET reward; between 0 and 1 (partial credit) it is yellow. CANNOT_ASSESS/NA cells
    are light grey and error rows dark grey. Criteria keep the rubric's order and show their
    weight; submissions keep the table's order (the first ``max_submissions``). With several
    judges, ``judge`` picks one (default: the ensemble rows, else the first judge).

    >>> import polars as pl, rubrictools as rt
    >>> rubric = rt.Rubric.from_dict([{"name": "helpful", "requirement": "Helps", "weight": 2},
    ...                               {"name": "rude", "requirement": "Is rude", "weight": -1}])
    >>> v = pl.DataFrame({"id": [1, 1], "criterion": ["helpful", "rude"], "verdict": ["MET", "MET"],
    ...                   "value": [1.0, 1.0], "error": [None, None]})
    >>> [d["state"] for d in rt.charts.verdicts(v, rubric).to_dict()["data"]["values"]]
    ['good', 'bad']
    """
    alt = _alt()
    v = chart_frame(verdict_table, name="verdicts")
    require_columns(v, ["id", "criterion", "verdict", "value"], "verdicts chart")
    if "error" not in v.columns:
        v = v.with_columns(pl.lit(None, dtype=pl.String).alias("error"))
    v = v.with_columns(pl.col("error").cast(pl.String), pl.col("verdict").cast(pl.String))
    v = _pick_judge(v, judge).filter(pl.col("criterion") != HOLISTIC)
    ids = v["id"].unique(maintain_order=True).head(max_submissions)
    weights = {c.name or "": c.weight for c in rubric}
    names = [c.name or "" for c in rubric]
    axis = {n: f"{n} ({weights[n]:+g})" for n in names}
    w = pl.col("criterion").replace_strict(weights, default=None, return_dtype=pl.Float64)
    good = pl.when(w < 0).then(1.0 - pl.col("value")).otherwise(pl.col("value"))
    state = (
        pl.when(pl.col("error").is_not_null())
        .then(pl.lit("error"))
        .when(pl.col("value").is_null())
        .then(pl.lit("cannot assess"))
        .when(good >= 1.0 - 1e-9)
        .then(pl.lit("good"))
        .when(good <= 1e-9)
        .then(pl.lit("bad"))
        .otherwise(pl.lit("partly"))
    )
    data = v.filter(pl.col("id").is_in(ids.implode()) & pl.col("criterion").is_in(names)).select(
        pl.col("id").cast(pl.String).alias("submission"),
        pl.col("criterion").replace_strict(axis, return_dtype=pl.String).alias("criterion"),
        pl.col("verdict").fill_null("error"),
        state.alias("state"),
        pl.col("error").str.slice(0, 120).alias("error"),
    )
    base = alt.Chart(alt.Data(values=_values(data))).encode(
        x=alt.X("criterion:N", sort=[axis[n] for n in names], title=None, axis=alt.Axis(labelAngle=-30)),
        y=alt.Y("submission:N", sort=[str(x) for x in ids.to_list()], title="submission"),
    )
    rect = base.mark_rect(stroke="white", strokeWidth=1).encode(
        color=alt.Color("state:N", scale=alt.Scale(domain=_STATES, range=_COLOURS), title="for the score"),
        tooltip=["submission:N", "criterion:N", "verdict:N", "state:N", "error:N"],
    )
    text = base.mark_text(fontSize=10).encode(
        text="verdict:N",
        color=alt.condition(alt.datum.state == "partly", alt.value("black"), alt.value("white")),
    )
    height = max(120, 22 * ids.len())
    return (rect + text).properties(
        width=max(200, 90 * len(names)), height=height, title=title or "Verdicts (green: good for the score)"
    )
