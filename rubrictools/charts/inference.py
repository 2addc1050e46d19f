"""Chart of estimates from few human labels: interval width against the number of labels."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from rubrictools.charts.base import alt_module, chart_frame, check_title, interval_words, require_columns, values
from rubrictools.palette import CALIBRATED, INK, PEOPLE
from rubrictools.tables import signed_decimals

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

__all__ = ["ppi_widths"]

_NAMES = {"classical": "human labels only", "ppi": "PPI++ (prediction-powered)", "naive": "judge only"}


def ppi_widths(
    curve: Any, *, criterion: str | None = None, title: str | None = None, items: str = "items"
) -> alt.LayerChart:
    """A :func:`rubrictools.ppi.width_curve` table: median interval width against the number
    of human labels for the classical and PPI estimates, one panel per criterion. The naive
    (judge-only) estimate is not drawn: its interval is the narrowest and would read as the best,
    though it sits around the wrong value; each panel states its bias (the judge-only estimate
    minus the value from all human labels, signed, two decimals) and how often its interval holds
    that value. ``items``: the plural noun for what was labelled ("stories", "answers"), used by
    the x axis and the default title.

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
    if odd := sorted(set(c["method"].drop_nulls().cast(pl.String).to_list()) - set(_NAMES)):
        raise ValueError(f"curve's method column holds {odd}; rt.ppi.width_curve writes only {sorted(_NAMES)}")
    for col in ("n", "width", "estimate", "covers", "full_value"):
        if not c.schema[col].is_numeric():
            raise ValueError(
                f"curve's {col!r} column must be numeric, got {c.schema[col]}; pass rt.ppi.width_curve(...)"
            )
    if c.filter(pl.col("method") != "naive")["width"].is_null().all():
        raise ValueError("curve has no width for the classical or PPI estimate: nothing to draw")
    if criterion is not None:
        known = c["criterion"].unique().sort().to_list()
        if criterion not in known:
            raise ValueError(f"criterion {criterion!r} is not in the curve (its criteria: {known})")
        c = c.filter(pl.col("criterion") == criterion)
    # the judge-only estimate is not drawn as a line: its interval is the narrowest and read as the
    # best, though it holds the value in few subsets (round 23); each panel says so in words instead
    first = (pl.col("n") == pl.col("n").min().over("criterion")) & (pl.col("method") == "naive")
    cover = pl.col("covers").filter(pl.col("method") == "naive").mean().over("criterion")
    note = pl.format(
        "judge alone: off by {}\nholds the value in {}% of subsets",
        signed_decimals(pl.col("bias")),
        (cover * 100).round(0).cast(pl.Int64),
    )
    c = c.with_columns(
        pl.col("method").replace_strict(_NAMES, default=pl.col("method")).alias("estimator"),
        pl.when(first).then(pl.col("estimate") - pl.col("full_value")).alias("bias"),
    ).with_columns(pl.when(first).then(note).alias("note"))
    data = alt.Data(values=values(c.select("criterion", "n", "method", "estimator", "width", "covers", "note")))
    order = [_NAMES[m] for m in ("classical", "ppi")]
    drawn = alt.datum.method != "naive"
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
            # people grey; the estimator that corrects the judge with them orange (calibrated)
            scale=alt.Scale(domain=order, range=[PEOPLE, CALIBRATED]),
            legend=alt.Legend(orient="bottom", labelLimit=320),
        ),
    )
    tooltip = [alt.Tooltip("estimator:N"), alt.Tooltip("n:Q"), alt.Tooltip("width:Q", format=".3f")]
    tooltip.append(alt.Tooltip("covers:Q", format=".0%", title="covers full-human value"))
    text = (
        alt.Chart(data)
        .transform_filter("isValid(datum.note)")
        .mark_text(align="left", baseline="bottom", lineBreak="\n", fontSize=10, color=INK)
        .encode(x=alt.value(4), y=alt.value(156), text="note:N")  # bottom left: the lines are high at small n
    )
    lines = alt.layer(
        base.transform_filter(drawn).mark_line(),
        base.transform_filter(drawn)
        .mark_point(filled=True)
        .encode(  # a cue besides colour: a shape each
            tooltip=tooltip,
            shape=alt.Shape(
                "estimator:N", title=None, sort=order, scale=alt.Scale(domain=order, range=["circle", "square"])
            ),
        ),
        text,
    ).properties(width=220, height=160)
    many = c["criterion"].n_unique() > 1
    panels = c["criterion"].unique(maintain_order=True).to_list()  # the curve's (rubric) order, not alphabetical
    chart = lines.facet(facet=alt.Facet("criterion:N", title=None, sort=panels), columns=3) if many else lines
    scope = f" on {criterion!r}" if criterion is not None else ""
    heading = title or f"Interval width against the number of labelled {items}{scope}"
    words = [f"median width of the {interval_words(c)}s, in the estimate's units"]
    if (c["method"] == "naive").any():  # the note is only promised when a panel can write it
        words.append(
            "judge alone, not drawn (a narrow interval around the wrong value): its estimate minus the value from "
            "all human labels, and how often its interval holds that value"
        )
    return chart.properties(title=alt.Title(heading, subtitle=words))
