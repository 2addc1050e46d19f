"""Retries that can change the answer, token caps per task and the transport chosen by default."""

from __future__ import annotations

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.judge import Judge

from ..fake_server import Reply
from .test_grading import _reset, df, rubric, run, server  # noqa: F401 - shared fixtures


def one(rubric):
    return rubric.model_copy(update={"criteria": rubric.criteria[:1]})


def test_an_unusable_reply_is_retried_once_with_a_corrective_turn(df, rubric, server, tmp_path):
    server.inject(Reply(content='{"verdict": "Mixed", "explanation": "partly"}'))
    v = run(df.head(1), one(rubric), server, tmp_path, cache=False)
    assert v["verdict"].to_list() == ["MET"] and v["error"].null_count() == 1
    assert server.hits == 2 and v["attempts"][0] == 2
    first, second = server.requests
    assert second["messages"][: len(first["messages"])] == first["messages"]
    added = second["messages"][len(first["messages"]) :]
    assert [m["role"] for m in added] == ["assistant", "user"]
    assert "Mixed" in added[0]["content"] and "'Mixed' is not one of" in added[1]["content"]
    assert second["temperature"] == first["temperature"]


def test_a_call_whose_replies_stay_unusable_costs_two_requests_and_keeps_the_reply(df, rubric, server, tmp_path):
    server.script = lambda body: '{"verdict": "Yes", "explanation": "looks fine"}'
    v = run(df, one(rubric), server, tmp_path, cache=False)
    assert server.hits == 2 * df.height
    assert v["verdict"].null_count() == df.height and v["attempts"].to_list() == [2] * df.height
    assert v["error"].str.contains("'Yes' is not one of").all()
    assert v["raw_response"].str.contains('"Yes"').all()  # the provider's answer is kept


def test_max_parse_retries_bounds_the_questions(df, rubric, server, tmp_path):
    server.script = lambda body: "not json at all"
    judge = Judge(model="openai/gpt-4.1-mini", api_base=server.url, api_key="k", max_parse_retries=0)
    v = run(df.head(2), one(rubric), server, tmp_path, model=judge, cache=False)
    assert server.hits == 2 and v["error"].str.contains("not JSON").all()
    with pytest.raises(ValueError, match="max_parse_retries"):
        Judge(model="openai/x", max_parse_retries=-1)


def test_http_errors_still_use_max_retries(df, rubric, server, tmp_path):
    server.inject(Reply(status=500), Reply(status=503))
    v = run(df.head(1), one(rubric), server, tmp_path, cache=False)
    assert v["error"].null_count() == 1 and server.hits == 3


def test_a_cut_off_reply_says_so_and_the_correction_asks_for_brevity(df, rubric, server, tmp_path):
    cut = '{"verdict": "MET", "explanation": "because the answer, when read in full, shows'
    server.script = lambda body: Reply(content=cut, finish_reason="length")
    v = run(df.head(1), one(rubric), server, tmp_path, cache=False)
    assert "cut off at max_tokens=250" in v["error"][0]
    assert "cut off at the token limit" in server.requests[1]["messages"][-1]["content"]


def test_token_caps_follow_the_task_unless_set(df, rubric, server, tmp_path):
    run(df.head(1), one(rubric), server, tmp_path, cache=False)
    assert server.requests[-1]["max_tokens"] == 250
    run(df.head(1), rubric, server, tmp_path, cache=False, mode="per_item")
    assert server.requests[-1]["max_tokens"] == 150 + 3 * 120
    run(df.head(1), rubric, server, tmp_path, cache=False, mode="holistic")
    assert server.requests[-1]["max_tokens"] == 400
    run(df.head(1), one(rubric), server, tmp_path, cache=False, max_tokens=64)
    assert server.requests[-1]["max_tokens"] == 64
    run(
        df.head(1),
        one(rubric),
        server,
        tmp_path,
        cache=False,
        model=Judge(model="openai/x", api_base=server.url, api_key="k", max_tokens=None),
    )
    assert "max_tokens" not in server.requests[-1]
    with pytest.raises(ValueError, match="max_tokens"):
        Judge(model="openai/x", max_tokens=0)


def test_a_reasoning_model_gets_no_automatic_cap(df, rubric, server, tmp_path):
    run(df.head(1), one(rubric), server, tmp_path, cache=False, model="openai/o3-mini")
    assert "max_tokens" not in server.requests[-1]


def test_transport_auto_is_direct_for_plain_openai_compatible_endpoints():
    assert Judge(model="openai/llama", api_base="http://127.0.0.1:8080/v1").wire_transport == "direct"
    assert Judge(model="hosted_vllm/qwen", api_base="http://10.0.0.2:8000/v1").wire_transport == "direct"
    assert Judge(model="openai/gpt-4.1-mini").wire_transport == "litellm"  # no api_base
    assert Judge(model="ollama/llama3", api_base="http://127.0.0.1:11434").wire_transport == "litellm"
    assert Judge(model="anthropic/claude-sonnet-4", api_base="http://gw").wire_transport == "litellm"
    # something only litellm provides keeps litellm
    j = Judge(model="openai/llama", api_base="http://h/v1", litellm_kwargs={"mock_response": "x"})
    assert j.wire_transport == "litellm"
    assert Judge(model="openai/llama", api_base="http://h/v1", litellm_kwargs={"seed": 1}).wire_transport == "direct"
    assert Judge(model="openai/llama", api_base="http://h/v1", transport="litellm").wire_transport == "litellm"


def test_both_transports_give_the_same_verdicts_and_keys_and_say_which_was_used(df, rubric, server, tmp_path):
    a = run(df, rubric, server, tmp_path, transport="litellm")
    server.reset()
    b = run(df, rubric, server, tmp_path)  # auto: direct, answered from the same cache
    assert server.hits == 0 and b["cached"].all()
    assert a["transport"].unique().to_list() == ["litellm"] and b["transport"].unique().to_list() == ["direct"]
    keep = ["id", "criterion", "verdict", "value", "error"]
    assert a.select(keep).equals(b.select(keep))


def test_scripted_runs_have_no_transport_column():
    v = rt.grade(
        pl.DataFrame({"submission": ["x"]}),
        rt.Rubric.from_dict([{"name": "a", "requirement": "r"}]),
        model=rt.ScriptedJudge(),
        cache=False,
        progress=False,
    )
    assert "transport" not in v.columns
