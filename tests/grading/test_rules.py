"""Deterministic rule criteria: regex, substring, length and JSON-schema checks."""

from __future__ import annotations

import json

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.grading.rules import rule_verdicts
from rubrictools.rubric import Rule


def _v(texts, **rule):
    verdict, why = rule_verdicts(pl.Series(texts, dtype=pl.String), Rule(**rule))
    return verdict.to_list(), why.to_list()


def test_regex_with_flags_and_explanation():
    v, why = _v(["As an AI model, no", "I think so", None], regex=r"as an ai\b", flags="i")
    assert v == ["MET", "UNMET", "UNMET"]
    assert why[0] == 'regex matched "As an AI"' and "not found" in why[1]


def test_contains_is_case_insensitive_by_default_and_any_of():
    assert _v(["Thank YOU", "cheers", "sorry"], contains=["thank you", "sorry"])[0] == ["MET", "UNMET", "MET"]
    assert _v(["Thank YOU"], contains="thank you", case_sensitive=True)[0] == ["UNMET"]


def test_length_bounds_are_inclusive_and_combined_with_and():
    texts = ["one two three", "one two three four five", "x" * 30]
    assert _v(texts, min_words=3, max_words=4)[0] == ["MET", "UNMET", "UNMET"]
    v, why = _v(texts, max_chars=13)
    assert v == ["MET", "UNMET", "UNMET"] and why[0] == "13 characters (allowed 0..13)"
    # all checks must hold
    assert _v(["hello world", "hello"], contains="hello", min_words=2)[0] == ["MET", "UNMET"]


def test_json_schema_validates_each_distinct_text_once():
    schema = {"type": "object", "required": ["answer"], "properties": {"answer": {"type": "integer"}}}
    texts = ['{"answer": 3}', '{"answer": "3"}', "not json", '{"answer": 3}']
    v, why = _v(texts, json_schema=schema)
    assert v == ["MET", "UNMET", "UNMET", "MET"]
    assert "not valid JSON" in why[2] and "does not match" in why[1]
    assert _v(["[1, 2]", "{"], json_schema={})[0] == ["MET", "UNMET"]


@pytest.mark.parametrize(
    "rule, message",
    [
        ({"regex": "(unclosed"}, "regex does not compile"),
        ({"regex": r"foo(?=bar)"}, "look-around"),
        ({"regex": "x", "flags": "q"}, "unknown regex flag"),
        ({"min_words": 5, "max_words": 2}, "min_words (5) is greater than max_words (2)"),
        ({}, "at least one check"),
        ({"json_schema": {"type": "nonsense"}}, "not a valid JSON schema"),
        ({"contains": []}, "at least one non-empty string"),
        ({"flags": "i", "contains": "x"}, "flags only apply to a regex"),
    ],
)
def test_bad_rules_get_errors_naming_the_criterion_and_field(rule, message):
    with pytest.raises(ValueError) as e:
        rt.Rubric.from_dict([{"name": "r1", "rule": rule}])
    assert "criterion 0 ('r1')" in str(e.value) and "rule" in str(e.value) and message in str(e.value)


def test_rule_criteria_must_be_binary():
    with pytest.raises(ValueError, match="rule criterion is binary"):
        rt.Criterion(name="x", rule={"regex": "a"}, options=[{"label": "a", "value": 1}, {"label": "b"}])


def test_requirement_defaults_to_the_rules_description_and_round_trips():
    r = rt.Rubric.from_dict([{"name": "short", "rule": {"max_words": 50}, "weight": 2}])
    assert r["short"].requirement == "The submission has at most 50 words"
    assert rt.Rubric.from_dict(json.loads(r.to_json())) == r


def test_apply_rules_ignores_llm_criteria_and_keeps_input_order():
    r = rt.Rubric.from_dict(
        [
            {"name": "llm", "requirement": "Is helpful"},
            {"name": "short", "rule": {"max_words": 2}},
            {"name": "json", "rule": {"json_schema": {}}},
        ]
    )
    df = pl.DataFrame({"key": ["b", "a"], "text": ["[1]", "three little words"]})
    v = rt.apply_rules(df, r, column="text", id_column="key")
    assert v.select("id", "criterion", "verdict").rows() == [
        ("b", "short", "MET"),
        ("b", "json", "MET"),
        ("a", "short", "UNMET"),
        ("a", "json", "UNMET"),
    ]
    assert v["judge"].unique().to_list() == ["rule"] and v["cost_usd"].sum() == 0
    assert set(rt.VERDICT_SCHEMA) <= set(v.columns)
    with pytest.raises(ValueError, match="column='nope'"):
        rt.apply_rules(df, r, column="nope")


def test_apply_rules_checks_the_graded_part_of_thinking_submissions():
    r = rt.Rubric.from_dict([{"name": "says_42", "rule": {"contains": "42"}}])
    df = pl.DataFrame({"submission": ["<thinking>maybe 42</thinking><output>it is 41</output>"]})
    assert rt.apply_rules(df, r, thinking_markers=True)["verdict"].to_list() == ["UNMET"]
    assert rt.apply_rules(df, r, thinking_markers=True, grade_part="thinking")["verdict"].to_list() == ["MET"]
    assert rt.apply_rules(df, r)["verdict"].to_list() == ["MET"]  # unmarked: the whole text, verbatim


def test_rules_are_vectorised_over_a_large_column():
    texts = pl.Series(["word " * (i % 7) for i in range(200_000)], dtype=pl.String)
    v, _ = rule_verdicts(texts, Rule(min_words=3, regex="word"))
    assert v.len() == 200_000 and v.value_counts().height == 2


def test_a_null_submission_is_refused_or_an_error_row_never_empty_text() -> None:
    """Before: a null row passed max_words (0 words) and failed json, as if it were empty text."""
    rubric = rt.Rubric.from_dict([{"name": "short", "rule": {"max_words": 3}}])
    df = pl.DataFrame({"submission": ["hi there", None]})
    with pytest.raises(ValueError, match=r"1 null submission\(s\) \(ids \[1\]\.\.\.\).*on_null='error_row'"):
        rt.apply_rules(df, rubric)
    rows = rt.apply_rules(df, rubric, on_null="error_row")
    assert rows["verdict"].to_list() == ["MET", None] and rows["error"].to_list() == [None, "the submission is null"]
    assert rt.score(rows, rubric, on_error="null")["score"].to_list() == [1.0, None]
