"""How well does each criterion of a rubric work? A report from verdicts (and human labels).

:func:`rubric_report` answers, per criterion:

* **discrimination**: the MET rate (binary) or mean score fraction, its spread, and the
  discrimination entropy of its verdicts, ``H = -sum_l p_l log p_l / log K`` over the shares
  ``p_l`` of its ``K`` labels (1: every label equally often; 0: always the same verdict); a
  criterion whose verdict is the same for (almost) every submission cannot rank anything;
* **redundancy**: the largest Pearson correlation of its score fractions with another
  criterion's, over the submissions both were judged on;
* **judge consistency**: when several judges graded, their agreement on it (Fleiss' kappa);
* **agreement with humans** (with ``human=``): Cohen's kappa and accuracy of the judge
  against the human labels;
* **cost of disagreement** (with ``human=``): how much the score-level Pearson correlation
  with the humans' rubric scores would rise if the judge had answered *this* criterion as
  each human did (the other criteria unchanged). The criteria with the largest gain are the
  ones to fix first.

Example
-------
>>> import rubrictools as rt
>>> d = rt.datasets.load("demo_support")
>>> rep = rt.rubric_report(d.verdicts, d.human, d.rubric)
>>> rep.weakest(1)
['polite']
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from rubrictools import metrics
from rubrictools.deprecation import adapted, moved_last
from rubrictools.diagnostics.report_chart import report_chart
from rubrictools.human_agreement import agreement, human_frame, inter_rater
from rubrictools.rubric import Rubric as _Rubric
from rubrictools.rubric import score
from rubrictools.tables import html_table
from rubrictools.verdicts import HOLISTIC, validate_verdicts

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

    from rubrictools.rubric import Rubric

__all__ = ["RubricReport", "rubric_report"]


@dataclass
class RubricReport:
    """Per-criterion quality table (``table``), criterion correlations (``correlations``),
    the findings in words (``findings``) and the rubric score's ``discrimination`` (rubrify's
    meta-metric: the normalised entropy of the scores over ten bins of the scale, 0 = every
    submission the same score, 1 = spread evenly; :func:`rubrictools.metrics.discrimination`).
    Renders as HTML in Jupyter; ``chart()`` draws it."""

    table: pl.DataFrame
    correlations: pl.DataFrame
    rubric: Any = field(repr=False)
    findings: list[str] = field(default_factory=list)
    discrimination: float | None = None

    def weakest(self, n: int = 3) -> list[str]:
        """The ``n`` criteria whose wording to fix first: lowest kappa with humans, else lowest
        consistency across judges, else largest cost of disagreement, else least spread.
        Criteria that never discriminate (whose kappa means little) come after the others."""
        t = self.table
        for col, desc in (("human_kappa", False), ("judge_kappa", False), ("score_gain", True)):
            if col in t.columns and t[col].drop_nulls().len():
                ranked = t.filter(pl.col(col).is_not_null()).sort(
                    [pl.col("discriminates").not_(), pl.col(col)], descending=[False, desc], maintain_order=True
                )
                return ranked["criterion"].head(n).to_list()
        return t.sort("spread")["criterion"].head(n).to_list()

    def chart(self) -> alt.HConcatChart:
        """Bars of agreement with humans (or MET rates) per criterion, each labelled with its
        value and its flags (coloured by the first flag, so the colour says why; the criterion
        :meth:`weakest` names first is outlined and labelled "fix first"), with the kappa's 95%
        interval when the report has one, beside a heatmap of the criterion correlations that
        prints every r (the diagonal, always 1, is left out of the colour scale)."""
        return report_chart(self.table, self.correlations, self.weakest(1))

    def _repr_html_(self) -> str:
        items = "".join(f"<li>{html.escape(f)}</li>" for f in self.findings) or "<li>no problems found</li>"
        if self.discrimination is not None:
            items += (
                f"<li>how the rubric scores spread: {self.discrimination:.2f} (the entropy of the scores over ten "
                "bins of the scale, 0: every submission the same score, 1: spread evenly over the bins)</li>"
            )
        shown = [c for c in _SHOWN if c in self.table.columns and self.table[c].null_count() < self.table.height]
        compact = self.table.select(shown).with_columns(pl.col("flags").list.join(", "))
        # the partner is picked by |r|, so a strong negative r shows too: the headers say so
        compact = compact.rename({k: v for k, v in _HEADERS.items() if k in shown})
        note = f"{len(shown)} of {len(self.table.columns)} columns; all of them in report.table"
        return f"<div><b>Rubric report</b><ul>{items}</ul>{html_table(compact, note=note)}</div>"

    def __repr__(self) -> str:
        return "RubricReport\n" + "\n".join(f"- {f}" for f in self.findings) + f"\n{self.table}"


_SHOWN = (
    "criterion", "weight", "met_rate", "discriminates", "human_kappa", "score_gain", "judge_kappa", "most_correlated",
    "correlation", "flags",
)  # fmt: skip
"""The report's columns shown in a notebook (the full table stays in ``report.table``)."""

_HEADERS = {
    "met_rate": "judge's MET rate (mean value)",
    "most_correlated": "strongest |r| with",
    "correlation": "Pearson r with it",
}
"""Headers in the notebook view for columns whose snake_case name would mislead."""


def _select(v: pl.DataFrame, judge: str | None) -> pl.DataFrame:
    v = v.filter(pl.col("criterion") != HOLISTIC)
    if judge is not None:
        return v.filter((pl.col("judge") == judge) | (pl.col("judge") == "rule"))
    judges = set(v["judge"].drop_nulls().unique().to_list())
    if "ensemble" in judges:
        return v.filter(pl.col("judge").is_in(["ensemble", "rule"]))
    if len(judges - {"rule"}) > 1:
        raise ValueError(f"verdicts come from several judges {sorted(judges)}; pass judge=... or aggregate them")
    return v


def _correlations(wide: pl.DataFrame, names: list[str]) -> pl.DataFrame:
    """Pairwise-complete Pearson correlations of the criteria's score fractions (long form)."""
    x = wide.select(names).to_numpy().astype(float)
    rows = []
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            ok = np.isfinite(x[:, i]) & np.isfinite(x[:, j])
            r = float("nan")
            if ok.sum() >= 3 and x[ok, i].std() > 0 and x[ok, j].std() > 0:
                r = 1.0 if i == j else float(np.corrcoef(x[ok, i], x[ok, j])[0, 1])
            rows.append((a, b, r))
    return pl.DataFrame(rows, schema={"a": pl.String, "b": pl.String, "r": pl.Float64}, orient="row").with_columns(
        pl.col("r").fill_nan(None)
    )


def _score_gain(rubric: Rubric, v: pl.DataFrame, human: pl.DataFrame) -> dict[str, float]:
    """Pearson(judge score, rater score) when one criterion takes each rater's label,
    minus the same correlation with the judge's own verdicts, per criterion."""

    names = [c.name for c in rubric]
    h = human.select("id", "criterion", pl.col("rater").cast(pl.String), pl.col("label").alias("h_label"))
    pairs = h.select("id", "rater").unique(maintain_order=True)
    base = v.select("id", "criterion", "verdict", "error").join(pairs, on="id", how="inner")

    def per_rater(table: pl.DataFrame) -> pl.DataFrame:
        """Score each (id, rater) as its own submission."""
        pair_id = pl.concat_str(pl.col("id").cast(pl.String), pl.lit("\x1f"), pl.col("rater")).alias("id")
        return score(table.with_columns(pair_id).drop("rater"), rubric)

    human_scores = per_rater(h.rename({"h_label": "verdict"})).filter(pl.col("score").is_not_null())

    def corr(table: pl.DataFrame) -> float:
        sc = per_rater(table)
        both = sc.join(human_scores.select("id", pl.col("score").alias("h")), on="id", how="inner").drop_nulls(
            ["score", "h"]
        )
        if both.height < 3 or both["score"].std() == 0 or both["h"].std() == 0:
            return float("nan")
        return float(np.corrcoef(both["score"].to_numpy(), both["h"].to_numpy())[0, 1])

    with_h = base.join(h, on=["id", "criterion", "rater"], how="left")
    r0 = corr(base)
    out = {}
    for n in names:
        swap = (pl.col("criterion") == n) & pl.col("h_label").is_not_null()
        t = with_h.with_columns(
            pl.when(swap).then(pl.col("h_label")).otherwise(pl.col("verdict")).alias("verdict"),
            pl.when(swap).then(None).otherwise(pl.col("error")).alias("error"),
        ).drop("h_label")
        out[n or ""] = corr(t) - r0
    return out


def rubric_like(x: Any) -> bool:
    """A rubric, or what reads as one: a dict with ``criteria``, or a non-empty list of criterion
    dicts (each with a ``requirement``). A verdict table (rows with ``criterion``) is not."""
    if isinstance(x, _Rubric):
        return True
    if isinstance(x, dict):
        return "criteria" in x
    return (
        isinstance(x, list)
        and bool(x)
        and all(isinstance(c, dict) and "requirement" in c and "verdict" not in c for c in x)
    )


@adapted(moved_last("rubric", rubric_like))
def rubric_report(
    verdicts: Any,
    human: Any = None,
    rubric: Rubric | Any = None,
    *,
    judge: str | None = None,
    min_spread: float = 0.05,
    redundancy: float = 0.8,
    low_kappa: float = 0.4,
    n_resamples: int = 1000,
) -> RubricReport:
    """Per-criterion quality of a rubric from a verdict table (and, optionally, human labels).

    Parameters
    ----------
    verdicts
        A verdict table. With several judges, the ensemble rows are assessed (or ``judge=``)
        and judge consistency is measured across the judges.
    human
        Optional long label table ``id, criterion, label[, rater]`` (``None``: none).
    rubric
        The rubric the verdicts were graded with (required; a :class:`~rubrictools.Rubric`
        or a rubric dict).
    min_spread
        A criterion "never discriminates" when its MET rate (or mean fraction) is within
        ``min_spread`` of 0 or 1, or its fractions' standard deviation is below it.
    redundancy
        Flag pairs of criteria whose fractions correlate at ``|r| >= redundancy``.
    low_kappa
        Flag criteria whose kappa with humans (or across judges) is below this.
    n_resamples
        Cluster-bootstrap resamples (seed 0) of the 95% interval of each kappa with humans
        (``human_kappa_low``, ``human_kappa_high``; drawn in :meth:`RubricReport.chart`);
        0: no interval.

    Returns
    -------
    RubricReport
        ``table`` has one row per criterion: ``criterion, kind, weight, n, met_rate, spread,
        entropy`` (null for numeric criteria), ``discriminates, most_correlated, correlation, judge_kappa,
        human_kappa, human_kappa_low, human_kappa_high, human_accuracy, score_gain, flags`` (columns that need
        human labels or several judges are null without them).

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> rubric = rt.Rubric.from_dict([{"name": "accurate", "requirement": "States the correct refund window"},
    ...                               {"name": "thanks", "requirement": "Thanks the customer"}])
    >>> df = pl.DataFrame({"id": [1, 2, 3, 4], "submission": ["Thanks, done.", "No.", "Thanks!", "Later."]})
    >>> judge = rt.ScriptedJudge(rule=lambda text, c: "MET" if "Thanks" in text else "UNMET")
    >>> v = rt.grade(df, rubric, model=judge, id_column="id", progress=False, record=False)
    >>> human = pl.DataFrame({"id": [1, 2, 3, 4] * 2, "criterion": ["accurate"] * 4 + ["thanks"] * 4,
    ...                       "label": ["MET", "UNMET", "UNMET", "MET", "MET", "UNMET", "MET", "UNMET"]})
    >>> report = rt.rubric_report(v, human, rubric)
    >>> report.table.select("criterion", "human_kappa").rows(), report.weakest(1)
    ([('accurate', 0.0), ('thanks', 1.0)], ['accurate'])
    """

    if rubric is None:
        raise TypeError("rubric_report needs rubric= (the rubric the verdicts were graded with)")
    rubric = rubric if isinstance(rubric, _Rubric) else _Rubric.from_dict(rubric)
    allv = validate_verdicts(verdicts, rubric)
    v = _select(allv, judge)
    names = list(rubric.names)
    ok = v.filter(pl.col("error").is_null())
    stats = ok.group_by("criterion").agg(
        pl.len().alias("n"),
        pl.col("value").mean().alias("met_rate"),
        pl.col("value").std(ddof=0).alias("spread"),
    )
    n_labels = {c.name: max(len(c.labels) - ("CANNOT_ASSESS" in c.labels), 2) for c in rubric if c.range is None}
    shares = (
        ok.group_by("criterion", "verdict")
        .agg(pl.len().alias("k"))
        .with_columns((pl.col("k") / pl.col("k").sum().over("criterion")).alias("p"))
    )
    entropy = shares.group_by("criterion").agg((-(pl.col("p") * pl.col("p").log())).sum().alias("h"))
    entropy = entropy.with_columns(
        (pl.col("h") / pl.col("criterion").replace_strict(n_labels, default=None, return_dtype=pl.Float64).log()).alias(
            "entropy"
        )
    ).select("criterion", "entropy")
    stats = stats.join(entropy, on="criterion", how="left")
    wide = ok.pivot(on="criterion", index="id", values="value", aggregate_function="first")
    for n in names:
        if n not in wide.columns:
            wide = wide.with_columns(pl.lit(None, dtype=pl.Float64).alias(n))
    corr = _correlations(wide, names)
    top = (
        corr.filter((pl.col("a") != pl.col("b")) & pl.col("r").is_not_null())
        .sort(pl.col("r").abs(), descending=True)
        .group_by("a", maintain_order=True)
        .first()
        .select(pl.col("a").alias("criterion"), pl.col("b").alias("most_correlated"), pl.col("r").alias("correlation"))
    )
    table = (
        rubric.criteria_frame()
        .select("criterion", "kind", "weight")
        .join(stats, on="criterion", how="left")
        .join(top, on="criterion", how="left")
    )

    # consistency across judges
    judges = [j for j in allv["judge"].drop_nulls().unique().to_list() if j not in ("ensemble", "rule")]
    jk: dict[str, float] = {}
    if len(judges) > 1:
        ratings = allv.filter(pl.col("judge").is_in(judges) & pl.col("error").is_null()).select(
            "id", "criterion", pl.col("judge").alias("rater"), pl.col("verdict").alias("label")
        )
        ir = inter_rater(ratings, rubric, metrics=["fleiss_kappa"], n_resamples=0)
        jk = dict(zip(ir["criterion"].to_list(), ir["value"].to_list(), strict=False))
    table = table.with_columns(
        pl.col("criterion").replace_strict(jk, default=None, return_dtype=pl.Float64).alias("judge_kappa")
    )

    hk: dict[str, float] = {}
    ha: dict[str, float] = {}
    gain: dict[str, float] = {}
    ci: dict[str, tuple[float | None, float | None]] = {}
    if human is not None:
        h = human_frame(human)
        metrics = ["cohen_kappa", "accuracy"]
        ag = agreement(v, h, rubric, level="criterion", metrics=metrics, n_resamples=n_resamples, seed=0)
        for r in ag.iter_rows(named=True):
            (hk if r["metric"] == "cohen_kappa" else ha)[r["criterion"]] = r["value"]
            if r["metric"] == "cohen_kappa" and n_resamples:
                ci[r["criterion"]] = (r["ci_low"], r["ci_high"])
        if set(h["criterion"].unique().to_list()) >= set(names):
            gain = _score_gain(rubric, v, h)
    table = table.with_columns(
        pl.col("criterion").replace_strict(hk, default=None, return_dtype=pl.Float64).alias("human_kappa"),
        *[
            pl.col("criterion")
            .replace_strict({c: b[k] for c, b in ci.items()}, default=None, return_dtype=pl.Float64)
            .alias(f"human_kappa_{side}")
            for k, side in ((0, "low"), (1, "high"))
        ],
        pl.col("criterion").replace_strict(ha, default=None, return_dtype=pl.Float64).alias("human_accuracy"),
        pl.col("criterion").replace_strict(gain, default=None, return_dtype=pl.Float64).alias("score_gain"),
    ).with_columns(
        pl.col(c).fill_nan(None)
        for c in ("human_kappa", "human_kappa_low", "human_kappa_high", "human_accuracy", "score_gain", "judge_kappa")
    )

    rate, spread = pl.col("met_rate"), pl.col("spread")
    discriminates = (rate > min_spread) & (rate < 1 - min_spread) & (spread >= min_spread)
    table = table.with_columns(discriminates.fill_null(False).alias("discriminates"))
    flags: dict[str, list[str]] = {n: [] for n in names}
    findings: list[str] = []
    for r in table.iter_rows(named=True):
        n = r["criterion"]
        if r["n"] is None:
            flags[n].append("no usable verdicts")
            continue
        if not r["discriminates"]:
            flags[n].append("never discriminates")
            findings.append(
                f"{n!r} barely varies (rate {r['met_rate']:.2f}, spread {r['spread'] or 0:.2f}): it cannot "
                f"rank submissions"
            )
        if r["correlation"] is not None and abs(r["correlation"]) >= redundancy:
            flags[n].append(f"redundant with {r['most_correlated']}")
            if names.index(n) < names.index(r["most_correlated"]):
                findings.append(
                    f"{n!r} and {r['most_correlated']!r} move together (r = {r['correlation']:.2f}): one "
                    f"may be redundant"
                )
        if r["judge_kappa"] is not None and r["judge_kappa"] < low_kappa:
            flags[n].append("judges disagree")
            findings.append(f"judges disagree on {n!r} (Fleiss kappa {r['judge_kappa']:.2f}): its wording leaves room")
        if r["human_kappa"] is not None and r["human_kappa"] < low_kappa:
            flags[n].append("low human agreement")
            findings.append(f"the judge and humans disagree on {n!r} (kappa {r['human_kappa']:.2f})")
    rated = table.filter(pl.col("discriminates") & pl.col("human_kappa").is_not_null()).sort("human_kappa")
    if rated.height >= 2:  # the one whose wording to fix first (RubricReport.weakest), flagged and said
        low = rated.row(0, named=True)
        said = f"the judge and humans disagree on {low['criterion']!r}"  # the same point, said once
        findings[:] = [f for f in findings if not f.startswith(said)]
        flags[low["criterion"]].insert(0, "lowest human agreement")  # beside "low human agreement" when below
        sure = ""  # the lowest point estimate; its interval says how sure "least" is
        if low.get("human_kappa_low") is not None:
            above = rated.filter(pl.col("human_kappa_low") > low["human_kappa_high"]).height
            sure = f", 95% interval {low['human_kappa_low']:.2f} to {low['human_kappa_high']:.2f}, " + (
                "overlapping every other criterion's" if not above else f"below {above} of {rated.height - 1} others'"
            )
        findings.insert(
            0,
            f"{low['criterion']!r} agrees least with the humans (kappa {low['human_kappa']:.2f}{sure}): "
            "read its wording first",
        )
    if gain:
        worst = max(gain, key=lambda k: gain[k] if np.isfinite(gain[k]) else -np.inf)
        if np.isfinite(gain[worst]) and gain[worst] > 0:
            flags[worst].append("costliest disagreement")
            findings.append(
                f"{worst!r} costs the score most: had the judge answered it as the humans did, the correlation "
                f"of its scores with theirs would rise by {gain[worst]:+.3f}"
            )
    table = table.with_columns(
        pl.col("criterion")
        .replace_strict({k: v for k, v in flags.items()}, return_dtype=pl.List(pl.String))
        .alias("flags")
    )
    spread_of_scores = _score_discrimination(v, rubric)
    if spread_of_scores is not None and spread_of_scores < 0.5:
        findings.append(
            f"the rubric scores bunch up (discrimination {spread_of_scores:.2f}: the normalised entropy of the "
            "scores over ten bins): the rubric tells few submissions apart"
        )
    return RubricReport(
        table=table, correlations=corr, rubric=rubric, findings=findings, discrimination=spread_of_scores
    )


def _score_discrimination(v: pl.DataFrame, rubric: Any) -> float | None:
    """Normalised entropy of the rubric scores over ten equal bins of their scale (0-1, widened
    to take scores a penalty pushed below 0); None without a scored submission."""
    scores = score(v, rubric, on_error="null")["score"].drop_nulls().to_numpy().astype(float)
    if scores.size == 0:
        return None
    low, high = min(0.0, float(scores.min())), max(1.0, float(scores.max()))
    return metrics.discrimination(scores, bins=10, low=low, high=high)
