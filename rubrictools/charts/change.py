"""Before and after: how much each group's figure moved (e.g. agreement before and after
adjudicating disagreements)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from rubrictools.charts.base import CHANCE_AT_ZERO, chart_frame, check_title, rate_axis, require_columns
from rubrictools.charts.base import alt_module as _alt
from rubrictools.charts.base import values as _values
from rubrictools.metrics.names import METRIC_NAMES
from rubrictools.palette import CALIBRATED, INK, INK_MUTED, JUDGE, NEUTRAL_LIGHT, REFERENCE

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

__all__ = ["before_after"]


def before_after(
    table: Any,
    *,
    by: str = "criterion",
    before: str = "before",
    after: str = "now",
    title: str | None = None,
    metric: str | None = None,
    width: int = 380,
) -> alt.LayerChart:
    """A dumbbell chart: one row per ``by`` group, a grey bar from its ``before`` value to its
    ``after`` value, a hollow point at ``before`` and a filled one at ``after``. Rows keep the
    table's order; a group whose value did not move shows one point. The axis spans the values
    (not from 0), so small changes show, and each row prints its change (``after - before``).

    ``metric`` names what the values are (e.g. ``"cohen_kappa"``): the axis says it in words,
    a metric whose 0 is chance agreement (a kappa, a correlation) gets its axis from 0 with a
    dashed line at chance, and a rate (``accuracy``, ``percent_agreement``) an axis of 0-100%.

    >>> import polars as pl, rubrictools as rt
    >>> t = pl.DataFrame({"criterion": ["a", "b"], "before": [0.5, 0.7], "now": [0.6, 0.7]})
    >>> [layer["mark"]["type"] for layer in rt.charts.before_after(t).to_dict()["layer"]]
    ['rule', 'point', 'point', 'text']
    """
    check_title(title)
    alt = _alt()
    t = chart_frame(table, name="table")
    require_columns(t, [by, before, after], "before_after")
    t = t.select(
        pl.col(by).cast(pl.String).alias("group"),
        pl.col(before).cast(pl.Float64).alias("before"),
        pl.col(after).cast(pl.Float64).alias("after"),
    ).with_columns((pl.col("after") - pl.col("before")).alias("change"))
    order = t["group"].to_list()
    # no axis line where the dashed chance line at 0 would hide under it
    base = alt.Chart(alt.Data(values=_values(t))).encode(
        y=alt.Y("group:N", title=None, sort=order, axis=alt.Axis(domain=metric not in CHANCE_AT_ZERO)),
        tooltip=[
            alt.Tooltip("group:N", title=by),
            alt.Tooltip("before:Q", title=before, format=".3f"),
            alt.Tooltip("after:Q", title=after, format=".3f"),
            alt.Tooltip("change:Q", format="+.3f"),
        ],
    )
    words = METRIC_NAMES.get(metric or "", metric)
    axis_title = f"{words + ': ' if words else ''}{before} (hollow) → {after} (filled)"
    if metric in ("accuracy", "percent_agreement"):
        scale, axis = alt.Scale(domain=[0, 1]), rate_axis()
    elif metric in CHANCE_AT_ZERO:  # from chance (0) to the values, so the distance from chance shows
        scale, axis = (
            alt.Scale(domainMin=min(0.0, float(t.select(pl.min_horizontal("before", "after").min()).item()))),
            alt.Axis(),
        )
    else:  # zoomed to the values (not from 0), so a change of 0.01 is visible, and each row prints its change
        scale, axis = alt.Scale(zero=False, padding=14), alt.Axis()
    x = alt.X("before:Q", title=axis_title, scale=scale, axis=axis)
    bar = base.mark_rule(strokeWidth=3, color=NEUTRAL_LIGHT).encode(x=x, x2="after:Q")
    # the hollow ring is larger and drawn over the filled dot, so an unmoved row shows both
    start = base.mark_point(size=170, strokeWidth=2, color=JUDGE).encode(x="before:Q")
    end = base.mark_point(size=60, filled=True, color=CALIBRATED).encode(x="after:Q")
    label = (
        base.transform_calculate(right="max(datum.before, datum.after)")
        .transform_calculate(
            text="abs(datum.change) < 5e-4 ? 'no change' : (datum.change > 0 ? '+' : '') + format(datum.change, '.3f')"
        )
        .mark_text(align="left", dx=10, fontSize=11, color=INK)
        .encode(x="right:Q", text="text:N")
    )
    layers = [bar, end, start, label]
    if metric in CHANCE_AT_ZERO:
        chance = alt.Chart(alt.Data(values=[{"x": 0.0, "label": "chance"}]))
        layers.insert(0, chance.mark_rule(strokeDash=[4, 3], color=REFERENCE).encode(x="x:Q"))
        layers.append(
            chance.mark_text(align="left", dx=3, dy=2, baseline="top", fontSize=10, color=INK_MUTED).encode(
                x="x:Q", y=alt.value(0), text="label:N"
            )
        )
    default = f"{words + ': ' if words else ''}{before} (hollow) and {after} (filled)"
    return alt.layer(*layers).properties(width=width, title=title or default)
