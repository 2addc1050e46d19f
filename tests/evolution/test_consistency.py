"""evolve_rubric(consistency_weight=, consistency_runs=): rubrify's consistency across repeated runs as an objective."""

from __future__ import annotations

import itertools
import json

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.evolution.adapter import RubricAdapter
from rubrictools.testing import FakeLLMServer, user_text

pytest.importorskip("gepa")

from tests.evolution.test_evolve import DF, HUMAN, START, Reflector, cue  # after the gepa skip

VAGUE = START.model_copy(update={"criteria": tuple(
    c.model_copy(update={"requirement": "Mentions a source (cues: vague)"}) if c.name == "cites" else c for c in START
)})  # fmt: skip


def serve() -> FakeLLMServer:
    """A judge that answers a vague requirement at random (alternating) and a clear one by its cue."""
    flip = itertools.cycle(["MET", "UNMET", "UNMET"])

    def script(request: dict) -> str:
        text = user_text(request)
        sub = text.split("<submission>")[1].split("</submission>")[0]
        said = next(flip) if cue(text) == "vague" else ("MET" if cue(text) in sub else "UNMET")
        return json.dumps({"verdict": said, "explanation": "scripted"})

    return FakeLLMServer(script=script)


def test_consistency_is_one_minus_the_cv_of_each_submissions_scores_over_repeated_gradings() -> None:
    with serve() as srv:
        judge = rt.Judge(model="openai/gpt-4.1-mini", api_base=srv.url, api_key="sk-test", temperature=0.7)
        texts = DF.select("id", pl.col("submission").alias("text"))
        adapter = RubricAdapter(START, texts, HUMAN, judge, cache=False, consistency_weight=1.0, runs=3)
        ids = list(range(12))
        steady = adapter.evaluate(ids, {"criterion:cites": "Mentions a source (cues: ref)", "guidelines": ""})
        shaky = adapter.evaluate(ids, {"criterion:cites": "Mentions a source (cues: vague)", "guidelines": ""})
        sent = len(srv.requests)
    assert [o["consistency"] for o in steady.objective_scores] == [1.0] * 12  # the same verdicts in all three runs
    cons = [o["consistency"] for o in shaky.objective_scores]
    assert min(cons) < 1.0 and all(0.0 <= c <= 1.0 for c in cons)
    # each run a real sample: 2 rubrics x 12 submissions x 2 criteria x 3 runs
    assert sent == 2 * 12 * 2 * 3
    assert sum(steady.scores) > sum(shaky.scores)  # the score counts it: (agreement + consistency) / 2


def test_the_cost_counts_each_call_once_and_the_held_out_part_is_graded_once() -> None:
    """Before (a fresh review): the majority ("ensemble") rows repeat the cost of the runs they
    aggregate, so the cost came out doubled; and the held-out part was graded once per run and
    scored on the runs' majority, a different judge from the one a user runs."""
    with serve() as srv:
        judge = rt.Judge(model="openai/gpt-4.1-mini", api_base=srv.url, api_key="sk-test", temperature=0.7)
        texts = DF.select("id", pl.col("submission").alias("text"))
        adapter = RubricAdapter(START, texts, HUMAN, judge, cache=False, consistency_weight=1.0, runs=2)
        v = adapter.grade(START, list(range(12)))
        per_run = v.filter(pl.col("judge") != "ensemble")["cost_usd"].sum()
        assert adapter.spent == [pytest.approx(per_run)] and per_run > 0
        before = len(srv.requests)
        once = adapter.grade(START, list(range(12)), once=True)
        assert len(srv.requests) - before == 12 * 2 and set(once["judge"]) == {"openai/gpt-4.1-mini"}


def test_repeated_runs_at_temperature_0_are_warned() -> None:
    with pytest.warns(UserWarning, match="temperature 0"), pytest.raises(ValueError, match="max_metric_calls"):
        rt.evolve_rubric(DF, HUMAN, START, model="openai/gpt-4.1-mini", reflection_model=lambda p: "```x```",
                         consistency_weight=1.0, consistency_runs=2, max_metric_calls=1, cache=False)  # fmt: skip


def test_evolution_with_consistency_prefers_the_requirement_the_judge_applies_alike_every_time() -> None:
    with serve() as srv:
        judge = rt.Judge(model="openai/gpt-4.1-mini", api_base=srv.url, api_key="sk-test", temperature=0.7)
        e = rt.evolve_rubric(DF, HUMAN, VAGUE, model=judge, reflection_model=Reflector(), max_metric_calls=80,
                             minibatch_size=4, n_resamples=200, cache=False, consistency_weight=1.0,
                             consistency_runs=2)  # fmt: skip
    assert cue(e.rubric["cites"].requirement) == "ref" and e.gain is not None and e.gain > 0


@pytest.mark.parametrize(
    ("settings", "match"),
    [
        ({"consistency_weight": 1.0}, "needs consistency_runs >= 2"),
        ({"consistency_runs": 3}, "needs consistency_weight > 0"),
        ({"consistency_runs": 11, "consistency_weight": 1.0}, "from 1 to 10"),
        ({"consistency_runs": 2.0, "consistency_weight": 1.0}, "must be an int"),
        ({"consistency_weight": -1.0}, "consistency_weight must be a number >= 0"),
        (
            {"consistency_runs": 2, "consistency_weight": 1.0, "model": rt.ScriptedJudge(rule=lambda t, c: "MET")},
            "needs a judge that samples",
        ),
    ],
)
def test_bad_consistency_settings_are_refused_before_any_call(settings: dict, match: str) -> None:
    asked: list[str] = []
    kw = {"model": rt.Judge(model="openai/gpt-4.1-mini", temperature=0.7), **settings}
    with pytest.raises(ValueError, match=match):
        rt.evolve_rubric(DF, HUMAN, START, reflection_model=asked.append, cache=False, **kw)
    assert asked == []
