"""A rubric tree's scores at a glance (:func:`rubric_tree`)."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

import polars as pl

from rubrictools.charts.base import alt_module as _alt
from rubrictools.charts.base import chart_frame, check_title, require_columns
from rubrictools.charts.base import values as _values
from rubrictools.palette import INK, INK_DARK, NEUTRAL_DARK, NEUTRAL_LIGHT
from rubrictools.rubric.tree import RubricTree
from rubrictools.tables import fixed_decimals

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

__all__ = ["rubric_tree"]

_WRAP = 64  # characters per line of a row's label: longer ones wrap onto more lines, never cut
_PANEL = 470  # pixels of the requirements panel: 64 characters at 11 px after a few indents
_LINE, _GAP = 13, 5  # pixels per line of a label, and between rows
_NODE, _LEAF = "node (weighted mean of its children)", "leaf (a graded criterion: judge or rule)"


def rubric_tree(
    tree: RubricTree, scores: Any, *, submission: Any = None, title: str | None = None, width: int = 320
) -> alt.HConcatChart:
    """One row per node of ``tree``, depth first and indented by depth, with a bar for its
    score from :meth:`RubricTree.score` (``scores``): one submission's (``submission=`` its
    id) or the mean over submissions. Bars run on a fixed 0-1 axis; each row prints its score,
    with three decimals as :func:`rubrictools.charts.table` prints it, and its weight (a weight
    counts against its siblings). Inner nodes are dark grey, leaves light grey (not the judge's blue:
    a leaf may be graded by a rule); a null score (a failed
    leaf below) says so, and a mean says how many submissions it leaves out. Each row reads
    ``node: requirements``, wrapped onto as many lines of 64 characters as it needs (nothing is
    cut: a static export has no tooltip).

    >>> import polars as pl, rubrictools as rt
    >>> tree = rt.RubricTree.from_dict({"id": "r", "requirements": "All", "weight": 1, "sub_tasks": [
    ...     {"id": "a", "requirements": "Part a", "weight": 1, "sub_tasks": [], "task_category": "Code Development"}]})
    >>> s = tree.score(pl.DataFrame({"id": [1], "criterion": ["a"], "verdict": ["MET"]}))
    >>> spec = rt.charts.rubric_tree(tree, s).to_dict()
    >>> spec["hconcat"][0]["mark"]["type"], [layer["mark"]["type"] for layer in spec["hconcat"][1]["layer"]]
    ('text', ['rect', 'text'])
    """
    check_title(title)
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
    kind = pl.when(pl.col("leaf")).then(pl.lit(_LEAF)).otherwise(pl.lit(_NODE))
    weight = pl.when(pl.col("weight") == pl.col("weight").round(0)).then(
        pl.col("weight").cast(pl.Int64).cast(pl.String)
    )
    nodes = nodes.with_columns(weight.otherwise(pl.col("weight").cast(pl.String)).alias("w"))
    shown = fixed_decimals(pl.col("score"), 3)  # as rt.charts.table prints scores beside it
    t = nodes.with_columns(
        named.map_elements(lambda x: "\n".join(textwrap.wrap(x, _WRAP)) or x, return_dtype=pl.String).alias("label"),
        (pl.col("depth") * 16).alias("indent"),
        kind.alias("kind"),
        pl.when(pl.col("score").is_null())
        .then(pl.lit("no score (a leaf below failed)"))
        .when(pl.col("nulls") > 0)
        .then(pl.format("{}  (weight {}; {} unscored)", shown, pl.col("w"), pl.col("nulls")))
        .otherwise(pl.format("{}  (weight {})", shown, pl.col("w")))
        .alias("text"),
    )
    # each row as tall as its label's lines: a row's top is the sum of the heights above it
    rows = (t["label"].str.count_matches("\n") + 1) * _LINE + _GAP
    t = t.with_columns((rows.cum_sum() - rows).alias("top"))
    total = int(rows.sum())
    t = t.with_columns((pl.col("top") + 1).alias("bar_top"), (pl.col("top") + _LINE - 1).alias("bar_end"))
    px = alt.Scale(domain=[0, total], range=[0, total])
    tip = ["node:N", "requirements:N", alt.Tooltip("score:Q", format=".3f"), "weight:Q", "task_category:N"]
    base = alt.Chart(alt.Data(values=_values(t))).encode(tooltip=tip)
    top = alt.Y("top:Q", axis=None, title=None, scale=px)
    # the requirements in their own panel, left-aligned and indented by depth, so the tree reads
    names = base.mark_text(align="left", baseline="top", lineBreak="\n", lineHeight=_LINE, fontSize=11,
                           color=INK_DARK).encode(
        x=alt.X("indent:Q", axis=None, scale=alt.Scale(domain=[0, _PANEL], range=[0, _PANEL])), y=top,
        text="label:N",
    )  # fmt: skip
    colour = alt.Color(
        "kind:N",
        title=None,
        scale=alt.Scale(domain=[_NODE, _LEAF], range=[NEUTRAL_DARK, NEUTRAL_LIGHT]),  # not blue: a leaf may be a rule
        legend=alt.Legend(orient="bottom", labelLimit=0),
    )
    bars = base.mark_rect().encode(  # from 0 to the score, over the row's first line
        x=alt.X("score:Q", scale=alt.Scale(domain=[0, 1]), title="score (0-1)"), x2=alt.datum(0),
        y=alt.Y("bar_top:Q", axis=None, title=None, scale=px), y2="bar_end:Q", color=colour,
    )  # fmt: skip
    text = base.mark_text(align="left", baseline="top", dx=4, fontSize=11, color=INK).encode(
        x=alt.value(width + 4), y=top, text="text:N"
    )
    many = f"mean of {n_subs} submission{'' if n_subs == 1 else 's'}"
    what = f"submission {submission!r}" if submission is not None else many
    # wide enough for the longest indented line (about 6 px a character at 11 px sans-serif), no wider
    longest = t["label"].str.split("\n").list.eval(pl.element().str.len_chars()).list.max()
    need = int((t["indent"] + longest * 6.0).to_numpy().max()) + 8
    left = names.properties(width=min(_PANEL, need), height=total, view=alt.ViewBackground(stroke=None))
    right = alt.layer(bars, text).properties(width=width, height=total)
    return alt.hconcat(left, right, spacing=4).properties(title=title or f"Rubric tree scores, {what}")
