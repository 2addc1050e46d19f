"""Two runs side by side: what changed, and how sure (:func:`run_comparison`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from rubrictools.charts.base import alt_module as _alt
from rubrictools.charts.base import check_title, interval_words
from rubrictools.charts.base import values as _values
from rubrictools.comparison import OVERALL, RunComparison
from rubrictools.palette import INK, JUDGE, JUDGE_DARK, JUDGE_LIGHT, NEUTRAL_LIGHT, REFERENCE

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

__all__ = ["run_comparison"]

_CLEAR, _UNCLEAR = "interval excludes 0", "interval includes 0"
_SAME = "no verdict changed"  # an interval of [0, 0]: nothing moved, not "no effect within the noise"


def run_comparison(
    cmp: RunComparison, *, title: str | None = None, width: int = 300
) -> alt.LayerChart | alt.VConcatChart:
    """The changes of :func:`rubrictools.compare_runs`: a panel for the overall score (on its 0-1
    scale) above a panel for the shared criteria (changes of their MET shares, printed in
    percentage points), each with its own axis, so neither unit is read in the other's. In each:
    a point at the mean change (``b - a``), a bar over its bootstrap interval, a dashed line at 0,
    and each row's change and p-value printed beside it. Colour says only whether the interval
    excludes 0, in neutral tones; a penalty criterion (negative weight) is labelled so, and its
    printed change says which way it moves the score (a rise in a penalty's MET share lowers it).
    Rows without an interval (``n_resamples=0``) show the point alone.

    >>> import polars as pl, rubrictools as rt
    >>> rub = rt.Rubric.from_dict([{"name": "greets", "requirement": "Says hello"}])
    >>> a = pl.DataFrame({"id": range(4), "criterion": "greets", "verdict": ["MET", "UNMET"] * 2,
    ...                   "value": [1.0, 0.0] * 2})
    >>> cmp = rt.compare_runs(a, a.with_columns(pl.lit(1.0).alias("value")), rubric=rub, n_resamples=50)
    >>> panels = rt.charts.run_comparison(cmp).to_dict()["vconcat"]
    >>> [[layer["mark"]["type"] for layer in panel["layer"]] for panel in panels]
    [['rule', 'rule', 'point', 'text'], ['rule', 'rule', 'point', 'text']]
    """
    check_title(title)
    alt = _alt()
    a, b = cmp.names
    t = cmp.summary.with_columns(
        pl.when(pl.col("ci_low").is_null())
        .then(pl.lit("no interval"))
        .when((pl.col("change") == 0) & (pl.col("ci_low") == 0) & (pl.col("ci_high") == 0))
        .then(pl.lit(_SAME))
        .when((pl.col("ci_low") > 0) | (pl.col("ci_high") < 0))
        .then(pl.lit(_CLEAR))
        .otherwise(pl.lit(_UNCLEAR))
        .alias("reading"),
        pl.coalesce("ci_low", "change").alias("lo"),
        pl.coalesce("ci_high", "change").alias("hi"),
        pl.when(pl.col("penalty").fill_null(False))
        .then(pl.col("criterion") + " (penalty)")
        .otherwise(pl.col("criterion"))
        .alias("row")
        if "penalty" in cmp.summary.columns
        else pl.col("criterion").alias("row"),
        _effect(cmp.summary).alias("effect"),
    )
    # neutral colours: a clear change is not a good one by itself (a penalty that rises is bad)
    palette = {_CLEAR: JUDGE_DARK, _UNCLEAR: JUDGE_LIGHT, _SAME: NEUTRAL_LIGHT, "no interval": JUDGE}  # people: grey
    present = [k for k in palette if k in set(t["reading"])]
    words = f"mean and {interval_words(t)}"
    is_overall = pl.col("criterion") == OVERALL
    panels = [
        _panel(part, (a, b), present, palette, [axis, words], width, in_pp=in_pp)
        for part, axis, in_pp in (
            (t.filter(is_overall), f"change in the overall score, {b} \u2212 {a} (0-1 scale)", False),
            (t.filter(~is_overall), f"change in each criterion's MET share, {b} \u2212 {a} (percentage points)", True),
        )
        if part.height
    ]
    n = int(cmp.summary["n"][0])
    heading = title or f"{b} against {a}: {n} paired submissions, {cmp.flips.height} verdict flips"
    if len(panels) == 1:
        return panels[0].properties(title=heading)
    return alt.vconcat(*panels, spacing=18).resolve_scale(color="shared", shape="shared").properties(title=heading)


def _panel(
    t: pl.DataFrame,
    names: tuple[str, str],
    present: list[str],
    palette: dict[str, str],
    x_title: list[str],
    width: int,
    *,
    in_pp: bool,
) -> alt.LayerChart:
    """One panel of :func:`run_comparison`: its rows, their intervals, 0, and the printed changes
    (``in_pp``: the criteria's panel, whose axis prints MET-share changes in percentage points)."""
    alt = _alt()
    base = alt.Chart(alt.Data(values=_values(t))).encode(
        y=alt.Y("row:N", sort=t["row"].to_list(), title=None, axis=alt.Axis(labelLimit=0)),
        tooltip=[
            "criterion:N",
            alt.Tooltip("mean_a:Q", title=f"mean, {names[0]}", format=".3f"),
            alt.Tooltip("mean_b:Q", title=f"mean, {names[1]}", format=".3f"),
            alt.Tooltip("change:Q", format="+.3f"),
            alt.Tooltip("ci_low:Q", format="+.3f"),
            alt.Tooltip("ci_high:Q", format="+.3f"),
            alt.Tooltip("p_value:Q", format=".3g"),
            "n:Q",
        ],
    )
    zero = alt.Chart(alt.Data(values=[{"x": 0}])).mark_rule(strokeDash=[4, 4], color=REFERENCE).encode(x="x:Q")
    colour = alt.Color(
        "reading:N",
        title=None,
        scale=alt.Scale(domain=present, range=[palette[k] for k in present]),
        legend=alt.Legend(orient="bottom", labelLimit=0, symbolOpacity=1),  # swatches as strong as the points
    )
    # the domain holds every interval and 0; the labels sit in a column right of it, so none
    # crosses the zero line or runs past the frame
    ends = t.select(pl.min_horizontal(pl.col("lo").min(), 0.0), pl.max_horizontal(pl.col("hi").max(), 0.0)).row(0)
    pad = 0.08 * ((ends[1] - ends[0]) or 0.1)
    domain = [float(ends[0]) - pad, float(ends[1]) + pad]
    # a criterion's share changes in percentage points, on the axis as in the labels beside it
    pp = "(datum.value > 0 ? '+' : '') + format(100 * datum.value, '.0f') + ' pp'"
    x = alt.X(
        "lo:Q",
        title=x_title,
        scale=alt.Scale(domain=domain, nice=False),
        axis=alt.Axis(tickCount=5, labelExpr=pp) if in_pp else alt.Axis(tickCount=5),  # few: no label dropped
    )
    bar = base.mark_rule(strokeWidth=3).encode(x=x, x2="hi:Q", color=colour)
    shapes = {_CLEAR: "circle", _UNCLEAR: "diamond", _SAME: "cross", "no interval": "square"}  # a cue besides colour
    shape = alt.Shape("reading:N", title=None, scale=alt.Scale(domain=present, range=[shapes[k] for k in present]))
    point = base.mark_point(filled=True, size=70).encode(x="change:Q", color=colour, shape=shape)
    label = (
        base.transform_calculate(
            # the overall score's change on its 0-1 scale to four decimals; a criterion's change
            # of its MET share in percentage points, as compare_runs' tables print it (7/80: 8.75 pp)
            text="(datum.change > 0 ? '+' : '') + "
            f"(datum.criterion == '{OVERALL}' ? format(datum.change, '.4f') "
            ": format(100 * datum.change, '.2f') + ' pp')"
            " + (datum.p_value == null ? '' : datum.p_value < 0.001 ? ', p < 0.001' "
            ": ', p = ' + format(datum.p_value, '.3f')) + datum.effect",
        )
        .mark_text(align="left", dx=10, fontSize=11, color=INK)
        .encode(x=alt.datum(domain[1]), text="text:N")
    )
    return alt.layer(zero, bar, point, label).properties(width=width)


def _effect(summary: pl.DataFrame) -> pl.Expr:
    """For a penalty that moved: which way it moved the score, in words ("" otherwise)."""
    if "penalty" not in summary.columns:
        return pl.lit("")
    moved = pl.col("penalty").fill_null(False) & (pl.col("change") != 0)
    return (
        pl.when(moved & (pl.col("change") > 0))
        .then(pl.lit("  (lowers the score)"))
        .when(moved)
        .then(pl.lit("  (raises the score)"))
        .otherwise(pl.lit(""))
    )
