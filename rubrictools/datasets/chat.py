"""Chat logs from JSON Lines into a conversation column (``List(Struct{role, content})``).

One JSON object per line, holding a list of ``{"role", "content"}`` messages: OpenAI's chat
format (``{"messages": [...]}``), HealthBench's (``{"prompt": [...], "rubrics": [...],
"example_tags": [...], "prompt_id": ...}``) and most chat-log exports. Each conversation is
checked and normalised as :func:`rubrictools.grade` reads it (roles from a fixed list, content
parts joined, tool calls shown as text), so a bad log fails here, naming its line and turn,
before any judge is paid. The object's other fields become columns.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from rubrictools.conversations import Turn, as_conversation

__all__ = ["CONVERSATION_DTYPE", "read_chat_jsonl"]

CONVERSATION_DTYPE = pl.List(
    pl.Struct(
        {
            "role": pl.String,
            "content": pl.String,
            "images": pl.List(pl.String),
            "tool_calls": pl.List(pl.Struct({"id": pl.String, "name": pl.String, "arguments": pl.String})),
            "tool_call_id": pl.String,
        }
    )
)
"""The dtype of a conversation column: each turn's role and text (``[image k]`` where an image
was), its images (URLs or data URIs, in order), its tool calls and, for a tool result, the id
of the call it answers. Nothing of a message is dropped on the way in."""

_MESSAGE_FIELDS = ("messages", "conversation", "prompt")


def _messages_field(record: dict[str, Any], messages: str, where: str) -> str:
    if messages != "auto":
        if messages not in record:
            raise ValueError(f"{where}: no {messages!r} field (fields: {sorted(record)})")
        return messages
    for name in _MESSAGE_FIELDS:
        if isinstance(record.get(name), list):
            return name
    raise ValueError(
        f"{where}: no list of messages under {', '.join(map(repr, _MESSAGE_FIELDS))}; "
        f"name the field with messages= (fields: {sorted(record)})"
    )


def _reply(value: Any, where: str) -> list[dict[str, Any]]:
    """The ``response`` field as assistant messages: a string, a message or a list of messages."""
    if isinstance(value, str):
        return [{"role": "assistant", "content": value}]
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):
        return list(value)
    raise ValueError(f"{where}: expected text, a message or a list of messages, got {type(value).__name__}")


def _records(path: Path) -> list[tuple[int, dict[str, Any]]]:
    out = []
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{n}: not valid JSON ({e.msg} at column {e.colno})") from None
            if not isinstance(record, dict):
                raise ValueError(f"{path}:{n}: expected a JSON object, got {type(record).__name__}")
            out.append((n, record))
    return out


def _message(t: Turn) -> dict[str, Any]:
    return {
        "role": t.role,
        "content": t.text,
        "images": [img.url for img in t.images],
        "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in t.tool_calls],
        "tool_call_id": t.tool_call_id,
    }


def read_chat_jsonl(
    path: str | Path,
    *,
    messages: str = "auto",
    response: str | None = None,
    column: str = "conversation",
    keep: Sequence[str] | None = None,
) -> pl.DataFrame:
    """Read a JSON Lines chat log into a DataFrame with a conversation column.

    Parameters
    ----------
    path
        The ``.jsonl`` file; blank lines are skipped.
    messages
        The field holding each line's message list; ``"auto"`` takes the first of
        ``messages``, ``conversation`` and ``prompt`` that holds a list.
    response
        Optional field with the reply to grade (text, a message or a list of messages),
        appended to the conversation as the final assistant turn(s); e.g. a model's answer
        to a HealthBench ``prompt``.
    column
        Name of the conversation column (``List(Struct{role, content})``, the form
        :func:`rubrictools.grade` grades with ``conversation_part=``).
    keep
        The other fields to keep as columns (default: every field but the messages); a
        field missing from a line is null there.

    Returns
    -------
    polars.DataFrame
        ``line`` (1-based line number), ``column``, then the kept fields in file order.

    Example
    -------
    >>> import json, tempfile, rubrictools as rt
    >>> f = tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False)
    >>> _ = f.write(json.dumps({"id": "a", "messages": [{"role": "user", "content": "Hi"},
    ...                                                 {"role": "assistant", "content": "Hello!"}]}) + "\\n")
    >>> f.close()
    >>> rt.datasets.read_chat_jsonl(f.name).columns
    ['line', 'conversation', 'id']
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"chat log not found: {p}")
    records = _records(p)
    convs, others, lines = [], [], []
    for n, record in records:
        where = f"{p.name}:{n}"
        field = _messages_field(record, messages, where)
        msgs = record[field]
        if response is not None and record.get(response) is not None:
            msgs = list(msgs) + _reply(record[response], f"{where}: field {response!r}")
        try:
            turns = as_conversation(msgs)
        except ValueError as e:
            raise ValueError(f"{where}: field {field!r}: {e}") from None
        convs.append([_message(t) for t in turns])
        lines.append(n)
        others.append({k: v for k, v in record.items() if k not in (field, response)})
    names = list(keep) if keep is not None else list(dict.fromkeys(k for o in others for k in o))
    if column in names or column == "line":
        raise ValueError(f"column={column!r} clashes with a field of the log; choose another name")
    base = pl.DataFrame({"line": pl.Series(lines, dtype=pl.Int64), column: pl.Series(convs, dtype=CONVERSATION_DTYPE)})
    if not names:
        return base
    try:
        rest = pl.DataFrame([{k: o.get(k) for k in names} for o in others], infer_schema_length=None)
    except (pl.exceptions.PolarsError, TypeError, ValueError) as e:
        raise ValueError(f"{p.name}: fields {names} do not make columns of one type each ({e}); choose keep=") from None
    return pl.concat([base, rest], how="horizontal")
