"""Conversations as submissions: a list of ``{"role", "content"}`` messages, and which turns are graded.

A submission value that is a list of messages (a polars ``List(Struct)`` column, as OpenAI chat
logs and HealthBench store them) is a conversation. ``conversation_part`` chooses what the
judge grades; the other turns are shown to it as context:

- ``"last_assistant"`` (default): the final assistant turn, as HealthBench grades a completion;
- ``"all_assistant"``: every assistant turn;
- ``"whole"``: the conversation as a whole.

Roles are checked against :data:`ROLES` (a role is never copied into the prompt unchecked);
contents may be strings, ``None`` (an assistant turn that only calls tools) or OpenAI content
parts (``[{"type": "text", "text": ...}, ...]``). An image part (``image_url``) stays an image:
the turn's text shows ``[image k]`` where it was and the judge receives the image itself,
labelled with its turn (:mod:`rubrictools.images`). Any other part (audio, files) cannot be
shown to a judge yet: its place reads ``[<type> part: not shown to the judge]`` and a warning
says so.
An assistant turn's ``tool_calls`` (OpenAI's ``{"id", "function": {"name", "arguments"}}`` or
the flat ``{"id", "name", "arguments"}``; the legacy ``function_call`` of one call, answered by a
``function`` turn, is read as one) stay structured (:class:`ToolCall`, in order), as does
a ``tool`` turn's ``tool_call_id``: the judge sees each call and each result in its own fenced,
escaped block, and :func:`tool_steps` pairs calls with their results for trajectory rules. The
graded text of a turn lists its calls as ``[tool call] name(arguments)`` lines.

>>> conv = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]
>>> c = as_conversation(conv)
>>> [t.role for t in c], graded_turns(c, "last_assistant")
(['user', 'assistant'], (1,))
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rubrictools.images import Image, as_image, is_image_part
from rubrictools.stack import user_stacklevel

__all__ = [
    "CONVERSATION_PARTS",
    "ROLES",
    "ConversationPart",
    "NoGradedTurn",
    "ToolCall",
    "ToolStep",
    "Turn",
    "as_conversation",
    "check_utf8",
    "graded_turns",
    "is_conversation",
    "tool_steps",
    "transcript",
]

ConversationPart = Literal["last_assistant", "all_assistant", "whole"]
CONVERSATION_PARTS: tuple[str, ...] = ("last_assistant", "all_assistant", "whole")
ROLES: tuple[str, ...] = ("system", "developer", "user", "assistant", "tool", "function")
"""The roles a turn may have (OpenAI's chat roles, ``function`` being the legacy tool role)."""


class NoGradedTurn(ValueError):
    """A conversation has no turn to grade (no assistant turn): the row becomes an error row."""


@dataclass(frozen=True)
class ToolCall:
    """One tool call of an assistant turn: the tool's ``name``, its ``arguments`` as given
    (JSON text, usually) and the call's ``id`` when it has one."""

    name: str
    arguments: str
    id: str | None = None

    def parsed_arguments(self) -> Any:
        """The arguments as JSON (None when they are not JSON)."""
        try:
            return json.loads(self.arguments)
        except (TypeError, ValueError):
            return None

    def arguments_are_json(self) -> bool:
        """Whether the arguments parse as JSON (``"null"`` does, ``"{city: Oslo"`` does not)."""
        try:
            json.loads(self.arguments)
        except (TypeError, ValueError):
            return False
        return True

    def line(self) -> str:
        return f"[tool call] {self.name}({self.arguments})"


@dataclass(frozen=True)
class Turn:
    """One message of a conversation. ``text``: its own text, with ``[image k]`` where each of
    its ``images`` was; ``content``: the text followed by a ``[tool call] ...`` line per call
    (what grading a turn reads); ``tool_calls`` in order; ``tool_call_id`` of a tool result."""

    role: str
    content: str
    images: tuple[Image, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    text: str = ""


@dataclass(frozen=True)
class ToolStep:
    """A call of the trajectory (made in turn ``turn``) with its result and the turn holding it
    (None when no tool turn answered it)."""

    call: ToolCall
    turn: int
    result: str | None = None
    result_turn: int | None = None


def _listed(value: Any) -> Any:
    """``value`` with a numpy object array (a pandas cell) turned into a list."""
    return value.tolist() if hasattr(value, "tolist") and not isinstance(value, (list, tuple)) else value


def is_conversation(value: Any) -> bool:
    """True for a list/tuple (or array) of mappings: a conversation, not a string or a struct."""
    if isinstance(value, (str, bytes, Mapping)) or value is None:
        return False
    return isinstance(_listed(value), (list, tuple))


def check_utf8(text: str) -> str:
    """``text`` if it can be sent as UTF-8; lone surrogates (from some pandas or file inputs) cannot."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(
            f"text has an unpaired surrogate {text[e.start : e.end]!r} at character {e.start} (invalid Unicode); "
            "repair it, e.g. s.encode('utf-16', 'surrogatepass').decode('utf-16', 'replace')"
        ) from None
    return text


def _part_text(part: Any, images: list[Image], first: int, source: str) -> str:
    """A content part's text; an image part joins ``images`` (numbered from ``first``)."""
    if isinstance(part, str):
        return part
    if isinstance(part, Mapping):
        kind = part.get("type")
        if kind in ("text", "input_text", "output_text") and isinstance(part.get("text"), str):
            return str(part["text"])
        if is_image_part(part):
            images.append(as_image(part, source=source))
            return f"[image {first + len(images) - 1}]"
        warnings.warn(
            f"{source}: a {kind or 'untyped'!s} content part cannot be shown to a judge; its place in the "
            "prompt says so",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
        return f"[{kind or 'unknown'} part: not shown to the judge]"
    raise ValueError(f"a content part must be a string or a mapping, got {type(part).__name__}")


def _tool_calls(calls: Any) -> tuple[ToolCall, ...]:
    """OpenAI-style (``{"function": {"name", "arguments"}}``) or flat (``{"name", "arguments"}``) calls."""
    out = []
    for k, call in enumerate(_listed(calls) or ()):
        if not isinstance(call, Mapping):
            raise ValueError(f"tool call {k + 1} is not a mapping")
        inner = call.get("function")
        fn: Mapping[str, Any] = inner if isinstance(inner, Mapping) else call
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"tool call {k + 1} has no function name")
        args = fn.get("arguments")
        args = args if isinstance(args, str) else json.dumps(args if args is not None else {}, ensure_ascii=False)
        ident = call.get("id")
        out.append(ToolCall(name=name, arguments=check_utf8(args), id=str(ident) if ident is not None else None))
    return tuple(out)


_TEXT_KEYS = ("text", "message", "value", "body", "parts")


def _check_content_key(message: Mapping[str, Any], i: int) -> None:
    """A turn whose text sits under another key (``text`` instead of ``content``) would reach
    the judge as an empty turn: refuse it, naming the turn and the key."""
    stray = [k for k in _TEXT_KEYS if message.get(k) not in (None, "", [])]
    if stray:
        raise ValueError(
            f"turn {i}: has no 'content' but has {stray[0]!r}; a turn's text goes in 'content' "
            f"(rename the key: {{'role': ..., 'content': ...}})"
        )
    if "content" not in message:
        raise ValueError(f"turn {i}: has no 'content' key (keys: {sorted(map(str, message))})")


def _turn(message: Any, i: int, first_image: int = 1) -> Turn:
    if not isinstance(message, Mapping):
        raise ValueError(f"turn {i}: expected a {{'role', 'content'}} mapping, got {type(message).__name__}")
    role = message.get("role")
    if not isinstance(role, str) or role.strip().lower() not in ROLES:
        raise ValueError(f"turn {i}: role {role!r} is not one of {', '.join(ROLES)}")
    content = message.get("content")
    raw_calls = message.get("tool_calls")
    if not raw_calls and isinstance(message.get("function_call"), Mapping):
        raw_calls = [message["function_call"]]  # OpenAI's legacy form: one call, answered by a "function" turn
    if content is None and not raw_calls:
        _check_content_key(message, i)
    images: list[Image] = []
    if content is None:
        text = ""
    elif isinstance(content, str):
        text = content
    elif isinstance(content, (list, tuple)):
        where = f"turn {i + 1}, {role.strip().lower()}"  # numbered as the judge sees turns
        try:
            text = "\n".join(_part_text(p, images, first_image, where) for p in content)
        except ValueError as e:
            raise ValueError(f"turn {i}: {e}") from None
    else:
        raise ValueError(f"turn {i}: content must be text or a list of content parts, got {type(content).__name__}")
    try:
        calls = _tool_calls(raw_calls)
        extra = [
            as_image(u, source=f"turn {i + 1}, {role.strip().lower()}") for u in _listed(message.get("images")) or ()
        ]
        text = check_utf8(text)
    except ValueError as e:
        raise ValueError(f"turn {i}: {e}") from None
    lines = [text] if text else []
    lines += [c.line() for c in calls]
    ident = message.get("tool_call_id")
    return Turn(
        role=role.strip().lower(),
        content="\n".join(lines),
        images=tuple(images) + tuple(extra),
        tool_calls=calls,
        tool_call_id=str(ident) if ident is not None else None,
        text=text,
    )


def as_conversation(value: Any) -> tuple[Turn, ...]:
    """The turns of a conversation value (a list of message mappings); errors name the turn."""
    value = _listed(value)
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"a conversation is a list of {{'role', 'content'}} messages, got {type(value).__name__}")
    if not value:
        raise NoGradedTurn("the conversation is empty")
    turns: list[Turn] = []
    for i, m in enumerate(value):
        turns.append(_turn(m, i, 1 + sum(len(t.images) for t in turns)))
    return tuple(turns)


def graded_turns(turns: Sequence[Turn], part: str) -> tuple[int, ...]:
    """Indices of the turns that ``part`` grades; :class:`NoGradedTurn` when there are none."""
    if part not in CONVERSATION_PARTS:
        raise ValueError(f"conversation_part must be one of {', '.join(map(repr, CONVERSATION_PARTS))}; got {part!r}")
    if part == "whole":
        return tuple(range(len(turns)))
    mine = tuple(i for i, t in enumerate(turns) if t.role == "assistant")
    if not mine:
        roles = ", ".join(sorted({t.role for t in turns}))
        raise NoGradedTurn(f"the conversation has no assistant turn to grade (its roles: {roles})")
    return mine[-1:] if part == "last_assistant" else mine


def tool_steps(turns: Sequence[Turn]) -> tuple[ToolStep, ...]:
    """Every tool call of the conversation in order, each with its result: the tool turn whose
    ``tool_call_id`` is the call's id, else the first unclaimed tool turn after the call.

    >>> call = {"id": "c1", "name": "add", "arguments": "[2, 3]"}
    >>> conv = [{"role": "assistant", "content": None, "tool_calls": [call]},
    ...         {"role": "tool", "tool_call_id": "c1", "content": "5"}, {"role": "assistant", "content": "It is 5."}]
    >>> [(s.call.name, s.result) for s in tool_steps(as_conversation(conv))]
    [('add', '5')]
    """
    results = [(k, t) for k, t in enumerate(turns) if t.role in ("tool", "function")]
    claimed: set[int] = set()
    steps = []
    for i, t in enumerate(turns):
        for call in t.tool_calls:
            match = next((k for k, r in results if call.id is not None and r.tool_call_id == call.id), None)
            if match is None:
                match = next((k for k, r in results if k > i and k not in claimed and r.tool_call_id is None), None)
            if match is not None:
                claimed.add(match)
            steps.append(ToolStep(call, i, turns[match].text if match is not None else None, match))
    return tuple(steps)


def transcript(turns: Sequence[Turn]) -> str:
    """Plain ``role: content`` text of the turns, blank-line separated."""
    return "\n\n".join(f"{t.role}: {t.content}" for t in turns)
