"""Inspect AI chat messages as a rubrictools conversation (OpenAI-style message dicts).

An Inspect sample's history is a list of ``ChatMessage`` objects: system, user, assistant
(with ``tool_calls``) and tool (with ``tool_call_id``, ``function`` and ``error``) messages,
whose content is a string or a list of content parts. :func:`as_messages` gives the message
dicts :mod:`rubrictools.conversations` reads, so the judge sees each tool call and each result
in its own fenced block, exactly as for a conversation column:

- text parts are joined; an image part stays an image (``image_url``); reasoning parts are
  left out (a model's hidden reasoning is not its answer); any other part (audio, video,
  documents) keeps its place as a part of its own type, which rubrictools reports as not
  shown to the judge;
- a tool call's arguments become JSON text; a tool error is appended to the result's text
  (``[tool error] <type>: <message>``), so a failed call is visible to the judge.

Only the attributes are read (duck typing), so this module does not import inspect_ai.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

__all__ = ["as_messages"]


def _parts(content: Any) -> list[dict[str, Any]]:
    """Inspect content parts as OpenAI parts (reasoning dropped; unknown types kept by type)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    out: list[dict[str, Any]] = []
    for part in content:
        kind = getattr(part, "type", None)
        if kind == "text":
            out.append({"type": "text", "text": str(part.text)})
        elif kind == "image":
            out.append({"type": "image_url", "image_url": {"url": str(part.image)}})
        elif kind != "reasoning":
            out.append({"type": str(kind)})
    return out


def _content(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """One string when every part is text, else the parts themselves."""
    if all(p["type"] == "text" for p in parts):
        return "\n".join(p["text"] for p in parts)
    return parts


def _tool_calls(calls: Sequence[Any]) -> list[dict[str, Any]]:
    return [
        {
            "id": str(c.id),
            "type": "function",
            "function": {"name": str(c.function), "arguments": json.dumps(c.arguments, default=str)},
        }
        for c in calls
    ]


def _message(m: Any) -> dict[str, Any]:
    parts = _parts(m.content)
    error = getattr(m, "error", None)
    if m.role == "tool" and error is not None:
        parts.append({"type": "text", "text": f"[tool error] {error.type}: {error.message}"})
    out: dict[str, Any] = {"role": str(m.role), "content": _content(parts)}
    if m.role == "assistant" and getattr(m, "tool_calls", None):
        out["tool_calls"] = _tool_calls(m.tool_calls)
    if m.role == "tool":
        out["tool_call_id"] = None if m.tool_call_id is None else str(m.tool_call_id)
        out["name"] = None if getattr(m, "function", None) is None else str(m.function)
    return out


def as_messages(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """Inspect ``ChatMessage`` objects as OpenAI-style message dicts (see the module docstring).

    When any message holds a non-text part, every message's content is given as parts, so
    the conversation is one column type in a polars frame.

    >>> from inspect_ai.model import ChatMessageAssistant, ChatMessageUser
    >>> as_messages([ChatMessageUser(content="2+2?"), ChatMessageAssistant(content="4")])
    [{'role': 'user', 'content': '2+2?'}, {'role': 'assistant', 'content': '4'}]
    """
    out = [_message(m) for m in messages]
    if any(not isinstance(m["content"], str) for m in out):
        for m in out:
            if isinstance(m["content"], str):
                m["content"] = [{"type": "text", "text": m["content"]}] if m["content"] else []
    return out
