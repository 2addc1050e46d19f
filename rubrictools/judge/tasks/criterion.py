"""Per-criterion mode: one call asks about one criterion of one submission."""

from __future__ import annotations

import json
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from rubrictools.judge.distribution import from_logprobs, from_samples
from rubrictools.judge.parsing import ParseError, parse_confidence, parse_criterion, parse_evidence
from rubrictools.judge.prompts import SYSTEM_CRITERION, compose, criterion_head, shared_sections
from rubrictools.judge.reply_schemas import criterion_schema
from rubrictools.judge.tasks.base import Decide, JudgeTask, Parsed, Subject
from rubrictools.rubric import Criterion

if TYPE_CHECKING:  # pragma: no cover
    from rubrictools.judge.call import Call
    from rubrictools.judge.rows import RowSink

__all__ = ["CriterionTask", "PromptParts"]

Example = tuple[str, str, str | None]


class PromptParts:
    """The sections of per-criterion requests a run builds once and reuses: a criterion's
    description is the same in every row, a submission's opening the same for each of its
    criteria. Keyed by the identities of the objects they are built from; the memo holds
    those objects, so no identity is reused while its entry lives."""

    def __init__(self) -> None:
        self._shared: dict[int, tuple[Subject, str]] = {}
        self._heads: dict[tuple[Any, ...], tuple[tuple[Any, ...], list[str]]] = {}

    def shared(self, s: Subject) -> str:
        hit = self._shared.get(id(s))
        if hit is None or hit[0] is not s:
            text = shared_sections(s.submission, s.part, s.query, s.reference, s.rubric.guidelines)  # type: ignore[arg-type]  # part validated by GradeOptions
            hit = self._shared[id(s)] = (s, text)
        return hit[1]

    def head(self, t: CriterionTask) -> list[str]:
        held = (t.criterion, t.examples, t.others)
        order = None if t.option_order is None else tuple(t.option_order)
        key = (id(t.criterion), order, t.evidence, t.confidence, *map(id, t.examples), None, *map(id, t.others))
        hit = self._heads.get(key)
        if hit is None:
            head = criterion_head(
                t.criterion,
                examples=t.examples,
                option_order=t.option_order,
                evidence=t.evidence,
                others=t.others,
                confidence=t.confidence,
            )
            hit = self._heads[key] = (held, head)
        return hit[1]


class CriterionTask(JudgeTask):
    """Is ``criterion`` met by the submission? Answer: ``{"verdict", "explanation"[, "evidence"]}``."""

    kind: ClassVar[str] = "criterion"
    supports_distribution: ClassVar[bool] = True

    def __init__(
        self,
        subject: Subject,
        criterion: Criterion,
        *,
        option_order: list[int] | None = None,
        evidence: bool = False,
        examples: Sequence[Example] = (),
        others: Sequence[Criterion] = (),
        confidence: bool = False,
        position: int | None = None,
        parts: PromptParts | None = None,
    ) -> None:
        """``position``: the criterion's place in the subject's rubric, when the caller knows
        it; ``parts``: the run's memo of prompt sections, shared by its tasks."""
        super().__init__(subject)
        self.criterion = criterion
        self.others = tuple(others)
        self.confidence = confidence
        self.option_order = option_order
        self.evidence = evidence
        self.examples = tuple(examples)
        self._position = position
        self.parts = parts

    @property
    def position(self) -> int:
        """The criterion's place in the subject's rubric."""
        if self._position is None:
            self._position = self.subject.rubric.names.index(self.criterion.name or "")
        return self._position

    def asks(self) -> list[str]:
        return [self.criterion.name or ""]

    def messages(self, *, system_prompt: str | None = None) -> list[dict[str, str]]:
        parts = self.parts or PromptParts()
        return compose(system_prompt or SYSTEM_CRITERION, parts.shared(self.subject), parts.head(self))

    def optional_columns(self) -> set[str]:
        return (
            ({"evidence"} if self.evidence else set())
            | ({"option_order"} if self.option_order is not None else set())
            | ({"confidence"} if self.confidence else set())
        )

    def token_cap(self) -> int:
        return 250 + (200 if self.evidence else 0)

    def schema_key(self) -> Hashable:
        return ("criterion", id(self.criterion), self.evidence, self.confidence)

    def schema(self) -> tuple[dict[str, Any], str]:
        return criterion_schema(self.criterion, evidence=self.evidence, confidence=self.confidence), "criterion_verdict"

    def parse(self, content: str | None) -> Parsed:
        try:
            return Parsed(parse_criterion(content, self.criterion))
        except ParseError as e:
            return Parsed(None, {"*": f"parse: {e}"})

    def rows(self, call: Call, sink: RowSink) -> None:
        c = self.criterion
        name = c.name or ""
        common: dict[str, Any] = {
            "criterion": name,
            "position": self.position,
            "weight": c.weight,
            "option_order": self.option_order,
            "crit": c,
            "evidence": self.evidence,
        }
        if call.error is None and call.parsed is not None and call.parsed.ok:
            label, expl = call.parsed.value
            quote = parse_evidence(call.content) if self.evidence else None
            sure = parse_confidence(call.content) if self.confidence else None
            sink.add(
                call,
                verdict=label,
                value=c.value_of(label),
                explanation=expl,
                error=None,
                quote=quote,
                confidence=sure,
                **common,
            )
        else:
            error = call.error or (call.parsed.first_problem if call.parsed else "unknown failure")
            sink.add(call, verdict=None, value=None, explanation=None, error=error, **common)

    def scripted_reply(self, decide: Decide) -> str:
        label, expl, quote = decide(self.criterion)
        entry: dict[str, Any] = {"verdict": label, "explanation": expl}
        if self.evidence:
            entry["evidence"] = quote or ""
        if self.confidence:
            entry["confidence"] = 1.0  # a script has no doubt
        return json.dumps(entry)

    def distribution_from_logprobs(self, content: str | None, logprobs: Any) -> dict[str, float] | None:
        return from_logprobs(content, logprobs, self.criterion) if logprobs else None

    def distribution_from_samples(self, contents: list[str | None]) -> dict[str, float] | None:
        return from_samples(contents, self.criterion)

    def certain_distribution(self, parsed: Parsed) -> dict[str, float] | None:
        if not parsed.ok:
            return None
        label = parsed.value[0]
        return {lab: float(lab == label) for lab in self.criterion.labels}
