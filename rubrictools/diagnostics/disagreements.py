"""What rubric rewrites learn from and are judged on: the labelled submissions split into a
training and a held-out part, where the judge and the humans disagree, and how well they agree."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from rubrictools.human_agreement import agreement, compare
from rubrictools.rubric import Rubric

__all__ = ["agreement_on", "criterion_agreement", "disagreements", "holdout_change", "holdout_split"]


def holdout_split(
    human: pl.DataFrame,
    frame: pl.DataFrame,
    id_column: str,
    *,
    holdout: float,
    seed: int,
    min_hold: int,
    min_train: int,
    at_least: int,
    who: str,
) -> tuple[set[Any], set[Any], pl.DataFrame]:
    """``(train ids, held-out ids, split table)`` of the submissions of ``frame`` with human
    labels: a seeded permutation, ``round(holdout * n)`` held out, kept between ``min_hold``
    and ``n - min_train``; fewer than ``at_least`` labelled submissions is an error naming ``who``."""
    order = sorted(set(human["id"].to_list()) & set(frame[id_column].to_list()), key=str)
    if len(order) < at_least:
        raise ValueError(f"{who} needs human labels for at least {at_least} submissions of df; found {len(order)}")
    perm = np.random.default_rng(seed).permutation(len(order))
    n_hold = min(max(min_hold, round(holdout * len(order))), len(order) - min_train)
    hold = {order[i] for i in perm[:n_hold]}
    split = pl.DataFrame({"id": order, "split": ["holdout" if i in hold else "train" for i in order]})
    return set(order) - hold, hold, split


def holdout_change(
    after: pl.DataFrame,
    before: pl.DataFrame,
    human: pl.DataFrame,
    rubric: Rubric,
    ids: set[Any] | list[Any],
    *,
    metric: str,
    n_resamples: int,
    seed: int,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The held-out comparison of a rewritten rubric's verdicts (``after``) with the initial
    one's (``before``) on the submissions ``ids``: ``metric`` pooled over criteria, and per
    criterion, each with its paired cluster-bootstrap interval of ``after - before``."""
    held = human.filter(pl.col("id").is_in(list(ids)))
    kw: dict[str, Any] = {"metric": metric, "names": ("after", "before"), "n_resamples": n_resamples, "seed": seed}
    pooled = compare(after, before, held, rubric, by=None, **kw)
    return pooled, compare(after, before, held, rubric, by="criterion", **kw)


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


def agreement_on(v: pl.DataFrame, human: pl.DataFrame, rubric: Rubric, ids: set[Any], metric: str) -> float:
    """Agreement (``metric``) of the judge with the humans over the submissions ``ids``, pooled
    over the criteria of ``rubric`` (nan: none to compare)."""
    names = list(rubric.names)
    keep = pl.col("id").is_in(list(ids)) & pl.col("criterion").is_in(names)
    sub_v, sub_h = v.filter(keep), human.filter(keep)
    if sub_v.height == 0 or sub_h.height == 0:
        return float("nan")
    t = agreement(sub_v, sub_h, rubric, level="criterion", by=None, metrics=[metric], n_resamples=0)
    return float(t["value"][0]) if t.height and t["value"][0] is not None else float("nan")


def criterion_agreement(
    v: pl.DataFrame, human: pl.DataFrame, rubric: Rubric, name: str, ids: set[Any], metric: str
) -> float:
    """:func:`agreement_on` criterion ``name`` alone."""
    return agreement_on(v, human, Rubric([rubric[name]]), ids, metric)
