"""Holistic mode: one call asks for one 0-100 score of the whole rubric."""

from __future__ import annotations

import json
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from rubrictools.judge.parsing import ParseError, parse_holistic
from rubrictools.judge.prompts import holistic_messages
from rubrictools.judge.reply_schemas import HOLISTIC_SCHEMA
from rubrictools.judge.tasks.base import Decide, JudgeTask, Parsed, Subject
from rubrictools.verdicts import HOLISTIC

if TYPE_CHECKING:  # pragma: no cover
    from rubrictools.judge.call import Call
    from rubrictools.judge.rows import RowSink

__all__ = ["HolisticTask"]


class HolisticTask(JudgeTask):
    """One overall score; its row has ``criterion = HOLISTIC``, ``value = score / 100`` and
    the rubric's total positive weight."""

    kind: ClassVar[str] = "holistic"

    def __init__(self, subject: Subject, *, examples: Sequence[tuple[str, float, str | None]] = ()) -> None:
        super().__init__(subject)
        self.examples = tuple(examples)

    def messages(self, *, system_prompt: str | None = None) -> list[dict[str, str]]:
        s = self.subject
        return holistic_messages(
            s.rubric,
            s.submission,
            part=s.part,  # type: ignore[arg-type]  # validated by GradeOptions
            query=s.query,
            reference=s.reference,
            system_prompt=system_prompt,
            guidelines=s.rubric.guidelines,
            examples=self.examples,
        )

    def optional_columns(self) -> set[str]:
        return {"llm_raw_score"}

    def token_cap(self) -> int:
        return 400

    def schema_key(self) -> Hashable:
        return "holistic"

    def schema(self) -> tuple[dict[str, Any], str]:
        return HOLISTIC_SCHEMA, "holistic_score"

    def parse(self, content: str | None) -> Parsed:
        try:
            return Parsed(parse_holistic(content))
        except ParseError as e:
            return Parsed(None, {"*": f"parse: {e}"})

    def rows(self, call: Call, sink: RowSink) -> None:
        """One row. With positive weights ``value = score / 100`` (the share of the positive
        weight earned); for a rubric of penalties only (weight ``-N``) ``value = 1 - score /
        100``, the share of the penalties incurred, so the rubric score is ``score / 100`` and
        the raw score ``-N * (1 - score / 100)`` (100: no penalty applies, raw 0)."""
        weight = self.subject.rubric.holistic_weight
        common: dict[str, Any] = {"criterion": HOLISTIC, "position": 0, "weight": weight}
        if call.error is None and call.parsed is not None and call.parsed.ok:
            s, expl = call.parsed.value
            value = s / 100.0 if weight >= 0 else 1.0 - s / 100.0
            sink.add(call, verdict=f"{s:g}", value=value, explanation=expl, error=None, llm_score=s, **common)
        else:
            error = call.error or (call.parsed.first_problem if call.parsed else "unknown failure")
            sink.add(call, verdict=None, value=None, explanation=None, error=error, **common)

    def scripted_reply(self, decide: Decide) -> str:
        rubric = self.subject.rubric
        labels = [decide(c)[0] for c in rubric]
        s = rubric.score(labels)
        return json.dumps(
            {"score": round(100 * (s or 0.0), 2), "explanation": "scripted: rubric score of the rule's verdicts"}
        )
