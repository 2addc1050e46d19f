"""Group sub-scores: one aggregation, applied to a group's criteria and to a group's child groups.

A group's members are rows ``(id, node, u, c, w)``: the member's credit ``u`` in [0, 1], its
contribution ``c`` and its weight ``w``. For a group of criteria they are the kept criteria
(``u_i = c_i / w_i`` for rewards, ``1 + c_i / |w_i|`` for penalties); for a group of groups
(``Group(parent=...)``) they are the child groups with a sub-score (``u_k = s_k``,
``c_k = W_k s_k``, ``w_k = W_k``). The same :func:`aggregate` then gives, per submission:

* ``weighted_mean`` and ``weighted_sum``: ``clamp(S / P, 0, 1)`` with ``S = sum c``,
  ``P = sum max(0, w)`` (``clamp(1 + S / N, 0, 1)`` when only penalties, ``N = sum |w|``);
  for child groups with ``W_k > 0`` this is ``sum_k W_k s_k / sum_k W_k``;
* ``min`` / ``max`` of ``u``; ``all`` / ``any``: whether every / some ``u`` is 1;
* ``raw`` (``weighted_sum`` groups): ``S``;
* null when the group has no member for that submission.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from rubrictools.rubric.groups import children_first
from rubrictools.rubric.labels import normalize_label

__all__ = ["aggregate", "group_scores", "normalised"]

_FULL = 1.0 - 1e-12
_ROOT = "__grouped"  # the node of the whole rubric (a column name no group can take: "__" prefix)


def normalised(S: pl.Expr, P: pl.Expr, N: pl.Expr) -> pl.Expr:
    """``clamp(S / P, 0, 1)``, else ``clamp(1 + S / N, 0, 1)``, else 0 (the module docstring)."""
    return pl.when(P > 0).then((S / P).clip(0.0, 1.0)).when(N > 0).then((1.0 + S / N).clip(0.0, 1.0)).otherwise(0.0)


def aggregate(members: pl.DataFrame, kinds: dict[str, str]) -> pl.DataFrame:
    """``id, node, score, raw`` from member rows ``id, node, u, c, w, scored, kept``.

    ``scored`` marks the members that count for the sub-score, ``kept`` those that count for
    the raw sum (a kept criterion of weight 0 adds nothing to either, but makes the raw sum 0
    rather than null). ``kinds`` maps each node to its aggregation.
    """
    m, w = pl.col("scored"), pl.col("w")
    full = pl.col("u").filter(m) >= _FULL
    parts = members.group_by("id", "node", maintain_order=True).agg(
        m.any().alias("__any"),
        pl.col("c").filter(m).sum().alias("__S"),
        w.filter(m & (w > 0)).sum().alias("__P"),
        (-w).filter(m & (w < 0)).sum().alias("__N"),
        pl.col("u").filter(m).min().alias("__min"),
        pl.col("u").filter(m).max().alias("__max"),
        full.all().alias("__all"),
        full.any().alias("__anyfull"),
        pl.col("kept").any().alias("__kept"),
        pl.col("c").filter(pl.col("kept")).sum().alias("__raw"),
    )
    kind = pl.col("node").replace_strict(kinds, return_dtype=pl.String)
    value = (
        pl.when(kind.is_in(["weighted_mean", "weighted_sum"]))
        .then(normalised(pl.col("__S"), pl.col("__P"), pl.col("__N")))
        .when(kind == "min")
        .then(pl.col("__min"))
        .when(kind == "max")
        .then(pl.col("__max"))
        .when(kind == "all")
        .then(pl.col("__all").cast(pl.Float64))
        .otherwise(pl.col("__anyfull").cast(pl.Float64))
    )
    return parts.select(
        "id",
        "node",
        pl.when(pl.col("__any")).then(value).otherwise(None).cast(pl.Float64).alias("score"),
        pl.when(pl.col("__kept")).then(pl.col("__raw")).otherwise(None).cast(pl.Float64).alias("raw"),
    )


def _of_children(long: pl.DataFrame, node: str, weights: dict[str, float]) -> pl.DataFrame:
    """Member rows of ``node`` whose members are the groups in ``weights`` (name -> weight):
    ``u = s_k``, ``c = W_k s_k``, ``w = W_k``, counted where the child has a sub-score."""
    s = pl.col("score")
    weight = pl.col("node").replace_strict(weights, return_dtype=pl.Float64)
    return long.filter(pl.col("node").is_in(list(weights))).select(
        "id",
        pl.lit(node).alias("node"),
        s.alias("u"),
        (s * weight).alias("c"),
        weight.alias("w"),
        s.is_not_null().alias("scored"),
        s.is_not_null().alias("kept"),
    )


def group_scores(v: pl.DataFrame, ids: pl.DataFrame, groups: Sequence[Any]) -> pl.DataFrame:
    """``ids`` (one row per submission, an ``id`` column) with ``__g:<group>`` and
    ``__raw:<group>`` columns, and ``__g:__grouped``: the weighted mean of the top-level groups'
    sub-scores (the rubric's score when it has groups).

    ``v`` is the verdict table with the scoring columns ``__group`` (the criterion's group),
    ``__keep``, ``__c`` (contribution), ``__u`` (credit) and ``weight``.
    """
    kinds = {g.name: g.aggregation for g in groups}
    crit = v.filter(pl.col("__group").is_not_null()).select(
        "id",
        pl.col("__group").alias("node"),
        pl.col("__u").alias("u"),
        pl.col("__c").alias("c"),
        pl.col("weight").alias("w"),
        (pl.col("__keep") & (pl.col("weight") != 0)).alias("scored"),
        pl.col("__keep").alias("kept"),
    )
    grid = ids.select("id").join(pl.DataFrame({"node": list(kinds)}), how="cross")
    long = grid.join(aggregate(crit, kinds), on=["id", "node"], how="left", maintain_order="left")
    for g in children_first(tuple(groups)):  # a group of groups: its children's sub-scores, children first
        kids = {k.name: k.weight for k in groups if k.parent and normalize_label(k.parent) == normalize_label(g.name)}
        if kids:
            long = long.update(
                aggregate(_of_children(long, g.name, kids), kinds), on=["id", "node"], include_nulls=True
            )
    roots = {g.name: g.weight for g in groups if g.parent is None}
    top = aggregate(_of_children(long, _ROOT, roots), {_ROOT: "weighted_mean"})
    long = pl.concat([long, grid.select("id").unique(maintain_order=True).with_columns(node=pl.lit(_ROOT))
                      .join(top, on=["id", "node"], how="left", maintain_order="left")])  # fmt: skip
    wide = long.pivot(on="node", index="id", values=["score", "raw"], aggregate_function=None)
    names = [*kinds, _ROOT]
    rename = {f"score_{n}": f"__g:{n}" for n in names} | {f"raw_{n}": f"__raw:{n}" for n in names}
    return ids.join(wide.rename(rename), on="id", how="left", maintain_order="left")
