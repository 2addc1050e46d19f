"""evolve_rubric(coevolve=...): rubrify v3's co-evolution of the gate, the templates and the tolerances."""

from __future__ import annotations

import re
from types import SimpleNamespace as NS
from typing import Any

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.evolution import ProposalGate
from rubrictools.evolution.acceptance import ToleranceAcceptance
from rubrictools.evolution.adapter import RubricAdapter
from rubrictools.evolution.coevolution import (
    History,
    Rewrite,
    SettingsAcceptance,
    fenced,
    render,
    settings_candidate,
    tolerances_of,
)

pytest.importorskip("gepa")

from tests.evolution.test_evolve import DF, HUMAN, START, Reflector, cue  # after the gepa skip

MARK = "Prefer the cue word the credited submissions share."


class CoReflector(Reflector):
    """The scripted rubric reflection of test_evolve, which also rewrites the settings: a
    template gains a sentence, the tolerances loosen, a gate criterion is reworded."""

    def __init__(self, *, bad_template: bool = False, wrong_first: int = 3) -> None:
        super().__init__()
        self.bad_template = bad_template
        self.settings_prompts: list[str] = []
        self.wrong_first = wrong_first  # the first rewrites of a requirement miss (a cue no text holds)

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
        if self.wrong_first and "Its current requirement" in prompt:
            self.wrong_first -= 1
            self.prompts.append(prompt)
            current = prompt.split("```", 2)[1].strip()
            return "```\n" + re.sub(r"\(cues: \w+\)", "(cues: nowhere)", current) + "\n```"  # not kept
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
    template_prompts = [p for p in reflect.settings_prompts if p.startswith("You maintain a prompt")]
    assert template_prompts and "Outcome: not kept" in template_prompts[0]
    assert "minibatch change: agreement 0.500 -> " in template_prompts[0]
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


# round 1 of a fresh review of coevolve (45 tries): what it found, each pinned


def test_a_perfect_rubric_asks_the_reflection_model_nothing() -> None:
    """Before: with coevolve every component GEPA picked was rewritten, even with no disagreement to
    learn from (20 paid calls on a perfect rubric, against 0 without coevolve)."""
    perfect = START.model_copy(update={"criteria": tuple(
        c.model_copy(update={"requirement": c.requirement.replace("(cues: trust)", "(cues: ref)")}) for c in START
    )})  # fmt: skip
    reflect = CoReflector(wrong_first=0)
    e = rt.evolve_rubric(DF, HUMAN, perfect, model=graded_once()[0], reflection_model=reflect, max_metric_calls=200,
                         minibatch_size=4, n_resamples=200, cache=False, discrimination_weight=0.5,
                         acceptance={"discrimination": 0.1}, coevolve=["templates", "acceptance"])  # fmt: skip
    assert reflect.prompts == [] and reflect.settings_prompts == []
    assert e.settings["changed"] == [] and "settings changed" not in repr(e)


def test_the_repr_counts_graded_submissions_apart_from_the_budget() -> None:
    """Before: the repr said "227 graded submissions" where 102 were graded: a candidate that changes only
    settings is evaluated (GEPA's budget) but not graded again."""
    e = rt.evolve_rubric(DF, HUMAN, START, model=graded_once()[0], reflection_model=CoReflector(),
                         max_metric_calls=300, minibatch_size=4, n_resamples=200, cache=False,
                         discrimination_weight=0.5, acceptance={"discrimination": 0.1},
                         coevolve=["templates", "acceptance"])  # fmt: skip
    assert 0 < e.graded < e.metric_calls and f"{e.graded} submissions graded ({e.metric_calls} of the budget)" in repr(
        e
    )
    settings_only = e.candidates.filter(
        pl.col("mutated").list.eval(pl.element().str.contains("^(template:|gate:|acceptance$)")).list.all()
        & (pl.col("mutated").list.len() > 0)
    )
    assert settings_only.height >= 1  # told apart from the rubric's mutations by `mutated` (vs the parent)
    assert "settings changed:" in repr(e)


def test_a_gate_call_that_failed_teaches_the_gate_nothing_and_a_strict_gate_learns_from_what_it_stopped() -> None:
    failed = Rewrite("criterion:a", "x", [{"missed": [], "error": True}], kept=False)
    assert History(rewrites=[failed]).records("gate:checkable") == []
    stopped = [Rewrite("criterion:a", "", [{"missed": ["checkable"], "reason": "vague"}], turned_down=True)] * 3
    shown = History(rewrites=stopped).records("gate:checkable")
    assert len(shown) == 3 and "never tested" in shown[0]["Feedback"]
    assert History(rewrites=stopped).records("gate:same_kind") == []  # it did not miss that one


def test_settings_texts_are_read_whole_and_a_rule_criterion_of_the_gate_is_not_evolved() -> None:
    assert fenced("```agreement:0.1\ndiscrimination:0.2```") == "agreement:0.1\ndiscrimination:0.2"
    assert fenced("```yaml\nagreement: 0.1\n```") == "agreement: 0.1"
    ruled = rt.Rubric.from_dict(
        [{"name": "short", "rule": {"max_chars": 500}}, {"name": "clear", "requirement": "Says what counts"}]
    )
    gate = ProposalGate(model=rt.ScriptedJudge(rule=lambda text, c: "MET"), rubric=ruled)
    start = settings_candidate(["gate"], components=["criterion:cites"], gate=gate, acceptance="improvement",
                               reflection_template=None)  # fmt: skip
    assert list(start) == ["gate:clear"]


def test_coevolve_none_is_off_and_a_mapping_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    e = rt.evolve_rubric(DF, HUMAN, START, model=graded_once()[0], reflection_model=CoReflector(wrong_first=0),
                         max_metric_calls=60, minibatch_size=4, n_resamples=100, cache=False,
                         coevolve=None)  # fmt: skip
    assert e.settings == {}
    with pytest.raises(TypeError, match="coevolve must be a list"):
        rt.evolve_rubric(
            DF,
            HUMAN,
            START,
            model=graded_once()[0],
            reflection_model=CoReflector(),
            cache=False,
            coevolve={"templates": False},
        )  # type: ignore[arg-type]  # reason: the error under test
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match=r"reflection_model: judge 'openai/gpt-4\.1-mini': no API key"):
        rt.evolve_rubric(DF, HUMAN, START, model=graded_once()[0], reflection_model="openai/gpt-4.1-mini", cache=False)
