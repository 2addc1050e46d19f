"""The cost and latency of a grading run at a glance (:func:`run_summary`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from rubrictools.charts.base import alt_module as _alt
from rubrictools.charts.base import chart_frame
from rubrictools.charts.base import values as _values
from rubrictools.palette import BLUISH_GREEN, INK_MUTED, JUDGE, PINK, SAND, WINE

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

__all__ = ["run_summary"]


def _note(text: str, title: str) -> alt.Chart:
    """A narrow panel that says in words (lines split at ``\\n``) why there is nothing to draw,
    instead of an empty axis; narrow, so three panels fit a notebook's width."""
    alt = _alt()
    return (
        alt.Chart(alt.Data(values=[{"t": text}]))
        .mark_text(fontSize=12, color=INK_MUTED, align="center", lineBreak="\n")
        .encode(text="t:N")
        .properties(width=170, height=60, title=title)
    )


_RULE, _SCRIPTED = "no call (rule)", "no call (scripted judge)"
_OUTCOMES = {  # one colour, one meaning, in every panel of the run summary
    "new call": JUDGE,
    "cache hit": BLUISH_GREEN,
    "error": WINE,
    _RULE: SAND,  # a light sand: grey is kept for people
    _SCRIPTED: PINK,
}
_SPEND = {"spent": JUDGE, "saved by cache": BLUISH_GREEN}


def _outcomes(v: pl.DataFrame) -> pl.DataFrame:
    """Verdict rows per judge and outcome: a new call, a cache hit, an error, or no call at
    all (a rule criterion; a scripted judge, ``attempts`` 0), each named apart."""
    scripted = pl.lit(False)
    if "attempts" in v.columns:
        scripted = (pl.col("attempts").fill_null(0) == 0) & ~pl.col("cached").fill_null(False)
    outcome = (
        pl.when(pl.col("error").is_not_null())
        .then(pl.lit("error"))
        .when(pl.col("cached").fill_null(False))
        .then(pl.lit("cache hit"))
        .when(pl.col("judge") == "rule")
        .then(pl.lit(_RULE))
        .when(scripted)
        .then(pl.lit(_SCRIPTED))
        .otherwise(pl.lit("new call"))
    )
    return v.with_columns(outcome.alias("outcome")).group_by("judge", "outcome", maintain_order=True).len()


def _latency(v: pl.DataFrame, per: dict[str, int]) -> alt.Chart | str:
    """Histogram of the latencies of new calls, or the sentence that says why there is none
    (``per``: verdict rows per outcome)."""
    import numpy as np

    alt = _alt()
    lat = v.filter(~pl.col("cached").fill_null(False) & pl.col("latency_s").is_not_null() & (pl.col("judge") != "rule"))
    x = lat["latency_s"].to_numpy()
    new_calls = per.get("new call", 0)
    if new_calls == 0:
        sources = (("cache hit", "the cache"), (_RULE, "rules"), (_SCRIPTED, "a scripted judge"))
        where = [w for k, w in sources if per.get(k)]
        return f"no new call: every answer came from {' and '.join(where) or 'nowhere (all errors)'}"
    if not x.size:
        return f"no latency recorded for the {new_calls:,} new calls (batch lines are answered in bulk, untimed)"
    if not x.max() > 1e-3:
        return f"every one of the {x.size:,} latencies is under 1 ms (a scripted or in-process judge)"
    edges = np.histogram_bin_edges(x, bins=min(30, max(5, int(np.sqrt(x.size)))), range=(0.0, float(x.max())))
    per_bin, _ = np.histogram(x, bins=edges)
    rows = [{"start": float(edges[i]), "end": float(edges[i + 1]), "calls": int(n)} for i, n in enumerate(per_bin)]
    p50, p95 = (float(np.percentile(x, q)) for q in (50, 95))
    return (
        alt.Chart(alt.Data(values=rows))
        .mark_bar(color=_OUTCOMES["new call"])
        .encode(x=alt.X("start:Q", bin="binned", title="latency (s)"), x2="end:Q", y=alt.Y("calls:Q", title="calls"))
        .properties(width=480, height=120, title=f"Latency of new calls: p50 {p50:.2f} s, p95 {p95:.2f} s")
    )


def run_summary(verdicts: Any) -> alt.VConcatChart:
    """Cost and latency of a grading run: verdict rows per judge by outcome (new call, cache
    hit, error, no call for rule criteria and scripted judges); dollars spent and saved by the
    cache per judge; and the latency distribution of the calls actually made. One colour
    means one thing in every panel (blue: new calls and what they cost; green: the cache). A
    run that cost nothing, or whose model has no price, says so in words; a run without
    latencies to draw says why in its subtitle instead of an empty panel.

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> rubric = rt.Rubric.from_dict([{"name": "thanks", "requirement": "Thanks the customer"}])
    >>> judge = rt.ScriptedJudge(rule=lambda text, c: "MET" if "Thanks" in text else "UNMET")
    >>> v = rt.grade(pl.DataFrame({"submission": ["Thanks!", "No."]}), rubric, model=judge, progress=False,
    ...              record=False)
    >>> len(rt.charts.run_summary(v).to_dict()["vconcat"]) >= 1
    True
    """
    alt = _alt()
    v = chart_frame(verdicts, name="verdicts")
    need = {"judge", "cached", "error", "cost_usd", "latency_s"}
    if not need <= set(v.columns):
        raise ValueError(f"run_summary needs a graded verdict table with {sorted(need)}")
    v = v.filter(pl.col("judge") != "ensemble")
    counts = _outcomes(v)
    present = [o for o in _OUTCOMES if o in set(counts["outcome"].to_list())]
    a = (
        alt.Chart(alt.Data(values=_values(counts)))
        .mark_bar()
        .encode(
            x=alt.X("len:Q", title="verdict rows", axis=alt.Axis(tickMinStep=1, format="d")),
            y=alt.Y("judge:N", title=None),
            color=alt.Color(
                "outcome:N",
                title=None,
                scale=alt.Scale(domain=present, range=[_OUTCOMES[o] for o in present]),
                legend=alt.Legend(orient="bottom", columns=2, labelLimit=0),
            ),
            tooltip=["judge:N", "outcome:N", alt.Tooltip("len:Q", title="rows")],
        )
        .properties(width=220, title="Verdict rows per judge, by how each was obtained")
    )
    paid = v.filter(pl.col("judge") != "rule")
    cost = (
        paid.group_by("judge", maintain_order=True)
        .agg(
            pl.col("cost_usd").filter(~pl.col("cached").fill_null(False)).sum().alias("spent"),
            pl.col("cost_usd").filter(pl.col("cached").fill_null(False)).sum().alias("saved by cache"),
        )
        .unpivot(index="judge", variable_name="kind", value_name="usd")
    )
    spent = cost.filter(pl.col("kind") == "spent")["usd"]
    kinds = [k for k in _SPEND if cost.filter((pl.col("kind") == k) & (pl.col("usd").fill_null(0) != 0)).height]
    b = (
        alt.Chart(alt.Data(values=_values(cost)))
        .mark_bar()
        .encode(
            x=alt.X("usd:Q", title="USD"),
            y=alt.Y("judge:N", title=None),
            color=alt.Color(
                "kind:N",
                title=None,
                scale=alt.Scale(domain=kinds, range=[_SPEND[k] for k in kinds]),
                legend=alt.Legend(orient="bottom") if len(kinds) > 1 else None,  # one kind: the title says it
            ),
            tooltip=["judge:N", "kind:N", alt.Tooltip("usd:Q", format="$.4f")],
        )
        .properties(
            width=220,
            title=[
                f"Cost: ${spent.sum():.4f} as recorded",
                "each call's tokens at its price (batch calls at the batch price)",
            ],
        )
    )
    per = {k: int(n) for k, n in counts.group_by("outcome").agg(pl.col("len").sum()).iter_rows()}
    calls = sum(per.get(k, 0) for k in ("new call", "cache hit", "error"))
    if calls == 0:
        b = _note("no cost: no model was called\n(rules or a scripted judge)", "Cost")
    elif paid["cost_usd"].null_count() == paid.height:
        b = _note("no cost recorded:\nno price for the model", "Cost")
    elif not cost["usd"].fill_null(0).abs().sum() > 0:
        b = _note("$0: every call was free\n(a local or free model)", "Cost")
    c = _latency(v, per)
    top = alt.hconcat(a, b).resolve_scale(color="independent")
    if isinstance(c, str):  # nothing to draw: said in words, not an empty panel
        return alt.vconcat(top).properties(title=alt.Title("Run summary", subtitle=f"Latency: {c}"))
    # rows and cost side by side (legends below), latency underneath: fits a notebook's width
    return alt.vconcat(top, c).resolve_scale(color="independent")
