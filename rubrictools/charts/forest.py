"""Forest plots: one point per group with its bootstrap interval, a chance line where chance
lies, the raters' agreement with each other or a second table beside each point."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from rubrictools.charts.base import CHANCE_AT_ZERO, chart_frame, check_title, interval_words
from rubrictools.charts.base import alt_module as _alt
from rubrictools.charts.base import values as _values
from rubrictools.metrics.names import METRIC_NAMES
from rubrictools.palette import CATEGORIES, JUDGE, PEOPLE, REFERENCE

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

__all__ = ["forest"]


def forest(
    table: Any,
    *,
    metric: str | list[str] | None = None,
    by: str = "criterion",
    title: str | None = None,
    width: int = 260,
    ceiling: Any = None,
    ceiling_metric: str | None = None,
    compare: str | None = None,
    chance: float | None = None,
) -> alt.LayerChart | alt.FacetChart:
    """Forest plot of an :func:`rubrictools.agreement` (or ``inter_rater``) table: one point per
    group with its bootstrap interval, one panel per metric.

    ``metric`` selects metric(s) (default: every metric in the table); ``by`` is the group
    column on the y axis. Score-level rows (``__score__``) are labelled "rubric score".
    ``ceiling``: an :func:`rubrictools.inter_rater` table drawn in grey under each judge point,
    with its own bootstrap interval (the human-human ceiling); ``ceiling_metric`` names its
    metric when it differs from the judge's (e.g. ``"icc2"`` beside ``"kappa_quadratic"``,
    which estimates the same quantity), and the forest then shows one metric.
    ``compare``: a column whose values (e.g. ``"before"``/``"after"``, or two judges) are drawn
    side by side within each group's row, one colour each, in the table's order.
    ``chance``: the value chance gives, drawn as a dashed line the axis includes; by default 0
    for kappa-like metrics (Cohen's kappa, ICC, correlations) and none for others; e.g. 0.5 for
    how often a judge keeps its pick between two outputs after they are swapped.

    Metrics that are shares (accuracy, precision, recall, agreement, ...: every value in
    [0, 1]) are drawn on a percentage axis.

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> v = pl.DataFrame({"id": range(8), "criterion": "polite", "verdict": ["MET", "UNMET"] * 4})
    >>> h = v.rename({"verdict": "label"}).with_columns(pl.when(pl.col("id") == 0).then(pl.lit("UNMET"))
    ...                                                 .otherwise(pl.col("label")).alias("label"))
    >>> table = rt.agreement(v, h, metrics=["cohen_kappa", "accuracy"], n_resamples=200)
    >>> spec = rt.charts.forest(table).to_dict()
    >>> "facet" in spec or "layer" in spec
    True
    """
    check_title(title)
    alt = _alt()
    t = chart_frame(table, name="table")
    if chance is not None:
        if isinstance(chance, bool) or not isinstance(chance, numbers.Real):
            raise TypeError(f"chance must be a number or None, got {chance!r}")
        if not math.isfinite(chance):
            raise ValueError(f"chance must be a finite number, got {chance!r}")
        chance = float(chance)
    if ceiling is not None:
        return _forest_with_ceiling(
            t, chart_frame(ceiling, name="ceiling"), metric, ceiling_metric, by, title, width, chance
        )
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
    if compare is not None and compare not in t.columns:
        raise ValueError(f"compare={compare!r} is not a column of the table ({t.columns})")
    asked = set(t["metric"].to_list())
    if chance is None and t.height > 0 and asked <= CHANCE_AT_ZERO:
        chance = 0.0
    # 0 is chance agreement for a kappa, but "no relation" for a correlation: the line says which
    at_zero = asked & CHANCE_AT_ZERO  # the metrics a line at 0 is drawn for
    reference = "no relation" if at_zero and at_zero <= _CORRELATIONS else "chance"
    if reference == "chance" and at_zero & _CORRELATIONS and chance in (None, 0):
        reference = "chance, or no relation for a correlation"
    zero_in = (
        []
        if chance is not None
        else [METRIC_NAMES.get(m, m) for m in t["metric"].unique(maintain_order=True) if m in CHANCE_AT_ZERO]
    )
    percent = _all_shares(t)
    if percent and chance is not None and not 0 <= chance <= 1:
        raise ValueError(f"chance={chance:g} is outside [0, 1], the scale of a share (for 50%, pass chance=0.5)")
    t = t.with_columns(pl.col("metric").replace(METRIC_NAMES))  # "Cohen's kappa", not cohen_kappa
    cols = [c for c in (by, compare, "metric", "value", "ci_low", "ci_high", "n") if c is not None and c in t.columns]
    data = alt.Data(values=_values(t.select(cols)))
    order = t[by].unique(maintain_order=True).to_list()
    base = alt.Chart(data).encode(y=alt.Y(f"{by}:N", title=None, sort=order, axis=alt.Axis(labelLimit=0)))
    shape = None
    if compare is not None:
        kinds = t[compare].cast(pl.String).unique(maintain_order=True).to_list()
        # light then full blue for the usual two (before/after, or two judges): grey is people's colour
        palette = list(CATEGORIES)
        shapes = ["circle", "square", "diamond", "triangle-up", "cross"]
        base = base.encode(
            yOffset=alt.YOffset(f"{compare}:N", sort=kinds),
            color=alt.Color(
                f"{compare}:N", title=compare, sort=kinds, scale=alt.Scale(domain=kinds, range=palette[: len(kinds)])
            ),
        )
        # a cue besides colour, on the points only (a rule given a shape draws it at its start)
        shape = alt.Shape(
            f"{compare}:N", title=compare, sort=kinds, scale=alt.Scale(domain=kinds, range=shapes[: len(kinds)])
        )
    words = (by, "metric", compare)
    tooltip = [
        alt.Tooltip(f"{c}:{'N' if c in words else 'Q'}", format="" if c in (*words, "n") else ".3f") for c in cols
    ]
    one = t["metric"][0] if t["metric"].n_unique() == 1 else "estimate"
    layer = _intervals(
        base,
        tooltip,
        one,
        interval_words(t, "CI"),
        chance=chance,
        percent=percent,
        shape=shape if compare else None,
        zero_in=zero_in,
        reference=reference if t["metric"].n_unique() == 1 else None,  # several panels: said once, in the subtitle
    )
    layer = layer.properties(width=width)
    # panels in the order asked (metric=[...]), else the table's; never alphabetical
    panels = (
        [METRIC_NAMES.get(m, m) for m in metrics]
        if metric is not None
        else t["metric"].unique(maintain_order=True).to_list()
    )
    n_metrics = t["metric"].n_unique()
    if n_metrics > 1:
        # agreement-type metrics (all within [-1, 1]) share one x scale, so panels compare at a
        # glance; metrics on other scales (an error in points, a count) keep their own
        bounds = t.select(pl.min_horizontal(pl.col(c).min() for c in ("value", "ci_low", "ci_high") if c in t.columns))
        top = t.select(pl.max_horizontal(pl.col(c).max() for c in ("value", "ci_low", "ci_high") if c in t.columns))
        agreement_type = set(t["metric"].to_list()) <= {METRIC_NAMES.get(m, m) for m in CHANCE_AT_ZERO | _SHARES}
        shared = agreement_type and bounds.item() is not None and bounds.item() >= -1 and top.item() <= 1
        head: Any = title or f"Agreement with humans, {interval_words(t, 'bootstrap interval')}"
        if zero_in:
            where = " and ".join(zero_in) + (" panels" if len(zero_in) > 1 else " panel")
            head = alt.TitleParams(text=head, subtitle=f"dashed line at 0: {reference}, in the {where}")
        elif chance is not None:
            head = alt.TitleParams(text=head, subtitle=f"dashed line at {chance:g}: {reference}, in every panel")
        return (
            layer.facet(column=alt.Column("metric:N", title=None, sort=panels))
            .resolve_scale(x="shared" if shared else "independent")
            .properties(title=head)
        )
    only = t["metric"][0] if t.height else ""
    return layer.properties(title=title or f"{only} with {interval_words(t, 'bootstrap interval')}")


_SHARES = {"accuracy", "balanced_accuracy", "precision", "recall", "percent_agreement", "specificity"}
_SHARE_WORDS = ("accuracy", "agreement", "rate", "share", "precision", "recall")


def _all_shares(t: pl.DataFrame, names: set[str] | None = None) -> bool:
    """Every metric (of the table, or ``names``) a share in [0, 1] by name, and every value and
    bound of the table in [0, 1]."""
    names = set(t["metric"].to_list()) if names is None else names
    if not names or not all(m in _SHARES or any(w in m.lower() for w in _SHARE_WORDS) for m in names):
        return False
    if any(m in CHANCE_AT_ZERO for m in names):
        return False
    cols = [c for c in ("value", "ci_low", "ci_high") if c in t.columns]
    low = t.select(pl.min_horizontal(pl.col(c).min() for c in cols)).item()
    high = t.select(pl.max_horizontal(pl.col(c).max() for c in cols)).item()
    return low is not None and low >= 0 and high <= 1


_CORRELATIONS = {"spearman", "kendall", "pearson"}


def _intervals(
    base: alt.Chart,
    tooltip: list[Any],
    metric: str = "estimate",
    level: str = "CI",
    *,
    chance: float | None = None,
    percent: bool = False,
    shape: Any = None,
    zero_in: Sequence[str] = (),
    reference: str | None = "chance",
) -> alt.LayerChart:
    """A forest plot's marks on ``base``: the ``ci_low``-``ci_high`` rule and the ``value`` point;
    with ``chance``, a dashed line there (chance agreement), which the axis then includes; with
    ``zero_in`` (metrics in words), a dashed line at 0 in those metrics' panels only."""
    alt = _alt()
    # not forced to start at 0 (agreement of 0.70-0.97 fills the axis), with room at the ends so a
    # point or interval at the edge of the data is drawn whole
    at = "" if chance in (None, 0) else f" at {chance:.0%}" if percent else f" at {chance:g}"
    # several panels share one axis title: where chance is 0 in some panels only, the chart's
    # subtitle says so (the title would name a line the other panels do not have)
    dashed = f"; dashed: {reference}{at}" if chance is not None and not zero_in and reference else ""
    words = f"{metric} ({level}{dashed})"
    # a share's axis: padded for whole marks at 0% or 100%, but ticks only within 0-100%
    # and otherwise few enough ticks that none is dropped for overlap (it was 0.00, next to chance's line)
    axis = alt.Axis(format="%", values=[k / 10 for k in range(11)]) if percent else alt.Axis(tickCount=5)
    x = alt.X("ci_low:Q", title=words, axis=axis, scale=alt.Scale(zero=chance == 0, padding=12))
    # the judge's blue unless a colour encoding says otherwise (a bare rule would draw black)
    rule = base.mark_rule(strokeWidth=2, color=JUDGE).encode(x=x, x2="ci_high:Q")
    point = base.mark_point(filled=True, size=70, color=JUDGE).encode(x="value:Q", tooltip=tooltip)
    if shape is not None:
        point = point.encode(shape=shape)
    if zero_in:  # a faceted chart of several metrics: the line only in the panels where 0 is chance
        keep = alt.FieldOneOfPredicate(field="metric", oneOf=list(zero_in))
        # a field, not a datum: a datum would pull 0 into every panel's axis, the error metric's too
        ref = alt.Chart(base.data).transform_filter(keep).transform_calculate(zero="0")
        return alt.layer(ref.mark_rule(color=REFERENCE, strokeDash=[4, 3]).encode(x="zero:Q"), rule, point)
    if chance is None:
        return alt.layer(rule, point)
    # its own chart on the same data, with no y or colour: one grey line over the whole height
    ref = alt.Chart(base.data).mark_rule(color=REFERENCE, strokeDash=[4, 3]).encode(x=alt.datum(chance))
    return alt.layer(ref, rule, point)


_PAIRWISE_TWINS = {("cohen_kappa", "cohen_kappa_pairwise"), ("kappa_quadratic", "kappa_quadratic_pairwise")}
"""A judge's kappa and the raters' mean pairwise kappa of the same kind: one statistic, two sets of pairs."""


def _forest_with_ceiling(
    t: pl.DataFrame,
    c: pl.DataFrame,
    metric: str | list[str] | None,
    ceiling_metric: str | None,
    by: str,
    title: str | None,
    width: int,
    chance: float | None,
) -> alt.LayerChart:
    """One metric's forest with the raters' agreement with each other beside each judge point (grey)."""
    alt = _alt()
    metrics = [metric] if isinstance(metric, str) else list(metric or t["metric"].unique())
    if len(metrics) != 1:
        raise ValueError(f"a forest with a ceiling shows one metric; pass metric= (the table has {metrics})")
    m = metrics[0]
    cm = ceiling_metric or m
    if cm not in set(c["metric"].to_list()):
        raise ValueError(f"ceiling: metric {cm!r} is not in the ceiling table (pass ceiling_metric=)")
    cols = [by, "value", "ci_low", "ci_high"]
    name, ceiling_name = METRIC_NAMES.get(m, m), METRIC_NAMES.get(cm, cm)
    who = [f"judge with the raters ({name})", f"raters with each other ({ceiling_name})"]
    judge = t.filter(pl.col("metric") == m).select(cols).with_columns(pl.lit(who[0]).alias("who"))
    humans = c.filter(pl.col("metric") == cm).select(cols).with_columns(pl.lit(who[1]).alias("who"))
    both = pl.concat([judge, humans]).filter(pl.col("value").is_not_null())
    both = both.with_columns(pl.col(by).cast(pl.String).replace({"__score__": "rubric score"}))
    order = judge[by].cast(pl.String).unique(maintain_order=True).to_list()
    legend = alt.Legend(orient="bottom", direction="vertical", labelLimit=0)
    colour = alt.Color("who:N", title=None, scale=alt.Scale(domain=who, range=[JUDGE, PEOPLE]), legend=legend)
    base = alt.Chart(alt.Data(values=_values(both))).encode(
        y=alt.Y(f"{by}:N", title=None, sort=order), yOffset=alt.YOffset("who:N", sort=who), color=colour
    )
    shape = alt.Shape("who:N", title=None, scale=alt.Scale(domain=who, range=["circle", "square"]), legend=legend)
    tooltip = [f"{by}:N", "who:N", alt.Tooltip("value:Q", format=".3f")]
    level = interval_words(
        pl.concat([t.select(pl.col("^ci_level$")), c.select(pl.col("^ci_level$"))], how="diagonal"), "CI"
    )
    axis = name if cm == m else f"judge: {name}; people (grey): {ceiling_name}"
    if chance is None and m in CHANCE_AT_ZERO and cm in CHANCE_AT_ZERO:
        chance = 0.0
    percent = _all_shares(both, {m, cm})
    head: Any = title or f"{name}: the judge beside the raters' agreement with each other"
    if cm != m and (m, cm) not in _PAIRWISE_TWINS:  # two statistics on one axis: say so on the chart itself
        head = alt.TitleParams(
            text=head, subtitle=f"{name} and {ceiling_name} are different statistics: read the grey as a reference"
        )
    return _intervals(base, tooltip, axis, level, chance=chance, percent=percent, shape=shape).properties(
        width=width, title=head
    )
