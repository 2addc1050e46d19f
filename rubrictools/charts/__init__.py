"""Altair charts: agreement with humans, and pairwise comparisons (leaderboards, win-rate
matrices, position bias), and estimates from few human labels.

Every function returns an ``alt.Chart`` (or a layered/faceted chart) built from data
aggregated in polars first, so a chart embeds at most a few hundred rows whatever the size
of the verdict table. Charts render inline in Jupyter and in nbconvert HTML and save to
PNG/SVG offline: ``rt.charts.save(chart, "x.png")`` draws PNGs at twice the chart's size
(``scale=``), where altair's own ``chart.save`` draws them at 1x. ``rt.charts.palette`` names
the colours they share (the judge blue, people grey, calibrated orange), for charts of your own.

>>> import polars as pl, rubrictools as rt
>>> t = pl.DataFrame({"criterion": ["a", "b"], "metric": "cohen_kappa", "value": [0.5, 0.7],
...                   "ci_low": [0.3, 0.6], "ci_high": [0.7, 0.8], "n": [50, 50]})
>>> rt.charts.forest(t).to_dict()["layer"][0]["mark"]["type"]
'rule'
"""

from __future__ import annotations

from rubrictools import palette
from rubrictools.charts.agreement import (
    confusion,
    judge_agreement,
    met_rates,
    score_distributions,
)
from rubrictools.charts.base import offline, save
from rubrictools.charts.change import before_after
from rubrictools.charts.comparison import run_comparison
from rubrictools.charts.forest import forest
from rubrictools.charts.inference import ppi_widths
from rubrictools.charts.pairwise import leaderboard, position_bias, win_matrix
from rubrictools.charts.reliability import reliability
from rubrictools.charts.run import run_summary
from rubrictools.charts.tree import rubric_tree
from rubrictools.charts.verdicts import verdicts
from rubrictools.tables import table

__all__ = [
    "before_after",
    "confusion",
    "forest",
    "judge_agreement",
    "leaderboard",
    "met_rates",
    "offline",
    "palette",
    "position_bias",
    "ppi_widths",
    "reliability",
    "rubric_tree",
    "run_comparison",
    "run_summary",
    "save",
    "score_distributions",
    "table",
    "verdicts",
    "win_matrix",
]
