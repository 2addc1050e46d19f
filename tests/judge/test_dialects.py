"""Structured-output dialects: the request fields of each, the static choice, the probe and
what is remembered (against the fake server, which enforces one dialect as a real one does)."""

from __future__ import annotations

import json
import warnings

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.judge import Judge, dialects
from rubrictools.testing import FakeLLMServer

SCHEMA = {"type": "object", "properties": {"verdict": {"type": "string", "enum": ["MET", "UNMET"]}}}


@pytest.fixture(autouse=True)
def _fresh_memo(monkeypatch):
    monkeypatch.setattr(dialects, "_MEMO", {})


def test_each_dialect_puts_the_schema_where_its_servers_read_it():
    assert dialects.format_fields("json_schema", SCHEMA, "v") == {
        "response_format": {"type": "json_schema", "json_schema": {"name": "v", "schema": SCHEMA, "strict": True}}
    }
    assert dialects.format_fields("json_object_schema", SCHEMA, "v") == {
        "response_format": {"type": "json_object", "schema": SCHEMA}
    }
    assert dialects.format_fields("guided", SCHEMA, "v") == {"guided_json": SCHEMA}
    # grammar dialects bound free text, so a rambling small model cannot run into the token cap
    free = {
        "type": "object",
        "properties": {
            "verdict": {"enum": ["MET"], "type": "string"},
            "explanation": {"type": "string"},
            "evidence": {"type": "string"},
        },
    }
    grammar = dialects.format_fields("json_object_schema", free, "v")["response_format"]["schema"]["properties"]
    assert grammar["explanation"]["maxLength"] == 300 and grammar["evidence"]["maxLength"] == 600
    assert "maxLength" not in grammar["verdict"]
    strict = dialects.format_fields("json_schema", free, "v")["response_format"]["json_schema"]["schema"]
    assert "maxLength" not in json.dumps(strict)  # OpenAI's strict mode refuses it
    assert dialects.format_fields("json_object", SCHEMA, "v") == {"response_format": {"type": "json_object"}}
    assert dialects.format_fields("prompt", SCHEMA, "v") == {}
    with pytest.raises(ValueError, match="structured_output"):
        dialects.format_fields("grammar", SCHEMA, "v")


def test_an_unknown_setting_is_refused_naming_the_field():
    with pytest.raises(ValueError, match="structured_output"):
        Judge(model="openai/x", structured_output="grammar")  # type: ignore[arg-type]  # the wrong value is the test


def test_static_choice_explicit_settings_then_litellm_knowledge():
    assert dialects.static_dialect(Judge(model="openai/gpt-4.1-mini")) == "json_schema"
    # a known model keeps litellm's answer even behind a gateway
    assert dialects.static_dialect(Judge(model="openai/gpt-4.1-mini", api_base="http://gw/v1")) == "json_schema"
    assert dialects.static_dialect(Judge(model="openai/x", structured_output="prompt")) == "prompt"
    assert dialects.static_dialect(Judge(model="openai/x", structured_output="guided")) == "guided"
    # the older response_format is its deprecated spelling; two different answers are refused
    with pytest.raises(ValueError, match="pass structured_output= only"):
        Judge(model="openai/x", response_format="json_object", structured_output="guided")
    # an unknown model on a custom OpenAI-compatible server: only a probe can tell
    assert dialects.static_dialect(Judge(model="openai/smollm2", api_base="http://127.0.0.1:1/v1")) is None
    # not an OpenAI-compatible prefix: litellm translates (no probe)
    assert dialects.static_dialect(Judge(model="ollama/llama3", api_base="http://127.0.0.1:1")) == "json_object"


@pytest.mark.parametrize("served", ["json_schema", "json_object_schema", "guided", "none"])
def test_the_probe_finds_the_dialect_the_server_enforces(served):
    with FakeLLMServer(dialect=served) as srv:
        found = dialects.probe(Judge(model="openai/local", api_base=srv.url, api_key="sk-local"))
        assert found == (served if served != "none" else "prompt")
        # tried in order, stopping at the first that works; probes are not grading requests
        order = ["json_schema", "json_object_schema", "guided"]
        assert len(srv.probes) == (order.index(served) + 1 if served != "none" else 3)
        assert srv.hits == 0
        assert all(p["max_tokens"] <= 32 for p in srv.probes)


def test_refusals_are_not_answers(tmp_path):
    # llama-cpp-python answers a response_format type it does not know with HTTP 500
    with FakeLLMServer(dialect="json_object_schema") as srv:
        srv.refuse_other_dialects = True
        assert dialects.probe(Judge(model="openai/local", api_base=srv.url, api_key="k")) == "json_object_schema"
    with FakeLLMServer(dialect="none") as srv:  # refuses all three: nothing is concluded or remembered
        srv.refuse_other_dialects = True
        j = Judge(model="openai/local", api_base=srv.url, api_key="k")
        with pytest.warns(RuntimeWarning, match="refused every dialect"):
            assert dialects.resolve(j, store=tmp_path) == "prompt"
        assert not (tmp_path / "structured_output.json").exists()


def test_resolved_once_per_server_and_model_and_remembered_on_disk(tmp_path, monkeypatch):
    with FakeLLMServer(dialect="json_object_schema") as srv:
        j = Judge(model="openai/local", api_base=srv.url, api_key="sk-local")
        assert dialects.resolve(j, store=tmp_path) == "json_object_schema"
        assert dialects.resolve(j, store=tmp_path) == "json_object_schema"
        assert len(srv.probes) == 2  # json_schema refused, json_object_schema honoured: once
        saved = json.loads((tmp_path / "structured_output.json").read_text())
        assert list(saved.values()) == ["json_object_schema"] and "sk-local" not in json.dumps(saved)
        monkeypatch.setattr(dialects, "_MEMO", {})  # a new process: the file answers
        assert dialects.resolve(j, store=tmp_path) == "json_object_schema"
        assert len(srv.probes) == 2


def test_a_server_that_cannot_be_reached_is_not_remembered(tmp_path):
    j = Judge(model="openai/local", api_base="http://127.0.0.1:9/v1", api_key="sk-local-SECRET-42", timeout=2)
    with pytest.warns(RuntimeWarning, match="could not find the structured-output dialect") as rec:
        assert dialects.resolve(j, store=tmp_path) == "prompt"
    assert "sk-local-SECRET-42" not in str(rec[0].message)
    assert not (tmp_path / "structured_output.json").exists()


def test_grading_an_unknown_model_sends_the_probed_dialect_directly(tmp_path):
    rubric = rt.Rubric.from_dict([{"name": "good", "requirement": "The answer is good"}])
    df = pl.DataFrame({"text": ["good one", "bad one"]})
    with FakeLLMServer(dialect="json_object_schema") as srv:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            v = rt.grade(
                df,
                rubric,
                column="text",
                model=rt.Judge(model="openai/local", api_base=srv.url, api_key="sk-local"),
                cache=tmp_path / "c.sqlite",
                progress=False,
            )
        assert v["verdict"].to_list() == ["MET", "UNMET"] and v["error"].null_count() == 2
        assert v["transport"].to_list() == ["direct", "direct"]
        body = srv.requests[0]
        assert body["response_format"]["type"] == "json_object"
        assert body["response_format"]["schema"]["properties"]["verdict"]["enum"] == ["MET", "UNMET", "CANNOT_ASSESS"]
        assert body["max_tokens"] == 250  # the task's own cap


@pytest.mark.parametrize("transport", ["litellm", "direct"])
@pytest.mark.parametrize("style", ["guided", "json_object_schema", "prompt"])
def test_both_transports_send_each_dialect_as_it_is(tmp_path, transport, style):
    rubric = rt.Rubric.from_dict([{"name": "good", "requirement": "The answer is good"}])
    with FakeLLMServer() as srv:
        v = rt.grade(
            pl.DataFrame({"text": ["good one"]}),
            rubric,
            column="text",
            model=rt.Judge(
                model="openai/local", api_base=srv.url, api_key="sk-local", structured_output=style, transport=transport
            ),
            cache=False,
            progress=False,
        )
        assert v["error"].null_count() == 1 and not srv.probes
        body = srv.requests[0]
    schema = {k: v for k, v in body.items() if k in ("response_format", "guided_json")}
    if style == "guided":
        assert list(schema) == ["guided_json"] and schema["guided_json"]["properties"]["verdict"]["enum"][0] == "MET"
    elif style == "json_object_schema":
        assert list(schema) == ["response_format"] and schema["response_format"]["type"] == "json_object"
        assert "schema" in schema["response_format"]
    else:
        assert schema == {}


def test_a_mock_judge_gets_the_format_litellm_gives_its_model_and_is_never_probed():
    mock = {"mock_response": '{"verdict": "MET"}'}
    assert dialects.static_dialect(Judge(model="openai/gpt-4.1-mini", litellm_kwargs=mock)) == "json_schema"
    # behind an api_base it reaches no server, so no probe either
    assert dialects.static_dialect(Judge(model="openai/local", api_base="http://127.0.0.1:1/v1", litellm_kwargs=mock))
