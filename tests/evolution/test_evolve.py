"""evolve_rubric: GEPA finds the wording the humans follow, on generated data where it is known."""

from __future__ import annotations

import json
import re

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.testing import FakeLLMServer, user_text

pytest.importorskip("gepa")

# the humans' rule, known by construction: a submission cites when it says "ref", greets when "hello"
TEXTS = [("hello, " if i % 3 else "") + (f"see ref {i}" if i % 2 else f"trust me {i}") for i in range(60)]
DF = pl.DataFrame({"id": range(60), "submission": TEXTS})
HUMAN = pl.concat(
    [
        pl.DataFrame(
            {"id": range(60), "criterion": "cites", "label": ["MET" if "ref" in t else "UNMET" for t in TEXTS]}
        ),
        pl.DataFrame(
            {"id": range(60), "criterion": "greets", "label": ["MET" if "hello" in t else "UNMET" for t in TEXTS]}
        ),
    ]
)
START = rt.Rubric.from_dict(
    [
        {"name": "cites", "requirement": "Mentions a source (cues: trust)", "weight": 2},
        {"name": "greets", "requirement": "Says hello (cues: hello)"},
    ]
)


def cue(requirement: str) -> str:
    return re.search(r"\(cues: (\w+)\)", requirement).group(1)  # type: ignore[union-attr]  # reason: every requirement here names a cue


JUDGE = rt.ScriptedJudge(rule=lambda text, c: "MET" if cue(c.requirement) in text else "UNMET")


class Reflector:
    """A scripted reflection model: it reads the disagreements it is shown and proposes the cue
    word common to the submissions the raters credited (what a good reflection would find)."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        current = prompt.split("```", 2)[1].strip()
        examples = prompt.split("# Example")[1:]
        credited = [
            ex.split("### submission\n", 1)[1].split("\n", 1)[0]
            for ex in examples
            if "### submission\n" in ex and "the human raters answered MET" in ex
        ]
        words = [w for s in credited for w in set(re.findall(r"[a-z]+", s)) - {"hello", "see", "me"}]
        best = max(set(words), key=words.count) if words else None
        if best is None or "cues:" not in current:
            return f"```\n{current}\n```"
        return "```\n" + re.sub(r"\(cues: \w+\)", f"(cues: {best})", current) + "\n```"


def test_gepa_finds_the_wording_the_humans_follow_and_claims_only_the_held_out_gain() -> None:
    reflect = Reflector()
    e = rt.evolve_rubric(DF, HUMAN, START, model=JUDGE, reflection_model=reflect, max_metric_calls=120,
                         minibatch_size=4, n_resamples=500, cache=False)  # fmt: skip
    assert cue(e.rubric["cites"].requirement) == "ref"  # the humans' rule, found from the disagreements
    assert e.rubric["greets"].requirement == START["greets"].requirement  # nothing to fix there
    assert [c.name for c in e.rubric] == ["cites", "greets"] and e.rubric["cites"].weight == 2  # structure kept
    h = e.holdout.row(0, named=True)
    assert h["diff"] > 0 and h["ci_low"] > 0 and h["value_after"] == pytest.approx(1.0)
    assert e.split["split"].value_counts().sort("split")["count"].to_list() == [18, 21, 21]  # holdout, train, val
    assert e.metric_calls <= 120 + 21  # GEPA's budget, and its last validation pass
    assert e.candidates.height >= 2 and e.candidates["validation_score"].max() == pytest.approx(1.0)
    # the reflection model saw disagreements as data, with the raters' answers, never the held-out part
    assert reflect.prompts and "the human raters answered" in reflect.prompts[0]
    held = set(e.split.filter(pl.col("split") == "holdout")["id"].to_list())
    shown = {int(n) for p in reflect.prompts for n in re.findall(r"(?:ref|me) (\d+)", p)}
    assert shown and not shown & held
    assert e.changes()["criterion"].to_list() == ["cites"] and "held-out change +" in repr(e)


def test_through_the_fake_server_every_graded_answer_is_a_real_request(tmp_path) -> None:
    def script(request: dict) -> str:
        text = user_text(request)
        sub = text.split("<submission>")[1].split("</submission>")[0]
        return json.dumps({"verdict": "MET" if cue(text) in sub else "UNMET", "explanation": "cue checked"})

    with FakeLLMServer(script=script) as srv:
        judge = rt.Judge(model="openai/gpt-4.1-mini", api_base=srv.url, api_key="sk-test")
        e = rt.evolve_rubric(DF, HUMAN, START, model=judge, reflection_model=Reflector(), max_metric_calls=60,
                             minibatch_size=4, n_resamples=200, cache=str(tmp_path / "c.db"))  # fmt: skip
        sent = len(srv.requests)
    assert cue(e.rubric["cites"].requirement) == "ref" and e.gain is not None and e.gain > 0
    # the cache answers a criterion whose text a candidate did not change: fewer requests than graded pairs
    assert 0 < sent < 2 * (e.metric_calls + 2 * 18)


def test_bad_settings_are_refused_before_any_call() -> None:
    kw = {"model": JUDGE, "reflection_model": Reflector(), "cache": False}
    cases = [
        ({"holdout": 1.0}, r"holdout must be a fraction in \(0, 1\), got 1.0"),
        ({"validation": 0}, r"validation must be a fraction in \(0, 1\), got 0"),
        ({"max_metric_calls": 0}, r"max_metric_calls must be an int >= 1, got 0"),
        ({"minibatch_size": 2.5}, r"minibatch_size must be an int >= 1, got 2.5"),
        ({"discrimination_weight": -1}, r"discrimination_weight must be a number >= 0, got -1"),
        ({"agreement_weight": 0}, "cannot all be 0"),
        ({"column": "text"}, r"column='text' is not a column of df"),
        ({"validation": "0.5"}, r"validation must be a fraction in \(0, 1\), got '0.5'"),
        ({"minibatch_size": 40}, r"minibatch_size=40 is more than the 21 training submissions"),
        ({"max_metric_calls": 10}, r"max_metric_calls=10 cannot evolve anything: .* takes 31"),
        ({"evolve_weights": True}, "evolve_weights=True needs discrimination_weight > 0"),
        ({"metric": "kappa_bogus"}, r"unknown .*metric.*'kappa_bogus'"),
        ({"reflection_template": "Improve it."}, "reflection_template must hold both <curr_param>"),
    ]
    for extra, message in cases:
        with pytest.raises(ValueError, match=message):
            rt.evolve_rubric(DF, HUMAN, START, **{**kw, **extra})
    for extra, message in [({"evolve_weights": "yes"}, "evolve_weights must be True or False"),
                           ({"cache": 123}, "cache must be True, False or a file path"),
                           ({"reflection_template": 42}, "reflection_template must be text")]:  # fmt: skip
        with pytest.raises(TypeError, match=message):
            rt.evolve_rubric(DF, HUMAN, START, **{**kw, **extra})
    bad_labels = [
        (
            HUMAN.with_columns(pl.col("criterion").replace({"greets": "tone"})),
            r"criteria not in the rubric: \['tone'\]",
        ),
        (HUMAN.with_columns(pl.col("label").replace({"MET": "yes"})), "not allowed by the rubric"),
        (
            HUMAN.with_columns(pl.format("h{}", "id").alias("id")),
            r"human label ids \(String, e.g. 'h0'\) cannot be matched",
        ),
    ]
    for human, message in bad_labels:
        with pytest.raises(ValueError, match=message):
            rt.evolve_rubric(DF, human, START, **kw)
    with pytest.raises(ValueError, match=r"column 'submission' of df has null submissions \(ids \[3\]"):
        holed = DF.with_columns(pl.when(pl.col("id") == 3).then(None).otherwise("submission").alias("submission"))
        rt.evolve_rubric(holed, HUMAN, START, **kw)
    with pytest.raises(TypeError, match="reflection_model must take one argument"):
        rt.evolve_rubric(DF, HUMAN, START, model=JUDGE, reflection_model=lambda: "x", cache=False)
    with pytest.raises(ValueError, match="reflection_model must be one model string"):
        rt.evolve_rubric(DF, HUMAN, START, model=JUDGE, reflection_model=JUDGE, cache=False)
    with pytest.raises(TypeError, match="reflection_model must be a model string, a Judge or a function"):
        rt.evolve_rubric(DF, HUMAN, START, model=JUDGE, reflection_model=3, cache=False)


def test_a_bad_proposal_is_skipped_and_a_run_where_every_one_fails_is_an_error() -> None:
    """A reply without a fenced text, or a weights text that flips a sign, fails that proposal only."""

    asked: list[str] = []

    def sloppy(prompt: str) -> str:  # a weights text that flips a sign; other texts fenced every other time
        asked.append(prompt)
        if "cites: 2" in prompt:
            return "```\ncites: -3\n```"
        return "Sure! Here is a better version: Names a source." if len(asked) % 2 == 0 else "```\nNames a source.\n```"

    kw = {"model": JUDGE, "max_metric_calls": 120, "minibatch_size": 4, "n_resamples": 50, "cache": False}
    with pytest.warns(RuntimeWarning) as caught:
        e = rt.evolve_rubric(DF, HUMAN, START, reflection_model=sloppy, evolve_weights=True, discrimination_weight=0.5,
                             **kw)  # fmt: skip
    said = " | ".join(str(w.message) for w in caught)
    assert "reflection(s) failed and were skipped; the first: ValueError: reflection reply has no text" in said
    assert "proposed candidate(s) were refused and scored 0; the first: weights: 'cites' must keep its sign" in said
    assert e.rubric["cites"].weight == 2 and e.rubric["cites"].requirement == START["cites"].requirement
    with pytest.raises(RuntimeError, match=r"never gave a usable reply.*no text inside a ``` block"):
        rt.evolve_rubric(DF, HUMAN, START, reflection_model=lambda prompt: "no fence here", **kw)


def test_a_candidate_cannot_change_the_rubric_structure() -> None:
    from rubrictools.evolution.components import from_candidate, to_candidate

    seed = to_candidate(START, weights=True)
    assert seed == {"criterion:cites": START["cites"].requirement, "criterion:greets": START["greets"].requirement,
                    "guidelines": "", "weights": "cites: 2\ngreets: 10"}  # fmt: skip
    assert from_candidate(START, {**seed, "weights": "cites: 3\ngreets: 10"})["cites"].weight == 3
    with pytest.raises(ValueError, match=r"'cites' must keep its sign \(was 2, got -1\)"):
        from_candidate(START, {**seed, "weights": "cites: -1"})
    assert from_candidate(START, {**seed, "weights": "cites: 1e1"})["cites"].weight == 10
    with pytest.raises(ValueError, match=r"'polite' is not a criterion"):
        from_candidate(START, {**seed, "weights": "polite: 1"})
    with pytest.raises(ValueError, match=r"components \['criterion:polite'\] are not part of the rubric"):
        from_candidate(START, {**seed, "criterion:polite": "x"})
    with pytest.raises(ValueError, match="an empty requirement"):
        from_candidate(START, {**seed, "criterion:cites": "  "})


def test_round_two_a_judge_or_reflection_that_never_answers_stops_the_run_early() -> None:
    """Before, both spent the whole budget (372 judge calls at the default) before saying so."""
    calls: list[int] = []

    def broken_rule(text: str, c: rt.Criterion) -> str:
        calls.append(1)
        raise RuntimeError("judge down")

    kw = {"max_metric_calls": 200, "minibatch_size": 4, "n_resamples": 50, "cache": False}
    with pytest.raises(RuntimeError, match="the judge failed on every call of the first batch"):
        rt.evolve_rubric(
            DF, HUMAN, START, model=rt.ScriptedJudge(rule=broken_rule), reflection_model=lambda p: "x", **kw
        )
    assert len(calls) < 100

    asked: list[int] = []

    def dead(prompt: str) -> str:
        asked.append(1)
        raise ConnectionError("no route to the reflection model")

    with pytest.raises(RuntimeError, match=r"never gave a usable reply.*3 reflection\(s\) failed in a row.*Connection"):
        rt.evolve_rubric(DF, HUMAN, START, model=JUDGE, reflection_model=dead, **kw)
    assert len(asked) == 3

    # before: replies without a fenced block (e.g. a template that asks for none) were not
    # counted, so the run spent its whole budget before "every reflection failed"
    fenceless: list[int] = []

    def plain(prompt: str) -> str:
        fenceless.append(1)
        return "Says whether the answer cites the refund policy"

    with pytest.raises(RuntimeError, match=r"never gave a usable reply.*no text inside a ``` block"):
        rt.evolve_rubric(DF, HUMAN, START, model=JUDGE, reflection_model=plain, **kw)
    assert len(fenceless) == 3


def test_round_two_inputs_named_before_any_call() -> None:
    kw = {"model": JUDGE, "reflection_model": lambda p: "```x```", "max_metric_calls": 40, "cache": False}
    with pytest.raises(ValueError, match="seed must be an int >= 0"):
        rt.evolve_rubric(DF, HUMAN, START, seed=None, **kw)
    with pytest.raises(ValueError, match="reflection_model is an empty string"):
        rt.evolve_rubric(DF, HUMAN, START, **{**kw, "reflection_model": " "})

    async def later(prompt: str) -> str:
        return "```x```"

    with pytest.raises(TypeError, match="not an async one"):
        rt.evolve_rubric(DF, HUMAN, START, **{**kw, "reflection_model": later})
    with pytest.raises(ValueError, match="left after holdout= and validation="):
        rt.evolve_rubric(DF, HUMAN, START, validation=0.95, minibatch_size=10, **kw)
    with pytest.warns(UserWarning, match=r"all one label: cohen_kappa"):
        rt.evolve_rubric(DF, HUMAN.with_columns(pl.lit("MET").alias("label")), START, n_resamples=20, **kw)
    extra = pl.concat([HUMAN, HUMAN.head(2).with_columns(pl.col("id") + 1000)])
    with pytest.warns(UserWarning, match=r"2 labelled id\(s\) are not in df"):
        rt.evolve_rubric(DF, extra, START, n_resamples=20, **kw)
    np = pytest.importorskip("numpy")
    e = rt.evolve_rubric(DF, HUMAN, START, **{**kw, "max_metric_calls": np.int64(40)}, n_resamples=0)
    assert "held-out change" in repr(e) and "[" not in repr(e).split("held-out change")[1]  # no interval asked


def test_a_proposal_that_is_a_rubric_structure_is_refused() -> None:
    from rubrictools.evolution.components import from_candidate

    for text in (
        '[{"name": "cites", "requirement": "x"}]',
        "- name: citation\n  requirement: x",
        '{"requirement": "x"}',
    ):
        with pytest.raises(ValueError, match="a rubric structure, not a requirement"):
            from_candidate(START, {"criterion:cites": text})
