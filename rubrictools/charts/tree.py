"""A rubric tree's scores at a glance (:func:`rubric_tree`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from rubrictools.charts.base import alt_module as _alt
from rubrictools.charts.base import chart_frame, require_columns
from rubrictools.charts.base import values as _values
from rubrictools.rubric.tree import RubricTree
from rubrictools.tables import fixed_decimals

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

__all__ = ["rubric_tree"]

_LABEL = 64  # characters of a requirement shown; the whole text is in the tooltip
_PANEL = 470  # pixels of the requirements panel: 64 characters at 11 px after a few indents
_NODE, _LEAF = "node (weighted mean of its children)", "leaf (a graded criterion: judge or rule)"


def rubric_tree(
    tree: RubricTree, scores: Any, *, submission: Any = None, title: str | None = None, width: int = 320
) -> alt.HConcatChart:
    """One row per node of ``tree``, depth first and indented by depth, with a bar for its
    score from :meth:`RubricTree.score` (``scores``): one submission's (``submission=`` its
    id) or the mean over submissions. Bars run on a fixed 0-1 axis; each row prints its score
    and weight (a weight counts against its siblings), with two decimals. Inner nodes are dark, leaves light;
    a null score (a failed leaf below) says so, and a mean says how many submissions it
    leaves out. Each row reads ``node: requirements``;
    a label longer than 64 characters ends in "..." and is whole in the tooltip.

    >>> import polars as pl, rubrictools as rt
    >>> tree = rt.RubricTree.from_dict({"id": "r", "requirements": "All", "weight": 1, "sub_tasks": [
    ...     {"id": "a", "requirements": "Part a", "weight": 1, "sub_tasks": [], "task_category": "Code Development"}]})
    >>> s = tree.score(pl.DataFrame({"id": [1], "criterion": ["a"], "verdict": ["MET"]}))
    >>> spec = rt.charts.rubric_tree(tree, s).to_dict()
    >>> spec["hconcat"][0]["mark"]["type"], [layer["mark"]["type"] for layer in spec["hconcat"][1]["layer"]]
    ('text', ['bar', 'text'])
    """
    alt = _alt()
    s = chart_frame(scores, name="scores")
    require_columns(s, ["id", "node", "score"], "rubric_tree")
    if submission is not None:
        s = s.filter(pl.col("id") == submission)
        if s.height == 0:
            raise ValueError(f"submission {submission!r} is not in the scores")
    n_subs = s["id"].n_unique()
    agg = s.group_by("node").agg(pl.col("score").mean(), pl.col("score").null_count().alias("nulls"))
    nodes = tree.nodes().join(agg, on="node", how="left").sort("order")
    # a row names its node as tables and scores do, then what it requires
    named = pl.format("{}: {}", pl.col("node"), pl.col("requirements").str.replace_all(r"\s+", " "))
    label = pl.when(named.str.len_chars() > _LABEL).then(named.str.slice(0, _LABEL - 3) + "...").otherwise(named)
    kind = pl.when(pl.col("leaf")).then(pl.lit(_LEAF)).otherwise(pl.lit(_NODE))
    weight = pl.when(pl.col("weight") == pl.col("weight").round(0)).then(
        pl.col("weight").cast(pl.Int64).cast(pl.String)
    )
    nodes = nodes.with_columns(weight.otherwise(pl.col("weight").cast(pl.String)).alias("w"))
    two = fixed_decimals(pl.col("score"))
    t = nodes.with_columns(
        label.str.replace_all(r"\s+", " ").alias("label"),
        (pl.col("depth") * 16).alias("indent"),
        kind.alias("kind"),
        pl.when(pl.col("score").is_null())
        .then(pl.lit("no score (a leaf below failed)"))
        .when(pl.col("nulls") > 0)
        .then(pl.format("{}  (weight {}; {} unscored)", two, pl.col("w"), pl.col("nulls")))
        .otherwise(pl.format("{}  (weight {})", two, pl.col("w")))
        .alias("text"),
    )
    row = alt.Y("order:O", axis=None, title=None)
    tip = ["node:N", "requirements:N", alt.Tooltip("score:Q", format=".3f"), "weight:Q", "task_category:N"]
    base = alt.Chart(alt.Data(values=_values(t))).encode(y=row, tooltip=tip)
    # the requirements in their own panel, left-aligned and indented by depth, so the tree reads
    names = base.mark_text(align="left", fontSize=11, color="#222").encode(
        x=alt.X("indent:Q", axis=None, scale=alt.Scale(domain=[0, _PANEL], range=[0, _PANEL])), text="label:N"
    )
    colour = alt.Color(
        "kind:N",
        title=None,
        scale=alt.Scale(domain=[_NODE, _LEAF], range=["#1f4e79", "#9ecae1"]),
        legend=alt.Legend(orient="bottom", labelLimit=0),
    )
    bars = base.mark_bar(height=12).encode(
        x=alt.X("score:Q", scale=alt.Scale(domain=[0, 1]), title="score (0-1)"), color=colour
    )
    text = base.mark_text(align="left", dx=4, fontSize=11, color="#333").encode(x=alt.value(width + 4), text="text:N")
    what = f"submission {submission!r}" if submission is not None else f"mean of {n_subs} submissions"
    step = alt.Step(18)
    # wide enough for the longest indented label (about 7 px a character at 11 px), no wider
    need = int((t["indent"] + t["label"].str.len_chars() * 7).to_numpy().max()) + 8
    left = names.properties(width=min(_PANEL, need), height=step, view=alt.ViewBackground(stroke=None))
    right = alt.layer(bars, text).properties(width=width, height=step)
    return alt.hconcat(left, right, spacing=4).properties(title=title or f"Rubric tree scores, {what}")
