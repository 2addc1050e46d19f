"""An offline, scripted stand-in for an LLM judge. It is NOT a model.

It exists for demos, notebooks and tests that must run without any API: it answers from a
table of known verdicts, from a Python rule, or from a crude lexical-overlap heuristic.
Its answers go through the same prompt/parse/verdict-table path as a real judge.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from rubrictools.rubric import MET, UNMET, Criterion

__all__ = ["ScriptedJudge"]

Rule = Callable[[str, Criterion], "str | tuple[str, str]"]

_WORD = re.compile(r"[a-z0-9]{4,}")
_STOP = {"that", "this", "with", "from", "have", "does", "their", "there", "which", "about", "response",
         "submission", "answer", "states", "mentions", "gives", "uses", "least", "more", "than", "into"}


def overlap_rule(text: str, criterion: Criterion) -> tuple[str, str]:
    """Crude heuristic: MET when >= 50% of the requirement's content words occur in the text.

    Multi-choice criteria pick the option at the same fraction of the option list.
    """
    words = {w for w in _WORD.findall(criterion.requirement.lower()) if w not in _STOP}
    present = {w for w in words if w in text.lower()}
    frac = len(present) / len(words) if words else 0.0
    why = f"scripted heuristic: {len(present)}/{len(words)} requirement words found"
    if criterion.options is None:
        return (MET if frac >= 0.5 else UNMET), why
    scored = [o for o in criterion.options if not o.na]
    scored.sort(key=lambda o: o.value)
    return scored[min(len(scored) - 1, int(frac * len(scored)))].label, why


class ScriptedJudge:
    """A judge that replies from a script instead of a model (clearly not a real LLM).

    Parameters
    ----------
    verdicts
        Optional DataFrame with ``id, criterion, verdict`` (and optionally ``explanation``):
        the judge answers these labels for those submissions.
    rule
        ``rule(submission_text, criterion) -> label | (label, explanation)`` used for pairs
        not found in ``verdicts``; defaults to a lexical-overlap heuristic.
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

    def __init__(self, verdicts: Any = None, *, rule: Rule | None = None, name: str = "scripted", weight: float = 1.0) -> None:
        self.rule: Rule = rule or overlap_rule
        self.label = name
        self.model = name
        self.weight = weight
        self.max_concurrency = 1_000_000
        self._table: dict[tuple[str, str], tuple[str, str | None]] = {}
        if verdicts is not None:
            from rubrictools.verdicts import to_polars

            frame = to_polars(verdicts, name="verdicts")
            has_expl = "explanation" in frame.columns
            for r in frame.iter_rows(named=True):
                self._table[(str(r["id"]), str(r["criterion"]))] = (
                    r["verdict"],
                    r["explanation"] if has_expl else None,
                )

    def __repr__(self) -> str:
        return f"ScriptedJudge(name={self.label!r}, scripted verdicts={len(self._table)}; not a real model)"

    def judge_criterion(self, sid: Any, text: str, criterion: Criterion) -> tuple[str, str]:
        hit = self._table.get((str(sid), str(criterion.name)))
        if hit is not None:
            return hit[0], hit[1] or "scripted verdict from the supplied table"
        out = self.rule(text, criterion)
        return (out, "scripted rule") if isinstance(out, str) else (out[0], out[1])

    def reply(self, call: Any) -> str:
        """The JSON text a real judge would have sent for ``call``."""
        text = call.text
        if call.kind == "criterion":
            label, expl = self.judge_criterion(call.sid, text, call.criterion)
            return json.dumps({"verdict": label, "explanation": expl})
        answers = {c.name: self.judge_criterion(call.sid, text, c) for c in call.rubric}
        if call.kind == "item":
            return json.dumps(
                {"verdicts": [{"criterion": n, "verdict": lab, "explanation": e} for n, (lab, e) in answers.items()]}
            )
        s = call.rubric.score([answers[n][0] for n in call.rubric.names])
        return json.dumps({"score": round(100 * (s or 0.0), 2), "explanation": "scripted: rubric score of the rule's verdicts"})
