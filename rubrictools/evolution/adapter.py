"""GEPA's adapter for a rubric: grade a batch of labelled submissions with a candidate rubric,
score each against the human labels, and show the reflection model where they disagree.

Each submission's score is rubrify's agreement, ``1 - mean |judge value - human value|`` over
its (criterion, rater) pairs (values on the rubric's 0-1 scale; a failed call counts as the
largest error, 1), optionally mixed with the batch's **discrimination** (the normalised
entropy of its rubric scores, :func:`rubrictools.metrics.discrimination`) and its
**consistency** across ``runs`` repeated gradings (``1 - CV`` of its rubric scores,
:func:`rubrictools.metrics.consistency`; 1 with one run; the same spread of scores costs a
low-scoring submission more than a high-scoring one, and a submission scored 0 every time is
consistent):
``score_i = (w_a * agreement_i + w_d * discrimination + w_c * consistency_i) / (w_a + w_d + w_c)``.
With several runs, agreement averages every run's pairs, discrimination and the reflection's
examples use the first run, and the held-out part is graded once. Grading goes through
:func:`rubrictools.grade` with the run's cache, so a criterion whose text a candidate did not
change is never asked again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import polars as pl

from rubrictools import metrics
from rubrictools.evolution.components import GUIDELINES, WEIGHTS, criterion_component, from_candidate
from rubrictools.grading import grade
from rubrictools.human_agreement import criterion_pairs
from rubrictools.judge.config import Judge
from rubrictools.rubric import Rubric, score

__all__ = ["RubricAdapter"]

_SHOWN_CHARS = 1500  # the most characters of a submission shown to the reflection model


@dataclass
class RubricAdapter:
    """Grades with ``model`` the submissions of ``frame`` whose ids GEPA hands it, against
    ``human`` labels (see the module docstring). ``spent`` adds up the judge's cost."""

    rubric: Rubric
    frame: pl.DataFrame  # id, text
    human: pl.DataFrame
    model: Any
    cache: bool | str = True
    agreement_weight: float = 1.0
    discrimination_weight: float = 0.0
    consistency_weight: float = 0.0
    runs: int = 1  # gradings of each submission (consistency across repeated runs)
    spent: list[float] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # candidates that tried to change the structure
    answered: bool = False  # the judge has answered at least once
    n_graded: int = 0  # submissions handed to grade (answered by the cache or by the judge)
    propose_new_texts: ClassVar[None] = None  # GEPA's own proposer writes the texts, from the reflection model

    def grade(self, rubric: Rubric, ids: Sequence[Any], *, once: bool = False) -> pl.DataFrame:
        """The verdicts of ``ids`` under ``rubric``: ``runs`` times (each run's rows under its
        own judge name, and their majority), or once with ``once=True`` (the held-out part)."""
        part = self.frame.filter(pl.col("id").is_in(list(ids)))
        self.n_graded += part.height
        v = grade(part, rubric, model=self.model if once else self._repeated(), column="text", id_column="id",
                  cache=self.cache, progress=False, record=False)  # fmt: skip
        fresh = v.filter(~pl.col("cached")) if "cached" in v.columns else v
        if "judge" in fresh.columns:  # an ensemble row repeats the cost of the calls it aggregates
            fresh = fresh.filter(pl.col("judge") != "ensemble")
        self.spent.append(float(fresh["cost_usd"].fill_null(0).sum()) if "cost_usd" in v.columns else 0.0)
        errors = v["error"].drop_nulls() if "error" in v.columns else pl.Series([], dtype=pl.String)
        if not self.answered and v.height and errors.len() == v.height:  # the judge never answers: stop now
            raise RuntimeError(
                f"the judge failed on every call of the first batch ({v.height}); the first: {errors[0]}"
            )
        self.answered = self.answered or errors.len() < v.height
        return v

    def _repeated(self) -> Any:
        """The judge, ``runs`` times under distinct names: identical requests of several judges
        are separate samples (grading numbers them in their cache keys), so each repeat is a
        run of its own."""
        if self.runs == 1:
            return self.model
        j = self.model if isinstance(self.model, Judge) else Judge(model=self.model)
        return [j.model_copy(update={"name": f"{j.label} run {i + 1}"}) for i in range(self.runs)]

    def _first_run(self, v: pl.DataFrame) -> pl.DataFrame:
        """The rows of the first run (all of ``v`` with one run)."""
        if self.runs == 1 or "judge" not in v.columns:
            return v
        return v.filter(pl.col("judge") == min(x for x in v["judge"].unique().to_list() if x != "ensemble"))

    def consistencies(self, v: pl.DataFrame, rubric: Rubric, ids: Sequence[Any]) -> list[float]:
        """``1 - CV`` of each submission's rubric scores over the runs (rubrify's consistency;
        1 with one run; 0 when fewer than two runs scored it)."""
        if self.runs == 1:
            return [1.0] * len(ids)
        labels = sorted(x for x in v["judge"].unique().to_list() if x != "ensemble")
        scored = [dict(score(v.filter(pl.col("judge") == x), rubric, on_error="null").select("id", "score").iter_rows())
                  for x in labels]  # fmt: skip
        out = []
        for i in ids:
            row = [[np.nan if run.get(i) is None else float(run[i]) for run in scored]]
            c = metrics.consistency(row)
            out.append(0.0 if np.isnan(c) else c)
        return out

    def agreements(self, v: pl.DataFrame, rubric: Rubric, ids: Sequence[Any]) -> list[float]:
        """``1 - mean |judge - human|`` per submission of ``ids`` (a failed call: error 1)."""
        h = self.human.filter(pl.col("id").is_in(list(ids)) & pl.col("criterion").is_in(list(rubric.names)))
        judged = v.filter(pl.col("judge") != "ensemble") if "judge" in v.columns else v
        by = ["judge", "criterion"] if self.runs > 1 else ["criterion"]  # each run's pairs
        ok = criterion_pairs(judged, h, rubric, by, "exclude", "each").frame
        err = ok.group_by("id").agg((pl.col("h_value") - pl.col("j_value")).abs().sum().alias("e"), pl.len())
        labels = h.group_by("id").agg((pl.len() * self.runs).alias("labels"))  # pairs expected, over the runs
        per = labels.join(err, on="id", how="left").with_columns(
            # pairs left out (a failed call, an unknown label) count as the largest error
            ((pl.col("e").fill_null(0) + pl.col("labels") - pl.col("len").fill_null(0)) / pl.col("labels")).alias("err")
        )
        got = dict(per.select("id", (1 - pl.col("err")).alias("a")).iter_rows())
        return [float(got.get(i, 0.0)) for i in ids]

    def evaluate(self, batch: list[Any], candidate: dict[str, str], capture_traces: bool = False) -> Any:
        """GEPA's ``evaluate``: one score per submission id in ``batch`` (higher is better)."""
        from gepa import EvaluationBatch  # reason: gepa is the optional [evolve] extra

        try:
            rubric = from_candidate(self.rubric, candidate)
        except ValueError as e:  # a proposal that breaks the structure fails, the search goes on
            self.refused.append(str(e))
            empty = [pl.DataFrame() for _ in batch] if capture_traces else None
            return EvaluationBatch(outputs=list(batch), scores=[0.0] * len(batch), trajectories=empty)
        v = self.grade(rubric, batch)
        agree = self.agreements(v, rubric, batch)
        first = self._first_run(v)  # one judge's answers: for discrimination and the reflection's examples
        spread = 0.0
        if self.discrimination_weight > 0:
            s = score(first, rubric, on_error="null")["score"].drop_nulls().to_numpy().astype(float)
            spread = metrics.discrimination(np.clip(s, 0, 1), bins=10) if s.size else 0.0
        steady = self.consistencies(v, rubric, batch)
        w_a, w_d, w_c = self.agreement_weight, self.discrimination_weight, self.consistency_weight
        scores = [(w_a * a + w_d * spread + w_c * c) / (w_a + w_d + w_c) for a, c in zip(agree, steady, strict=True)]
        objectives = [
            {"agreement": a, "discrimination": spread, "consistency": c} for a, c in zip(agree, steady, strict=True)
        ]
        traces = [first.filter(pl.col("id") == i) for i in batch] if capture_traces else None
        return EvaluationBatch(outputs=list(batch), scores=scores, trajectories=traces, objective_scores=objectives)

    def make_reflective_dataset(
        self, candidate: dict[str, str], eval_batch: Any, components_to_update: list[str]
    ) -> Mapping[str, Sequence[Mapping[str, Any]]]:
        """GEPA's reflective dataset: per component, the submissions of the batch where the
        judge and the humans disagree on the criteria that component words."""
        rubric = from_candidate(self.rubric, candidate)
        v = pl.concat(list(eval_batch.trajectories), how="diagonal_relaxed")
        texts = dict(self.frame.select("id", "text").iter_rows())
        out: dict[str, list[dict[str, Any]]] = {}
        for component in components_to_update:
            names = _names_of(component, rubric)
            out[component] = [_record(r, texts) for r in _disputed(v, self.human, names).iter_rows(named=True)]
        return out


def _names_of(component: str, rubric: Rubric) -> list[str]:
    if component in (GUIDELINES, WEIGHTS):
        return [c.name or "" for c in rubric if c.rule is None]
    return [c.name or "" for c in rubric if criterion_component(c.name or "") == component]


def _disputed(v: pl.DataFrame, human: pl.DataFrame, names: list[str]) -> pl.DataFrame:
    """The (submission, criterion) pairs of ``names`` whose verdict some human label contradicts."""
    mine = v.filter(pl.col("criterion").is_in(names)).select("id", "criterion", "verdict", "explanation", "error")
    labels = human.filter(pl.col("criterion").is_in(names)).group_by("id", "criterion").agg(pl.col("label"))
    both = mine.join(labels.with_columns(pl.col("id").cast(mine.schema["id"])), on=["id", "criterion"], how="inner")
    upper = pl.col("label").list.eval(pl.element().cast(pl.String).str.strip_chars().str.to_uppercase())
    return both.filter(
        pl.col("error").is_not_null() | ~upper.list.contains(pl.col("verdict").cast(pl.String).str.to_uppercase())
        | (upper.list.unique().list.len() > 1)
    )  # fmt: skip


def _record(r: dict[str, Any], texts: dict[Any, str]) -> dict[str, Any]:
    text = str(texts.get(r["id"], ""))
    shown = text[:_SHOWN_CHARS] + ("…" if len(text) > _SHOWN_CHARS else "")
    said = f"error: {r['error']}" if r["error"] else f"{r['verdict']}: {r['explanation'] or ''}"
    return {
        "Inputs": {"criterion": r["criterion"], "submission": shown},
        "Generated Outputs": f"the judge answered {said}",
        "Feedback": f"the human raters answered {', '.join(map(str, r['label']))}",
    }
