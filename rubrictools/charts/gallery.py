"""Every public chart on the shipped demo and public data, to look at all of them at once.

``python -m rubrictools.charts.gallery build/gallery`` writes one PNG per chart and an
``index.html`` that shows them all with the call that drew each (offline: vl-convert).
:func:`gallery_charts` returns the same charts as a dict, which the chart-rule tests inspect.
The judges here are recorded or simulated (HANNA's LLMs, LLMBar's GPT-4, the demo's simulated
judge) or the offline scripted judge: none is called.
"""

from __future__ import annotations

import html
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from rubrictools.calibration.model import dist_frame
from rubrictools.charts.agreement import confusion, judge_agreement, met_rates, score_distributions
from rubrictools.charts.base import save
from rubrictools.charts.change import before_after
from rubrictools.charts.comparison import run_comparison
from rubrictools.charts.forest import forest
from rubrictools.charts.inference import ppi_widths
from rubrictools.charts.pairwise import leaderboard, position_bias, win_matrix
from rubrictools.charts.reliability import reliability
from rubrictools.charts.run import run_summary
from rubrictools.charts.tree import rubric_tree
from rubrictools.charts.verdicts import verdicts
from rubrictools.comparison import compare_runs
from rubrictools.datasets import load
from rubrictools.grading import grade
from rubrictools.human_agreement import agreement
from rubrictools.leaderboard import position_bias as position_bias_table
from rubrictools.leaderboard import preferences_from_scores, rank_systems, win_rates
from rubrictools.ppi import width_curve
from rubrictools.rubric import Rubric, RubricTree, score

__all__ = ["gallery_charts", "write_gallery"]

HANNA_CRITERIA = ("relevance", "coherence", "empathy", "surprise", "engagement", "complexity")


def _hanna_rubric() -> Rubric:
    return Rubric.from_dict(
        [
            {
                "name": c,
                "requirement": f"How good is the story's {c}? (1-5)",
                "scale": "ordinal",
                "options": [{"label": str(k), "value": (k - 1) / 4} for k in range(1, 6)],
            }
            for c in HANNA_CRITERIA
        ]
    )


def _support() -> dict[str, Any]:
    s = load("demo_support")
    scripted = grade(
        s.submissions,
        s.rubric,
        model="rubrictools/scripted",
        id_column="id",
        query_column="query",
        progress=False,
        record=False,
    )
    return {"data": s, "scripted": scripted}


def _hanna_preferences() -> pl.DataFrame:
    """HANNA's human ratings of 'relevance' as scores of the 11 story systems (id prefix)."""
    h = load("hanna").human.filter(pl.col("criterion") == "relevance")
    mean = h.group_by("id").agg(pl.col("label").mean().alias("score"))
    parts = mean.with_columns(
        pl.col("id").str.split("/").list.first().alias("system"), pl.col("id").str.split("/").list.last().alias("item")
    )
    return preferences_from_scores(parts.drop("id").rename({"item": "id"}), criterion=None).with_columns(
        pl.lit("relevance").alias("criterion")
    )


def _reliability_inputs() -> tuple[np.ndarray, np.ndarray]:
    """GPT-3.5's most probable Q0 rating on LLM-Rubric's real dialogues, and whether people agreed."""
    real = load("llm_rubric_real")
    d = dist_frame(real.tables["distributions"]).filter(pl.col("criterion") == "Q0")
    top = d.sort("prob", descending=True).group_by("id", maintain_order=True).first()
    human = real.human.filter(pl.col("criterion") == "Q0").drop_nulls("label")
    joined = human.join(top, on="id").with_columns(pl.col("label").cast(pl.String))
    hit = (joined["label"] == joined["label_right"]).cast(pl.Int64).to_numpy()
    return hit, joined["prob"].to_numpy()


def _support_tree() -> RubricTree:
    """The support demo's four reward criteria as a two-level PaperBench-style tree."""

    def leaf(name: str, weight: float) -> dict[str, Any]:
        return {"id": name, "requirements": name.replace("_", " "), "weight": weight, "sub_tasks": [],
                "task_category": "Subtree"}  # fmt: skip

    return RubricTree.from_dict(
        {
            "id": "support",
            "requirements": "A good support answer",
            "weight": 1,
            "sub_tasks": [
                {
                    "id": "substance",
                    "requirements": "It solves the problem",
                    "weight": 3,
                    "sub_tasks": [leaf("answers_question", 2), leaf("gives_steps", 1)],
                },
                {
                    "id": "manner",
                    "requirements": "It is courteous and grounded",
                    "weight": 1,
                    "sub_tasks": [leaf("polite", 1), leaf("cites_policy", 1)],
                },
            ],
        }
    )


def gallery_charts() -> dict[str, tuple[str, Any]]:
    """``name -> (the call that drew it, chart)`` for every public chart, on shipped data."""
    sup = _support()
    s, scripted = sup["data"], sup["scripted"]
    table = agreement(s.verdicts, s.human, s.rubric, n_resamples=300, seed=0)
    kappa_sim = table.filter(pl.col("metric") == "cohen_kappa").select("criterion", pl.col("value").alias("before"))
    kappa_scr = agreement(scripted, s.human, s.rubric, metrics=["cohen_kappa"], n_resamples=0, seed=0)
    change = kappa_sim.join(kappa_scr.select("criterion", pl.col("value").alias("now")), on="criterion")
    hanna = load("hanna")
    if hanna.verdicts is None:  # pragma: no cover - the shipped HANNA extract has its LLM ratings
        raise FileNotFoundError("the HANNA extract has no recorded LLM ratings")
    judges = hanna.verdicts.filter(pl.col("judge").str.ends_with("/p1"))
    prefs = _hanna_preferences()
    llmbar = load("llmbar")
    bias = position_bias_table(llmbar.tables["preferences"], by=("subset", "judge"), on_error="as_answer")
    hit, conf = _reliability_inputs()
    curve = width_curve(s.verdicts, s.human, ns=(25, 50, 75), reps=40, progress=False)
    build: dict[str, tuple[str, Callable[[], Any]]] = {
        "verdicts": (
            "verdicts(scripted, rubric, scores=score(scripted, rubric))",
            lambda: verdicts(scripted, s.rubric, scores=score(scripted, s.rubric), max_submissions=20),
        ),
        "run_summary": ("run_summary(grade(support, model='rubrictools/scripted'))", lambda: run_summary(scripted)),
        "forest": (
            "forest(agreement(...), metric=['cohen_kappa', 'gwet_ac1'])",
            lambda: forest(table, metric=["cohen_kappa", "gwet_ac1"]),
        ),
        "forest_compare": (
            "forest(..., compare='judge')",
            lambda: forest(
                pl.concat(
                    [
                        table.filter(pl.col("metric") == "cohen_kappa").with_columns(
                            pl.lit("simulated").alias("judge")
                        ),
                        kappa_scr.with_columns(pl.lit("scripted").alias("judge")),
                    ],
                    how="diagonal_relaxed",
                ),
                metric="cohen_kappa",
                compare="judge",
            ),
        ),
        "confusion": (
            "confusion(support.verdicts, support.human, criterion='polite')",
            lambda: confusion(s.verdicts, s.human, s.rubric, criterion="polite"),
        ),
        "score_distributions": ("score_distributions(...)", lambda: score_distributions(s.verdicts, s.human, s.rubric)),
        "met_rates": ("met_rates(...)", lambda: met_rates(s.verdicts, s.human, s.rubric, n_resamples=200)),
        "before_after": (
            "before_after(kappa: simulated -> scripted judge)",
            lambda: before_after(change, title="Cohen's kappa with humans: simulated judge -> scripted judge"),
        ),
        "run_comparison": (
            "run_comparison(compare_runs(support.verdicts, scripted))",
            lambda: run_comparison(
                compare_runs(s.verdicts, scripted, rubric=s.rubric, names=("simulated judge", "scripted judge"))
            ),
        ),
        "rubric_tree": (
            "rubric_tree(tree, tree.score(support.verdicts))",
            lambda: rubric_tree(_support_tree(), _support_tree().score(s.verdicts)),
        ),
        "judge_agreement": ("judge_agreement(HANNA's five LLMs)", lambda: judge_agreement(judges, _hanna_rubric())),
        "reliability": ("reliability(GPT-3.5 on LLM-Rubric Q0)", lambda: reliability(hit, conf)),
        "ppi_widths": (
            "ppi_widths(width_curve(support, ...), criterion='polite')",
            lambda: ppi_widths(curve, criterion="polite"),
        ),
        "leaderboard": (
            "leaderboard(rank_systems(HANNA relevance))",
            lambda: leaderboard(
                rank_systems(prefs, criterion="relevance", n_resamples=200),
                title="HANNA stories rated by people on relevance: Bradley-Terry rating and rank interval",
            ),
        ),
        "win_matrix": (
            "win_matrix(win_rates(HANNA relevance), criterion='relevance')",
            lambda: win_matrix(win_rates(prefs, by=("criterion",), n_resamples=100), criterion="relevance"),
        ),
        "position_bias": (
            "position_bias(LLMBar, GPT-4)",
            lambda: position_bias(bias.filter(pl.col("judge") == bias["judge"][0]), by="subset"),
        ),
    }
    return {name: (call, make()) for name, (call, make) in build.items()}


def write_gallery(out: str | Path) -> Path:
    """Render every chart of :func:`gallery_charts` to ``out/<name>.png`` and write
    ``out/index.html`` showing them all; returns the page's path."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    cards = []
    for name, (call, chart) in gallery_charts().items():
        save(chart, folder / f"{name}.png", scale=1.5)
        cards.append(
            f"<section><h2>{html.escape(name)}</h2><code>{html.escape(call)}</code><br>"
            f'<img src="{html.escape(name)}.png" alt="{html.escape(name)} chart"></section>'
        )
    page = folder / "index.html"
    page.write_text(
        "<!doctype html><meta charset='utf-8'><title>rubrictools chart gallery</title>"
        "<style>body{font-family:sans-serif;margin:2em} section{margin-bottom:3em} img{max-width:100%}</style>"
        "<h1>rubrictools chart gallery</h1><p>Every public chart on shipped data (recorded, simulated or "
        "scripted judges: no model is called).</p>" + "".join(cards),
        encoding="utf-8",
    )
    return page


if __name__ == "__main__":  # pragma: no cover - a command, exercised by hand and in the gallery test
    print(write_gallery(sys.argv[1] if len(sys.argv) > 1 else "build/gallery"))
