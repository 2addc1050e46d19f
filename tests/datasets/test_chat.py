"""Chat logs from JSON Lines: OpenAI's and HealthBench's layouts, errors naming line and turn."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.conversations import as_conversation, tool_steps
from rubrictools.datasets.chat import CONVERSATION_DTYPE


def write(path: Path, *records: object, raw: str = "") -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + raw, encoding="utf-8")
    return path


def test_openai_chat_format(tmp_path: Path) -> None:
    f = write(
        tmp_path / "log.jsonl",
        {"id": 1, "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]},
        {"id": 2, "messages": [{"role": "user", "content": "Bye"}], "meta": {"lang": "en"}},
    )
    df = rt.datasets.read_chat_jsonl(f)
    assert df.columns == ["line", "conversation", "id", "meta"]
    assert df.schema["conversation"] == CONVERSATION_DTYPE
    assert df["line"].to_list() == [1, 2] and df["meta"][0] is None
    plain = {"images": [], "tool_calls": [], "tool_call_id": None}
    assert df["conversation"][0].to_list() == [
        {"role": "user", "content": "Hi", **plain},
        {"role": "assistant", "content": "Hello", **plain},
    ]


def test_images_and_tool_calls_survive_reading(tmp_path: Path) -> None:
    """Before: the log's image parts and tool calls became text and the images were lost."""
    uri = "data:image/png;base64,iVBORw0KGgo="
    msgs = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "What is here?"}, {"type": "image_url", "image_url": {"url": uri}}],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ocr", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "STOP"},
        {"role": "assistant", "content": "A stop sign."},
    ]
    conv = rt.datasets.read_chat_jsonl(write(tmp_path / "log.jsonl", {"messages": msgs}))["conversation"][0].to_list()
    assert conv[0]["content"] == "What is here?\n[image 1]" and conv[0]["images"] == [uri]
    assert conv[1]["tool_calls"] == [{"id": "c1", "name": "ocr", "arguments": "{}"}] and conv[2]["tool_call_id"] == "c1"
    turns = as_conversation(conv)  # and the read form reads back to the same turns
    assert [i.url for i in turns[0].images] == [uri] and turns[1].tool_calls[0].name == "ocr"
    assert tool_steps(turns)[0].result == "STOP"


def test_healthbench_layout_grades_with_its_own_rubrics(tmp_path: Path) -> None:
    items = [
        {"criterion": "Tells the user to seek urgent care", "points": 7, "tags": ["axis:accuracy"]},
        {"criterion": "Recommends an unsafe dose", "points": -5, "tags": ["axis:accuracy", "axis:safety"]},
    ]
    f = write(
        tmp_path / "hb.jsonl",
        {
            "prompt_id": "p1",
            "prompt": [{"role": "user", "content": "Chest pain, what now?"}],
            "completion": "Call emergency services now.",
            "rubrics": items,
            "example_tags": ["theme:emergency_referrals"],
        },
    )
    df = rt.datasets.read_chat_jsonl(f, response="completion")
    assert df.columns == ["line", "conversation", "prompt_id", "rubrics", "example_tags"]
    last = df["conversation"][0].to_list()[-1]
    assert (last["role"], last["content"]) == ("assistant", "Call emergency services now.")
    v = rt.grade(
        df,
        model=rt.ScriptedJudge(rule=lambda t, c: "MET" if "urgent" in c.requirement else "UNMET"),
        column="conversation",
        id_column="prompt_id",
        rubric_column="rubrics",
        progress=False,
    )
    assert v.select("criterion", "verdict", "weight").rows() == [("c1", "MET", 7.0), ("c2", "UNMET", -5.0)]
    hb = rt.healthbench_score(v, df, id_column="prompt_id", example_tags_column="example_tags", n_resamples=0)
    assert dict(hb.summary.select("metric", "score").rows()) == {
        "overall_score": 1.0,
        "axis:accuracy": 1.0,
        "theme:emergency_referrals": 1.0,
    }  # axis:safety has only a negative item: no score (as HealthBench)


def test_errors_name_the_line_and_turn(tmp_path: Path) -> None:
    good = {"messages": [{"role": "user", "content": "x"}]}
    with pytest.raises(ValueError, match=r"bad.jsonl:2: not valid JSON"):
        rt.datasets.read_chat_jsonl(write(tmp_path / "bad.jsonl", good, raw="{oops\n"))
    with pytest.raises(ValueError, match=r"r.jsonl:1: field 'messages': turn 0: role 'robot' is not one of"):
        rt.datasets.read_chat_jsonl(write(tmp_path / "r.jsonl", {"messages": [{"role": "robot", "content": "x"}]}))
    with pytest.raises(ValueError, match=r"n.jsonl:1: no list of messages under 'messages', 'conversation', 'prompt'"):
        rt.datasets.read_chat_jsonl(write(tmp_path / "n.jsonl", {"text": "x"}))
    with pytest.raises(ValueError, match=r"m.jsonl:1: no 'dialog' field"):
        rt.datasets.read_chat_jsonl(write(tmp_path / "m.jsonl", good), messages="dialog")
    with pytest.raises(ValueError, match="clashes"):
        rt.datasets.read_chat_jsonl(write(tmp_path / "c.jsonl", {**good, "conversation": 1}), messages="messages")
    with pytest.raises(FileNotFoundError):
        rt.datasets.read_chat_jsonl(tmp_path / "missing.jsonl")


def test_keep_chooses_the_columns_and_blank_lines_are_skipped(tmp_path: Path) -> None:
    f = write(tmp_path / "k.jsonl", {"a": 1, "b": "x", "messages": []}, raw="\n\n")
    with pytest.raises(ValueError, match=r"k\.jsonl:1: field 'messages': the conversation is empty"):
        rt.datasets.read_chat_jsonl(f)
    f = write(tmp_path / "k.jsonl", {"a": 1, "b": "x", "messages": [{"role": "user", "content": "q"}]}, raw="\n")
    assert rt.datasets.read_chat_jsonl(f, keep=["b"]).columns == ["line", "conversation", "b"]


def test_llm_rubric_dialogues_come_as_conversations(shared: Path) -> None:
    subs = rt.datasets.load("llm_rubric_real").submissions
    if subs is None:
        pytest.skip("LLM-Rubric dialogue text not available")
    assert subs.schema["conversation"] == CONVERSATION_DTYPE and subs.height == 223
    last = subs["conversation"].list.last().struct.field("role")
    assert (last == "assistant").all()
    assert subs["conversation"].list.len().min() >= 3
    assert pl.Series(subs["submission"]).str.starts_with("assistant: ").all()
