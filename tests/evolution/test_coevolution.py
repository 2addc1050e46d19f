"""evolve_rubric(coevolve=...): rubrify v3's co-evolution of the gate, the templates and the tolerances."""

from __future__ import annotations

import re
from types import SimpleNamespace as NS
from typing import Any

import pytest

import rubrictools as rt
from rubrictools.evolution import ProposalGate
from rubrictools.evolution.acceptance import ToleranceAcceptance
from rubrictools.evolution.coevolution import History, Rewrite, Settings, fenced, render, tolerances_of
from rubrictools.evolution.hooks import SettingsAcceptance

pytest.importorskip("gepa")

from tests.evolution.test_evolve import DF, HUMAN, START, Reflector, cue  # after the gepa skip

MARK = "Prefer the cue word the credited submissions share."


class CoReflector(Reflector):
    """The scripted rubric reflection of test_evolve, whose first rewrites miss (the cue "me",
    which marks the same submissions as "trust": no score moves, so they are not kept), and
    which also rewrites the settings: a template gains a sentence, the tolerances move, a gate
    criterion is reworded."""

    def __init__(self, *, bad_template: bool = False, wrong_first: int = 3) -> None:
        super().__init__()
        self.bad_template = bad_template
        self.settings_prompts: list[str] = []
        self.wrong_first = wrong_first

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
            return "```\n" + re.sub(r"\(cues: \w+\)", "(cues: me)", current) + "\n```"  # not kept
        return super().__call__(prompt)


JUDGE = rt.ScriptedJudge(rule=lambda text, c: "MET" if cue(c.requirement) in text else "UNMET")
GATE = ProposalGate(model=rt.ScriptedJudge(rule=lambda text, c: "MET"), min_score=0.5)
RULES_ONLY = rt.Rubric.from_dict([{"name": "short", "rule": {"max_chars": 500}}])
RUN = dict(model=JUDGE, minibatch_size=4, n_resamples=200, cache=False, discrimination_weight=0.5)


def _evolve(coevolve: list[str], reflect: Reflector, **kw: Any) -> Any:
    settings = {"gate": GATE, "acceptance": {"discrimination": 0.1}} if coevolve else {}
    return rt.evolve_rubric(DF, HUMAN, START, reflection_model=reflect, coevolve=coevolve,
                            **{**RUN, "max_metric_calls": 300, **settings, **kw})  # fmt: skip


def test_settings_evolve_beside_the_rubric_and_later_rewrites_use_them() -> None:
    reflect = CoReflector()
    e = _evolve(["templates", "acceptance", "gate"], reflect)
    assert (cue(e.rubric["cites"].requirement), cue(e.rubric["greets"].requirement)) == ("ref", "hello")  # found
    log = e.settings["log"]
    adopted = log.filter(log["event"] == "adopted")
    assert {"template:requirement", "gate:answers_disagreements"} <= set(adopted["setting"])
    assert any(MARK in t for t in adopted["text"])
    after = [p for p in reflect.prompts if MARK in p and "Its current requirement" in p]
    assert after  # later rewrites of a requirement were asked with the new template
    # each new version came from what the run did: the template saw rewrites that were not kept
    template_prompts = [p for p in reflect.settings_prompts if p.startswith("You maintain a prompt")]
    assert "Outcome: not kept" in template_prompts[0] and "minibatch change: agreement 0.500 -> " in template_prompts[0]
    # the settings never enter GEPA's candidate: every candidate changes rubric texts only
    mutated = {k for row in e.candidates["mutated"].to_list() for k in row}
    assert mutated <= {"criterion:cites", "criterion:greets", "guidelines"}


def test_coevolution_leaves_the_budget_and_patience_to_the_rubric() -> None:
    """Before (rubrify's packing of the settings into GEPA's candidate): a candidate that changed only a
    setting was always kept and spent a minibatch and a validation pass; at an equal budget the co-evolved
    run fixed no criterion where a plain run fixed its, and settings turns counted toward patience."""
    for kw in ({"max_metric_calls": 150}, {"max_metric_calls": 400, "patience": 3}):
        plain = _evolve([], CoReflector(wrong_first=6), **kw)
        co = _evolve(["templates", "acceptance", "gate"], CoReflector(wrong_first=6), **kw)
        assert co.settings["changed"] or kw.get("patience")  # settings did change (when the run lasted)
        # the same search: the same evaluations, candidates and rubric, with or without co-evolution
        assert (co.metric_calls, co.candidates.height, co.rubric) == (plain.metric_calls, plain.candidates.height,
                                                                      plain.rubric)  # fmt: skip
    assert cue(co.rubric["cites"].requirement) == "trust"  # patience 3 stops both before the fix ...
    assert (
        cue(_evolve(["templates"], CoReflector(wrong_first=6), max_metric_calls=150).rubric["cites"].requirement)
        == "ref"
    )


def test_an_unusable_setting_is_skipped_counted_and_the_run_goes_on() -> None:
    reflect = CoReflector(bad_template=True)
    with pytest.warns(RuntimeWarning, match=r"co-evolved settings were unusable.*template:requirement: the rewrite"):
        e = _evolve(["templates"], reflect)
    assert reflect.settings_prompts  # it was asked ...
    assert "Rewrite it better." not in e.settings["reflection_templates"].values()  # ... and never used
    assert e.settings["log"].filter(e.settings["log"]["event"] == "refused").height >= 1
    assert cue(e.rubric["cites"].requirement) == "ref"


def test_a_perfect_rubric_asks_the_reflection_model_nothing() -> None:
    """Before: with coevolve every component GEPA picked was rewritten, even with no disagreement to
    learn from (20 paid calls on a perfect rubric, against 0 without coevolve)."""
    perfect = START.model_copy(update={"criteria": tuple(
        c.model_copy(update={"requirement": c.requirement.replace("(cues: trust)", "(cues: ref)")}) for c in START
    )})  # fmt: skip
    reflect = CoReflector(wrong_first=0)
    e = rt.evolve_rubric(DF, HUMAN, perfect, reflection_model=reflect, acceptance={"discrimination": 0.1},
                         coevolve=["templates", "acceptance"], **{**RUN, "max_metric_calls": 200})  # fmt: skip
    assert reflect.prompts == [] and reflect.settings_prompts == []
    assert e.settings["changed"] == [] and "settings changed" not in repr(e)


@pytest.mark.parametrize(
    ("settings", "error", "match"),
    [
        ({"coevolve": "gate"}, TypeError, "coevolve must be a list"),
        ({"coevolve": {"templates": False}}, TypeError, "coevolve must be a list"),
        ({"coevolve": ["gate"]}, ValueError, "pass gate=ProposalGate"),
        (
            {"coevolve": ["gate"], "gate": ProposalGate(model=GATE.model, rubric=RULES_ONLY)},
            ValueError,
            "only rule criteria",
        ),
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
        rt.evolve_rubric(DF, HUMAN, START, model=JUDGE, reflection_model=asked.append, cache=False, **settings)
    assert asked == []


def test_coevolve_none_is_off_and_a_reflection_model_without_a_key_is_refused_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    e = rt.evolve_rubric(DF, HUMAN, START, reflection_model=CoReflector(wrong_first=0), coevolve=None,
                         **{**RUN, "max_metric_calls": 60})  # fmt: skip
    assert e.settings == {}
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match=r"reflection_model: judge 'openai/gpt-4\.1-mini': no API key"):
        rt.evolve_rubric(DF, HUMAN, START, model=JUDGE, reflection_model="openai/gpt-4.1-mini", cache=False)


def _proposal(candidate: dict, before: list[dict], after: list[dict]) -> NS:
    return NS(candidate=candidate, parent_program_ids=[0], eval_before=NS(objective_scores=before),
              eval_after=NS(objective_scores=after), subsample_scores_before=[r["agreement"] for r in before],
              subsample_scores_after=[r["agreement"] for r in after])  # fmt: skip


def test_a_mutation_is_decided_by_the_tolerances_in_force() -> None:
    settings = Settings(["acceptance"], components=["criterion:a"], gate=None, acceptance={"discrimination": 0.3},
                        reflection_template=None)  # fmt: skip
    state = NS(program_candidates=[{"criterion:a": "x"}], prog_candidate_val_subscores=[{}])
    same = [{"agreement": 0.5, "discrimination": 0.5}]
    traded = [{"agreement": 0.7, "discrimination": 0.3}]  # discrimination down 0.2, inside the 0.3 in force
    assert SettingsAcceptance("improvement", settings, ask=None).should_accept(
        _proposal({"criterion:a": "y"}, same, traded), state
    )
    strict = Settings([], components=["criterion:a"], gate=None, acceptance=None, reflection_template=None)
    assert not SettingsAcceptance(ToleranceAcceptance({}), strict, ask=None).should_accept(
        _proposal({"criterion:a": "y"}, same, traded), state
    )


def test_a_new_version_that_does_worse_than_the_one_before_is_reverted() -> None:
    s = Settings(["templates"], components=["criterion:a"], gate=None, acceptance=None, reflection_template=None)
    key = "template:requirement"
    s.history.rewrites = [Rewrite("criterion:a", f"t{i}", kept=True, versions={key: 0}) for i in range(3)]
    s.history.rewrites += [Rewrite("criterion:a", "u", kept=False, versions={key: 0})]  # version 0: 3 of 4 kept
    s.propose(key, lambda prompt: "```\n" + s.text(key).replace("Rewrite the", "Now rewrite the") + "\n```")
    assert s.current[key] == 1
    s.history.rewrites += [Rewrite("criterion:a", f"v{i}", kept=False, versions={key: 1}) for i in range(2)]
    s.judge()
    assert s.current[key] == 1  # two settled rewrites are not enough to judge it
    s.history.rewrites += [Rewrite("criterion:a", "v3", kept=True, versions={key: 1})]
    s.judge()
    assert s.current[key] == 0  # 1 of 3 kept against 3 of 4: reverted, and said so
    assert s.result()["log"]["event"].to_list()[-2:] == ["adopted", "reverted"]
    # the same tolerances written in another order are not a new version
    t = Settings(["acceptance"], components=["criterion:a"], gate=None, acceptance={"discrimination": 0.1},
                 reflection_template=None)  # fmt: skip
    t.propose("acceptance", lambda prompt: "```\ndiscrimination: 0.1\nagreement: 0\n```")
    assert t.current["acceptance"] == 0 and t.result()["changed"] == []


def test_a_gate_call_that_failed_teaches_the_gate_nothing_and_a_strict_gate_learns_from_what_it_stopped() -> None:
    failed = Rewrite("criterion:a", "x", [{"missed": [], "error": True}], kept=False)
    assert History(rewrites=[failed]).records("gate:checkable") == []
    stopped = [Rewrite("criterion:a", "Be good", [{"missed": ["checkable"], "reason": "vague"}], turned_down=True)] * 3
    shown = History(rewrites=stopped).records("gate:checkable")
    assert len(shown) == 3 and "(vague)" in shown[0]["Feedback"] and shown[0]["Inputs"]["rewrite"] == "Be good"
    assert History(rewrites=stopped).records("gate:same_kind") == []  # it did not miss that one


def test_settings_texts_are_read_whole_and_checked() -> None:
    text = render("now: <curr_param> | cases: <side_info>", "ask <curr_param> with <side_info>", [])
    assert text == "now: ask <curr_param> with <side_info> | cases: (nothing yet)"  # one pass: its own kept
    assert fenced("```agreement:0.1\ndiscrimination:0.2```") == "agreement:0.1\ndiscrimination:0.2"
    assert fenced("```yaml\nagreement: 0.1\n```") == "agreement: 0.1"
    assert fenced("````\nkeep ``` inside\n````") == "keep ``` inside"
    with pytest.raises(ValueError, match="'speed' is not one of the objectives"):
        tolerances_of("speed: 0.1")
    with pytest.raises(ValueError, match=r"must be in \[0, 1\]"):
        tolerances_of("agreement: 2\ndiscrimination: 0")
    with pytest.raises(ValueError, match=r"no tolerance for \['discrimination'\]"):
        tolerances_of("agreement: 0.1")


# round 3 of the fresh review (36 tries, 0 crashes): what it found, each pinned


def test_a_version_is_judged_against_the_one_it_replaced_and_a_reverted_text_never_returns() -> None:
    """Before: after a revert, the next version was judged against the reverted one (the previous
    index), so a worse version stayed; and a reply repeating the reverted text was adopted again."""
    s = Settings(["templates"], components=["criterion:a"], gate=None, acceptance=None, reflection_template=None)
    key = "template:requirement"
    v0 = s.text(key) or ""

    def rewrites(version: int, kept: list[bool]) -> None:
        s.history.rewrites += [Rewrite("criterion:a", f"{version}{i}", kept=k, versions={key: version})
                               for i, k in enumerate(kept)]  # fmt: skip

    rewrites(0, [True, True, False])  # 2 of 3
    s.propose(key, lambda prompt: "```\n" + v0.replace("Rewrite the", "One: rewrite the") + "\n```")
    rewrites(1, [False, False, False])
    s.judge()
    assert s.current[key] == 0  # version 1 (0 of 3) reverted to version 0
    s.propose(key, lambda prompt: "```\n" + v0.replace("Rewrite the", "Two: rewrite the") + "\n```")
    assert s.current[key] == 2 and s.replaced[key][2] == 0
    rewrites(2, [True, False, False])  # 1 of 3: better than version 1, worse than version 0, which it replaced
    s.judge()
    assert s.current[key] == 0
    s.propose(key, lambda prompt: "```\n" + v0.replace("Rewrite the", "One: rewrite the") + "\n```")
    assert s.current[key] == 0 and s.log[-1]["event"] == "refused" and "reverted" in s.log[-1]["text"]


def test_a_template_is_judged_by_its_own_kind_and_a_gate_criterion_by_its_own_verdicts() -> None:
    s = Settings(["templates", "gate"], components=["criterion:a", "guidelines"], gate=GATE, acceptance=None,
                 reflection_template=None)  # fmt: skip
    at = {"template:requirement": 0, "template:guidelines": 0, **dict.fromkeys(s.current, 0)}
    s.history.rewrites = [
        Rewrite("criterion:a", "r1", [{"missed": []}], kept=True, versions=at),
        Rewrite("criterion:a", "r2", [{"missed": ["checkable"]}], kept=False, versions=at),
        Rewrite("guidelines", "g1", [{"missed": []}], kept=False, versions=at),
    ]
    assert s.success("template:requirement", 0) == (0.5, 2) and s.success("template:guidelines", 0) == (0.0, 1)
    assert s.success("gate:checkable", 0) == (2 / 3, 3)  # met & kept, missed & not kept agree; met & not kept not
    assert s.success("gate:same_kind", 0) == (1 / 3, 3)  # never missed: only the kept one agrees


def test_a_gate_that_stops_every_rewrite_still_evolves() -> None:
    """Before: new versions were asked for only when a rewrite reached the test, so a gate that turned
    down everything was never rewritten (30 turned-down rewrites, no gate prompt)."""
    strict = ProposalGate(model=rt.ScriptedJudge(rule=lambda t, c: "UNMET" if c.name == "checkable" else "MET"),
                          min_score=1.0)  # fmt: skip
    reflect = CoReflector(wrong_first=0)
    with pytest.warns(RuntimeWarning):
        e = rt.evolve_rubric(DF, HUMAN, START, reflection_model=reflect, gate=strict, coevolve=["gate"],
                             **{**RUN, "max_metric_calls": 150})  # fmt: skip
    gate_prompts = [p for p in reflect.settings_prompts if "reviewer's checklist" in p]
    assert gate_prompts and "turned the rewrite down" in gate_prompts[0]
    assert "gate:checkable" in e.settings["changed"]


def test_changes_and_the_repr_name_the_guidelines_and_count_in_words() -> None:
    e = _evolve(["templates"], CoReflector(wrong_first=0), max_metric_calls=150)
    assert "1 criterion changed" in repr(e)
    moved = e.rubric.model_copy(update={"guidelines": "Read the whole reply."})
    e2 = type(e)(**{**e.__dict__, "rubric": moved})
    assert e2.changes()["criterion"].to_list()[-1] == "(guidelines)"
    assert "1 criterion and the guidelines changed" in repr(e2)
