"""evolve_rubric(coevolve=...): rubrify v3's co-evolution of the gate, the templates and the tolerances."""

from __future__ import annotations

from types import SimpleNamespace as NS
from typing import Any

import pytest

import rubrictools as rt
from rubrictools.evolution import ProposalGate
from rubrictools.evolution.acceptance import ToleranceAcceptance
from rubrictools.evolution.adapter import RubricAdapter
from rubrictools.evolution.coevolution import History, Rewrite, SettingsAcceptance, render, tolerances_of

pytest.importorskip("gepa")

from tests.evolution.test_evolve import DF, HUMAN, START, Reflector, cue  # after the gepa skip

MARK = "Prefer the cue word the credited submissions share."


class CoReflector(Reflector):
    """The scripted rubric reflection of test_evolve, which also rewrites the settings: a
    template gains a sentence, the tolerances loosen, a gate criterion is reworded."""

    def __init__(self, *, bad_template: bool = False) -> None:
        super().__init__()
        self.bad_template = bad_template
        self.settings_prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        if prompt.startswith("You maintain a prompt that asks a writer"):
            self.settings_prompts.append(prompt)
            current = prompt.split("```\n", 1)[1].split("\n```\n\nBelow are the rewrites", 1)[0]
            if self.bad_template:
                return "```\nRewrite it better.\n```"  # no placeholders: unusable
            return "```\n" + current.replace("Rewrite the requirement", f"{MARK} Rewrite the requirement") + "\n```"
        if prompt.startswith("You maintain the tolerances"):
            self.settings_prompts.append(prompt)
            return "```\nagreement: 0\ndiscrimination: 0.2\n```"
        if prompt.startswith("You maintain one criterion of a reviewer's checklist"):
            self.settings_prompts.append(prompt)
            return "```\nThe rewrite names one cue word in parentheses\n```"
        return super().__call__(prompt)


def graded_once() -> tuple[rt.ScriptedJudge, list[tuple[str, str]]]:
    """The test_evolve judge, recording each (requirement, submission) it is asked."""
    asked: list[tuple[str, str]] = []

    def rule(text: str, c: Any) -> str:
        asked.append((c.requirement, text))
        return "MET" if cue(c.requirement) in text else "UNMET"

    return rt.ScriptedJudge(rule=rule), asked


def test_settings_evolve_beside_the_rubric_and_the_rubric_rewrites_use_them(monkeypatch: pytest.MonkeyPatch) -> None:
    reflect, (judge, _) = CoReflector(), graded_once()
    graded: list[tuple[tuple[str, ...], Any]] = []  # (the rubric's texts, submission id) per grading
    real = RubricAdapter.grade

    def grade(self: RubricAdapter, rubric: rt.Rubric, ids: Any) -> Any:
        graded.extend(((rubric.guidelines or "", *(c.requirement for c in rubric)), i) for i in set(ids))
        return real(self, rubric, ids)

    monkeypatch.setattr(RubricAdapter, "grade", grade)
    gate = ProposalGate(model=rt.ScriptedJudge(rule=lambda text, c: "MET"), min_score=0.5)
    e = rt.evolve_rubric(DF, HUMAN, START, model=judge, reflection_model=reflect, max_metric_calls=300,
                         minibatch_size=4, n_resamples=200, cache=False, gate=gate, discrimination_weight=0.5,
                         acceptance={"discrimination": 0.1}, coevolve=["templates", "acceptance", "gate"])  # fmt: skip
    assert cue(e.rubric["cites"].requirement) == "ref"  # the rubric still finds the humans' rule
    assert MARK in e.settings["reflection_templates"]["requirement"]  # the template evolved ...
    after = [p for p in reflect.prompts if MARK in p and "Its current requirement" in p]
    assert after  # ... and later rewrites of a requirement were asked with it
    assert e.settings["acceptance"] == {"agreement": 0.0, "discrimination": 0.2}
    assert [c.name for c in e.settings["gate_rubric"]] == [c.name for c in rt.evolution.GATE_RUBRIC]
    changed = {k for row in e.candidates["changed"].to_list() for k in row}
    assert {"template:requirement", "acceptance", "criterion:cites"} <= changed
    assert not any(k.startswith(("template:", "gate:")) or k == "acceptance" for k in e.changes()["criterion"])
    # a setting is rewritten from what it did in the run: the template saw a kept rewrite and its change
    assert any("Outcome: kept" in p and "agreement 0.500 -> 1.000" in p for p in reflect.settings_prompts)
    # with the cache off, each submission was still graded once per rubric: a candidate that changes only
    # settings grades as its parent did
    assert len(graded) == len(set(graded)) and e.candidates.height > len({k for k, _ in graded})


def test_an_unusable_setting_is_skipped_counted_and_the_run_goes_on() -> None:
    reflect = CoReflector(bad_template=True)
    with pytest.warns(RuntimeWarning, match=r"proposed setting\(s\) were unusable.*template:requirement"):
        e = rt.evolve_rubric(DF, HUMAN, START, model=graded_once()[0], reflection_model=reflect,
                             max_metric_calls=300, minibatch_size=4, n_resamples=200, cache=False,
                             discrimination_weight=0.5, coevolve=["templates"])  # fmt: skip
    assert reflect.settings_prompts  # it was asked ...
    assert "Rewrite it better." not in e.settings["reflection_templates"].values()  # ... and never used
    assert cue(e.rubric["cites"].requirement) == "ref"


@pytest.mark.parametrize(
    ("settings", "error", "match"),
    [
        ({"coevolve": "gate"}, TypeError, "coevolve must be a list"),
        ({"coevolve": ["gate"]}, ValueError, "pass gate=ProposalGate"),
        ({"coevolve": ["acceptance"]}, ValueError, "acceptance= a mapping of tolerances"),
        ({"coevolve": ["weights"]}, ValueError, r"coevolve names \['weights'\]"),
        ({"coevolve": ["templates", "templates"]}, ValueError, "names a setting twice"),
        (
            {"coevolve": ["templates"], "reflection_template": {"criterion:cites": "<curr_param> <side_info> ```"}},
            ValueError,
            "give it by kind",
        ),
    ],
)
def test_bad_coevolve_settings_are_refused_before_any_call(settings: dict, error: type, match: str) -> None:
    asked: list[str] = []
    with pytest.raises(error, match=match):
        rt.evolve_rubric(DF, HUMAN, START, model=graded_once()[0], reflection_model=asked.append, cache=False,
                         **settings)  # fmt: skip
    assert asked == []


def _proposal(candidate: dict, before: list[dict], after: list[dict]) -> NS:
    return NS(candidate=candidate, parent_program_ids=[0], eval_before=NS(objective_scores=before),
              eval_after=NS(objective_scores=after), subsample_scores_before=[r["agreement"] for r in before],
              subsample_scores_after=[r["agreement"] for r in after])  # fmt: skip


def test_a_settings_only_mutation_is_kept_when_nothing_falls_a_rubric_one_by_its_parents_tolerances() -> None:
    parent = {"criterion:a": "x", "acceptance": "agreement: 0\ndiscrimination: 0.3"}
    state = NS(program_candidates=[parent], prog_candidate_val_subscores=[{}])
    rule = SettingsAcceptance("improvement", History())
    same = [{"agreement": 0.5, "discrimination": 0.5}]
    assert rule.should_accept(_proposal({**parent, "acceptance": "agreement: 0.1"}, same, same), state)
    fell = [{"agreement": 0.4, "discrimination": 0.5}]
    assert not rule.should_accept(_proposal({**parent, "acceptance": "agreement: 0.1"}, same, fell), state)
    # a rubric mutation: agreement up, discrimination down by 0.2, inside the parent's 0.3 tolerance
    traded = [{"agreement": 0.7, "discrimination": 0.3}]
    assert rule.should_accept(_proposal({**parent, "criterion:a": "y"}, same, traded), state)
    strict = SettingsAcceptance(ToleranceAcceptance({}), History())
    alone = NS(program_candidates=[{"criterion:a": "x"}])
    assert not strict.should_accept(_proposal({"criterion:a": "y"}, same, traded), alone)  # no tolerance: no trade


def test_a_gate_criterion_is_shown_only_the_verdicts_the_test_contradicted() -> None:
    h = History(
        rewrites=[
            Rewrite("criterion:a", "met, kept", [{"missed": []}], kept=True),
            Rewrite("criterion:a", "met, not kept", [{"missed": []}], kept=False),
            Rewrite("criterion:a", "missed, kept", [{"missed": ["checkable"]}], kept=True),
            Rewrite("criterion:a", "turned down", [{"missed": ["checkable"], "reason": "vague"}], turned_down=True),
        ]
    )
    shown = [r["Inputs"]["rewrite"] for r in h.records("gate:checkable")]
    assert shown == ["met, not kept", "missed, kept"]
    template = [r["Generated Outputs"] for r in h.records("template:requirement")]
    assert template == ["kept", "not kept", "kept", "turned down"]


def test_a_template_setting_is_rendered_in_one_pass_keeping_its_own_placeholders() -> None:
    text = render("now: <curr_param> | cases: <side_info>", "ask <curr_param> with <side_info>", [])
    assert text == "now: ask <curr_param> with <side_info> | cases: (nothing yet)"
    with pytest.raises(ValueError, match="'speed' is not one of the objectives"):
        tolerances_of("speed: 0.1")
    with pytest.raises(ValueError, match=r"must be in \[0, 1\]"):
        tolerances_of("agreement: 2")
