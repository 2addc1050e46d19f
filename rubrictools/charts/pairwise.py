"""Charts of pairwise comparisons: a leaderboard, a win-rate matrix, position bias."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from rubrictools.charts.base import alt_module, chart_frame, check_title, interval_words, require_columns, values
from rubrictools.palette import INK, INK_MUTED, JUDGE, JUDGE_DARK, REFERENCE

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

__all__ = ["leaderboard", "position_bias", "win_matrix"]


def leaderboard(board: Any, *, title: str | None = None, width: int = 360) -> alt.LayerChart:
    """A :func:`rubrictools.rank_systems` table as a chart: each system's rating with its
    bootstrap interval (best at the top) and its rank interval written beside it.

    >>> import polars as pl, rubrictools as rt
    >>> board = pl.DataFrame({"system": ["x", "y"], "rating": [1050.0, 950.0], "ci_low": [1010.0, 900.0],
    ...                       "ci_high": [1090.0, 990.0], "rank": [1, 2], "rank_best": [1, 2], "rank_worst": [1, 2]})
    >>> rt.charts.leaderboard(board).to_dict()["layer"][0]["mark"]["type"]
    'rule'
    """
    check_title(title)
    alt = alt_module()
    b = chart_frame(board, name="board")
    require_columns(b, ("system", "rating", "ci_low", "ci_high", "rank_best", "rank_worst"), "leaderboard")
    b = b.sort("rating", descending=True).with_columns(
        pl.when(pl.col("rank_best") == pl.col("rank_worst"))
        .then(pl.format("#{}", "rank_best"))
        .otherwise(pl.format("#{}–{}", "rank_best", "rank_worst"))
        .alias("ranks")
    )
    order = b["system"].to_list()
    data = alt.Data(values=values(b.select("system", "rating", "ci_low", "ci_high", "ranks")))
    lo, hi = (float(x or 0.0) for x in b.select(pl.col("ci_low").min(), pl.col("ci_high").max()).row(0))
    pad = 0.08 * (hi - lo or 1.0)
    x_scale = alt.Scale(domain=[lo - pad, hi + 3 * pad], zero=False)
    y = alt.Y("system:N", sort=order, title=None, axis=alt.Axis(labelLimit=240))
    base = alt.Chart(data).encode(y=y)
    tooltip = [
        alt.Tooltip("system:N"),
        alt.Tooltip("rating:Q", format=".0f"),
        alt.Tooltip("ci_low:Q", format=".0f"),
        alt.Tooltip("ci_high:Q", format=".0f"),
        alt.Tooltip("ranks:N", title="rank interval"),
    ]
    rule = base.mark_rule(strokeWidth=2, color=JUDGE).encode(
        x=alt.X(
            "ci_low:Q",
            scale=x_scale,
            title=f"rating ({interval_words(b, 'cluster-bootstrap interval')})",
            axis=alt.Axis(tickCount=5),  # few enough that no label is dropped for overlap
        ),
        x2="ci_high:Q",
    )
    point = base.mark_point(filled=True, size=80, color=JUDGE_DARK).encode(x="rating:Q", tooltip=tooltip)
    label = base.mark_text(align="left", dx=6, fontSize=11, color=INK).encode(x="ci_high:Q", text="ranks:N")
    height = max(120, 22 * b.height)
    # the ratings' mean (rank_systems anchors it: 1,000 by default), the "average system" a reader compares with
    mean = float(b.select(pl.col("rating").mean().fill_null(0.0)).item())
    average = (
        alt.Chart(alt.Data(values=[{"rating": mean}]))
        .mark_rule(color=REFERENCE, strokeDash=[4, 3])
        .encode(x="rating:Q")
    )
    head = alt.TitleParams(
        text=title or "Leaderboard: rating and rank interval", subtitle=f"dashed: the mean rating, {mean:,.0f}"
    )
    return alt.layer(average, rule, point, label).properties(width=width, height=height, title=head)


def win_matrix(
    rates: Any, *, criterion: str | None = None, judge: str | None = None, title: str | None = None
) -> alt.LayerChart:
    """A :func:`rubrictools.win_rates` table as a heatmap: the row system's win rate against
    the column system (ties count half), written as a percentage with the number of
    comparisons; systems ordered by their mean win rate, best first. Blue above 50 %, red below.
    The title names the criterion and judge shown.

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> prefs = pl.DataFrame({"id": range(6), "system_a": "x", "system_b": "y",
    ...                       "preferred": ["A", "A", "B", "A", "tie", "A"]})
    >>> spec = rt.charts.win_matrix(rt.win_rates(prefs, n_resamples=100)).to_dict()
    >>> [c["legend"]["format"] for c in [spec["layer"][0]["encoding"]["color"]]]
    ['%']
    """
    check_title(title)
    alt = alt_module()
    w = chart_frame(rates, name="rates")
    require_columns(w, ("system", "opponent", "win_rate", "n"), "win_matrix")
    scope: list[str] = []
    for name, want in (("criterion", criterion), ("judge", judge)):
        if name in w.columns:
            choices = w[name].unique(maintain_order=True).to_list()
            if want is None and len(choices) > 1:
                raise ValueError(f"rates holds several {name}s {choices}; choose one with {name}=")
            if want is not None:
                w = w.filter(pl.col(name) == want)
            shown = want if want is not None else (choices[0] if choices else None)
            if shown is not None:
                scope.append(f"{name} {shown!r}")
    order = w.group_by("system").agg(pl.col("win_rate").mean()).sort("win_rate", descending=True)["system"].to_list()
    w = w.with_columns(pl.format("{}%\n(n={})", (pl.col("win_rate") * 100).round(0).cast(pl.Int64), "n").alias("text"))
    data = alt.Data(values=values(w.select("system", "opponent", "win_rate", "n", "text")))
    axis = alt.Axis(labelLimit=160, labelAngle=-40)
    base = alt.Chart(data).encode(
        y=alt.Y("system:N", sort=order, title="system", axis=alt.Axis(labelLimit=160)),
        x=alt.X("opponent:N", sort=order, title="opponent", axis=axis),
    )
    rect = base.mark_rect().encode(
        color=alt.Color(
            "win_rate:Q",
            scale=alt.Scale(scheme="purplegreen", domain=[0, 1], domainMid=0.5),  # not blue: blue is the judge
            title=["row's win rate", "(green: the row wins", "more often; purple: less)"],
            legend=alt.Legend(format="%", values=[0, 0.25, 0.5, 0.75, 1]),  # as the cells print it
        ),
        tooltip=[
            alt.Tooltip("system:N"),
            alt.Tooltip("opponent:N"),
            alt.Tooltip("win_rate:Q", format=".1%"),
            alt.Tooltip("n:Q"),
        ],
    )
    text = base.mark_text(fontSize=10, lineBreak="\n").encode(
        text="text:N",
        color=alt.condition("abs(datum.win_rate - 0.5) > 0.3", alt.value("white"), alt.value("black")),
    )
    size = max(160, 56 * len(order))
    where = f" on {', '.join(scope)}" if scope else ""
    return alt.layer(rect, text).properties(width=size, height=size, title=title or f"Win rate of row vs column{where}")


def _zoomed_rate_axis(domain: list[float], anchor: float) -> Any:
    """Percent ticks across ``domain`` every 5, 10 or 20 points (about five ticks), one of them at
    ``anchor`` (the panel's reference line: 50% or 100%)."""
    lo, hi = domain
    step = next(s for s in (0.05, 0.1, 0.2) if (hi - lo) / s <= 6)
    first, last = int(np.ceil((lo - anchor) / step - 1e-9)), int(np.floor((hi - anchor) / step + 1e-9))
    return alt_module().Axis(format="%", values=[round(anchor + i * step, 2) for i in range(first, last + 1)])


_NO_VALUE = {"first_win_rate": "no decisive answer (all ties)", "positional_agreement": "no pair"}


def position_bias(bias: Any, *, by: str | None = None, title: str | None = None, width: int = 260) -> alt.HConcatChart:
    """A :func:`rubrictools.position_bias` table as two panels per group (``by``: default
    the first grouping column): the positional agreement, and the first-position win rate
    against the unbiased 50 % line, each with its bootstrap interval.

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> prefs = pl.DataFrame({"id": [1, 2, 3, 4], "preferred_ab": ["A", "A", "B", "A"],
    ...                       "preferred_ba": ["B", "A", "A", "B"]})
    >>> spec = rt.charts.position_bias(rt.position_bias(prefs, n_resamples=100)).to_dict()
    >>> len(spec["hconcat"])
    2
    """
    check_title(title)
    alt = alt_module()
    t = chart_frame(bias, name="bias")
    require_columns(t, ("positional_agreement", "first_win_rate", "agreement_ci_low", "first_ci_low"), "position_bias")
    stats = {"pairs", "positional_agreement", "agreement_ci_low", "agreement_ci_high", "inconsistent", "decisive"}
    stats |= {"ci_level"}
    stats |= {"first_win_rate", "first_ci_low", "first_ci_high"}
    groups = [c for c in t.columns if c not in stats]
    label = by or "group"
    same = [g for g in groups if len(groups) > 1 and t[g].n_unique() == 1]  # said once, in the title
    groups = [g for g in groups if g not in same] or groups
    if by is None:
        t = t.with_columns(
            (
                pl.concat_str([pl.col(g).cast(pl.String) for g in groups], separator=" · ") if groups else pl.lit("all")
            ).alias(label)
        )
    elif by not in t.columns:
        raise ValueError(f"by={by!r} is not a column of the table ({t.columns})")
    keep = [label, "positional_agreement", "agreement_ci_low", "agreement_ci_high"]
    keep += ["first_win_rate", "first_ci_low", "first_ci_high", "pairs"]
    data = alt.Data(values=values(t.select(keep)))

    def span(cols: list[str]) -> np.ndarray:
        return t.select(cols).to_numpy().astype(float).ravel()

    # the win rate zoomed to the data, symmetric about its 50% line, so an interval of 51-54% shows
    # as a line, not a dot (steps of 5 points); the agreement on its whole 0-100% scale, so a subset
    # at 63% does not look like a collapse beside one at 90% (a zoomed axis had no mark of its cut)
    half = np.nanmax(np.abs(span(["first_win_rate", "first_ci_low", "first_ci_high"]) - 0.5), initial=0.0)
    half = min(0.5, max(0.1, np.ceil(half / 0.05 + 1e-9) * 0.05))
    domains = {"first_win_rate": [0.5 - half, 0.5 + half], "positional_agreement": [0.0, 1.0]}

    rows = alt.Scale(domain=t[label].cast(pl.String).unique(maintain_order=True).to_list())  # both panels alike

    def panel(value: str, lo: str, hi: str, x_title: str, ref: float | None, labels: bool = True) -> Any:
        axis = alt.Axis(labelLimit=260) if labels else None  # the right panel shares the left one's rows
        base = alt.Chart(data).encode(y=alt.Y(f"{label}:N", title=None, sort=None, axis=axis, scale=rows))
        scale = alt.Scale(domain=[round(v, 2) for v in domains[value]])  # unclipped marks: a point at 1 is drawn whole
        layers = [
            base.mark_rule(strokeWidth=2, color=JUDGE).encode(  # the judge's blue, not a bare rule's black
                x=alt.X(
                    f"{lo}:Q",
                    scale=scale,
                    title=x_title,
                    axis=_zoomed_rate_axis(domains[value], 1.0 if ref is None else ref),
                ),
                x2=f"{hi}:Q",
            ),
            base.mark_point(filled=True, size=70, color=JUDGE).encode(
                x=f"{value}:Q",
                tooltip=[alt.Tooltip(f"{label}:N"), alt.Tooltip(f"{value}:Q", format=".3f"), alt.Tooltip("pairs:Q")],
            ),
        ]
        if ref is not None:
            rule = alt.Chart(alt.Data(values=[{"x": ref}])).mark_rule(strokeDash=[4, 3], color=REFERENCE)
            layers.append(rule.encode(x="x:Q"))
        # a row with no value (no decisive answer: every order a tie) says so instead of staying blank
        empty = base.transform_filter(f"!isValid(datum.{value})").mark_text(color=INK_MUTED, fontSize=10)
        layers.append(empty.encode(x=alt.datum(ref if ref is not None else 0.5), text=alt.value(_NO_VALUE[value])))
        return alt.layer(*layers).properties(width=width)

    left = panel(
        "positional_agreement",
        "agreement_ci_low",
        "agreement_ci_high",
        "positional agreement (dashed: never flips)",
        1.0,
    )
    right = panel(
        "first_win_rate", "first_ci_low", "first_ci_high", "first-position win rate (50% = no bias)", 0.5, False
    )
    of = f" of {', '.join(str(t[g][0]) for g in same)}" if same and by is None else ""
    return alt.hconcat(left, right).properties(
        title=title or f"Position bias{of} ({interval_words(t, 'cluster-bootstrap intervals')})"
    )
