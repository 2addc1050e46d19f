"""Per-item mode: one call asks about every judge-decided criterion of one submission."""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from rubrictools.judge.parsing import ParseError, confidence_of, evidence_of, item_entries, parse_item
from rubrictools.judge.prompts import item_messages
from rubrictools.judge.reply_schemas import item_schema
from rubrictools.judge.tasks.base import Decide, JudgeTask, Parsed, Subject
from rubrictools.rubric import Criterion, Rubric

if TYPE_CHECKING:  # pragma: no cover
    from rubrictools.judge.call import Call
    from rubrictools.judge.rows import RowSink

__all__ = ["ItemTask"]


class ItemTask(JudgeTask):
    """Every criterion of ``judged`` at once, aligned by criterion name; a criterion the
    judge omitted or answered wrongly is an error row of its own."""

    kind: ClassVar[str] = "item"

    def __init__(
        self,
        subject: Subject,
        judged: Rubric,
        *,
        option_orders: Mapping[str, Sequence[int]] | None = None,
        evidence: frozenset[str] = frozenset(),
        examples: Mapping[str, Sequence[tuple[str, str, str | None]]] | None = None,
        others: Sequence[Criterion] = (),
        confidence: bool = False,
    ) -> None:
        super().__init__(subject)
        self.judged = judged
        self.option_orders = dict(option_orders or {})
        self.evidence = evidence
        self.examples = dict(examples or {})
        self.others = tuple(others)
        self.confidence = confidence

    def asks(self) -> list[str]:
        return [c.name or "" for c in self.judged]

    def messages(self, *, system_prompt: str | None = None) -> list[dict[str, str]]:
        s = self.subject
        return item_messages(
            self.judged,
            s.submission,
            part=s.part,  # type: ignore[arg-type]  # validated by GradeOptions
            query=s.query,
            reference=s.reference,
            option_orders=self.option_orders,
            system_prompt=system_prompt,
            guidelines=s.rubric.guidelines,
            evidence=self.evidence,
            examples=self.examples,
            others=self.others,
            confidence=self.confidence,
            group=len(self.judged) < sum(c.rule is None for c in s.rubric),  # grouped mode: some criteria
        )

    def optional_columns(self) -> set[str]:
        return ({"evidence"} if self.evidence else set()) | ({"confidence"} if self.confidence else set())

    def token_cap(self) -> int:
        n = len(self.judged.names)
        return 150 + n * (120 + (200 if self.evidence else 0))

    def schema_key(self) -> Hashable:
        return ("item", id(self.judged), tuple(sorted(self.evidence)), self.confidence)

    def schema(self) -> tuple[dict[str, Any], str]:
        return item_schema(self.judged, evidence=self.evidence, confidence=self.confidence), "rubric_verdicts"

    def parse(self, content: str | None) -> Parsed:
        try:
            verdicts, problems = parse_item(content, self.judged)
        except ParseError as e:
            return Parsed(None, {"*": f"parse: {e}"})
        return Parsed(verdicts, problems)

    def rows(self, call: Call, sink: RowSink) -> None:
        parsed = (call.parsed.value if call.parsed is not None else None) or {}
        problems = call.parsed.problems if call.parsed is not None else {}
        extras = item_entries(call.content, self.judged) if ((self.evidence or self.confidence) and parsed) else {}
        names = self.subject.rubric.names
        n = len(self.judged)
        for share, c in enumerate(self.judged):
            name = c.name or ""
            common: dict[str, Any] = {
                "criterion": name,
                "position": names.index(name),
                "weight": c.weight,
                "share": share,
                "n_share": n,
                "crit": c,
                "evidence": name in self.evidence,
            }
            if call.error is not None and not parsed:
                sink.add(call, verdict=None, value=None, explanation=None, error=call.error, **common)
            elif name in parsed and name not in problems:
                label, expl = parsed[name]
                sink.add(
                    call,
                    verdict=label,
                    value=c.value_of(label),
                    explanation=expl,
                    error=None,
                    quote=evidence_of(extras.get(name)),
                    confidence=confidence_of(extras.get(name)) if self.confidence else None,
                    **common,
                )
            else:
                msg = problems.get(name) or problems.get("*") or call.error or "judge omitted this criterion"
                msg = msg if msg.startswith("parse") else f"parse: {msg}"
                sink.add(call, verdict=None, value=None, explanation=None, error=msg, **common)

    def scripted_reply(self, decide: Decide) -> str:
        entries = []
        for c in self.judged:
            label, expl, quote = decide(c)
            e: dict[str, Any] = {"criterion": c.name, "verdict": label, "explanation": expl}
            if c.name in self.evidence:
                e["evidence"] = quote or ""
            if self.confidence:
                e["confidence"] = 1.0  # a script has no doubt
            entries.append(e)
        return json.dumps({"verdicts": entries})
