"""Verdict rows -> the verdict table: evidence and reply checks, ensemble rows, rule rows, column order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from rubrictools.grading.constraints import check_replies
from rubrictools.grading.evidence import check_evidence
from rubrictools.grading.inputs import AnyJudge, Inputs
from rubrictools.grading.options import GradeOptions
from rubrictools.grading.votes import aggregate_votes, option_frame
from rubrictools.judge import Judge
from rubrictools.verdicts import VERDICT_SCHEMA

__all__ = ["assemble", "row_frame", "with_transport"]

_OPTIONAL = {
    "llm_raw_score": ["llm_raw_score"],
    "option_order": ["option_order"],
    "distribution": ["distribution", "distribution_source"],
    "evidence": ["evidence", "evidence_ok"],
    "confidence": ["confidence"],
    "warnings": ["warnings"],
    "disqualified_by": ["disqualified_by"],
}


def row_frame(cols: dict[str, list[Any]], id_dtype: pl.DataType) -> pl.DataFrame:
    """The task rows of :class:`~rubrictools.judge.RowSink` as a frame with their dtypes."""
    schema = {k: (v if v is not None else id_dtype) for k, v in VERDICT_SCHEMA.items()}
    schema.update(
        {
            "__row": pl.Int64(),
            "__pos": pl.Int64(),
            "__judge": pl.Int64(),
            "__variant": pl.Int64(),
            "__call": pl.Int64(),
            "raw_response": pl.String(),
            "reasoning": pl.String(),
            "error_kind": pl.String(),
            "cached_tokens": pl.Int64(),
            "cache_write_tokens": pl.Int64(),
            "reasoning_tokens": pl.Int64(),
            "option_order": pl.List(pl.Int64()),
            "llm_raw_score": pl.Float64(),
            "distribution": pl.List(pl.Struct({"label": pl.String(), "prob": pl.Float64()})),
            "distribution_source": pl.String(),
            "evidence": pl.String(),
            "confidence": pl.Float64(),
            "__ev": pl.Boolean(),
            "__needs": pl.Boolean(),
            "__floor_label": pl.String(),
            "__floor_value": pl.Float64(),
        }
    )
    return pl.DataFrame(cols, schema=schema)


def with_transport(df: pl.DataFrame, judges: Sequence[AnyJudge]) -> pl.DataFrame:
    """Add a ``transport`` column (``"litellm"``, ``"direct"``, ``"scripted"``; null on ensemble
    and rule rows) when an LLM judge takes part: how each judge's calls were sent."""
    if not any(isinstance(j, Judge) for j in judges):
        return df
    used = {
        j.label: j.wire_transport if isinstance(j, Judge) else ("scripted" if j.is_scripted else "custom")
        for j in judges
    }
    return df.with_columns(
        pl.col("judge").replace_strict(used, default=None, return_dtype=pl.String).alias("transport")
    )


def assemble(
    cols: dict[str, list[Any]],
    inp: Inputs,
    judges: Sequence[AnyJudge],
    opts: GradeOptions,
    *,
    texts: Sequence[str] = (),
    rules: pl.DataFrame | None = None,
    keep: frozenset[str] = frozenset(),
) -> pl.DataFrame:
    """The verdict table from task rows (``cols``), plus ensemble rows when there are several
    judges and rule rows; optional columns appear when in ``keep`` (the same columns for every
    slice of a large job, even one whose calls all failed)."""
    df = with_transport(check_evidence(row_frame(cols, inp.id_dtype), texts, opts.on_unsupported), judges)
    if "warnings" in keep:
        df = check_replies(df, opts.output_constraints, confidence=opts.confidence)

    def conform(extra: pl.DataFrame, **values: Any) -> pl.DataFrame:
        fill = [
            pl.lit(values.get(c), dtype=df.schema[c]).alias(c)
            for c in df.columns
            if c not in extra.columns or c in values
        ]
        return extra.with_columns(fill).select(df.columns).cast(df.schema)

    if len(judges) > 1:
        jw = {j.label: float(getattr(j, "weight", 1.0)) for j in judges}
        votes = df.with_columns(pl.col("judge").replace_strict(jw, return_dtype=pl.Float64).alias("judge_weight"))
        overrides = {
            c.name or "": str(c.aggregation)
            for r in {id(r): r for r in inp.rubrics}.values()
            for c in r
            if c.aggregation
        }
        options = option_frame({id(r): r for r in inp.rubrics}.values())
        agg = aggregate_votes(votes, overrides, opts.aggregate, options).with_columns(
            pl.lit(len(judges)).cast(pl.Int64).alias("__judge")
        )
        pos = df.select("__row", "criterion", "__pos").unique(["__row", "criterion"])
        agg = agg.join(pos, on=["__row", "criterion"], how="left")
        llm = df.group_by("__row", "criterion").agg(pl.col("llm_raw_score").mean())
        agg = agg.join(llm, on=["__row", "criterion"], how="left")
        agg = agg.drop(
            [
                c
                for c in (
                    "raw_response",
                    "option_order",
                    "distribution",
                    "distribution_source",
                    "evidence",
                    "evidence_ok",
                    "confidence",
                    "warnings",
                    "disqualified_by",
                )
                if c in agg.columns
            ]
        )
        if "disqualified_by" in df.columns:  # a judge's disqualifying reply disqualifies the ensemble's row too
            why = df.group_by("__row", "criterion").agg(
                pl.format("{}: {}", "judge", "disqualified_by")
                .filter(pl.col("disqualified_by").is_not_null())
                .str.join("; ")
                .alias("disqualified_by")
            )
            agg = agg.join(why, on=["__row", "criterion"], how="left").with_columns(
                pl.col("disqualified_by").replace("", None)
            )
        agg = agg.with_columns(
            pl.when(pl.col("error").is_not_null()).then(pl.lit("ensemble")).otherwise(None).alias("error_kind")
        )
        df = pl.concat([df, conform(agg)], how="vertical")
    if rules is not None and rules.height:
        src = "rule" if df["distribution_source"].null_count() < df.height else None
        df = pl.concat(
            [
                df,
                conform(
                    rules.with_columns(
                        pl.lit(len(judges) + 1).cast(pl.Int64).alias("__judge"),
                        pl.when(pl.col("error").is_not_null())
                        .then(pl.lit("input"))
                        .otherwise(None)
                        .alias("error_kind"),
                    ),
                    distribution_source=src,
                ),
            ],
            how="vertical",
        )
    df = df.sort(["__row", "__pos", "__judge"])
    drop = ["__row", "__pos", "__judge", "__variant", "__call", "__ev", "__needs", "__floor_label", "__floor_value"]
    for name, columns in _OPTIONAL.items():
        if name not in keep:
            drop += columns
    return df.drop(drop, strict=False)
