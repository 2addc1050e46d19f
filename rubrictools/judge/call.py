"""A judge call: one task put to one judge, the request that asks it, and what came back.

The executor (:mod:`rubrictools.grading.executor`) fills these in the same way for every
judge mode; only the :class:`~rubrictools.judge.tasks.JudgeTask` knows what the answer means.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rubrictools.judge.result import CallResult

if TYPE_CHECKING:  # pragma: no cover
    from rubrictools.judge.tasks.base import JudgeTask, Parsed

__all__ = ["NO_DISTRIBUTION", "Call", "apply_answer"]

NO_DISTRIBUTION = -1
"""``Call.dist_samples`` when no label distribution is wanted (0: logprobs only; k: or k samples)."""


@dataclass(kw_only=True, slots=True)
class Call(CallResult):
    """One logical judge call: what to send, and (inherited from CallResult) what came back."""

    task: JudgeTask
    judge_i: int
    messages: list[dict[str, Any]]  # content: text, or content parts when images go along
    output: dict[str, Any] = field(default_factory=dict)  # structured-output request fields (dialects)
    max_tokens: int | None = None
    extra: dict[str, Any] | None = None  # extra request fields (logprobs, n) that also key the cache
    key: str | None = None
    cached: bool = False
    parsed: Parsed | None = None
    dist_samples: int = NO_DISTRIBUTION
    dist: dict[str, float] | None = None
    dist_source: str | None = None

    @property
    def response_format(self) -> dict[str, Any] | None:
        """The ``response_format`` field the call sends (None: the dialect sends none)."""
        fmt: dict[str, Any] | None = self.output.get("response_format")
        return fmt

    @property
    def wants_distribution(self) -> bool:
        return self.dist_samples != NO_DISTRIBUTION

    @property
    def answered(self) -> bool:
        """The reply parsed completely."""
        return self.parsed is not None and self.parsed.ok


def apply_answer(call: Call, content: str | None) -> bool:
    """Record ``content`` as ``call``'s reply and parse it with the call's task.

    Returns True when the reply is fully valid. A reply that is partly usable (some criteria
    of a per-item answer) keeps its parse and no call-level error, so the valid parts become
    verdicts and the rest error rows; an unusable reply sets ``call.error`` to why.
    """
    call.content = content
    call.parsed = call.task.parse(content)
    if call.parsed.ok:
        call.error = call.error_kind = None
        return True
    if call.parsed.value is None:
        call.error, call.error_kind = call.parsed.first_problem, "parse"
    return False
