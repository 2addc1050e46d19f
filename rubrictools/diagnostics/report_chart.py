"""The picture of a :class:`~rubrictools.diagnostics.report.RubricReport`: agreement bars with
their flags and intervals, beside the criterion-correlation heatmap.

Example
-------
>>> import rubrictools as rt
>>> d = rt.datasets.load("demo_support")
>>> chart = rt.rubric_report(d.verdicts, d.human, d.rubric).chart()
>>> [c.get("title") for c in chart.to_dict()["hconcat"]][0]
"Judge vs human (Cohen's kappa, 95% interval)"
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from rubrictools.palette import (
    BLUISH_GREEN,
    INK,
    INK_DARK,
    JUDGE,
    NEUTRAL_DARK,
    PINK,
    PURPLE,
    SIENNA,
    SKY,
    WINE,
    YELLOW,
)
from rubrictools.tables import fixed_decimals

if TYPE_CHECKING:
    import altair as alt

__all__ = ["report_chart"]


def report_chart(table: pl.DataFrame, correlations: pl.DataFrame, first: list[str]) -> alt.HConcatChart:
    """Bars of agreement with humans (or MET rates) per criterion, labelled with the value and
    the flags, coloured by the first flag, ``first`` outlined and labelled "fix first"; the
    kappa's 95% interval as a line over its bar when the table has one; beside the heatmap of
    ``correlations`` (``a, b, r``)."""
    import altair as alt

    data, title, axis_title = _bar_data(table, first)
    order = table["criterion"].to_list()
    kinds = [k for k in _FLAG_COLOURS if k in set(data["flag"].to_list())]
    lowest = float(np.nanmin(data.select(pl.min_horizontal("value", "lo")).to_series().fill_null(0.0).to_numpy()))
    base = alt.Chart(alt.Data(values=data.to_dicts())).encode(
        y=alt.Y("criterion:N", sort=order, title=None, axis=alt.Axis(labelLimit=0)),
        x=alt.X("value:Q", title=axis_title, scale=alt.Scale(domain=[min(0.0, lowest), 1.0])),
    )
    bars = base.mark_bar(stroke="black").encode(
        strokeWidth=alt.condition("datum.fix_first", alt.value(2.5), alt.value(0)),
        color=alt.Color(
            "flag:N",
            scale=alt.Scale(domain=kinds, range=[_FLAG_COLOURS[k] for k in kinds]),
            # no black outline on the swatches: only the bar to fix first carries one
            legend=alt.Legend(
                title="colour: the first flag listed", orient="bottom", columns=2, labelLimit=0, symbolStrokeWidth=0
            ),
        ),
        tooltip=["criterion:N", alt.Tooltip("value:Q", format=".3f"), "interval:N", "label:N"],
    )
    # the interval as a thin dark line over the bar; the value printed right of the bar or of its
    # interval, whichever ends later (inside a long bar without one); the flags in a column right
    # of the axis's end, so no label runs over the gridlines or past the panel
    interval = (
        base.transform_filter("isValid(datum.lo)")
        .mark_rule(color=INK_DARK, strokeWidth=1.5)
        .encode(x="lo:Q", x2="hi:Q")
    )
    inside = base.transform_filter("datum.end >= 0.85 && !isValid(datum.lo)").mark_text(
        align="right", dx=-3, fontSize=10, color="white"
    )
    outside = base.transform_filter("!(datum.end >= 0.85 && !isValid(datum.lo))").mark_text(
        align="left", dx=3, fontSize=10, color=INK
    )
    flags = base.mark_text(align="left", dx=8, fontSize=10, color=INK).encode(x=alt.datum(1.0), text="label:N")
    layers = (
        bars + interval + inside.encode(text="number:N") + outside.encode(x=alt.X("end:Q"), text="number:N") + flags
    )
    height = 24 * max(len(order), 2)
    return alt.hconcat(layers.properties(width=260, height=height, title=title), _heat(correlations, order, height))


def _bar_data(table: pl.DataFrame, first: list[str]) -> tuple[pl.DataFrame, str, str]:
    """One row per criterion: the value drawn, its interval, its flags and whether to fix it first;
    with the panel's title and its axis's (the measure alone: the title says what is compared)."""
    kappa = "human_kappa" in table.columns and table["human_kappa"].drop_nulls().len() > 0
    metric = "human_kappa" if kappa else "met_rate"
    has_ci = kappa and "human_kappa_low" in table.columns and table["human_kappa_low"].drop_nulls().len() > 0
    lo = pl.col("human_kappa_low") if has_ci else pl.lit(None, dtype=pl.Float64)
    hi = pl.col("human_kappa_high") if has_ci else pl.lit(None, dtype=pl.Float64)
    title = axis_title = "MET rate / mean score fraction"
    if kappa:
        title = "Judge vs human (Cohen's kappa, 95% interval)" if has_ci else "Judge vs human (Cohen's kappa)"
        axis_title = "Cohen's kappa (line: 95% interval)" if has_ci else "Cohen's kappa"
    data = table.select(
        "criterion",
        pl.col(metric).alias("value"),
        lo.alias("lo"),
        hi.alias("hi"),
        pl.col("flags").list.first().str.replace(r"^redundant with .*", "redundant").fill_null("no flag").alias("flag"),
        fixed_decimals(pl.col(metric)).alias("number"),
        pl.col("flags").list.join(", ").alias("label"),
    )
    return (
        data.with_columns(  # the criterion to fix first is marked, whatever its colour
            pl.max_horizontal("value", "hi").alias("end"),
            pl.format("{} to {}", fixed_decimals(pl.col("lo")), fixed_decimals(pl.col("hi"))).alias("interval"),
            pl.col("criterion").is_in(first).alias("fix_first"),
            pl.when(pl.col("criterion").is_in(first) & (pl.col("flag") == "no flag"))
            .then(pl.lit("weakest, no other flag"))  # the legend never says "no flag" of the one to fix
            .otherwise(pl.col("flag"))
            .alias("flag"),
            pl.when(pl.col("criterion").is_in(first))
            .then(pl.format("fix first: {}", pl.col("label")).str.strip_chars(" :"))
            .otherwise(pl.col("label"))
            .alias("label"),
        ),
        title,
        axis_title,
    )


def _heat(correlations: pl.DataFrame, order: list[str], height: int) -> alt.LayerChart:
    import altair as alt

    corr = correlations.with_columns(pl.when(pl.col("a") == pl.col("b")).then(None).otherwise(pl.col("r")).alias("r"))
    top = 1.0  # the whole scale: a correlation of 0.2 looks weak, not saturated
    base = alt.Chart(alt.Data(values=corr.to_dicts())).encode(
        x=alt.X("a:N", sort=order, title=None, axis=alt.Axis(labelAngle=-40, labelLimit=0)),
        y=alt.Y("b:N", sort=order, title=None, axis=alt.Axis(labelLimit=0)),
    )
    heat = base.mark_rect().encode(
        color=alt.Color("r:Q", scale=alt.Scale(scheme="redblue", domain=[-top, top], reverse=True), title="Pearson r"),
        tooltip=["a:N", "b:N", alt.Tooltip("r:Q", format=".2f")],
    )
    text = base.transform_filter("isValid(datum.r)").mark_text(fontSize=10).encode(text=alt.Text("r:Q", format=".2f"))
    title = ["Criterion correlations", "Pearson r of the judge's values per submission"]
    return (heat + text).properties(width=44 * max(len(order), 2), height=height, title=title)


_FLAG_COLOURS = {  # the first flag of a criterion decides its bar's colour
    "lowest human agreement": WINE,
    "low human agreement": PINK,
    "judges disagree": YELLOW,
    "never discriminates": SIENNA,
    "redundant": BLUISH_GREEN,
    "costliest disagreement": PURPLE,  # not orange: orange means calibrated
    "no usable verdicts": NEUTRAL_DARK,
    "weakest, no other flag": SKY,
    "no flag": JUDGE,
}
