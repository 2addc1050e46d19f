"""Judge predictions and human values per item, aligned for prediction-powered inference.

One row per (group, item): ``f`` (the judge's prediction as a number), ``y`` (the human value:
the mean over raters; null for items no person labelled), optional ``pi`` (inclusion
probability of a labelled item) and ``stratum``.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

import polars as pl

from rubrictools.frames import to_polars
from rubrictools.rubric import MET, Rubric, score

__all__ = ["Target", "aligned", "single_group"]

Target = Literal["mean", "met_rate", "label_share", "score"]

_GROUP = "__group"


def _one_judge(v: pl.DataFrame, judge: str | None) -> pl.DataFrame:
    if "judge" not in v.columns:
        return v
    judges = v["judge"].unique(maintain_order=True).to_list()
    if judge is None:
        if len(judges) > 1:
            raise ValueError(
                f"verdicts hold several judges {judges[:8]}{'...' if len(judges) > 8 else ''}; choose one with judge="
            )
        return v
    if judge not in judges:
        raise ValueError(f"judge={judge!r} is not in the verdicts; judges: {judges[:8]}")
    return v.filter(pl.col("judge") == judge)


def _as_number(col: str, what: str) -> pl.Expr:
    return pl.col(col).cast(pl.Float64, strict=False).alias(what)


def _indicator(col: str, label: str, what: str) -> pl.Expr:
    c = pl.col(col)
    return pl.when(c.is_null()).then(None).otherwise((c.cast(pl.String) == label).cast(pl.Float64)).alias(what)


def _per_criterion(
    v: pl.DataFrame, h: pl.DataFrame, target: Target, label: str | None, prediction: str | None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    if target == "mean":
        f = _as_number(prediction or "verdict", "f")
        y = _as_number("label", "y")
    else:
        lab = MET if target == "met_rate" else str(label)
        f = _indicator(prediction or "verdict", lab, "f")
        y = _indicator("label", lab, "y")
    pred = v.select(pl.col("criterion").cast(pl.String).alias(_GROUP), "id", f)
    hum = h.select(pl.col("criterion").cast(pl.String).alias(_GROUP), "id", y)
    return pred, hum


def _scores(v: pl.DataFrame, h: pl.DataFrame, rubric: Rubric | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    if rubric is None:
        raise ValueError("target='score' needs the rubric (rubric=)")
    pred = score(v, rubric).select(pl.lit("__score__").alias(_GROUP), "id", pl.col("score").alias("f"))
    as_verdicts = h.select(
        "id", "criterion", pl.col("label").cast(pl.String).alias("verdict"), pl.col("rater").alias("judge")
    )
    raters = as_verdicts["judge"].unique(maintain_order=True).to_list()
    per_rater = pl.concat([score(as_verdicts, rubric, judge=r).select("id", "score") for r in raters])
    hum = per_rater.select(pl.lit("__score__").alias(_GROUP), "id", pl.col("score").alias("y"))
    return pred, hum


def single_group(group: pl.Series) -> bool:
    """Whether every row is in the same (non-null) group: the usual one criterion, or ``by=None``."""
    return group.null_count() == 0 and (group.len() == 0 or bool((group == group[0]).all()))


def _join(pred: pl.DataFrame, hum: pl.DataFrame) -> pl.DataFrame:
    """The human values beside each prediction; with one group, joined on ``id`` alone (a third of the time)."""
    if single_group(pred[_GROUP]):
        only = hum.filter(pl.col(_GROUP) == pred[_GROUP][0]) if pred.height else hum.clear()
        return pred.join(only.drop(_GROUP), on="id", how="left", maintain_order="left")
    return pred.join(hum, on=[_GROUP, "id"], how="left", maintain_order="left")


def aligned(
    verdicts: Any,
    human: Any,
    rubric: Rubric | None,
    *,
    target: Target,
    by_criterion: bool,
    judge: str | None,
    label: str | None,
    prediction: str | None,
    weights: str | None,
    stratify: str | None,
) -> pl.DataFrame:
    """``group, id, f, y, pi, stratum`` (see module docstring); errors name what is missing."""
    if target not in get_args(Target):
        raise ValueError(f"target must be one of {list(get_args(Target))}, got {target!r}")
    v = _one_judge(to_polars(verdicts, name="verdicts"), judge)
    h = to_polars(human, name="human")
    for name, frame, cols in (
        ("verdicts", v, ["id", "criterion", prediction or "verdict", *([stratify] if stratify else [])]),
        ("human", h, ["id", "criterion", "label", *([weights] if weights else [])]),
    ):
        missing = [c for c in cols if c not in frame.columns]
        if missing:
            raise ValueError(f"{name}: missing column(s) {missing} (columns: {frame.columns})")
    if target == "label_share" and label is None:
        raise ValueError("target='label_share' needs label= (the label whose share is estimated)")
    if "rater" not in h.columns:
        h = h.with_columns(pl.lit("human").alias("rater"))
    if target == "score":
        pred, hum = _scores(v, h, rubric)
    else:
        pred, hum = _per_criterion(v, h, target, label, prediction)
    if not by_criterion and target != "score":
        pred, hum = pred.with_columns(pl.lit("all").alias(_GROUP)), hum.with_columns(pl.lit("all").alias(_GROUP))
    key = [_GROUP, "id"]
    pred = pred.filter(pl.col("f").is_not_null())
    # several predictions of an item are averaged (counted per group: cheaper than hashing both keys)
    counts = pred.group_by(_GROUP).agg(pl.col("id").n_unique().alias("u"), pl.len().alias("n"))
    if (counts["u"] != counts["n"]).any():
        pred = pred.group_by(key, maintain_order=True).agg(pl.col("f").mean())
    hum_agg = [pl.col("y").mean()]
    if weights:
        hum = (
            hum.with_columns(h[weights].cast(pl.Float64).alias("pi"))
            if target != "score"
            else hum.join(
                h.group_by("id").agg(pl.col(weights).first().cast(pl.Float64).alias("pi")), on="id", how="left"
            )
        )
        hum_agg.append(pl.col("pi").first())
    hum = hum.filter(pl.col("y").is_not_null()).group_by(key).agg(hum_agg)  # its order is the join's business
    out = _join(pred, hum)
    if stratify:
        strata = v.select("id", pl.col(stratify).alias("stratum")).unique("id", keep="first")
        out = out.join(strata, on="id", how="left", maintain_order="left")
    if out["y"].null_count() == out.height:
        raise ValueError(
            "no item has both a judge prediction and a human label: the human ids do not overlap the graded ids "
            f"(e.g. graded {pred['id'].head(3).to_list()}, labelled {hum['id'].head(3).to_list()})"
        )
    return out
