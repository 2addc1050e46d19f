"""The peers' documented behaviour, case by case, through rubrictools' public API.

Each case states where it comes from (``../shared/peers/``: autorubric's core-grading and
dataset pages, ``rubric``'s README, rubrify's README). Numbers are taken from those pages;
no peer code is used here (the differential tests in ``test_peer_differential.py`` run the
installed peers). A case where rubrictools deliberately differs asserts our behaviour and
names the docs/migrating.md row that documents the difference.
"""

from __future__ import annotations

import polars as pl
import pytest

import rubrictools as rt

# ------------------------------------------------------------------ rubric (LLM Data Company) README


def test_rubric_quick_start_weights_score_the_met_share_of_positive_weight() -> None:
    # "Response mentions Paris" (10) and "Response is concise" (5): the formula's numerator is
    # the MET weights, the denominator the positive weights
    r = rt.Rubric.from_dict(
        [
            {"weight": 10.0, "requirement": "Response mentions Paris"},
            {"weight": 5.0, "requirement": "Response is concise"},
        ]
    )
    assert r.score(["MET", "UNMET"]) == pytest.approx(10 / 15)
    assert r.score(["MET", "MET"]) == 1.0


def test_rubric_penalty_example_is_clamped_to_zero() -> None:
    # the README's margin example: +10, +8, -15; a response that only makes the error scores
    # max(0, min(1, -15 / 18)) = 0
    r = rt.Rubric.from_dict(
        [
            {"weight": 10.0, "requirement": "States Q4 2023 base margin as 17.2%"},
            {"weight": 8.0, "requirement": "Explicitly uses Shapley attribution for decomposition"},
            {"weight": -15.0, "requirement": "Uses total deliveries instead of cash-only deliveries"},
        ]
    )
    assert r.score(["UNMET", "UNMET", "MET"]) == 0.0
    assert r.score(["MET", "MET", "MET"]) == pytest.approx(3 / 18)
    assert r.score(["MET", "MET", "MET"], normalize=False) == pytest.approx(3.0)  # raw weighted sum


@pytest.mark.parametrize(
    ("labels", "expected"),
    [(["UNMET", "UNMET"], 1.0), (["MET", "MET"], 0.0), (["MET", "UNMET"], 1 - 2 / 5)],
)
def test_rubric_all_negative_rubrics_start_at_one(labels: list[str], expected: float) -> None:
    # "Score = 1.0 when all errors are avoided", "0.0 when all errors are present", "proportional"
    r = rt.Rubric.from_dict([{"weight": -2, "requirement": "rude"}, {"weight": -3, "requirement": "wrong"}])
    assert r.score(labels) == pytest.approx(expected)


def test_rubric_holistic_raw_score_is_on_the_weighted_sum_scale() -> None:
    # "raw_score = (llm_score / 100.0) * total_positive_weight": 85/100 of 15 -> 12.75
    r = rt.Rubric.from_dict([{"weight": 10, "requirement": "a"}, {"weight": 5, "requirement": "b"}])
    v = pl.DataFrame({"id": [1], "criterion": [rt.HOLISTIC], "verdict": ["85"], "value": [0.85]})
    out = rt.score(v, r)
    assert out["score"].item() == pytest.approx(0.85) and out["raw_score"].item() == pytest.approx(12.75)


def test_rubric_file_formats_load() -> None:
    # the README's JSON list and YAML forms
    assert rt.Rubric.from_json('[{"weight": 10.0, "requirement": "Example requirement"}]')[0].weight == 10.0
    assert rt.Rubric.from_yaml("- weight: 10.0\n  requirement: Example requirement\n")[0].requirement == (
        "Example requirement"
    )


# ------------------------------------------------------------------ autorubric core grading


def test_autorubric_weight_defaults_to_ten() -> None:
    # `{"requirement": "Explains reasoning clearly"},  # weight defaults to 10.0`
    assert rt.Rubric.from_dict([{"requirement": "Explains reasoning clearly"}])[0].weight == 10.0


def test_autorubric_ordinal_satisfaction_scale() -> None:
    # the documented 4-point scale: labels "1".."4" worth 0, 0.33, 0.67, 1
    options = [{"label": str(k + 1), "value": v} for k, v in enumerate([0.0, 0.33, 0.67, 1.0])]
    r = rt.Rubric.from_dict(
        [
            {
                "name": "satisfaction",
                "weight": 10.0,
                "requirement": "How satisfied would you be?",
                "options": options,
                "scale_type": "ordinal",
            }
        ]
    )
    assert [r.score([lab]) for lab in "1234"] == pytest.approx([0.0, 0.33, 0.67, 1.0])
    assert r["satisfaction"].kind == "ordinal"


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        ("skip", 1.0),  # dropped from numerator and denominator: 10 / 10
        ("zero", 10 / 15),  # counted as unmet
        ("partial", (10 + 2.5) / 15),  # partial_credit 0.5 of its weight
        ("worst", 10 / 15),  # autorubric's FAIL: the worst outcome (UNMET for a reward)
    ],
)
def test_autorubric_cannot_assess_strategies(strategy: str, expected: float) -> None:
    r = rt.Rubric.from_dict([{"weight": 10, "requirement": "a"}, {"weight": 5, "requirement": "b"}])
    assert r.score(["MET", "CANNOT_ASSESS"], cannot_assess=strategy) == pytest.approx(expected)  # type: ignore[arg-type]


def test_autorubric_fail_on_a_penalty_is_the_penalty_applied() -> None:
    # FAIL = worst outcome; a penalty's worst outcome is MET
    r = rt.Rubric.from_dict([{"weight": 10, "requirement": "a"}, {"weight": -5, "requirement": "b"}])
    assert r.score(["MET", "CANNOT_ASSESS"], cannot_assess="worst") == pytest.approx(0.5)
    # README difference table: our "fail" zeroes the whole score instead
    assert r.score(["MET", "CANNOT_ASSESS"], cannot_assess="fail") == 0.0


def test_autorubric_na_options_are_never_scored_whatever_their_value() -> None:
    # autorubric allows any value on an NA option (e.g. 999): it never enters the score
    options = [{"label": "bad", "value": 0}, {"label": "good", "value": 1}, {"label": "n/a", "value": 999, "na": True}]
    r = rt.Rubric.from_dict(
        [
            {"name": "q", "weight": 10, "requirement": "x", "options": options},
            {"name": "b", "weight": 10, "requirement": "y"},
        ]
    )
    assert r.score(["n/a", "MET"]) == 1.0 and r.score(["n/a", "MET"], cannot_assess="zero") == 0.5


def test_autorubric_worst_option_ties_go_to_the_lowest_index() -> None:
    # worst_option_among: "Value ties resolve to the lowest index"; our unanimous picks it too
    options = [{"label": "x", "value": 0.5}, {"label": "y", "value": 0.5}, {"label": "z", "value": 1.0}]
    r = rt.Rubric.from_dict([{"name": "q", "requirement": "x", "options": options}])
    for order in (["y", "x"], ["x", "y"]):
        v = pl.DataFrame({"id": [1, 1], "criterion": "q", "verdict": order, "judge": ["a", "b"]})
        assert rt.ensemble(v, r, method="unanimous")["verdict"].item() == "x"


def test_autorubric_guaranteed_na_channel_for_multi_choice() -> None:
    # with_guaranteed_na_option: a multi-choice criterion without an NA option still has an
    # abstain channel; we accept the judge's CANNOT_ASSESS as an NA verdict
    r = rt.Rubric.from_dict(
        [{"name": "q", "requirement": "x", "options": [{"label": "a", "value": 0}, {"label": "b", "value": 1}]}]
    )
    out = rt.score(pl.DataFrame({"id": [1], "criterion": ["q"], "verdict": ["CANNOT_ASSESS"]}), r)
    assert out["cannot_assess_count"].item() == 1 and out["score"].item() is None


def test_autorubric_thinking_output_submissions_count_their_parts() -> None:
    # ThinkingOutputDict: missing fields are empty strings; ALL counts "thinking + ' ' + output"
    sub = pl.DataFrame(
        {"id": [1, 2], "submission": [{"thinking": "a b", "output": "c"}, {"thinking": None, "output": "d e"}]}
    )
    assert rt.word_count(sub, part="ALL")["length"].to_list() == [3, 2]
    assert rt.word_count(sub, part="THINKING_ONLY")["length"].to_list() == [2, 0]


def test_autorubric_rubric_shapes_load() -> None:
    # "Flat list of criteria - List of sections with criteria - Dict with 'sections' key - Dict
    # with 'rubric' key"
    crit = [{"weight": 10.0, "requirement": "States the correct answer"}]
    shapes = [crit, [{"criteria": crit}], {"sections": [{"criteria": crit}]}, {"rubric": [{"criteria": crit}]}]
    assert {rt.Rubric.from_dict(s)[0].requirement for s in shapes} == {"States the correct answer"}


def test_autorubric_failed_grades_have_no_score() -> None:
    # "When set, score/raw_score are None (a failure has no score)"
    r = rt.Rubric.from_dict([{"weight": 10, "requirement": "a"}])
    v = pl.DataFrame({"id": [1], "criterion": ["c1"], "verdict": [None], "error": ["parse: no JSON"]})
    out = rt.score(v, r)
    assert out["score"].item() is None and out["raw_score"].item() is None and "parse" in out["error"].item()


# ------------------------------------------------------------------ autorubric datasets


def test_autorubric_dataset_example_round_trips() -> None:
    # the dataset page's example: Accuracy (10) and Clarity (5), one item with [MET, MET]
    data = {
        "prompt": "Explain photosynthesis",
        "rubric": [
            {"name": "Accuracy", "weight": 10.0, "requirement": "Factually correct"},
            {"name": "Clarity", "weight": 5.0, "requirement": "Clear and concise"},
        ],
        "items": [
            {
                "submission": "Photosynthesis is the process...",
                "description": "Good response",
                "ground_truth": ["MET", "MET"],
            }
        ],
    }
    ds = rt.datasets.read_autorubric(data)
    assert ds.submissions["query"].item() == "Explain photosynthesis"
    assert ds.human["label"].to_list() == ["MET", "MET"]
    train, test = rt.datasets.split_train_test(ds, 1, seed=42)
    assert train.submissions.height == 1 and test.submissions.height == 0


# ------------------------------------------------------------------ rows added for issue 36


def test_rubric_custom_generate_fn_receives_the_system_and_user_prompts() -> None:
    # rubric README, "Custom generate_fn": ``async def f(system_prompt, user_prompt) -> output``
    seen: list[tuple[str, str]] = []

    async def generate(system_prompt: str, user_prompt: str, *, schema: dict) -> dict:
        seen.append((system_prompt, user_prompt))
        answer = user_prompt.split("<submission>")[1].split("</submission>")[0]
        return {"verdict": "MET" if "Paris" in answer else "UNMET", "explanation": "-"}

    r = rt.Rubric.from_dict([{"weight": 10.0, "requirement": "Response mentions Paris"}])
    df = pl.DataFrame({"submission": ["Paris is the capital of France."]})
    v = rt.grade(df, r, model=rt.FunctionJudge(generate), progress=False, record=False)
    assert v["verdict"].to_list() == ["MET"] and seen[0][0].startswith("You are a careful, impartial grader")
    assert "Requirement: Response mentions Paris" in seen[0][1]


def test_rubrify_grouped_strategy_makes_one_call_per_group_and_one_per_loose_criterion() -> None:
    # rubrify README, Execution Strategies: "grouped": one call unit per CriterionGroup;
    # ungrouped criteria individually
    spec = {
        "criteria": [{"id": f"C{i}", "title": f"T{i}", "description": "d"} for i in range(1, 6)],
        "groups": [{"id": "core", "children": ["C1", "C2"]}, {"id": "form", "children": ["C3"]}],
    }
    r = rt.Rubric.from_rubrify(spec)  # C4 lands in the reader's "ungrouped" scoring group
    p = rt.prompts(pl.DataFrame({"submission": ["x"]}), r, model="openai/gpt-4.1-mini", mode="grouped")
    assert p["criteria"].to_list() == [["C1", "C2"], ["C3"], ["C4"], ["C5"]]
    assert p["system"][2].startswith("You are a careful, impartial grader. You judge ONE criterion")


def test_rubrify_word_count_constraint_example_is_a_soft_warning() -> None:
    # rubrify README, OutputConstraint: WordCountConstraint(id="rationale_length", target_field=
    # "rationale", enforcement="soft", count=10, mode="min"): soft constraints produce warnings
    c = rt.OutputConstraint(id="rationale_length", kind="word_count", min=10, enforcement="soft")
    r = rt.Rubric.from_dict([{"name": "a", "requirement": "Says hello"}])
    judge = rt.ScriptedJudge(rule=lambda text, crit: ("MET", "too short"))
    v = rt.grade(pl.DataFrame({"submission": ["hello"]}), r, model=judge, output_constraints=[c],
                 progress=False, record=False)  # fmt: skip
    assert v["verdict"].item() == "MET"
    assert v["warnings"].to_list() == [["constraint rationale_length: the explanation must have at least 10 words"]]


def test_rubrify_output_constraints_are_carried_by_the_rubric_and_a_hard_one_disqualifies() -> None:
    # rubrify README: WordCountConstraint(id="rationale_length", target_field="rationale",
    # enforcement="soft", scope="criterion", count=10, mode="min"); "Hard constraints trigger
    # disqualification; soft constraints produce warnings"; scope defaults to "call"
    spec = {
        "criteria": [{"id": "C1", "title": "Clear"}, {"id": "C2", "title": "Kind"}],
        "output_constraints": [
            {"kind": "word_count", "id": "rationale_length", "description": "Rationale must be at least 10 words",
             "target_field": "rationale", "enforcement": "soft", "scope": "criterion", "count": 10, "mode": "min"},
            {"kind": "prefix_suffix", "id": "because", "target_field": "rationale", "enforcement": "hard",
             "prefix": "BECAUSE:"},
        ],
    }  # fmt: skip
    r = rt.Rubric.from_rubrify(spec)
    soft, hard = r.output_constraints
    assert (soft.min, soft.scope, soft.enforcement, soft.target) == (10, "criterion", "soft", "explanation")
    assert (hard.enforcement, hard.scope) == ("disqualify", "call")
    assert rt.Rubric.from_dict(r.to_dict()) == r  # written and read back whole
    judge = rt.ScriptedJudge(rule=lambda text, crit: ("MET", "BECAUSE: fine" if "ok" in text else "fine"))
    v = rt.grade(pl.DataFrame({"id": [1, 2], "submission": ["ok", "no"]}), r, model=judge, id_column="id",
                 progress=False, record=False)  # fmt: skip
    assert v["warnings"].list.len().to_list() == [1, 1, 1, 1]  # "Rationale must be at least 10 words"
    assert v.filter(pl.col("id") == 2)["disqualified_by"].str.starts_with("Rationale").sum() == 0
    assert v.filter(pl.col("id") == 2)["disqualified_by"].str.starts_with("constraint because").all()
    s = rt.score(v, r)
    assert s["score"].to_list() == [1.0, 0.0] and s["decision"].to_list() == ["Publish-ready", "Rejected"]
    with pytest.raises(ValueError, match="output_constraints: 'because' is given twice with different rules"):
        rt.grade(pl.DataFrame({"submission": ["ok"]}), r, model=judge, progress=False, record=False,
                 output_constraints=[{**hard.model_dump(), "prefix": "SINCE:"}])  # fmt: skip
    with pytest.raises(ValueError, match="target_field 'verdict' is not a field of a verdict"):
        bad = {**spec["output_constraints"][1], "target_field": "verdict"}
        rt.Rubric.from_rubrify({**spec, "output_constraints": [bad]})


def test_rubrify_role_spec_fields_and_decision_of_a_group_weighted_sum() -> None:
    # rubrify README: RoleSpec (persona, authority, domain, obligations, constraints);
    # CriterionGroup aggregation weighted_sum (the raw sum is reported beside the 0-1 score)
    spec_role = {"persona": "an editor", "authority": "peer", "domain": "science writing"}
    role = rt.Role.from_rubrify({**spec_role, "obligations": ["cite the sentence"], "constraints": ["rewrite it"]})
    assert role.render().startswith("You are an editor, working in science writing. You review as a peer")
    spec = {
        "criteria": [{"id": "C1", "title": "A", "weight": 2}, {"id": "C2", "title": "B", "weight": 1}],
        "groups": [{"id": "g", "children": ["C1", "C2"], "aggregation": "weighted_sum"}],
    }
    r = rt.Rubric.from_rubrify(spec)
    v = pl.DataFrame({"id": [1, 1], "criterion": ["C1", "C2"], "verdict": ["MET", "UNMET"]})
    s = rt.score(v, r)
    assert s["raw:g"].item() == 2.0 and s["score"].item() == pytest.approx(2 / 3)


def test_autorubric_meta_rubric_standalone_and_in_context() -> None:
    # autorubric API reference: evaluate_rubric_standalone, evaluate_rubric_in_context
    r = rt.Rubric.from_dict([{"name": "a", "requirement": "Is accurate"}])
    judge = rt.ScriptedJudge(rule=lambda text, c: "MET")
    assert rt.evaluate_rubric(r, model=judge, cache=False).height == len(rt.meta_rubric())
    in_context = rt.evaluate_rubric(r, model=judge, task="Explain tides", cache=False)
    assert {"covers_task", "on_task"} <= set(in_context["criterion"])


def test_autorubric_calibration_examples_in_the_holistic_strategy_too() -> None:
    # autorubric API reference: FewShotConfig / FewShotExample "Calibration with labeled examples"
    # (in every grading strategy); holistic mode shows each example with its rubric score
    r = rt.Rubric.from_dict([{"name": "a", "requirement": "x", "weight": 3}, {"name": "b", "requirement": "y"}])
    ex = pl.DataFrame({"submission": ["s", "s"], "criterion": ["a", "b"], "verdict": ["MET", "UNMET"]})
    user = rt.prompts(pl.DataFrame({"submission": ["t"]}), r, model="openai/gpt-4.1-mini", mode="holistic",
                      examples=ex)["user"][0]  # fmt: skip
    assert f"score: {100 * 3 / 13:.2f}" in user


def test_rubrify_confidence_pattern_hits_and_criterion_callback() -> None:
    # rubrify README: CriterionJudgment.confidence, Judgment.pattern_hits, on_criterion_done
    spec = {"criteria": [{"id": "C1", "title": "Tone"}], "patterns": [{"id": "tic", "pattern": "delve"}]}
    r = rt.Rubric.from_rubrify(spec)
    done: list[str] = []
    v = rt.grade(pl.DataFrame({"submission": ["we delve"]}), r, model=rt.ScriptedJudge(rule=lambda t, c: "MET"),
                 confidence=True, on_result=lambda rows: done.extend(x["criterion"] for x in rows),
                 progress=False, record=False)  # fmt: skip
    assert done == ["C1"] and v.filter(pl.col("criterion") == "C1")["confidence"].item() == 1.0
    assert rt.score(v, r)["pattern_hits"].to_list() == [["pattern:tic"]]
