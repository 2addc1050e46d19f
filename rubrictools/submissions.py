"""What is graded: a submission split into its final output and optional reasoning.

A submission is a string, or a ``{"thinking", "output"}`` mapping, or text marked with
``<thinking>``/``<output>`` tags; only the part the user chooses (``grade_part``) is graded.
A list of ``{"role", "content"}`` messages is a conversation (:mod:`rubrictools.conversations`):
its ``output`` is the text of the turns ``conversation_part`` grades, and the judge sees every
turn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from rubrictools.conversations import Turn, as_conversation, check_utf8, graded_turns, is_conversation, transcript
from rubrictools.images import Image

__all__ = ["Submission", "conversation_submission", "graded_text", "split_submission"]


@dataclass(frozen=True)
class Submission:
    """A submission split into its graded parts. A conversation also keeps its ``turns`` and
    the indices of the ``graded`` ones (``output`` is then their text) and the ``part`` chosen.
    ``images``: every image shown with it (its turns' images, then ``image_column``'s)."""

    output: str
    thinking: str | None = None
    turns: tuple[Turn, ...] | None = field(default=None, repr=False)
    graded: tuple[int, ...] = field(default=(), repr=False)
    part: str = field(default="last_assistant", repr=False)
    images: tuple[Image, ...] = field(default=(), repr=False)


_MARKED = re.compile(r"\s*(?:<thinking>(.*?)</thinking>)?\s*<output>(.*?)</output>\s*", re.S | re.I)
_MARKED_OUTPUT_FIRST = re.compile(r"\s*<output>(.*?)</output>\s*<thinking>(.*?)</thinking>\s*", re.S | re.I)


def _marked(text: str) -> Submission:
    """Split ``<thinking>...</thinking><output>...</output>``; refuse text outside the markers."""
    m = _MARKED.fullmatch(text)
    if m is None:
        r = _MARKED_OUTPUT_FIRST.fullmatch(text)
        if r is None:
            raise ValueError(
                "with thinking_markers=True a submission must be <thinking>...</thinking><output>...</output> "
                "(thinking optional) with no text outside the markers"
            )
        return Submission(output=r.group(1).strip(), thinking=r.group(2).strip())
    thinking = m.group(1)
    return Submission(output=m.group(2).strip(), thinking=None if thinking is None else thinking.strip())


def conversation_submission(value: Any, part: str) -> Submission:
    """A conversation value as a submission grading ``part`` (see :mod:`rubrictools.conversations`):
    ``output`` is the graded turn's text (``last_assistant``), the assistant turns' texts
    (``all_assistant``) or the ``role: content`` transcript (``whole``)."""
    turns = as_conversation(value)
    graded = graded_turns(turns, part)
    text = transcript(turns) if part == "whole" else "\n\n".join(turns[i].content for i in graded)
    images = tuple(img for t in turns for img in t.images)
    return Submission(output=text, turns=turns, graded=graded, part=part, images=images)


def split_submission(value: Any, *, markers: bool = False, conversation_part: str = "last_assistant") -> Submission:
    """What is graded in one submission value.

    A ``{"thinking", "output"}`` mapping (a polars struct) is split into its parts. A string is
    the output, verbatim: submissions are untrusted, so text that merely contains
    ``<output>`` tags is never cut down to them. Only with ``markers=True`` (the user says
    the strings are marked) is ``<thinking>...</thinking><output>...</output>`` split, and
    then text outside the markers is an error rather than silently dropped. A list of
    messages is a conversation graded on ``conversation_part`` (:func:`conversation_submission`).

    >>> split_submission("<thinking>hmm</thinking><output>42</output>", markers=True)
    Submission(output='42', thinking='hmm')
    >>> split_submission("Rude. <output>polite</output>").output
    'Rude. <output>polite</output>'
    """
    if value is None:
        raise ValueError("submission is null")
    if is_conversation(value):
        return conversation_submission(value, conversation_part)
    if isinstance(value, dict):
        unknown = set(value) - {"thinking", "output"}
        if unknown:
            raise ValueError(f"submission dict has unknown keys {sorted(unknown)}; expected 'thinking' and 'output'")
        thinking = value.get("thinking")
        return Submission(
            output=check_utf8(str(value.get("output") or "")),
            thinking=None if thinking is None else check_utf8(str(thinking)),
        )
    text = check_utf8(str(value))
    return _marked(text) if markers else Submission(output=text)


def graded_text(sub: Submission, part: str) -> str:
    """The text that is graded: the output, the thinking, or both (``part``)."""
    if part == "output" or sub.thinking is None:
        return sub.output
    return sub.thinking if part == "thinking" else f"{sub.thinking}\n{sub.output}"
