"""Altair charts of agreement: forest plots, confusion heatmaps, score distributions.

Every function returns an ``alt.Chart`` (or a layered/faceted chart) built from data
aggregated in polars first, so a chart embeds at most a few hundred rows whatever the size
of the verdict table. Charts render inline in Jupyter and in nbconvert HTML and save to
PNG/SVG offline (``chart.save("x.png")`` with ``vl-convert-python``).

>>> import polars as pl, rubrictools as rt
>>> t = pl.DataFrame({"criterion": ["a", "b"], "metric": "cohen_kappa", "value": [0.5, 0.7],
...                   "ci_low": [0.3, 0.6], "ci_high": [0.7, 0.8], "n": [50, 50]})
>>> rt.charts.forest(t).to_dict()["layer"][0]["mark"]["type"]
'rule'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from rubrictools.verdicts import to_polars

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

    from rubrictools.rubric import Rubric

__all__ = ["confusion", "forest", "score_distributions"]

_MAX_ROWS = 5000


def _alt() -> Any:
    import altair as alt

    return alt


def _values(df: pl.DataFrame) -> list[dict[str, Any]]:
    if df.height > _MAX_ROWS:
        raise ValueError(f"refusing to embed {df.height} rows in a chart; aggregate first")
    return df.to_dicts()


def forest(
    table: Any,
    *,
    metric: str | list[str] | None = None,
    by: str = "criterion",
    title: str | None = None,
    width: int = 260,
) -> alt.LayerChart | alt.FacetChart:
    """Forest plot of an :func:`rubrictools.agreement` (or ``inter_rater``) table: one point per
    group with its bootstrap interval, one panel per metric.

    ``metric`` selects metric(s) (default: every metric in the table); ``by`` is the group
    column on the y axis. Score-level rows (``__score__``) are labelled "rubric score".
    """
    alt = _alt()
    t = to_polars(table, name="table")
    if metric is not None:
        metrics = [metric] if isinstance(metric, str) else list(metric)
        missing = set(metrics) - set(t["metric"].unique().to_list())
        if missing:
            raise ValueError(f"metric(s) {sorted(missing)} not in the table")
        t = t.filter(pl.col("metric").is_in(metrics))
    if by not in t.columns:
        raise ValueError(f"column {by!r} not in the table")
    t = t.filter(pl.col("value").is_not_null()).with_columns(
        pl.col(by).cast(pl.String).replace({"__score__": "rubric score"}).alias(by)
    )
    cols = [c for c in (by, "metric", "value", "ci_low", "ci_high", "n") if c in t.columns]
    data = alt.Data(values=_values(t.select(cols)))
    base = alt.Chart(data).encode(y=alt.Y(f"{by}:N", title=None, sort=None))
    tooltip = [alt.Tooltip(f"{c}:{'N' if c in (by, 'metric') else 'Q'}", format=".3f" if c not in (by, "metric", "n") else "") for c in cols]
    rule = base.mark_rule(strokeWidth=2).encode(x=alt.X("ci_low:Q", title="value (95% CI)"), x2="ci_high:Q")
    point = base.mark_point(filled=True, size=70).encode(x="value:Q", tooltip=tooltip)
    layer = alt.layer(rule, point).properties(width=width)
    n_metrics = t["metric"].n_unique()
    if n_metrics > 1:
        return layer.facet(column=alt.Column("metric:N", title=None)).resolve_scale(x="independent").properties(
            title=title or "Agreement with humans"
        )
    only = t["metric"][0] if t.height else ""
    return layer.properties(title=title or f"{only} with 95% bootstrap interval")


def confusion(
    verdicts: Any,
    human: Any,
    rubric: Rubric | None = None,
    *,
    criterion: str | list[str] | None = None,
    columns: int = 3,
) -> alt.FacetChart | alt.LayerChart:
    """Judge-vs-human confusion heatmaps, one per criterion, with counts and row percentages.

    Rows are the human label, columns the judge's; cells show the count and the share of
    the human label's row. Pairs are formed as in :func:`rubrictools.agreement` (errors and NA
    excluded).
    """
    from rubrictools.reliability import _criterion_pairs

    alt = _alt()
    pairs = _criterion_pairs(verdicts, human, rubric, ["criterion"], "exclude", "each").frame
    if criterion is not None:
        wanted = [criterion] if isinstance(criterion, str) else list(criterion)
        pairs = pairs.filter(pl.col("criterion").is_in(wanted))
    if pairs.height == 0:
        raise ValueError("no judge/human pairs to plot")
    cells = (
        pairs.group_by("criterion", "h_code", "j_code")
        .agg(pl.len().alias("count"), pl.col("classes").first())
        .with_columns(
            pl.col("classes").list.get(pl.col("h_code")).alias("human"),
            pl.col("classes").list.get(pl.col("j_code")).alias("judge"),
            (pl.col("count") / pl.col("count").sum().over("criterion", "h_code")).alias("row_share"),
        )
        .with_columns(pl.format("{} ({}%)", "count", (pl.col("row_share") * 100).round(0).cast(pl.Int64)).alias("label"))
        .select("criterion", "human", "judge", "h_code", "j_code", "count", "row_share", "label")
        .sort("criterion", "h_code", "j_code")
    )
    data = alt.Data(values=_values(cells))
    base = alt.Chart(data).encode(
        x=alt.X("judge:N", sort=alt.EncodingSortField("j_code"), title="judge"),
        y=alt.Y("human:N", sort=alt.EncodingSortField("h_code"), title="human"),
    )
    heat = base.mark_rect().encode(
        color=alt.Color("row_share:Q", scale=alt.Scale(domain=[0, 1], scheme="blues"), title="share of row"),
        tooltip=["human:N", "judge:N", "count:Q", alt.Tooltip("row_share:Q", format=".0%")],
    )
    text = base.mark_text(fontSize=11).encode(
        text="label:N", color=alt.condition("datum.row_share > 0.6", alt.value("white"), alt.value("black"))
    )
    layer = alt.layer(heat, text).properties(width=150, height=150)
    if cells["criterion"].n_unique() > 1:
        return layer.facet(facet=alt.Facet("criterion:N", title=None), columns=columns).resolve_scale(x="independent", y="independent").properties(
            title="Judge vs human labels (count, % of the human row)"
        )
    return layer.properties(title=f"{cells['criterion'][0]}: judge vs human (count, % of the human row)")


def score_distributions(
    verdicts: Any,
    human: Any,
    rubric: Rubric | None = None,
    *,
    bins: int = 20,
    human_scores: Any = None,
) -> alt.Chart:
    """Histograms of judge and human rubric scores on the same items, with the Wasserstein
    distance and the KS statistic in the title."""
    from rubrictools.metrics.distribution import cdf_distances_weighted
    from rubrictools.reliability import _score_pairs

    alt = _alt()
    pairs = _score_pairs(verdicts, human, rubric, [], "each", human_scores).drop_nulls(["h_value", "j_value"])
    if pairs.height == 0:
        raise ValueError("no scored pairs to plot")
    import numpy as np

    hs, js = pairs["h_value"].to_numpy(), pairs["j_value"].to_numpy()
    w1, ks = cdf_distances_weighted(js, hs, np.ones((1, js.size)), np.ones((1, hs.size)))
    lo, hi = float(min(hs.min(), js.min())), float(max(hs.max(), js.max()))
    edges = np.linspace(lo, hi if hi > lo else lo + 1, bins + 1)
    rows = []
    for who, x in (("judge", js), ("human", hs)):
        counts, _ = np.histogram(x, bins=edges)
        rows += [{"who": who, "bin_start": float(edges[i]), "bin_end": float(edges[i + 1]), "share": float(c / x.size)} for i, c in enumerate(counts)]
    data = alt.Data(values=rows)
    return (
        alt.Chart(data)
        .mark_bar(opacity=0.55, binSpacing=0)
        .encode(
            x=alt.X("bin_start:Q", title="rubric score", bin="binned"),
            x2="bin_end:Q",
            y=alt.Y("share:Q", title="share of items", stack=None),
            color=alt.Color("who:N", title=None, scale=alt.Scale(domain=["judge", "human"], range=["#e45756", "#4c78a8"])),
            tooltip=["who:N", alt.Tooltip("bin_start:Q", format=".2f"), alt.Tooltip("share:Q", format=".1%")],
        )
        .properties(width=420, height=200, title=f"Score distributions: Wasserstein {w1[0]:.3f}, KS {ks[0]:.3f} (n={pairs.height})")
    )
