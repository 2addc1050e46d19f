"""Chart of estimates from few human labels: interval width against the number of labels."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from rubrictools.charts.base import alt_module, chart_frame, check_title, interval_words, require_columns, values
from rubrictools.palette import CALIBRATED, INK, JUDGE, PEOPLE

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

__all__ = ["ppi_widths"]

_NAMES = {"classical": "human labels only", "ppi": "prediction-powered (PPI++)", "naive": "judge only (biased)"}


def ppi_widths(
    curve: Any, *, criterion: str | None = None, title: str | None = None, items: str = "items"
) -> alt.LayerChart:
    """A :func:`rubrictools.ppi.width_curve` table: median interval width against the number
    of human labels for the classical, PPI and naive estimates, one panel per criterion. The
    naive line is dashed and carries the judge's bias (the judge-only estimate minus the value
    from all human labels, signed, two decimals) under its start, since a narrow interval around
    the wrong value is no help. ``items``: the plural noun for what was labelled ("stories",
    "answers"), used by the x axis and the default title.

    >>> import polars as pl, rubrictools as rt
    >>> c = pl.DataFrame({"criterion": "c", "n": [50, 50, 50], "method": ["classical", "ppi", "naive"],
    ...                   "width": [0.3, 0.2, 0.1], "estimate": [0.5, 0.5, 0.7], "covers": [0.95, 0.95, 0.0],
    ...                   "full_value": 0.5})
    >>> rt.charts.ppi_widths(c).to_dict()["layer"][0]["mark"]["type"]
    'line'
    """
    if not isinstance(items, str) or not items.strip():
        raise ValueError(f"items must be a plural noun such as 'stories', got {items!r}")
    check_title(title)
    alt = alt_module()
    c = chart_frame(curve, name="curve")
    need = ["criterion", "n", "method", "width", "estimate", "covers", "full_value"]
    require_columns(c, need, "ppi_widths", "; pass rt.ppi.width_curve(...)")
    if criterion is not None:
        known = c["criterion"].unique().sort().to_list()
        if criterion not in known:
            raise ValueError(f"criterion {criterion!r} is not in the curve (its criteria: {known})")
        c = c.filter(pl.col("criterion") == criterion)
    first = (pl.col("n") == pl.col("n").min().over("criterion")) & (pl.col("method") == "naive")
    # the narrowest line is no help when its interval misses: the legend says how often it holds the value
    naive_cover = c.filter(pl.col("method") == "naive")["covers"].mean()
    names = dict(_NAMES)
    if isinstance(naive_cover, float):
        names["naive"] = f"judge only (holds the value in {naive_cover:.0%} of subsets)"
    c = c.with_columns(  # the judge's bias is written once per panel, under the naive line's start
        pl.col("method").replace_strict(names, default=pl.col("method")).alias("estimator"),
        pl.when(first).then(pl.col("estimate") - pl.col("full_value")).alias("bias"),
    )
    data = alt.Data(values=values(c.select("criterion", "n", "method", "estimator", "width", "covers", "bias")))
    order = [names[m] for m in ("classical", "ppi", "naive")]
    base = alt.Chart(data).encode(
        # ticks at the numbers of labels tried (a scale from 0 or 40 says nothing about n = 50)
        x=alt.X(
            "n:Q",
            title=f"labelled {items} (n)",
            scale=alt.Scale(zero=False, nice=False, padding=12),
            axis=alt.Axis(values=sorted(c["n"].unique().to_list()), format="d"),
        ),
        y=alt.Y("width:Q", title="median width"),  # short: facet rows repeat it; the subtitle says the rest
        color=alt.Color(
            "estimator:N",
            title=None,
            sort=order,
            # people grey, the judge blue (as in every chart), the estimator that corrects the judge with them orange
            scale=alt.Scale(domain=order, range=[PEOPLE, CALIBRATED, JUDGE]),
            legend=alt.Legend(orient="bottom", labelLimit=320),
        ),
    )
    tooltip = [alt.Tooltip("estimator:N"), alt.Tooltip("n:Q"), alt.Tooltip("width:Q", format=".3f")]
    tooltip.append(alt.Tooltip("covers:Q", format=".0%", title="covers full-human value"))
    text = (
        base.transform_filter("isValid(datum.bias)")
        .transform_calculate(note="'judge bias ' + format(datum.bias, '+.2f')")
        .mark_text(align="left", dy=12, fontSize=10)
        .encode(text="note:N", color=alt.value(INK))
    )
    lines = alt.layer(
        base.mark_line().encode(
            strokeDash=alt.condition("datum.method == 'naive'", alt.value([5, 4]), alt.value([1, 0]))
        ),
        base.mark_point(filled=True).encode(  # a cue besides colour: each estimator its own shape
            tooltip=tooltip,
            shape=alt.Shape(
                "estimator:N",
                title=None,
                sort=order,
                scale=alt.Scale(domain=order, range=["circle", "square", "triangle-up"]),
            ),
        ),
        text,
    ).properties(width=220, height=160)
    many = c["criterion"].n_unique() > 1
    panels = c["criterion"].unique(maintain_order=True).to_list()  # the curve's (rubric) order, not alphabetical
    chart = lines.facet(facet=alt.Facet("criterion:N", title=None, sort=panels), columns=3) if many else lines
    scope = f" on {criterion!r}" if criterion is not None else ""
    heading = title or f"Interval width against the number of labelled {items}{scope}"
    words = [
        f"median width of the {interval_words(c)}s, in the estimate's units",
        "judge bias: the judge-only estimate minus the value from all human labels",
    ]
    return chart.properties(title=alt.Title(heading, subtitle=words))
