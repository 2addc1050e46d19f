"""The verdict table at a glance: a submission x criterion heatmap where colour means good or bad."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from rubrictools.charts.base import alt_module as _alt
from rubrictools.charts.base import chart_frame, check_title, require_columns
from rubrictools.charts.base import values as _values
from rubrictools.palette import INK, JUDGE, NEUTRAL_DARK, NEUTRAL_LIGHT, OKABE_BLUE, WINE, YELLOW
from rubrictools.tables import fixed_decimals
from rubrictools.verdicts import HOLISTIC

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

    from rubrictools.rubric import Rubric

__all__ = ["verdicts"]

_STATES = ["good", "partly", "bad", "cannot assess", "error"]
# colour-blind safe (blue / yellow / dark wine); every cell also prints its verdict
_COLOURS = [OKABE_BLUE, YELLOW, WINE, NEUTRAL_LIGHT, NEUTRAL_DARK]


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
    verdicts: Any,
    rubric: Rubric,
    *,
    judge: str | None = None,
    max_submissions: int = 60,
    title: str | None = None,
    scores: Any = None,
) -> alt.LayerChart | alt.HConcatChart:
    """Submission x criterion heatmap of a verdict table, coloured by what each verdict does
    to the score: blue is good, dark wine (a deep red-purple) is bad, whatever the sign of the
    weight (colour-blind safe, and every cell prints its verdict too).

    A cell's *goodness* is ``value`` for a criterion with a positive weight and
    ``1 - value`` for a penalty (negative weight), so a MET penalty is wine, never the blue
    of a MET reward; between 0 and 1 (partial credit) it is yellow. CANNOT_ASSESS/NA cells
    are light grey and error rows dark grey. Criteria keep the rubric's order and show their
    weight; submissions keep the table's order (the first ``max_submissions``). With several
    judges, ``judge`` picks one (default: the ensemble rows, else the first judge). The legend
    lists only the states the chart shows.

    ``scores``: a score table (:func:`rubrictools.score`, ``id, score``) drawn as a bar panel
    to the right, on the same rows in the same order; each bar is labelled with its score, so
    a score of 0 reads "0.00" instead of drawing nothing. The legend then sits under the
    heatmap, where it cannot be read as the bars'.

    >>> import polars as pl, rubrictools as rt
    >>> rubric = rt.Rubric.from_dict([{"name": "helpful", "requirement": "Helps", "weight": 2},
    ...                               {"name": "rude", "requirement": "Is rude", "weight": -1}])
    >>> v = pl.DataFrame({"id": [1, 1], "criterion": ["helpful", "rude"], "verdict": ["MET", "MET"],
    ...                   "value": [1.0, 1.0], "error": [None, None]})
    >>> [d["state"] for d in rt.charts.verdicts(v, rubric).to_dict()["data"]["values"]]
    ['good', 'bad']
    """
    check_title(title)
    alt = _alt()
    v = chart_frame(verdicts, name="verdicts")
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
        x=alt.X("criterion:N", sort=[axis[n] for n in names], title="criterion", axis=alt.Axis(labelAngle=-30)),
        y=alt.Y("submission:N", sort=[str(x) for x in ids.to_list()], title="submission"),
    )
    shown = set(data["state"].to_list())
    present = [(st, col) for st, col in zip(_STATES, _COLOURS, strict=True) if st in shown]
    legend = alt.Legend(orient="bottom", direction="horizontal") if scores is not None else alt.Legend()
    rect = base.mark_rect(stroke="white", strokeWidth=1).encode(
        color=alt.Color(
            "state:N",
            scale=alt.Scale(domain=[p[0] for p in present], range=[p[1] for p in present]),
            title="verdict for the score",
            legend=legend,
        ),
        tooltip=["submission:N", "criterion:N", "verdict:N", "state:N", "error:N"],
    )
    text = base.mark_text(fontSize=10).encode(
        text="verdict:N",
        color=alt.condition(alt.datum.state == "partly", alt.value("black"), alt.value("white")),
    )
    height = max(120, 22 * ids.len())
    who = f" of {v['judge'][0]}" if "judge" in v.columns and v.height else ""
    heat = (rect + text).properties(
        width=max(200, 90 * len(names)),
        height=height,
        title=title or alt.Title(f"Verdicts{who}", subtitle="blue: good for the score, dark wine: bad"),
    )
    if scores is None:
        return heat
    return alt.hconcat(heat, _score_panel(scores, [str(x) for x in ids.to_list()], height)).resolve_scale(
        color="independent"
    )


def _score_panel(scores: Any, order: list[str], height: int) -> alt.LayerChart:
    """Rubric scores as labelled bars on the heatmap's rows (0 to 1, a null score says why)."""
    alt = _alt()
    s = chart_frame(scores, name="scores")
    require_columns(s, ["id", "score"], "verdicts chart (scores=)")
    data = s.select(
        pl.col("id").cast(pl.String).alias("submission"),
        pl.col("score"),
        pl.when(pl.col("score").is_null())
        .then(pl.lit("no score"))
        .otherwise(fixed_decimals(pl.col("score"), 3))  # as rt.charts.table prints a score
        .alias("label"),
    ).filter(pl.col("submission").is_in(order))
    base = alt.Chart(alt.Data(values=_values(data))).encode(
        y=alt.Y("submission:N", sort=order, title=None, axis=alt.Axis(labels=False, ticks=False)),
    )
    x = alt.X("score:Q", scale=alt.Scale(domain=[0, 1]), title="rubric score")
    bars = base.mark_bar(color=JUDGE).encode(x=x, tooltip=["submission:N", alt.Tooltip("score:Q", format=".3f")])
    # a label beside a long bar would run past the panel's edge: long bars carry theirs inside
    at = {"x": alt.X("score:Q", scale=alt.Scale(domain=[0, 1])), "text": "label:N"}
    inside = base.transform_filter("datum.score >= 0.8").mark_text(align="right", dx=-3, fontSize=10, color="white")
    outside = base.transform_filter("!(datum.score >= 0.8)").mark_text(align="left", dx=3, fontSize=10, color=INK)
    return (bars + inside.encode(**at) + outside.encode(**at)).properties(
        width=200, height=height, title="Rubric score"
    )
