"""The proposal quality gate: a proposal it turns down goes back with its reasons and is never
evaluated; one it never lets through leaves the rubric as it was, and says so."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import polars as pl
import pytest

import rubrictools as rt
from rubrictools.evolution import GATE_RUBRIC, ProposalGate
from rubrictools.evolution.gate import gated
from tests.evolution.test_evolve import DF, HUMAN, JUDGE, START, Reflector, cue

pytest.importorskip("gepa")

# the gate's scripted judge passes a proposal that names its cue word, as the rubric's texts do
NAMES_A_CUE = rt.ScriptedJudge(rule=lambda text, c: "MET" if "(cues: " in text else "UNMET")


class FirstDraftsAreBad(Reflector):
    """Proposes a vague text first; sent back with reasons, it does the real work."""

    def __call__(self, prompt: str) -> str:
        if "A reviewer turned down this proposal" not in prompt:
            self.prompts.append(prompt)
            return "```\nBe better.\n```"
        return super().__call__(prompt.split("\n\nA reviewer turned down")[0])


def test_a_turned_down_proposal_goes_back_with_reasons_and_the_second_draft_is_evaluated() -> None:
    reflect = FirstDraftsAreBad()
    gate = ProposalGate(model=NAMES_A_CUE, retries=1)
    e = rt.evolve_rubric(DF, HUMAN, START, model=JUDGE, reflection_model=reflect, gate=gate, max_metric_calls=120,
                         minibatch_size=4, n_resamples=200, cache=False)  # fmt: skip
    assert cue(e.rubric["cites"].requirement) == "ref" and e.gain is not None and e.gain > 0
    log = e.gate_log
    first, second = log.filter(pl.col("attempt") == 1), log.filter(pl.col("attempt") == 2)
    assert first.height >= 1 and not first["passed"].any() and first["score"].max() == 0  # every first draft
    assert second.height == first.height and second["passed"].all()  # each sent back once, then let through
    # no candidate GEPA kept holds a first draft: what the gate turned down was never evaluated
    assert all("Be better." not in c for c in e.rubric.to_markdown().splitlines())
    assert e.candidates["changed"].list.len().max() >= 1


@pytest.mark.filterwarnings("ignore:.*reflection.s. failed and were skipped")  # the guidelines' empty reply
def test_a_gate_that_lets_nothing_through_leaves_the_rubric_and_says_so() -> None:
    gate = ProposalGate(model=rt.ScriptedJudge(rule=lambda text, c: "UNMET"), retries=0)
    with pytest.warns(RuntimeWarning, match=r"the gate turned down every proposal \(\d+ checks\)"):
        e = rt.evolve_rubric(DF, HUMAN, START, model=JUDGE, reflection_model=Reflector(), gate=gate,
                             max_metric_calls=60, minibatch_size=4, n_resamples=50, cache=False)  # fmt: skip
    assert e.candidates.height == 1 and e.changes().height == 0
    assert e.gate_log.height >= 1 and (e.gate_log["attempt"] == 1).all()


def test_a_failing_gate_lets_proposals_through_and_is_counted() -> None:
    def down(text: str, c: rt.Criterion) -> str:
        raise ConnectionError("gate model unreachable")

    gate = ProposalGate(model=rt.ScriptedJudge(rule=down))
    with pytest.warns(RuntimeWarning, match=r"\d+ gate call\(s\) failed; those proposals were evaluated ungated"):
        e = rt.evolve_rubric(DF, HUMAN, START, model=JUDGE, reflection_model=Reflector(), gate=gate,
                             max_metric_calls=120, minibatch_size=4, n_resamples=50, cache=False)  # fmt: skip
    assert cue(e.rubric["cites"].requirement) == "ref" and e.gate_log["error"].all()


def test_the_gate_reads_its_rubric_and_refuses_bad_settings() -> None:
    verdict = ProposalGate(model=NAMES_A_CUE).check("Says hello (cues: hello)", request="the current text ...")
    assert verdict.passed and verdict.score == 1.0 and verdict.reasons == []
    no = ProposalGate(model=NAMES_A_CUE).check("Be better.", request="...")
    assert not no.passed and [r.split(":")[0] for r in no.reasons] == list(GATE_RUBRIC.names)
    for kwargs, message in [
        ({"min_score": 1.5}, r"min_score must be a number in \(0, 1\], got 1.5"),
        ({"min_score": 0}, r"got 0 \(a gate at 0 turns nothing down: pass gate=None instead\)"),
        ({"retries": -1}, "retries must be an int from 0 to 10, got -1"),
        ({"retries": 10**9}, "retries must be an int from 0 to 10, got 1000000000"),
        ({"model": " "}, "model must name the gate's judge"),
    ]:
        with pytest.raises(ValueError, match=message):
            ProposalGate(**{"model": NAMES_A_CUE, **kwargs})
    assert ProposalGate(model=NAMES_A_CUE, retries=np.int64(2)).retries == 2  # any integer type
    for model in (123, lambda text, c: "MET"):  # before: accepted, then every check failed inside GEPA, unseen
        with pytest.raises(TypeError, match="ProposalGate model: model: expected str, Judge, ScriptedJudge"):
            ProposalGate(model=model)
    with pytest.raises(TypeError, match="rubric must be a rubrictools Rubric"):
        ProposalGate(model=NAMES_A_CUE, rubric={"name": "x"})  # type: ignore[arg-type]  # reason: the error under test
    with pytest.raises(TypeError, match=r"gate must be a rubrictools\.evolution\.ProposalGate or None"):
        rt.evolve_rubric(DF, HUMAN, START, model=JUDGE, reflection_model=Reflector(), gate="strict", cache=False)  # type: ignore[arg-type]  # reason: the error under test


def test_round_two_a_gate_that_cannot_run_is_refused_before_any_call(monkeypatch) -> None:
    """Before: a gate model without a key, or a field changed after the gate was built, made every gate
    check fail inside GEPA, which swallowed it: the run spent its budget and evolved nothing, without a word."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match=r"ProposalGate model: judge 'openai/gpt-4.1-mini': no API key"):
        ProposalGate(model="openai/gpt-4.1-mini")
    gate = ProposalGate(model=NAMES_A_CUE)
    gate.retries = -1
    calls: list[str] = []
    with pytest.raises(ValueError, match="ProposalGate retries must be an int from 0 to 10, got -1"):
        rt.evolve_rubric(DF, HUMAN, START, model=JUDGE, reflection_model=lambda p: calls.append(p) or "```x```",
                         gate=gate, cache=False)  # fmt: skip
    assert calls == []
    with pytest.raises(TypeError):
        ProposalGate(model=NAMES_A_CUE, log=[])  # type: ignore[call-arg]  # reason: the log is the gate's own


def test_round_two_a_gate_check_that_raises_lets_the_proposal_through_and_says_why() -> None:
    gate = ProposalGate(model=NAMES_A_CUE)

    def broken(proposal: str, *, request: str) -> None:
        raise ConnectionError("gate unreachable")

    gate.check = broken  # type: ignore[method-assign, assignment]  # reason: a gate that raises, as a network would
    with pytest.warns(RuntimeWarning, match=r"evaluated ungated; the first: ConnectionError: gate unreachable"):
        e = rt.evolve_rubric(DF, HUMAN, START, model=JUDGE, reflection_model=Reflector(), gate=gate,
                             max_metric_calls=120, minibatch_size=4, n_resamples=50, cache=False)  # fmt: skip
    assert cue(e.rubric["cites"].requirement) == "ref" and e.gate_log["error"].all()


def test_round_two_several_gate_judges_give_one_verdict_and_one_reason_per_criterion() -> None:
    two = [rt.ScriptedJudge(rule=lambda t, c: "UNMET", name="a"), rt.ScriptedJudge(rule=lambda t, c: "UNMET", name="b")]
    verdict = ProposalGate(model=two).check("Be better.", request="...")
    assert not verdict.passed and [r.split(":")[0] for r in verdict.reasons] == list(GATE_RUBRIC.names)


def test_round_three_a_refused_proposal_costs_retries_plus_one_asks_not_twice_that() -> None:
    """Before: GEPA re-asks a reflection that raised (batched, then per task), so each refused
    proposal cost 2 x (retries + 1) reflections and gate checks."""
    asked: list[str] = []

    def reflect(prompt: str) -> str:
        asked.append(prompt)
        return "```\nBe better.\n```"

    gate = ProposalGate(model=rt.ScriptedJudge(rule=lambda t, c: "UNMET"), retries=2)
    with pytest.warns(RuntimeWarning, match="the gate turned down every proposal"):
        e = rt.evolve_rubric(DF, HUMAN, START, model=JUDGE, reflection_model=reflect, gate=gate, max_metric_calls=60,
                             minibatch_size=4, n_resamples=20, cache=False)  # fmt: skip
    firsts = e.gate_log.filter(pl.col("attempt") == 1).height  # one per proposal
    assert firsts >= 1 and len(asked) == 3 * firsts and e.gate_log.height == 3 * firsts
    assert e.gate_log["attempt"].to_list() == [1, 2, 3] * firsts
    assert e.gate_log["reason"].drop_nulls().str.contains("same_kind").all()  # why each was refused


def test_round_three_the_gate_scores_as_the_rubric_does() -> None:
    rule_gate = rt.Rubric.from_dict([{"name": "short", "rule": {"max_chars": 20}},
                                     {"name": "clear", "requirement": "Is clear"}])  # fmt: skip
    two = [rt.ScriptedJudge(rule=lambda t, c: "MET", name="a"), rt.ScriptedJudge(rule=lambda t, c: "MET", name="b")]
    assert ProposalGate(model=two, rubric=rule_gate).check("ok", request="...").passed  # a rule with several judges
    with_penalty = rt.Rubric.from_dict([{"name": "clear", "requirement": "Is clear"},
                                        {"name": "examples", "requirement": "Names particular submissions",
                                         "weight": -10}])  # fmt: skip
    met = ProposalGate(model=rt.ScriptedJudge(rule=lambda t, c: "MET"), rubric=with_penalty).check("x", request="r")
    assert not met.passed and [r.split(" (")[0] for r in met.reasons] == [
        "avoid: examples: Names particular submissions"]  # fmt: skip
    unmet = ProposalGate(model=rt.ScriptedJudge(rule=lambda t, c: "UNMET"), rubric=with_penalty).check("x", request="r")
    assert [r.split(":")[0] for r in unmet.reasons] == ["clear"]  # an untriggered penalty is no fault
    unsure = ProposalGate(model=rt.ScriptedJudge(rule=lambda t, c: "CANNOT_ASSESS")).check("x", request="r")
    assert unsure.passed and unsure.error and "could not score" in unsure.reasons[0]
    two_thirds = ProposalGate(model=rt.ScriptedJudge(rule=lambda t, c: "UNMET" if c.name == "checkable" else "MET"),
                              min_score=Fraction(2, 3))  # fmt: skip
    assert two_thirds.min_score == pytest.approx(2 / 3) and two_thirds.check("x", request="r").passed


def test_round_three_gates_that_cannot_work_are_refused_when_built() -> None:
    with pytest.raises(ValueError, match="ProposalGate model is an empty list"):
        ProposalGate(model=[])
    genre = rt.Rubric.from_dict([{"name": "c", "requirement": "x", "applies_when": {"genre": "y"}}])
    with pytest.raises(ValueError, match=r"ProposalGate rubric: applies_when names \['genre'\]"):
        ProposalGate(model=NAMES_A_CUE, rubric=genre)
    with pytest.raises(ValueError, match=r"got 60$"):
        ProposalGate(model=NAMES_A_CUE, min_score=60)


def test_round_three_the_gate_reads_the_text_gepa_adopts_and_a_fenced_requirement_is_refused() -> None:
    from rubrictools.evolution.components import from_candidate

    seen: list[str] = []
    gate = ProposalGate(model=rt.ScriptedJudge(rule=lambda t, c: seen.append(t) or "MET"))  # type: ignore[func-returns-value]  # reason: records, then answers
    asker = gated(lambda prompt: "```text\nMentions a source (cues: ref)\n```", gate, [])
    asker("the request")
    assert set(seen) == {"Mentions a source (cues: ref)"}  # the language tag is not part of the text
    with pytest.raises(ValueError, match="holding a ``` fence"):
        from_candidate(START, {"criterion:cites": "Mentions a source\n```\nor alternatively\n```\nCites something"})
