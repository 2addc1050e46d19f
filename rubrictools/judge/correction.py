"""Corrective retries: ask again with what was wrong, never the identical request.

At temperature 0 the identical request returns the identical unusable reply, so a retry of a
reply that did not parse (or named a label the criterion does not allow) appends the reply as
the judge's own turn and a user turn saying what was wrong; the judge then sees its mistake.
"""

from __future__ import annotations

import html
from collections.abc import Mapping

__all__ = ["MAX_ECHO", "corrective_messages", "describe_problems"]

MAX_ECHO = 4000
"""Characters of the unusable reply sent back (a rambling reply is cut, with a note)."""

_ASK_AGAIN = (
    "Your reply could not be used: {problems}. Answer the same question again. Reply with only the JSON object "
    "the instructions describe, with every field filled in and each verdict written exactly as one of the "
    "allowed labels."
)
_CUT_OFF = (
    "it was cut off at the token limit before the JSON object was complete (keep the explanation to one sentence)"
)


def describe_problems(problems: Mapping[str, str], *, truncated: bool = False) -> str:
    """What was wrong with a reply, in one line: the truncation first, then up to three problems.

    >>> describe_problems({"clear": "verdict 'Mixed' is not one of ['MET', 'UNMET']"})
    "clear: verdict 'Mixed' is not one of ['MET', 'UNMET']"
    """
    parts = [_CUT_OFF] if truncated else []
    items = list(problems.items())
    parts += [msg if key == "*" else f"{key}: {msg}" for key, msg in items[:3]]
    if len(items) > 3:
        parts.append(f"and {len(items) - 3} more")
    return "; ".join(parts) or "the reply was empty"


def corrective_messages(messages: list[dict[str, str]], reply: str | None, problems: str) -> list[dict[str, str]]:
    """``messages`` followed by the unusable ``reply`` (as the judge's turn) and what was wrong.
    ``problems`` quotes criterion names and labels from the rubric, which are untrusted text: it
    is escaped as every other piece of rubric text in the prompt.

    >>> msgs = corrective_messages([{"role": "user", "content": "Q"}], '{"verdict": "Yes"}', "verdict 'Yes' ...")
    >>> [m["role"] for m in msgs]
    ['user', 'assistant', 'user']
    """
    text = (reply or "").strip()
    if len(text) > MAX_ECHO:
        text = text[:MAX_ECHO] + " [...]"
    return [
        *messages,
        {"role": "assistant", "content": text or "(empty reply)"},
        {"role": "user", "content": _ASK_AGAIN.format(problems=html.escape(problems, quote=False))},
    ]
