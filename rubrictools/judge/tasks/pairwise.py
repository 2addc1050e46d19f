"""Pairwise mode: which of two answers (A and B) better meets a criterion, or the rubric overall.

One task is one presentation order: ``swapped=False`` shows A as response 1, ``swapped=True``
shows B first. The judge answers by position ("1", "2", "tie"); the task maps the answer back
to A's side, so its row says ``"A"``, ``"B"`` or ``"tie"`` whatever order was shown, and
``variant`` (0 or 1) records the order for the preference table
(:mod:`rubrictools.grading.preferences`).
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any, ClassVar

from rubrictools.judge.pair_prompts import pair_messages, pair_schema, parse_pair
from rubrictools.judge.parsing import ParseError
from rubrictools.judge.tasks.base import Decide, JudgeTask, Parsed, Subject
from rubrictools.rubric import Criterion
from rubrictools.verdicts import HOLISTIC

if TYPE_CHECKING:  # pragma: no cover
    from rubrictools.judge.call import Call
    from rubrictools.judge.rows import RowSink

__all__ = ["PAIR_VALUES", "PairTask"]

PAIR_VALUES = {"A": 1.0, "tie": 0.5, "B": 0.0}
"""A's share of one comparison: a win, half a win, a loss."""


class PairTask(JudgeTask):
    """Is A or B better on ``criterion`` (``None``: on the whole rubric)? Shown in one order."""

    kind: ClassVar[str] = "pairwise"

    def __init__(self, subject: Subject, criterion: Criterion | None, *, swapped: bool, ties: bool) -> None:
        if subject.other is None:
            raise ValueError("a pairwise task needs a subject with a second answer (Subject.other)")
        super().__init__(subject)
        self.criterion = criterion
        self.swapped = swapped
        self.ties = ties

    def request(
        self, *, system_prompt: str | None = None, role: str | None = None, note: str | None = None
    ) -> list[dict[str, Any]]:
        s = self.subject
        if s.submission.images or (s.other is not None and s.other.images):
            raise ValueError(
                f"row {s.row} (id {s.sid!r}): pairwise grading does not show images yet, and an answer with "
                "images compared without them would be judged on part of itself: grade each answer with rt.grade"
            )
        return super().request(system_prompt=system_prompt, role=role, note=note)

    def asks(self) -> list[str]:
        return [self.criterion.name or ""] if self.criterion is not None else super().asks()

    def _shown(self) -> tuple[Any, Any]:
        s = self.subject
        return (s.other, s.submission) if self.swapped else (s.submission, s.other)

    def messages(self, *, system_prompt: str | None = None) -> list[dict[str, str]]:
        s = self.subject
        first, second = self._shown()
        return pair_messages(
            self.criterion if self.criterion is not None else s.rubric,
            first,
            second,
            part=s.part,  # type: ignore[arg-type]  # validated by GradeOptions
            query=s.query,
            reference=s.reference,
            ties=self.ties,
            system_prompt=system_prompt,
            guidelines=s.rubric.guidelines,
        )

    def schema_key(self) -> Hashable:
        return ("pairwise", self.ties)

    def schema(self) -> tuple[dict[str, Any], str]:
        return pair_schema(ties=self.ties), "pairwise_preference"

    def to_side(self, answer: str) -> str:
        """``"1"``/``"2"``/``"tie"`` (by position) -> ``"A"``/``"B"``/``"tie"``."""
        if answer == "tie":
            return "tie"
        first_is_a = not self.swapped
        return "A" if (answer == "1") == first_is_a else "B"

    def parse(self, content: str | None) -> Parsed:
        try:
            answer, expl = parse_pair(content, ties=self.ties)
        except ParseError as e:
            return Parsed(None, {"*": f"parse: {e}"})
        return Parsed((self.to_side(answer), expl))

    def rows(self, call: Call, sink: RowSink) -> None:
        c, rubric = self.criterion, self.subject.rubric
        common: dict[str, Any] = {
            "criterion": HOLISTIC if c is None else (c.name or ""),
            "position": 0 if c is None else rubric.names.index(c.name or ""),
            "weight": rubric.total_positive_weight if c is None else c.weight,
            "variant": int(self.swapped),
        }
        if call.error is None and call.parsed is not None and call.parsed.ok:
            side, expl = call.parsed.value
            sink.add(call, verdict=side, value=PAIR_VALUES[side], explanation=expl, error=None, **common)
        else:
            error = call.error or (call.parsed.first_problem if call.parsed else "unknown failure")
            sink.add(call, verdict=None, value=None, explanation=None, error=error, **common)

    def _merit(self, decide: Decide, text: str | None) -> float:
        """What a scripted judge thinks one answer earns: the criterion's signed contribution,
        or the rubric score."""
        rubric = self.subject.rubric
        if self.criterion is None:
            return (rubric.score([decide(c, text)[0] for c in rubric], normalize=False) or 0.0) + 0.0
        c = self.criterion
        value = c.value_of(decide(c, text)[0])
        return 0.0 if value is None else c.weight * value + 0.0  # + 0.0: no -0

    def scripted_reply(self, decide: Decide) -> str:
        """The answer with the higher merit (a tie when equal, or the first shown when ties are
        not allowed: a scripted judge's only position effect)."""
        a = self._merit(decide, None)
        b = self._merit(decide, self.subject.other_text)
        side = "A" if a > b else "B" if b > a else "tie"
        first = "B" if self.swapped else "A"
        tie = "tie" if self.ties else "1"
        answer = tie if side == "tie" else ("1" if side == first else "2")
        why = f"scripted: merit {a:g} (A) vs {b:g} (B)"
        return json.dumps({"explanation": why, "verdict": answer})
