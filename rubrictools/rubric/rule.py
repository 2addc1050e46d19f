"""Deterministic criteria that need no LLM: the :class:`Rule` model.

A rule is attached to a criterion (``Criterion(rule=...)``); the criterion is then decided by
the rule, never by a judge. Its evaluation over a whole column lives in
:mod:`rubrictools.grading.rules` (see there for the checks and an example).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

__all__ = ["Rule"]

_FLAGS = set("imsx")


class Rule(BaseModel):
    """A deterministic check; MET when every given check holds (see module docstring).

    Parameters
    ----------
    regex, flags
        A regular expression that must be found, with flags among ``i``, ``m``, ``s``, ``x``.
    contains, case_sensitive
        Strings of which one must occur (one string or several); case-insensitive unless
        ``case_sensitive=True``.
    min_words, max_words, min_chars, max_chars
        Length bounds, inclusive (words are runs of non-space characters).
    json_schema
        The text must parse as JSON and validate against this schema (``{}``: any JSON).
    tool_called, tool_arguments
        A conversation must call this tool (with ``tool_arguments``: with JSON arguments that
        include these keys and values).
    tool_not_called
        A conversation must not call this tool.
    called_before
        ``(a, b)``: both tools called, the first call of ``a`` before the first of ``b``.
    max_tool_calls
        At most this many tool calls (of ``tool_called`` when given, else of any tool).
    answer_uses_tool_result
        The final assistant turn must state a value a tool returned (see
        :mod:`rubrictools.grading.trajectory_rules`).

    >>> Rule(regex=r"\\d+ ms", flags="i").describe()
    'matches the regular expression /\\\\d+ ms/i'
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    regex: str | None = None
    flags: str = ""
    contains: tuple[str, ...] | None = None
    case_sensitive: bool = False
    min_words: int | None = None
    max_words: int | None = None
    min_chars: int | None = None
    max_chars: int | None = None
    json_schema: dict[str, Any] | None = None
    tool_called: str | None = None
    tool_not_called: str | None = None
    called_before: tuple[str, str] | None = None
    tool_arguments: dict[str, Any] | None = None
    max_tool_calls: int | None = None
    answer_uses_tool_result: bool = False

    @field_validator("contains", mode="before")
    @classmethod
    def _one_or_many(cls, v: Any) -> Any:
        if isinstance(v, str):
            return (v,)
        return v

    @field_validator("contains")
    @classmethod
    def _contains_not_empty(cls, v: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if v is not None and (not v or any(not s for s in v)):
            raise ValueError("contains needs at least one non-empty string")
        return v

    @field_validator("flags")
    @classmethod
    def _known_flags(cls, v: str) -> str:
        bad = set(v) - _FLAGS
        if bad:
            raise ValueError(f"unknown regex flag(s) {sorted(bad)}; allowed: i, m, s, x")
        return "".join(sorted(set(v)))

    @field_validator("min_words", "max_words", "min_chars", "max_chars", "max_tool_calls")
    @classmethod
    def _non_negative(cls, v: int | None) -> int | None:
        if v is not None and v < 0:
            raise ValueError(f"length bounds must be >= 0, got {v}")
        return v

    @model_validator(mode="after")
    def _check(self) -> Rule:
        checks = [
            self.regex,
            self.contains,
            self.min_words,
            self.max_words,
            self.min_chars,
            self.max_chars,
            self.json_schema,
            self.tool_called,
            self.tool_not_called,
            self.called_before,
            self.max_tool_calls,
        ]
        if self.tool_arguments is not None and self.tool_called is None:
            raise ValueError("tool_arguments says what a call of tool_called must be given: set tool_called too")
        if all(c is None for c in checks) and not self.answer_uses_tool_result:
            raise ValueError(
                "a rule needs at least one check (regex, contains, min/max_words, min/max_chars, json_schema, "
                "tool_called, tool_not_called, called_before, max_tool_calls, answer_uses_tool_result)"
            )
        for lo, hi, what in [(self.min_words, self.max_words, "words"), (self.min_chars, self.max_chars, "chars")]:
            if lo is not None and hi is not None and lo > hi:
                raise ValueError(f"min_{what} ({lo}) is greater than max_{what} ({hi})")
        if self.flags and self.regex is None:
            raise ValueError("flags only apply to a regex")
        if self.regex is not None:
            _validate_regex(self.pattern or "")
        if self.json_schema is not None:
            import jsonschema

            try:
                jsonschema.validators.validator_for(self.json_schema).check_schema(self.json_schema)
            except jsonschema.SchemaError as e:
                raise ValueError(f"json_schema is not a valid JSON schema: {e.message}") from None
        return self

    @property
    def pattern(self) -> str | None:
        """The regex with its flags inlined (``(?i)...``), as the polars engine runs it."""
        if self.regex is None:
            return None
        return f"(?{self.flags}){self.regex}" if self.flags else self.regex

    def describe(self) -> str:
        """A one-line plain-English statement of the rule (used as the default requirement)."""
        parts = []
        if self.regex is not None:
            parts.append(f"matches the regular expression /{self.regex}/{self.flags}")
        if self.contains is not None:
            opts = " or ".join(json.dumps(s, ensure_ascii=False) for s in self.contains)
            parts.append(f"contains {opts}" + (" (case-sensitive)" if self.case_sensitive else ""))
        for lo, hi, unit in [(self.min_words, self.max_words, "words"), (self.min_chars, self.max_chars, "characters")]:
            if lo is not None and hi is not None:
                parts.append(f"has {lo} to {hi} {unit}")
            elif lo is not None:
                parts.append(f"has at least {lo} {unit}")
            elif hi is not None:
                parts.append(f"has at most {hi} {unit}")
        if self.json_schema is not None:
            parts.append("is JSON" + (" matching the schema" if self.json_schema else ""))
        parts += self._describe_tools()
        return " and ".join(parts)

    @property
    def on_text(self) -> bool:
        """Whether the rule checks the text (regex, contains, lengths, JSON schema)."""
        text = (self.regex, self.contains, self.min_words, self.max_words, self.min_chars, self.max_chars)
        return any(x is not None for x in text) or self.json_schema is not None

    @property
    def on_trajectory(self) -> bool:
        """Whether the rule checks the tool calls of a conversation (not only its text)."""
        tools = (self.tool_called, self.tool_not_called, self.called_before, self.max_tool_calls)
        return any(x is not None for x in tools) or self.answer_uses_tool_result

    def _describe_tools(self) -> list[str]:
        out = []
        if self.tool_called is not None:
            args = f" with arguments including {json.dumps(self.tool_arguments)}" if self.tool_arguments else ""
            out.append(f"calls the tool {self.tool_called!r}{args}")
        if self.tool_not_called is not None:
            out.append(f"never calls the tool {self.tool_not_called!r}")
        if self.called_before is not None:
            out.append(f"calls {self.called_before[0]!r} before {self.called_before[1]!r}")
        if self.max_tool_calls is not None:
            of = f"{self.tool_called!r}" if self.tool_called is not None else "tools"
            out.append(f"makes at most {self.max_tool_calls} call(s) of {of}")
        if self.answer_uses_tool_result:
            out.append("states in its final answer a value a tool returned")
        return out


def _validate_regex(pattern: str) -> None:
    try:
        re.compile(pattern)
    except re.error as e:
        raise ValueError(f"regex does not compile: {e}") from None
    import polars as pl

    try:
        pl.Series([""]).str.contains(pattern)
    except Exception as e:  # noqa: BLE001  # polars raises ComputeError subclasses for regex syntax its engine lacks; re-raised as ValueError
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(
            f"regex uses syntax the vectorised engine does not support (look-around or back-references?): {first}"
        ) from None


# --------------------------------------------------------------------------- evaluation
