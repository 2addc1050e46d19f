"""Inspect chat messages as rubrictools conversations: tool calls, tool errors, images, reasoning."""

from __future__ import annotations

from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    ContentImage,
    ContentReasoning,
    ContentText,
)
from inspect_ai.tool import ToolCall, ToolCallError

from rubrictools.conversations import as_conversation, tool_steps
from rubrictools.inspect.messages import as_messages


def test_tool_calls_and_results_pair_up_as_in_an_openai_log():
    msgs = as_messages(
        [
            ChatMessageSystem(content="Be brief."),
            ChatMessageUser(content="Weather in Oslo?"),
            ChatMessageAssistant(
                content="", tool_calls=[ToolCall(id="t1", function="weather", arguments={"city": "Oslo"})]
            ),
            ChatMessageTool(content="-3C", tool_call_id="t1", function="weather"),
            ChatMessageAssistant(content="It is -3C."),
        ]
    )
    conv = as_conversation(msgs)
    assert [t.role for t in conv] == ["system", "user", "assistant", "tool", "assistant"]
    steps = tool_steps(conv)
    assert len(steps) == 1 and steps[0].call.name == "weather" and steps[0].call.parsed_arguments() == {"city": "Oslo"}
    assert steps[0].result == "-3C"


def test_a_tool_error_is_shown_and_reasoning_is_left_out():
    msgs = as_messages(
        [
            ChatMessageUser(content="Run it"),
            ChatMessageAssistant(
                content=[ContentReasoning(reasoning="secret plan"), ContentText(text="Running.")],
                tool_calls=[ToolCall(id="t1", function="bash", arguments={"cmd": "ls"})],
            ),
            ChatMessageTool(
                content="", tool_call_id="t1", function="bash", error=ToolCallError("timeout", "took too long")
            ),
        ]
    )
    assert msgs[1]["content"] == "Running." and "secret plan" not in str(msgs)
    assert msgs[2]["content"] == "[tool error] timeout: took too long"


def test_an_image_turns_every_message_into_parts():
    msgs = as_messages(
        [
            ChatMessageUser(
                content=[ContentText(text="What is this?"), ContentImage(image="data:image/png;base64,iVBORw0KGgo=")]
            ),
            ChatMessageAssistant(content="A pixel."),
        ]
    )
    assert msgs[0]["content"][1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    assert msgs[1]["content"] == [{"type": "text", "text": "A pixel."}]
