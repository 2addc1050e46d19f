"""Judge-human pairs per criterion and at the rubric-score level, the input of every agreement metric."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import polars as pl

from rubrictools.frames import to_polars
from rubrictools.human_agreement.catalog import NaMode, Raters
from rubrictools.human_agreement.labels import (
    check_ids,
    check_known,
    human_frame,
    label_table,
    mode_consensus,
    verdict_frame,
    with_key,
)
from rubrictools.rubric import Rubric, score
from rubrictools.stack import user_stacklevel

__all__ = ["criterion_pairs", "score_pairs"]


@dataclass
class _Pairs:
    frame: pl.DataFrame  # by..., id, rater, kind, n_classes, pos_code, classes, h_code, j_code, h_value, j_value
    excluded: pl.DataFrame  # by..., n_excluded


def criterion_pairs(
    verdicts: Any, human: Any, rubric: Rubric | None, by: list[str], cannot_assess: NaMode, raters: Raters
) -> _Pairs:
    v = verdict_frame(verdicts, by)
    h = check_ids(v, human_frame(human))
    for c in by:
        if c not in v.columns and c not in h.columns:
            raise ValueError(f"by={c!r} is neither a verdict nor a human-label column")
    v_cols = ["id", "criterion", *[c for c in by if c in v.columns and c not in ("id", "criterion")]]
    v = with_key(v.select(*v_cols, "verdict", pl.col("error").is_not_null().alias("j_err")), "verdict", "j_key")
    h = with_key(h, "label", "h_key")
    keys = pl.concat(
        [v.select("criterion", pl.col("j_key").alias("key")), h.select("criterion", pl.col("h_key").alias("key"))]
    ).unique()
    labels = label_table(rubric, keys, cannot_assess)
    lab = labels.select("criterion", "key", "code", "value")
    meta = labels.group_by("criterion").agg(pl.col("kind", "n_classes", "pos_code", "classes").first())

    if rubric is not None:
        check_known(v.filter(~pl.col("j_err")), "j_key", lab, "verdicts", raw="verdict")
        check_known(h, "h_key", lab, "human labels", raw="label")
    else:
        _check_shared_labels(v.filter(~pl.col("j_err")), h)
    v = v.drop("verdict")
    h = h.join(
        lab.rename({"key": "h_key", "code": "h_code", "value": "h_value"}), on=["criterion", "h_key"], how="left"
    )
    h = h.join(meta, on="criterion", how="left")
    h_keys = ["id", "criterion", *[c for c in by if c in h.columns and c not in ("id", "criterion", "rater")]]
    if raters == "consensus":  # ties keep a row with a null code: excluded and counted below
        h = mode_consensus(h, h_keys)
        h = h.join(meta, on="criterion", how="left")
    v = v.join(
        lab.rename({"key": "j_key", "code": "j_code", "value": "j_value"}), on=["criterion", "j_key"], how="left"
    )
    on = [c for c in h_keys if c in v.columns]
    joined = h.select(*h_keys, "rater", "kind", "n_classes", "pos_code", "classes", "h_code", "h_value").join(
        v.select(*[c for c in v.columns if c not in ("j_key",)]), on=on, how="left"
    )
    usable = pl.col("h_code").is_not_null() & pl.col("j_code").is_not_null() & ~pl.col("j_err").fill_null(True)
    joined = joined.with_columns(usable.alias("__ok"))
    excl = joined.group_by(by).agg((~pl.col("__ok")).sum().cast(pl.Int64).alias("n_excluded"))
    frame = joined.filter(pl.col("__ok")).drop("__ok", "j_err")
    return _Pairs(frame, excl)


def _check_shared_labels(v: pl.DataFrame, h: pl.DataFrame) -> None:
    """Without a rubric the label set is inferred: warn of a criterion whose verdicts and human
    labels share no value (MET/UNMET against 1/0 reads as agreement 0, not as a mismatch)."""
    j = v.group_by("criterion").agg(pl.col("verdict").drop_nulls().cast(pl.String).unique().sort().alias("j"),
                                     pl.col("j_key").drop_nulls().unique().alias("jk"))  # fmt: skip
    both = j.join(
        h.group_by("criterion").agg(
            pl.col("label").drop_nulls().cast(pl.String).unique().sort().alias("h"),
            pl.col("h_key").drop_nulls().unique().alias("hk"),
        ),
        on="criterion",
    )
    for r in both.iter_rows(named=True):
        if r["jk"] and r["hk"] and not set(r["jk"]) & set(r["hk"]):
            warnings.warn(
                f"criterion {r['criterion']!r}: the verdicts ({r['j'][:5]}) and the human labels ({r['h'][:5]}) "
                "share no value, so every pair disagrees; if they are the same labels written differently, map "
                "the labels to the verdicts' values (e.g. 1 -> 'MET', 0 -> 'UNMET') or pass the rubric",
                UserWarning,
                stacklevel=user_stacklevel(),
            )


def _human_scores(human: pl.DataFrame, rubric: Rubric | None) -> pl.DataFrame:
    """Rubric score of each (submission, rater) from the human labels: ``id, rater, score``."""

    if rubric is None:
        raise ValueError("score-level agreement needs the rubric to score the human labels")
    h = human_frame(human)
    if h["rater"].n_unique() <= 1:
        rater = h["rater"][0] if h.height else "human"
        hv = h.select("id", "criterion", pl.col("label").cast(pl.String).alias("verdict"))
        return score(hv, rubric).select("id", pl.lit(rater).alias("rater"), "score")
    # several raters: score each (id, rater) as its own submission under a synthetic integer id
    raters = h.select(pl.col("rater").unique(maintain_order=True)).with_row_index("__r")
    h = h.join(raters, on="rater").with_columns(
        (pl.col("id").rank("dense").cast(pl.Int64) * (raters.height + 1) + pl.col("__r").cast(pl.Int64)).alias("__sid")
    )
    hv = h.select(pl.col("__sid").alias("id"), "criterion", pl.col("label").cast(pl.String).alias("verdict"))
    sc = score(hv, rubric).select(pl.col("id").alias("__sid"), "score")
    return h.select("id", "rater", "__sid").unique("__sid").join(sc, on="__sid").drop("__sid")


def score_pairs(
    verdicts: Any, human: Any, rubric: Rubric | None, by: list[str], raters: Raters, human_scores: Any
) -> pl.DataFrame:
    """``by..., id, rater, h_value, j_value`` with rubric scores of the judge and the humans."""

    v = to_polars(verdicts, name="verdicts")
    if "score" in v.columns and "criterion" not in v.columns:
        judge_scores = v.select(
            "id",
            *[c for c in by if c in v.columns],
            *(["rater"] if "rater" in v.columns else []),
            pl.col("score").alias("j_value"),
        )
        if "rater" in judge_scores.columns:  # per-rater predictions (e.g. a calibrator's): pair with that rater
            judge_scores = judge_scores.with_columns(pl.col("rater").cast(pl.String))
    else:
        if rubric is None:
            raise ValueError("score-level agreement needs the rubric (or score tables with a 'score' column)")
        v = verdict_frame(v, by)
        parts = []
        if "judge" in by:
            for (judge,), sub in v.group_by(["judge"], maintain_order=True):
                s = score(sub, rubric)
                parts.append(s.select("id", pl.lit(judge).alias("judge"), pl.col("score").alias("j_value")))
            judge_scores = pl.concat(parts)
        else:
            judge_scores = score(v, rubric).select("id", pl.col("score").alias("j_value"))
    if human_scores is not None:
        hs = to_polars(human_scores, name="human_scores")
    else:
        h = to_polars(human, name="human")
        hs = h if "score" in h.columns and "criterion" not in h.columns else _human_scores(h, rubric)
    if "rater" not in hs.columns:
        hs = hs.with_columns(pl.lit("human").alias("rater"))
    hs = hs.select("id", pl.col("rater").cast(pl.String), pl.col("score").cast(pl.Float64).alias("h_value"))
    if raters == "consensus":
        hs = hs.group_by("id", maintain_order=True).agg(pl.col("h_value").mean(), pl.lit("consensus").alias("rater"))
    on = ["id", "rater"] if "rater" in judge_scores.columns and raters == "each" else ["id"]
    if on == ["id"] and "rater" in judge_scores.columns:
        judge_scores = judge_scores.group_by("id", maintain_order=True).agg(pl.col("j_value").mean())
    hs = check_ids(judge_scores, hs)
    out = hs.join(judge_scores, on=on, how="left")
    return out
