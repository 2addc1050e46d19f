"""The judge-task abstraction: one class per judge mode.

A task is one question put to a judge about one submission. It knows

- its **messages** (what the judge sees; untrusted text escaped and fenced),
- its **response schema** (what a valid reply looks like),
- how to **parse** a reply (:class:`Parsed`: a value and the problems found), and
- which **verdict rows** an answer (or a failure) produces.

The executor, the response cache, retries, budgets, streaming, provider batch jobs and Ray
only ever call these methods, so a new mode (pairwise, conversations) is one more subclass.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from rubrictools.judge.image_parts import with_images
from rubrictools.judge.prompts import under_role
from rubrictools.rubric import Criterion, Rubric
from rubrictools.submissions import Submission

if TYPE_CHECKING:  # pragma: no cover
    from rubrictools.judge.call import Call
    from rubrictools.judge.rows import RowSink

__all__ = ["Decide", "JudgeTask", "Parsed", "Subject"]


class Decide(Protocol):
    """A scripted judge's answer for one criterion: ``(label, explanation, evidence quote)``,
    about the subject's text or, when given, about ``text`` (the other answer of a pair)."""

    def __call__(self, criterion: Criterion, text: str | None = None) -> tuple[str, str, str | None]: ...


@dataclass(frozen=True, slots=True)
class Parsed:
    """A parsed reply: ``value`` (task-specific; None when nothing usable) and the problems
    found, keyed by criterion name or ``"*"`` for the reply as a whole."""

    value: Any = None
    problems: Mapping[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """The reply is complete and valid."""
        return self.value is not None and not self.problems

    @property
    def first_problem(self) -> str:
        return next(iter(self.problems.values()), "unknown failure")


@dataclass(frozen=True, kw_only=True)
class Subject:
    """What one task grades: a submission (one input row) with its rubric and context; for
    pairwise grading also the answer it is compared with (``other``)."""

    row: int
    sid: Any
    submission: Submission
    text: str  # the graded part of the submission, as plain text
    rubric: Rubric
    part: str = "output"
    query: str | None = None
    reference: str | None = None
    other: Submission | None = None  # pairwise: the second answer (B); ``submission`` is A
    other_text: str | None = None


class JudgeTask(ABC):
    """One judge mode's question about one subject (see module docstring)."""

    kind: ClassVar[str]
    """Short name of the mode, for display and the request identity; never branched on."""

    def __init__(self, subject: Subject) -> None:
        self.subject = subject

    @abstractmethod
    def messages(self, *, system_prompt: str | None = None) -> list[dict[str, str]]:
        """The chat messages that ask this task's question."""

    def request(
        self, *, system_prompt: str | None = None, role: str | None = None, note: str | None = None
    ) -> list[dict[str, Any]]:
        """The messages sent: :meth:`messages`, with the judge's ``role`` (rendered) opening the
        system message and ``note`` (the run's output constraints) closing it, and the
        submission's images attached after the text
        (:func:`rubrictools.judge.image_parts.with_images`)."""
        msgs: list[dict[str, Any]] = self.messages(system_prompt=system_prompt)
        if role or note:
            msgs = [
                {
                    **m,
                    "content": "\n\n".join(
                        x for x in (role, under_role(m["content"]) if role else m["content"], note) if x
                    ),
                }
                if m["role"] == "system"
                else m
                for m in msgs
            ]
        return with_images(msgs, self.subject.submission.images)

    @abstractmethod
    def schema(self) -> tuple[dict[str, Any], str]:
        """The JSON schema a valid reply follows, and its name."""

    def asks(self) -> list[str]:
        """The names of the criteria this task's question is about (default: every judged
        criterion of the subject's rubric)."""
        return [c.name or "" for c in self.subject.rubric if c.rule is None]

    def token_cap(self) -> int:
        """The reply's ``max_tokens`` when the judge's is ``"auto"``: room for the answer with a
        one- or two-sentence explanation, not for a rambling model to run on for minutes."""
        return 300

    def schema_key(self) -> Hashable | None:
        """A cheap key under which equal schemas are built once per run (None: key by content)."""
        return None

    @abstractmethod
    def parse(self, content: str | None) -> Parsed:
        """Parse a reply; never raises on a bad reply (the problems say what is wrong)."""

    @abstractmethod
    def rows(self, call: Call, sink: RowSink) -> None:
        """Append the verdict rows of ``call`` (answered, partly answered or failed)."""

    @abstractmethod
    def scripted_reply(self, decide: Decide) -> str:
        """The reply a real judge would send if it decided each criterion as ``decide`` does."""

    def optional_columns(self) -> set[str]:
        """Optional verdict-table columns this task fills (``evidence``, ``option_order``, ``llm_raw_score``)."""
        return set()

    # Label distributions: only tasks that ask about one criterion can carry one.
    supports_distribution: ClassVar[bool] = False

    def distribution_from_logprobs(self, content: str | None, logprobs: Any) -> dict[str, float] | None:
        """Each label's probability from the reply's token logprobs (None when they cannot say)."""
        return None

    def distribution_from_samples(self, contents: list[str | None]) -> dict[str, float] | None:
        """Each label's share among sampled replies (None when none parses)."""
        return None

    def certain_distribution(self, parsed: Parsed) -> dict[str, float] | None:
        """Probability 1 on the parsed label (a scripted judge has no doubt)."""
        return None
