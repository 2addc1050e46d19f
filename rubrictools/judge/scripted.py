"""An offline, scripted stand-in for an LLM judge. It is NOT a model.

It exists for demos, notebooks and tests that must run without any API: it answers from a
table of known verdicts, from a Python rule, or from a crude lexical-overlap heuristic.
Its answers go through the same prompt/parse/verdict-table path as a real judge.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from rubrictools.frames import to_polars
from rubrictools.judge.config import check_weight
from rubrictools.judge.tasks.base import JudgeTask
from rubrictools.rubric import MET, UNMET, Criterion, format_number

__all__ = ["ScriptedJudge"]

Rule = Callable[[str, Criterion], "str | tuple[str, str] | tuple[str, str, str | None]"]

_WORD = re.compile(r"[a-z0-9]{4,}")
_STOP = {
    "that",
    "this",
    "with",
    "from",
    "have",
    "does",
    "their",
    "there",
    "which",
    "about",
    "response",
    "submission",
    "answer",
    "states",
    "mentions",
    "gives",
    "uses",
    "least",
    "more",
    "than",
    "into",
}


_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")


def overlap_rule(text: str, criterion: Criterion) -> tuple[str, str, str | None]:
    """Crude heuristic: MET when >= 50% of the requirement's content words occur in the text.

    Multi-choice criteria pick the option at the same fraction of the option list, numeric
    ones the point at that fraction of the range. The evidence is the first sentence that
    holds a requirement word.
    """
    words = {w for w in _WORD.findall(criterion.requirement.lower()) if w not in _STOP}
    present = {w for w in words if w in text.lower()}
    frac = len(present) / len(words) if words else 0.0
    why = f"scripted heuristic: {len(present)}/{len(words)} requirement words found"
    quote = next(
        (m.group(0).strip() for m in _SENTENCE.finditer(text) if any(w in m.group(0).lower() for w in present)), None
    )
    if criterion.range is not None:
        r = criterion.range
        x = r.min + frac * (r.max - r.min)
        if r.step is not None:
            x = r.min + round((x - r.min) / r.step) * r.step
        return format_number(x), why, quote
    if criterion.options is None:
        return (MET if frac >= 0.5 else UNMET), why, quote
    scored = [o for o in criterion.options if not o.na]
    scored.sort(key=lambda o: o.value)
    return scored[min(len(scored) - 1, int(frac * len(scored)))].label, why, quote


def _positional_arity(fn: Callable[..., Any]) -> int:
    import inspect

    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 2
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return 3
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


class ScriptedJudge:
    """A judge that replies from a script instead of a model (clearly not a real LLM).

    Parameters
    ----------
    verdicts
        Optional DataFrame with ``id, criterion, verdict`` (and optionally ``explanation``):
        the judge answers these labels for those submissions.
    rule
        ``rule(submission_text, criterion) -> label | (label, explanation) | (label,
        explanation, evidence)`` used for pairs not found in ``verdicts``; defaults to a
        lexical-overlap heuristic. ``evidence`` is the quote sent when one is asked for. A
        rule taking a third argument also receives the submission's id.
    name
        Value of the ``judge`` column (default ``"scripted"``).

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> rubric = rt.Rubric.from_dict([{"name": "hi", "requirement": "Says hello"}])
    >>> judge = rt.ScriptedJudge(rule=lambda text, c: "MET" if "hello" in text else "UNMET")
    >>> rt.grade(pl.DataFrame({"submission": ["hello!", "bye"]}), rubric, model=judge,
    ...          progress=False)["verdict"].to_list()
    ['MET', 'UNMET']
    """

    is_scripted = True

    def __init__(
        self, verdicts: Any = None, *, rule: Rule | None = None, name: str = "scripted", weight: float = 1.0
    ) -> None:
        self.rule: Rule = rule or overlap_rule
        self._rule_takes_id = _positional_arity(self.rule) >= 3
        self.label = name
        self.model = name
        self.weight = check_weight(weight)
        self.max_concurrency = 1_000_000
        self._table: dict[tuple[str, str], tuple[str, str | None, str | None]] = {}
        if verdicts is not None:
            frame = to_polars(verdicts, name="verdicts")
            has_expl = "explanation" in frame.columns
            has_ev = "evidence" in frame.columns
            for r in frame.iter_rows(named=True):
                self._table[(str(r["id"]), str(r["criterion"]))] = (
                    r["verdict"],
                    r["explanation"] if has_expl else None,
                    r["evidence"] if has_ev else None,
                )

    def __repr__(self) -> str:
        return f"ScriptedJudge(name={self.label!r}, scripted verdicts={len(self._table)}; not a real model)"

    def judge_criterion(self, sid: Any, text: str, criterion: Criterion) -> tuple[str, str, str | None]:
        """``(label, explanation, evidence)`` for one pair."""
        hit = self._table.get((str(sid), str(criterion.name)))
        if hit is not None:
            return hit[0], hit[1] or "scripted verdict from the supplied table", hit[2]
        out = self.rule(text, criterion, sid) if self._rule_takes_id else self.rule(text, criterion)  # type: ignore[call-arg]  # the rule's arity was checked when the judge was built
        if isinstance(out, str):
            return out, "scripted rule", None
        return out[0], out[1], (out[2] if len(out) > 2 else None)

    def reply(self, task: JudgeTask) -> str:
        """The JSON text a real judge would have sent for ``task``."""
        subject = task.subject

        def decide(criterion: Criterion, text: str | None = None) -> tuple[str, str, str | None]:
            return self.judge_criterion(subject.sid, subject.text if text is None else text, criterion)

        return task.scripted_reply(decide)
