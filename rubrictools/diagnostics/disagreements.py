"""Where a judge and the humans disagree, per criterion: the material rubric rewrites learn from."""

from __future__ import annotations

from typing import Any

import polars as pl

from rubrictools.human_agreement import agreement
from rubrictools.rubric import Rubric

__all__ = ["criterion_agreement", "disagreements"]


def disagreements(
    v: pl.DataFrame, human: pl.DataFrame, texts: pl.DataFrame, name: str, train: set[Any], k: int
) -> pl.DataFrame:
    """Training submissions where some human label differs from the judge's verdict on
    ``name``, most-disputed first."""
    mine = v.filter((pl.col("criterion") == name) & pl.col("error").is_null() & pl.col("id").is_in(list(train)))
    hl = human.filter(pl.col("criterion") == name).select("id", pl.col("label").cast(pl.String))
    long = (
        mine.select("id", "verdict", "explanation")
        .join(hl, on="id", how="inner")
        .with_columns(
            (pl.col("label").str.strip_chars().str.to_uppercase() != pl.col("verdict").str.to_uppercase()).alias("__d")
        )
    )
    agg = (
        long.group_by("id", maintain_order=True)
        .agg(
            pl.col("verdict").first().alias("judge_verdict"),
            pl.col("label").alias("human_labels"),
            pl.col("explanation").first(),
            pl.col("__d").sum().alias("__n"),
        )
        .filter(pl.col("__n") > 0)
        .sort("__n", descending=True, maintain_order=True)
        .head(k)
    )
    return agg.join(texts, on="id", how="left", maintain_order="left").select(
        "id", "text", "judge_verdict", "human_labels", "explanation"
    )


def criterion_agreement(
    v: pl.DataFrame, human: pl.DataFrame, rubric: Rubric, name: str, ids: set[Any], metric: str
) -> float:
    """Agreement (``metric``) of the judge with the humans on criterion ``name`` over the
    submissions ``ids`` (nan: none to compare)."""

    sub_v = v.filter((pl.col("criterion") == name) & pl.col("id").is_in(list(ids)))
    sub_h = human.filter((pl.col("criterion") == name) & pl.col("id").is_in(list(ids)))
    if sub_v.height == 0 or sub_h.height == 0:
        return float("nan")
    t = agreement(sub_v, sub_h, Rubric([rubric[name]]), level="criterion", metrics=[metric], bootstrap=0)
    return float(t["value"][0]) if t.height and t["value"][0] is not None else float("nan")
