"""rubrify reader and Markdown export."""

from __future__ import annotations

import json
import warnings

import polars as pl
import pytest

import rubrictools as rt

# Shaped after the rubrify README's documented model (criteria with typed scales, groups,
# pattern and criterion-linked disqualifiers, decision thresholds on 0-100).
RUBRIFY = {
    "meta": {"name": "CompletenessJudge", "version": "1.0"},
    "goal": "Evaluate response completeness.",
    "criteria": [
        {
            "id": "C1",
            "title": "Content Completeness",
            "description": "Covers every part of the request.",
            "scale": {
                "kind": "numeric",
                "minimum": 0,
                "maximum": 3,
                "step": 1,
                "anchors": [
                    {"value": 0, "label": "none", "description": "Nothing relevant."},
                    {"value": 3, "label": "full"},
                ],
            },
            "weight": 2.0,
        },
        {"id": "C2", "title": "No Truncation", "scale": {"kind": "binary"}, "evidence": {"required": True}},
        {
            "id": "C3",
            "title": "Structure",
            "scale": {
                "kind": "ordinal",
                "anchors": [
                    {"value": 0, "label": "broken"},
                    {"value": 1, "label": "uneven"},
                    {"value": 2, "label": "sound", "description": "Well formed."},
                ],
            },
        },
        {
            "id": "C4",
            "title": "Format",
            "scale": {"kind": "nominal", "anchors": [{"value": 0, "label": "prose"}, {"value": 1, "label": "list"}]},
        },
    ],
    "groups": [
        {"id": "core", "children": ["C1", "C2"], "aggregation": "weighted_sum", "weight": 2.0},
        {"id": "form", "children": ["C3"], "aggregation": "min"},
    ],
    "disqualifiers": [
        {"id": "D1", "description": "Placeholder text", "pattern": r"\[TODO\]"},
        {"id": "D2", "criterion_id": "C2"},
    ],
    "policy": {
        "decision_thresholds": [[80, "Complete"], [50, "Partial"], [0, "Incomplete"]],
        "execution_strategy": "holistic",
    },
    "patterns": [{"id": "p1", "regex": "foo"}],
}


def test_from_rubrify_maps_every_documented_part(tmp_path):
    with pytest.warns(UserWarning, match=r"meta.*policy fields \['execution_strategy'\] \(grade\(mode=") as caught:
        r = rt.Rubric.from_rubrify(RUBRIFY)
    assert "goal" not in str(caught[0].message)  # carried as guidelines, no longer dropped
    assert r.guidelines is not None and r.guidelines.startswith("Goal:")
    assert r.names == ("C1", "C2", "C3", "C4", "D1", "pattern:p1")
    assert r["pattern:p1"].weight == 0 and r["pattern:p1"].tags == ("pattern",)
    c1 = r["C1"]
    assert (
        c1.kind == "numeric"
        and c1.weight == 2
        and c1.requirement == "Content Completeness: Covers every part of the request."
    )
    assert c1.range.anchors == {0.0: "none: Nothing relevant.", 3.0: "full"}
    assert r["C2"].is_binary and r["C2"].evidence and r["C2"].required
    assert [(o.label, o.value) for o in r["C3"].options] == [("broken", 0.0), ("uneven", 0.5), ("sound", 1.0)]
    assert r["C3"].options[2].description == "Well formed." and r["C4"].kind == "nominal"
    assert r["D1"].disqualifier and r["D1"].rule.regex == r"\[TODO\]" and r["D1"].rule.flags == "i"
    assert [(g.name, g.aggregation, g.weight) for g in r.groups] == [
        ("core", "weighted_sum", 2.0),
        ("form", "min", 1.0),
        ("ungrouped", "weighted_mean", 1.0),
    ]
    assert r["C4"].group == "ungrouped"
    assert [(t.label, t.min) for t in r.thresholds] == [("Complete", 0.8), ("Partial", 0.5), ("Incomplete", 0.0)]
    # also from JSON text and from a file
    p = tmp_path / "rubric.json"
    p.write_text(json.dumps(RUBRIFY))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert rt.Rubric.from_rubrify(p) == r and rt.Rubric.from_rubrify(json.dumps(RUBRIFY)) == r
    # and it grades offline: the pattern disqualifier is a rule
    v = rt.apply_rules(pl.DataFrame({"submission": ["ok", "see [todo] foo"]}), r)
    assert v.filter(pl.col("criterion") == "D1")["verdict"].to_list() == ["UNMET", "MET"]
    assert v.filter(pl.col("criterion") == "pattern:p1")["verdict"].to_list() == ["UNMET", "MET"]


@pytest.mark.parametrize(
    "patch, message",
    [
        ({"groups": [{"id": "g", "children": ["C9"]}]}, "group 'g': child 'C9': no such criterion or group"),
        (
            {"groups": [{"id": "g", "children": ["h", "C2"]}, {"id": "h", "children": ["C1"]}]},
            "group 'g' holds criteria and groups ('h')",
        ),
        (
            {"groups": [{"id": "g", "children": ["h"]}, {"id": "h", "children": ["g", "C1"]}]},
            "holds criteria and groups",
        ),
        ({"groups": [{"id": "g", "children": ["C1"], "aggregation": "median"}]}, "unknown aggregation 'median'"),
        ({"disqualifiers": [{"id": "D9", "criterion_id": "C9"}]}, "disqualifier 'D9': no criterion 'C9'"),
        ({"disqualifiers": [{"id": "D9"}]}, "neither 'pattern' nor 'criterion_id'"),
        ({"criteria": [{"id": "X", "scale": {"kind": "likert"}}]}, "criterion 'X': unknown scale kind 'likert'"),
        ({"criteria": [{"id": "X", "scale": {"kind": "numeric", "minimum": 0}}]}, "needs 'minimum' and 'maximum'"),
        ({"criteria": []}, "non-empty 'criteria'"),
    ],
)
def test_from_rubrify_errors_name_the_part(patch, message):
    data = {**{k: v for k, v in RUBRIFY.items() if k in ("criteria",)}, **patch}
    with pytest.raises(ValueError) as e, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rt.Rubric.from_rubrify(data)
    assert message in str(e.value)


def test_from_rubrify_missing_file():
    with pytest.raises(FileNotFoundError):
        rt.Rubric.from_rubrify("/nonexistent/rubric.json")


def test_markdown_is_a_table_with_escaped_cells_groups_and_decisions():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = rt.Rubric.from_rubrify(RUBRIFY)
    md = r.to_markdown()
    lines = md.splitlines()
    assert lines[0] == "| # | Criterion | Weight | Requirement | Answer |"
    assert (
        "| 1 | C1 | +2 | Content Completeness: Covers every part of the request. | number, 0 to 3 in steps "
        "of 1 (0 = none: Nothing relevant.; 3 = full) |" in lines
    )
    assert "| 5 | D1 | disqualifier | Placeholder text | MET / UNMET (checked by rule) |" in lines
    assert "**(required)**" in md and "| core | 2 | weighted_sum | C1, C2 |" in md
    penalty = rt.Rubric.from_dict([{"name": "p", "requirement": "Rude", "weight": -6}]).to_markdown()
    assert "| 1 | p | \u22126 | Rude |" in penalty and "-6" not in penalty  # a minus sign, as every table prints it
    assert lines[-1].startswith("Decisions: **Complete** if score >= 0.8")
    weird = rt.Rubric.from_dict([{"name": "a", "requirement": "pipes | and\nnewlines"}]).to_markdown()
    assert "pipes \\| and<br>newlines" in weird and weird.count("\n") == 2


def test_from_rubrify_warns_about_every_dropped_criterion_field():
    crit = {
        "id": "C1",
        "title": "Clear",
        "mechanical_rules": ["No emoji", "Max 3 lines"],
        "style": "terse",
        "tone": "dry",
        "notes": "",
    }
    with pytest.warns(UserWarning, match=r"criterion 'C1': \['style', 'tone'\]") as caught:
        r = rt.Rubric.from_rubrify({"criteria": [crit]})
    assert len(caught) == 1  # one warning naming everything dropped (the empty 'notes' is nothing)
    # mechanical rules are prompt text in rubrify: here they reach the judge through the requirement
    assert r["C1"].requirement == "Clear. Rules: No emoji; Max 3 lines"


def test_from_rubrify_decisions_reject_a_disqualified_answer():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = rt.Rubric.from_rubrify({k: v for k, v in RUBRIFY.items() if k != "patterns"})
    assert r.disqualified_decision == "Rejected"
    assert rt.Rubric.from_dict(r.to_dict()) == r
    v = pl.DataFrame(
        {
            "id": [1] * 5 + [2] * 5,
            "criterion": list(r.names) * 2,
            "verdict": ["3", "MET", "sound", "list", "UNMET", "3", "MET", "sound", "list", "MET"],
        }
    )
    out = rt.score(v, r)
    # id 2 matched the pattern disqualifier: rubrify says "Rejected", not the lowest threshold label
    assert out["decision"].to_list()[1] == "Rejected" and out["disqualified"][1] is not None
    assert out["decision"][0] != "Rejected"
    assert rt.score(v, r, thresholds={"pass": 0.0})["decision"].to_list()[1] == "Rejected"


def test_from_rubrify_without_thresholds_gets_rubrifys_default_decisions():
    r = rt.Rubric.from_rubrify({"criteria": [{"id": "C1", "title": "Clear"}]})
    assert [(t.label, t.min) for t in r.thresholds] == [
        ("Publish-ready", 0.9),
        ("Strong draft", 0.75),
        ("Workable draft", 0.6),
        ("Needs major revision", 0.4),
        ("Fundamentally unclear", 0.0),
    ]
    assert r.disqualified_decision is None
    v = pl.DataFrame({"id": [1, 2], "criterion": "C1", "verdict": ["MET", "UNMET"]})
    assert rt.score(v, r)["decision"].to_list() == ["Publish-ready", "Fundamentally unclear"]


def test_from_rubrify_nests_groups_of_groups():
    spec = {
        "criteria": [{"id": "C1", "title": "a"}, {"id": "C2", "title": "b"}, {"id": "C3", "title": "c"}],
        "groups": [
            {"id": "core", "children": ["inner", "outer"], "aggregation": "min", "weight": 2},
            {"id": "inner", "children": ["C1", "C2"]},
            {"id": "outer", "children": ["C3"], "aggregation": "weighted_sum"},
        ],
    }
    r = rt.Rubric.from_rubrify(spec)
    assert {g.name: g.parent for g in r.groups} == {"core": None, "inner": "core", "outer": "core"}
    v = pl.DataFrame({"id": [1, 1, 1], "criterion": ["C1", "C2", "C3"], "verdict": ["MET", "UNMET", "MET"]})
    out = rt.score(v, r).row(0, named=True)
    assert out["score:inner"] == 0.5 and out["score:outer"] == 1.0 and out["score:core"] == 0.5
    assert out["score"] == 0.5  # core is the only top-level group


def test_a_rubric_with_an_id_and_sections_loads() -> None:
    """Before: {"rubric": {"id": ..., "sections": [...]}} (a shape both peers' tests load) was refused."""
    r = rt.Rubric.from_dict(
        {
            "rubric": {
                "id": "r1",
                "version": "2",
                "sections": [{"id": "s", "criteria": [{"name": "a", "requirement": "x"}]}],
            }
        }
    )
    assert list(r.names) == ["a"]


def test_rubrify_guidance_becomes_guidelines_the_judge_sees():
    spec = {
        "criteria": [{"id": "C1", "title": "Clarity", "description": "Is it clear?"}],
        "instructions": ["Read the whole essay first.", "Ignore spelling."],
        "definitions": {"thesis": "the essay's main claim"},
        "advice_rules": [{"when": "the essay is short", "then": "be lenient on structure"}],
    }
    r = rt.Rubric.from_rubrify(spec)
    assert r.guidelines == (
        "Instructions:\n- Read the whole essay first.\n- Ignore spelling.\n\n"
        "Definitions:\n- thesis: the essay's main claim\n\n"
        "Advice:\n- when: the essay is short; then: be lenient on structure"
    )
    p = rt.prompts(pl.DataFrame({"submission": ["An essay."]}), r, model="openai/gpt-4.1-mini")
    assert "- Ignore spelling." in p["user"][0] and "- thesis: the essay's main claim" in p["user"][0]


def test_from_rubrify_names_the_option_that_takes_each_run_part():
    spec = {
        "criteria": [{"id": "C1", "title": "Clear"}],
        "role": {"persona": "an editor"},
        "output_constraints": [{"id": "short", "kind": "word_count", "max": 50}],
        "calibration_examples": [{"text": "x", "score": 90}],
    }
    with pytest.warns(UserWarning) as caught:
        rt.Rubric.from_rubrify(spec)
    text = str(caught[0].message)
    assert "role (pass Judge(role=rt.Role.from_rubrify" in text
    assert "output_constraints" not in text  # carried by the rubric now
    assert "calibration_examples (pass grade(examples=" in text
    assert "no rubrictools equivalent" not in text


def test_markdown_lists_the_rules_on_the_judges_replies() -> None:
    """Before: a rubric's output constraints were carried everywhere but its Markdown table."""
    r = rt.Rubric.from_dict(
        {
            "criteria": [{"name": "a", "requirement": "x"}],
            "output_constraints": [
                {"id": "short", "kind": "word_count", "max": 40, "enforcement": "disqualify", "scope": "call"},
                {"id": "no|pipe", "kind": "token", "token": "sorry", "forbid": True},
            ],
        }
    )
    md = r.to_markdown()
    assert "| the explanation must have at most 40 words | short | call | disqualifies the submission |" in md
    assert '| the explanation must not contain "sorry" | no\\|pipe | criterion | warning |' in md
