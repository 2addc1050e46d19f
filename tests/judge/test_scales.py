"""Every number a judge returns carries its scale in the response schema, so a grammar-
constrained server keeps it there; a number off the scale is a parse problem, corrected once."""

from __future__ import annotations

import importlib.util
import json

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.judge import dialects
from rubrictools.judge.reply_schemas import HOLISTIC_SCHEMA, criterion_schema, item_schema
from rubrictools.testing import FakeLLMServer, Reply

STEPPED = rt.Criterion(name="clarity", requirement="Clear?", range={"min": 1, "max": 5, "step": 1})
CONTINUOUS = rt.Criterion(name="share", requirement="Share correct?", range={"min": 0, "max": 1})


def test_numeric_criteria_carry_their_bounds_and_points():
    stepped = criterion_schema(STEPPED)["properties"]["verdict"]
    assert stepped == {"type": "number", "minimum": 1.0, "maximum": 5.0, "enum": [1.0, 2.0, 3.0, 4.0, 5.0]}
    assert criterion_schema(CONTINUOUS)["properties"]["verdict"] == {"type": "number", "minimum": 0.0, "maximum": 1.0}
    item = item_schema(rt.Rubric([STEPPED, CONTINUOUS]))["properties"]["verdicts"]["properties"]
    assert item["clarity"]["properties"]["verdict"]["enum"] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert item["share"]["properties"]["verdict"]["maximum"] == 1.0


def test_the_holistic_score_is_an_integer_from_0_to_100_in_every_dialect():
    assert HOLISTIC_SCHEMA["properties"]["score"] == {"type": "integer", "minimum": 0, "maximum": 100}
    strict = dialects.format_fields("json_schema", HOLISTIC_SCHEMA, "h")["response_format"]["json_schema"]["schema"]
    assert "enum" not in strict["properties"]["score"]  # OpenAI's strict mode: bounds, no 101-value enum
    for dialect, where in (("json_object_schema", ("response_format", "schema")), ("guided", ("guided_json",))):
        sent = dialects.format_fields(dialect, HOLISTIC_SCHEMA, "h")
        for k in where:
            sent = sent[k]
        assert sent["properties"]["score"]["enum"] == list(range(101)), dialect


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="needs llama-cpp-python (the [local] extra)")
def test_llama_cpp_pythons_grammar_allows_only_the_scale():
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    sent = dialects.format_fields("json_object_schema", HOLISTIC_SCHEMA, "h")["response_format"]["schema"]
    grammar = json_schema_to_gbnf(json.dumps(sent))
    rule = next(line for line in grammar.splitlines() if line.startswith("score ::="))
    allowed = {a.strip().strip('"') for a in rule.split("::=")[1].split("|")}
    assert allowed == {str(i) for i in range(101)}
    # without the enum its converter ignores minimum/maximum: any integer would do
    plain = json_schema_to_gbnf(json.dumps(HOLISTIC_SCHEMA))
    assert not any(line.startswith("score ::=") for line in plain.splitlines())


@pytest.mark.parametrize(
    ("mode", "rubric", "bad", "good", "value"),
    [
        ("holistic", rt.Rubric([STEPPED]), {"score": 150, "explanation": "x"}, {"score": 80, "explanation": "x"}, 0.8),
        (
            "per_criterion",
            rt.Rubric([STEPPED]),
            {"verdict": 9, "explanation": "x"},
            {"verdict": 4, "explanation": "x"},
            0.75,
        ),
    ],
)
def test_a_number_off_the_scale_is_corrected_once_never_rescaled(mode, rubric, bad, good, value):
    replies = iter([json.dumps(bad), json.dumps(good)])
    with FakeLLMServer(lambda body: Reply(content=next(replies))) as srv:
        v = rt.grade(
            pl.DataFrame({"a": ["text"]}),
            rubric,
            column="a",
            mode=mode,
            model=rt.Judge(model="openai/fake-x", api_base=srv.url, api_key="k"),
            cache=False,
            progress=False,
        )
        sent = srv.requests
    assert v["error"].null_count() == 1 and v["value"].to_list() == [pytest.approx(value)]
    assert len(sent) == 2
    last_turn = sent[1]["messages"][-1]["content"]
    assert "0-100" in last_turn or "1 to 5" in last_turn
