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

__all__ = ["aggregate", "criterion_aggs", "group_scores", "node_aggs", "normalised"]

_FULL = 1.0 - 1e-12
_ROOT = "__grouped"  # the node of the whole rubric (a column name no group can take: "__" prefix)


def normalised(S: pl.Expr, P: pl.Expr, N: pl.Expr) -> pl.Expr:
    """``clamp(S / P, 0, 1)``, else ``clamp(1 + S / N, 0, 1)``, else 0 (the module docstring)."""
    return pl.when(P > 0).then((S / P).clip(0.0, 1.0)).when(N > 0).then((1.0 + S / N).clip(0.0, 1.0)).otherwise(0.0)


def _value(kind: str, m: pl.Expr, u: pl.Expr, c: pl.Expr, w: pl.Expr) -> pl.Expr:
    """The sub-score of one node, over the member rows where ``m`` holds."""
    if kind in ("weighted_mean", "weighted_sum"):
        return normalised(c.filter(m).sum(), w.filter(m & (w > 0)).sum(), (-w).filter(m & (w < 0)).sum())
    if kind in ("min", "max"):
        return u.filter(m).min() if kind == "min" else u.filter(m).max()
    full = u.filter(m) >= _FULL
    return (full.all() if kind == "all" else full.any()).cast(pl.Float64)


def node_aggs(
    kinds: dict[str, str], *, node: pl.Expr, u: pl.Expr, c: pl.Expr, w: pl.Expr, scored: pl.Expr, kept: pl.Expr
) -> list[pl.Expr]:
    """Per-submission aggregations (for ``group_by("id").agg``) giving ``score_<node>`` (and
    ``raw_<node>`` for ``weighted_sum`` nodes) over member rows: ``node`` names the row's node,
    ``u``/``c``/``w`` are its credit, contribution and weight, ``scored`` marks the members that
    count for the sub-score and ``kept`` those that count for the raw sum (a kept criterion of
    weight 0 adds nothing to either, but makes the raw sum 0 rather than null)."""
    out = []
    for name, kind in kinds.items():
        m, k = (node == name) & scored, (node == name) & kept
        value = _value(kind, m, u, c, w)
        out.append(pl.when(m.any()).then(value).otherwise(None).cast(pl.Float64).alias(f"score_{name}"))
        if kind == "weighted_sum":
            raw = pl.when(k.any()).then(c.filter(k).sum()).otherwise(None)
            out.append(raw.cast(pl.Float64).alias(f"raw_{name}"))
    return out


def criterion_aggs(groups: Sequence[Any]) -> list[pl.Expr]:
    """:func:`node_aggs` of the groups that hold criteria, over a verdict table's scoring
    columns (``__group``, ``__u``, ``__c``, ``__keep``, ``weight``): a group's kept criteria of
    non-zero weight count for its sub-score."""
    w, keep = pl.col("weight"), pl.col("__keep")
    leaves = {g.name: g.aggregation for g in groups if not any(k.parent and _same(k.parent, g.name) for k in groups)}
    return node_aggs(
        leaves, node=pl.col("__group"), u=pl.col("__u"), c=pl.col("__c"), w=w, scored=keep & (w != 0), kept=keep
    )


def aggregate(members: pl.DataFrame, kinds: dict[str, str]) -> pl.DataFrame:
    """:func:`node_aggs` over member rows ``id, node, u, c, w, scored, kept``: one row per id."""
    cols = {k: pl.col(k) for k in ("node", "u", "c", "w", "scored", "kept")}
    return members.group_by("id", maintain_order=True).agg(node_aggs(kinds, **cols))


def _of_children(wide: pl.DataFrame, node: str, weights: dict[str, float]) -> pl.DataFrame:
    """Member rows of ``node`` whose members are the groups in ``weights`` (name -> weight):
    ``u = s_k``, ``c = W_k s_k``, ``w = W_k``, counted where the child has a sub-score."""
    long = wide.unpivot([f"score_{k}" for k in weights], index="id", variable_name="child", value_name="u")
    weight = pl.col("child").str.strip_prefix("score_").replace_strict(weights, return_dtype=pl.Float64)
    scored = pl.col("u").is_not_null()
    return long.select(
        "id", pl.lit(node).alias("node"), "u", (pl.col("u") * weight).alias("c"), weight.alias("w"),
        scored.alias("scored"), scored.alias("kept"),
    )  # fmt: skip


def group_scores(per_id: pl.DataFrame, groups: Sequence[Any]) -> pl.DataFrame:
    """``per_id`` (one row per submission, with the :func:`criterion_aggs` columns) with
    ``__g:<group>`` and ``__raw:<group>`` columns for every group, and ``__g:__grouped``: the
    weighted mean of the top-level groups' sub-scores (the rubric's score when it has groups)."""
    wide = per_id
    for g in children_first(tuple(groups)):  # a group of groups: its children's sub-scores, children first
        kids = {k.name: k.weight for k in groups if k.parent and _same(k.parent, g.name)}
        if kids:
            parent = aggregate(_of_children(wide, g.name, kids), {g.name: g.aggregation})
            wide = wide.join(parent, on="id", how="left", maintain_order="left")
    roots = {g.name: g.weight for g in groups if g.parent is None}
    top = aggregate(_of_children(wide, _ROOT, roots), {_ROOT: "weighted_mean"})
    wide = wide.join(top, on="id", how="left", maintain_order="left")
    names = [*(g.name for g in groups), _ROOT]
    rename = {f"score_{n}": f"__g:{n}" for n in names} | {f"raw_{n}": f"__raw:{n}" for n in names}
    return wide.rename({k: v for k, v in rename.items() if k in wide.columns})


def _same(a: str, b: str) -> bool:
    return normalize_label(a) == normalize_label(b)
