"""What is graded: a submission split into its final output and optional reasoning.

A submission is a string, or a ``{"thinking", "output"}`` mapping, or text marked with
``<thinking>``/``<output>`` tags; only the part the user chooses (``grade_part``) is graded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Submission", "graded_text", "split_submission"]


@dataclass(frozen=True)
class Submission:
    """A submission split into its graded parts."""

    output: str
    thinking: str | None = None


def split_submission(value: Any) -> Submission:
    """Split ``{"thinking", "output"}`` dicts and ``<thinking>/<output>`` marked strings.

    >>> split_submission("<thinking>hmm</thinking><output>42</output>")
    Submission(output='42', thinking='hmm')
    """
    if value is None:
        raise ValueError("submission is null")
    if isinstance(value, dict):
        unknown = set(value) - {"thinking", "output"}
        if unknown:
            raise ValueError(f"submission dict has unknown keys {sorted(unknown)}; expected 'thinking' and 'output'")
        thinking = value.get("thinking")
        return Submission(output=str(value.get("output") or ""), thinking=None if thinking is None else str(thinking))
    text = str(value)
    low = text.lower()
    if "<output>" in low and "</output>" in low:

        def section(tag: str) -> str | None:
            s = low.find(f"<{tag}>")
            e = low.find(f"</{tag}>", s + 1)
            if s < 0 or e < 0:
                return None
            return text[s + len(tag) + 2 : e].strip()

        return Submission(output=section("output") or "", thinking=section("thinking"))
    return Submission(output=text)


def graded_text(sub: Submission, part: str) -> str:
    """The text that is graded: the output, the thinking, or both (``part``)."""
    if part == "output" or sub.thinking is None:
        return sub.output
    return sub.thinking if part == "thinking" else f"{sub.thinking}\n{sub.output}"
