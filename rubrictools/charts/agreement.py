"""Charts of agreement with humans: confusion heatmaps, score distributions, MET rates and
judge agreement (reliability diagrams: :mod:`rubrictools.charts.reliability`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from rubrictools.charts.base import alt_module as _alt
from rubrictools.charts.base import chart_frame, check_title, interval_words, rate_axis
from rubrictools.charts.base import values as _values
from rubrictools.deprecation import adapted, renamed
from rubrictools.human_agreement import agreement, criterion_pairs, judge_kappas, score_pairs
from rubrictools.human_agreement.judge_pairs import Weights
from rubrictools.metrics.distribution import cdf_distances_weighted
from rubrictools.metrics.names import METRIC_NAMES
from rubrictools.palette import EMPTY, JUDGE, PEOPLE, PEOPLE_LIGHT
from rubrictools.tables import fixed_decimals

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

    from rubrictools.rubric import Rubric

__all__ = [
    "confusion",
    "judge_agreement",
    "met_rates",
    "score_distributions",
]


def _class_name(code: str) -> pl.Expr:
    """The label of class ``code``; a whole number reads ``4``, not ``4.0``."""
    return pl.col("classes").list.get(pl.col(code)).cast(pl.String).str.replace(r"^(-?\d+)\.0$", "$1")


def confusion(
    verdicts: Any,
    human: Any,
    rubric: Rubric | None = None,
    *,
    criterion: str | list[str] | None = None,
    columns: int = 3,
    title: str | None = None,
) -> alt.FacetChart | alt.LayerChart:
    """Judge-vs-human confusion heatmaps, one per criterion, with counts and row percentages.

    Rows are the human label, columns the judge's; cells show the count and, below it, the
    share of the human label's row. Cells grow with the number of labels (a 5-point scale
    stays readable); whole-number labels read ``1``-``5``, not ``1.0``-``5.0``; panels follow
    the rubric's criterion order. Pairs are formed as in :func:`rubrictools.agreement`
    (errors and NA excluded). The default title names the judge when the verdicts hold one
    (a ``judge`` column with a single value); ``title`` replaces it.

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> v = pl.DataFrame({"id": range(6), "criterion": "polite", "verdict": ["MET", "MET", "UNMET"] * 2})
    >>> h = v.rename({"verdict": "label"}).with_columns(pl.lit("MET").alias("label"))
    >>> spec = rt.charts.confusion(v, h).to_dict()
    >>> spec["title"]
    'polite: judge vs human (count, % of the human row)'
    """

    check_title(title)
    alt = _alt()
    frame = chart_frame(verdicts, name="verdicts")
    judges = frame["judge"].drop_nulls().unique().to_list() if "judge" in frame.columns else []
    models = [j for j in judges if j != "rule"]  # rule rows sit beside any judge's
    if len(models) > 1:
        names = sorted(map(str, models))
        raise ValueError(
            f"confusion draws one judge's verdicts and these hold {len(models)} ({names}): filter them to one "
            "first, e.g. verdicts.filter(pl.col('judge') == ...)"
        )
    if isinstance(columns, bool) or not isinstance(columns, int) or columns < 1:
        raise ValueError(f"columns must be an int >= 1 (panels per row), got {columns!r}")
    if "judge" in frame.columns and (twice := frame.filter(pl.struct("id", "criterion").is_duplicated())).height:
        r = twice.row(0, named=True)
        raise ValueError(
            f"criterion {r['criterion']!r} has several verdicts for submission {r['id']!r} (from "
            f"{sorted(map(str, twice['judge'].unique()))}): confusion draws one verdict per submission; filter to one"
        )
    pairs = criterion_pairs(frame, human, rubric, ["criterion"], "exclude", "each").frame
    if criterion is not None:
        wanted = [criterion] if isinstance(criterion, str) else criterion
        if not isinstance(wanted, (list, tuple)) or not wanted or not all(isinstance(c, str) for c in wanted):
            raise ValueError(f"criterion must be a criterion name or a list of them, got {criterion!r}")
        present = pairs["criterion"].unique().sort().to_list()
        if missing := [c for c in wanted if c not in present]:
            raise ValueError(f"criterion {missing} has no judge/human pairs (criteria with pairs: {present})")
        pairs = pairs.filter(pl.col("criterion").is_in(wanted))
    if pairs.height == 0:
        raise ValueError("no judge/human pairs to plot")
    who = _who(frame, pairs["criterion"].unique().to_list())
    counted = pairs.group_by("criterion", "h_code", "j_code").agg(pl.len().alias("count"))
    percent = (pl.col("row_share") * 100).round(0)
    # every (human, judge) cell of the labels seen, 0 where no pair falls (before: left blank)
    grid = (
        pairs.select("criterion", "h_code")
        .unique()
        .join(pairs.select("criterion", "j_code").unique(), on="criterion")
        .join(pairs.group_by("criterion").agg(pl.col("classes").first()), on="criterion")
    )
    cells = (
        grid.join(counted, on=["criterion", "h_code", "j_code"], how="left")
        .with_columns(pl.col("count").fill_null(0).cast(pl.UInt32))
        .with_columns(
            pl.col("classes")
            .list.get(pl.col("h_code"))
            .cast(pl.String)
            .str.replace(r"^(-?\d+)\.0$", "$1")
            .alias("human"),
            pl.col("classes")
            .list.get(pl.col("j_code"))
            .cast(pl.String)
            .str.replace(r"^(-?\d+)\.0$", "$1")
            .alias("judge"),
            (pl.col("count") / pl.col("count").sum().over("criterion", "h_code")).alias("row_share"),
        )
        .with_columns(
            pl.when((pl.col("row_share") > 0) & (percent == 0))
            .then(pl.format("{}\n<1%", "count"))  # 2 of 797 is not "0%"
            .otherwise(pl.format("{}\n{}%", "count", percent.cast(pl.Int64)))
            .alias("label")
        )
        .select("criterion", "human", "judge", "h_code", "j_code", "count", "row_share", "label")
        .sort("criterion", "h_code", "j_code")
    )
    data = alt.Data(values=_values(cells))
    base = alt.Chart(data).encode(
        x=alt.X("judge:N", sort=alt.EncodingSortField("j_code"), title="judge", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("human:N", sort=alt.EncodingSortField("h_code"), title="human"),
    )
    heat = base.mark_rect().encode(
        color=alt.Color(
            "row_share:Q",
            scale=alt.Scale(domain=[0, 1], scheme="blues"),
            title="share of row",
            legend=alt.Legend(format="%", values=[0, 0.5, 1]),  # as the cells print it
        ),
        tooltip=["human:N", "judge:N", "count:Q", alt.Tooltip("row_share:Q", format=".0%")],
    )
    text = base.mark_text(fontSize=10, lineBreak="\n").encode(
        text="label:N", color=alt.condition("datum.row_share > 0.6", alt.value("white"), alt.value("black"))
    )
    n_classes = int(cells.select(pl.max_horizontal(pl.col("h_code").max(), pl.col("j_code").max())).item()) + 1
    side = max(150, 46 * n_classes)
    layer = alt.layer(heat, text).properties(width=side, height=side)
    if cells["criterion"].n_unique() > 1:
        present = cells["criterion"].unique(maintain_order=True).to_list()
        order = [n for n in (rubric.names if rubric is not None else []) if n in present]
        order += [c for c in present if c not in order]
        return (
            layer.facet(facet=alt.Facet("criterion:N", title=None, sort=order), columns=columns)
            .resolve_scale(x="independent", y="independent")
            .properties(title=title or f"{_CAPITAL.get(who, who)} vs human labels (count, % of the human row)")
        )
    return layer.properties(title=title or f"{cells['criterion'][0]}: {who} vs human (count, % of the human row)")


_CAPITAL = {"judge": "Judge", "rules": "Rules"}  # a model's name keeps its own case


def _who(frame: pl.DataFrame, shown: list[str]) -> str:
    """Who gave the verdicts drawn: the model's name, "rules", both, or "judge" when unnamed."""
    on = frame.filter(pl.col("criterion").is_in(shown)) if "judge" in frame.columns else frame.clear()
    judges = on["judge"].drop_nulls().unique().sort().to_list() if "judge" in on.columns else []
    named = [str(j) for j in judges if j != "rule"]
    who = named[0] if named else ("rules" if judges else "judge")
    return f"{who} and rules" if named and "rule" in judges else who


def score_distributions(
    verdicts: Any,
    human: Any,
    rubric: Rubric | None = None,
    *,
    bins: int | None = None,
    human_scores: Any = None,
    title: str | None = None,
) -> alt.Chart:
    """Histograms of judge and human rubric scores on the same items, each mean marked by a
    dashed line, with the mean difference, the Wasserstein distance and the KS statistic in
    the title.

    ``bins``: default one bar per distinct score when there are at most 12 (ratings), else
    about Sturges' ``ceil(log2(n)) + 1`` bars, of a round width on round edges so the bars line
    up with the ticks: 140 scores in [0, 1] get 10 bars of 0.1, not 20 jagged ones. ``title``:
    the chart's heading (say what and whose); the statistics go below it either way. ``n``
    counts ratings: an item several people rated counts once per rater, judge side too, and the
    y axis then says "share of ratings" (else "share of items").

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> rubric = rt.Rubric.from_dict([{"name": "a", "requirement": "r"}, {"name": "b", "requirement": "s"}])
    >>> v = pl.DataFrame({"id": [1, 1, 2, 2, 3, 3], "criterion": ["a", "b"] * 3,
    ...                   "verdict": ["MET", "MET", "MET", "UNMET", "UNMET", "UNMET"]})
    >>> h = v.rename({"verdict": "label"})
    >>> spec = rt.charts.score_distributions(v, h, rubric).to_dict()
    >>> "layer" in spec or "mark" in spec
    True
    """
    check_title(title)

    alt = _alt()
    pairs = score_pairs(verdicts, human, rubric, [], "each", human_scores).drop_nulls(["h_value", "j_value"])
    if pairs.height == 0:
        raise ValueError("no scored pairs to plot")
    import numpy as np

    hs, js = pairs["h_value"].to_numpy(), pairs["j_value"].to_numpy()
    w1, ks = cdf_distances_weighted(js, hs, np.ones((1, js.size)), np.ones((1, hs.size)))
    lo, hi = float(min(hs.min(), js.min())), float(max(hs.max(), js.max()))
    if bins is not None and bins < 1:
        raise ValueError(f"bins must be >= 1, got {bins}")
    distinct = np.unique(np.concatenate([hs, js]))
    if bins is None and distinct.size <= 12:  # ratings: one bar per value, centred on it
        step = float(np.diff(distinct).min()) if distinct.size > 1 else 1.0
        edges = np.concatenate([distinct - step / 2, [distinct[-1] + step / 2]])
    else:
        n_bins = bins or int(np.ceil(np.log2(max(hs.size, 2)))) + 1
        edges = _nice_edges(lo, hi if hi > lo else lo + 1, n_bins)
    rows = []
    for who, x in (("judge", js), ("human", hs)):
        counts, _ = np.histogram(x, bins=edges)
        rows += [
            {"who": who, "bin_start": float(edges[i]), "bin_end": float(edges[i + 1]), "share": float(c / x.size)}
            for i, c in enumerate(counts)
        ]
    colour = alt.Color(
        "who:N",
        title=None,
        scale=alt.Scale(domain=["human", "judge"], range=[PEOPLE_LIGHT, JUDGE]),  # as in forest(): people grey
        legend=alt.Legend(labelExpr="datum.label == 'human' ? 'human (bars)' : 'judge (line)'"),
    )
    # the judge as a step outline over the humans' bars (the two never mix into a third colour);
    # a closing point at the last bin's end lets the step line cover that bin too
    last = [{**r, "bin_start": r["bin_end"], "closing": True} for r in rows if r["who"] == "judge"][-1:]
    base = alt.Chart(alt.Data(values=rows + last)).encode(
        color=colour, tooltip=["who:N", alt.Tooltip("bin_start:Q", format=".2f"), alt.Tooltip("share:Q", format=".1%")]
    )
    domain = alt.Scale(domain=[float(edges[0]), float(edges[-1])])
    x = alt.X("bin_start:Q", title="rubric score", bin="binned", scale=domain)
    unit = "items" if pairs["id"].n_unique() == pairs.height else "ratings"  # as n counts them
    y = alt.Y("share:Q", title=f"share of {unit}", stack=None, axis=alt.Axis(format="%"))
    unit += "" if unit == "items" else " (an item once per rater)"
    bars = base.transform_filter(alt.datum.who == "human").mark_bar(binSpacing=1).encode(x=x, x2="bin_end:Q", y=y)
    line = (
        base.transform_filter(alt.datum.who == "judge")
        .mark_line(interpolate="step-after", strokeWidth=2)
        .encode(x=alt.X("bin_start:Q", scale=domain), y=y)
    )
    mean_rows = [{"who": "human", "mean": float(hs.mean())}, {"who": "judge", "mean": float(js.mean())}]
    means = alt.Chart(alt.Data(values=mean_rows))
    mean_rules = means.mark_rule(strokeDash=[5, 3], strokeWidth=2).encode(
        x=alt.X("mean:Q", scale=domain), color=colour, tooltip=["who:N", alt.Tooltip("mean:Q", format=".3f")]
    )
    gap = float(js.mean() - hs.mean())
    stats = [
        f"dashed: means, judge \u2212 human {gap:+.3f}; n = {pairs.height:,} {unit}",
        f"Wasserstein distance {w1[0]:.3f} (how far, in score units, one distribution must move to become the other); "
        f"Kolmogorov-Smirnov {ks[0]:.3f} (the largest gap between their cumulative shares)",
    ]
    heading = alt.Title(title or "Rubric scores: judge vs human", subtitle=stats)
    return alt.layer(bars, line, mean_rules).properties(width=420, height=200, title=heading)


def _nice_edges(lo: float, hi: float, n_bins: int) -> Any:
    """About ``n_bins`` bins of the round width (1, 2, 2.5 or 5 times a power of 10) nearest the
    even one, on round edges, so bars line up with the axis ticks (not 1/9-wide bins at 0.111)."""
    import numpy as np

    raw = (hi - lo) / max(n_bins, 1)
    power = 10.0 ** np.floor(np.log10(raw))
    step = min((m * power for m in (1.0, 2.0, 2.5, 5.0, 10.0)), key=lambda w: abs(np.log(w / raw)))  # nearest
    start, stop = np.floor(lo / step + 1e-9) * step, np.ceil(hi / step - 1e-9) * step
    return np.linspace(start, stop, round(float((stop - start) / step)) + 1)


@adapted(renamed(bootstrap="n_resamples"))
def met_rates(
    verdicts: Any,
    human: Any,
    rubric: Rubric | None = None,
    *,
    n_resamples: int = 500,
    ci: float = 0.95,
    seed: int | None = 0,
    title: str | None = None,
) -> alt.LayerChart:
    """Per-criterion MET rate of the judge and of the humans on the same pairs, with
    bootstrap intervals: a judge more lenient (or strict) than people shows at a glance.

    ``n_resamples``, ``ci``, ``seed``: the bootstrap's resamples; the interval level (printed on
    the axis); its seed (``0`` by default: identical calls give identical intervals; ``None``
    draws afresh); ``title``: the chart's heading (say which judge and data).

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> v = pl.DataFrame({"id": range(8), "criterion": "polite", "verdict": ["MET", "UNMET"] * 4})
    >>> h = v.rename({"verdict": "label"})
    >>> chart = rt.charts.met_rates(v, h, n_resamples=100)
    >>> chart.to_dict()["layer"][0]["encoding"]["x"]["scale"]["domain"]
    [0, 1]
    """
    check_title(title)

    alt = _alt()
    t = agreement(
        verdicts,
        human,
        rubric,
        level="criterion",
        metrics=["judge_rate", "human_rate"],
        n_resamples=n_resamples,
        ci=ci,
        seed=seed,
    )
    t = t.filter(pl.col("value").is_not_null()).with_columns(
        pl.col("metric").replace({"judge_rate": "judge", "human_rate": "human"}).alias("who")
    )
    if t.height == 0:
        raise ValueError("no binary criteria with judge/human pairs")
    data = alt.Data(values=_values(t.select("criterion", "who", "value", "ci_low", "ci_high", "n")))
    color = alt.Color(  # the judge blue and people grey, as in forest() and score_distributions()
        "who:N", title=None, scale=alt.Scale(domain=["judge", "human"], range=[JUDGE, PEOPLE])
    )
    order = t["criterion"].unique(maintain_order=True).to_list()  # rubric order, not alphabetical
    base = alt.Chart(data).encode(y=alt.Y("criterion:N", title=None, sort=order), yOffset="who:N", color=color)
    rule = base.mark_rule(strokeWidth=2).encode(
        x=alt.X(
            "ci_low:Q",
            title=f"MET rate ({interval_words(t, 'CI')})",
            scale=alt.Scale(domain=[0, 1]),
            axis=rate_axis(),
        ),
        x2="ci_high:Q",
    )
    # a second cue besides colour: the judge a circle, the humans a square, named in the legend
    shape = alt.Shape("who:N", title=None, scale=alt.Scale(domain=["judge", "human"], range=["circle", "square"]))
    point = base.mark_point(filled=True, size=60).encode(
        x="value:Q", shape=shape, tooltip=["criterion:N", "who:N", alt.Tooltip("value:Q", format=".1%"), "n:Q"]
    )
    return alt.layer(rule, point).properties(width=360, title=title or "MET rate: judge vs humans on the same items")


def judge_agreement(
    verdicts: Any, rubric: Rubric | None = None, *, criterion: str | None = None, weights: Weights = "auto"
) -> alt.LayerChart:
    """Heatmap of pairwise Cohen's kappa between the judges of an ensemble (pooled over
    criteria, or one ``criterion``), as :func:`rubrictools.judge_kappas` computes it: quadratic
    weights for ordinal criteria by default (``weights=``), named in the title. The
    ``ensemble`` rows themselves are left out. Every cell prints its kappa; the diagonal (a
    judge with itself) is grey and outside the colour scale, which spans the observed kappas
    (and 0).

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> v = pl.DataFrame({"id": [1, 2, 3, 4] * 2, "criterion": "polite", "judge": ["a"] * 4 + ["b"] * 4,
    ...                   "verdict": ["MET", "UNMET", "MET", "MET", "MET", "UNMET", "UNMET", "MET"]})
    >>> spec = rt.charts.judge_agreement(v).to_dict()
    >>> spec["title"], sorted({r["label"] for r in spec["data"]["values"]})
    ("Judge-vs-judge Cohen's kappa (mean over criteria, weighted by items)", ['0.50', 'self'])
    """

    alt = _alt()
    pairs = judge_kappas(verdicts, rubric, criterion=criterion, weights=weights)
    judges = pairs["judge_a"].unique(maintain_order=True).to_list()
    kind = pairs["weights"][0]
    n_self = [{"judge_a": j, "judge_b": j, "kappa": 1.0, "n": None} for j in judges]
    df = pl.concat([pairs.drop("weights"), pl.DataFrame(n_self, schema=pairs.drop("weights").schema)]).with_columns(
        pl.when(pl.col("judge_a") == pl.col("judge_b"))
        .then(pl.lit("self"))
        .otherwise(fixed_decimals(pl.col("kappa")).fill_null("–"))
        .alias("label"),
        # the diagonal (a judge with itself, always 1) stays out of the colour scale, so the
        # real kappas spread over the whole colour range instead of all looking pale
        pl.when(pl.col("judge_a") == pl.col("judge_b")).then(None).otherwise(pl.col("kappa")).alias("kappa"),
    )
    arr = df["kappa"].drop_nulls().to_numpy()
    lo, hi = (min(0.0, float(arr.min())), max(float(arr.max()), 0.05)) if arr.size else (0.0, 1.0)
    data = alt.Data(values=_values(df))
    base = alt.Chart(data).encode(
        x=alt.X("judge_b:N", title=None, sort=judges, axis=alt.Axis(labelAngle=-30, labelLimit=0)),
        y=alt.Y("judge_a:N", title=None, sort=judges, axis=alt.Axis(labelLimit=0)),
    )
    heat = (
        base.transform_filter("isValid(datum.kappa)")
        .mark_rect()
        .encode(
            color=alt.Color("kappa:Q", scale=alt.Scale(domain=[lo, hi], scheme="blues"), title=_KAPPA_NAME[kind]),
            tooltip=["judge_a:N", "judge_b:N", alt.Tooltip("kappa:Q", format=".3f"), "n:Q"],
        )
    )
    diag = base.transform_filter("!isValid(datum.kappa)").mark_rect(color=EMPTY)
    mid = (lo + hi) / 2
    text = base.mark_text(fontSize=11).encode(
        text="label:N",
        color=alt.condition(f"isValid(datum.kappa) && datum.kappa > {mid}", alt.value("white"), alt.value("black")),
    )
    scope = f" on {criterion}" if criterion else " (mean over criteria, weighted by items)"
    return alt.layer(diag, heat, text).properties(
        width=60 * len(judges), height=50 * len(judges), title=f"Judge-vs-judge {_KAPPA_NAME[kind]}{scope}"
    )


_KAPPA_NAME = {
    "none": METRIC_NAMES["cohen_kappa"],
    "linear": METRIC_NAMES["kappa_linear"],
    "quadratic": METRIC_NAMES["kappa_quadratic"],
}
