"""A proposal quality gate (rubrify's ``ProposalQualityGate``): a small rubric that judges each
text the reflection model proposes before GEPA spends a minibatch of graded submissions on it.

The gate grades the proposal (the submission) against the request that produced it (the
reflection prompt, as the query) with its own rubric, :data:`GATE_RUBRIC` by default: is it the
same kind of text as the one it replaces, is it checkable, does it answer the disagreements. A
proposal whose score is below ``min_score`` is sent back to the reflection model with the
gate's reasons, up to ``retries`` times; one still below is dropped (GEPA skips it, no
submission is graded). One gate call costs one judge call, against ``minibatch_size`` graded
submissions for an evaluation. A gate call that fails lets the proposal through and is counted:
the gate only saves money, it never decides what is kept.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any

import polars as pl

from rubrictools.grading import grade
from rubrictools.grading.inputs import resolve_judges
from rubrictools.judge.config import Judge
from rubrictools.judge.providers import require_credentials
from rubrictools.rubric import Rubric, score

__all__ = ["GATE_RUBRIC", "MAX_RETRIES", "ProposalGate", "ProposalRejected", "gated"]

MAX_RETRIES = 10
"""The most times one proposal may be sent back: reflection and gate calls are not counted in
``max_metric_calls``, so this bounds what one stubborn proposal can cost."""

GATE_RUBRIC = Rubric.from_dict(
    [
        {
            "name": "same_kind",
            "requirement": "The proposal is the same kind of text as the current one: a requirement stays one "
            "plain-language requirement about one quality, guidelines stay general guidance, weights stay one "
            "'name: number' line per criterion",
        },
        {
            "name": "checkable",
            "requirement": "The proposal says what counts and what does not in terms a judge can check on any "
            "submission, without referring to particular examples",
        },
        {
            "name": "answers_disagreements",
            "requirement": "The proposal changes the current text in a way that addresses the disagreements between "
            "the judge and the raters described in the request, rather than restating it",
        },
    ]
)
"""The default gate: three binary criteria, equal weights (a proposal passes at ``min_score`` 0.6
when two of the three are met)."""


class ProposalRejected(Exception):
    """The gate turned a proposal down after every retry: GEPA skips it."""


@dataclass
class ProposalGate:
    """Judge each proposed text with ``rubric`` (default :data:`GATE_RUBRIC`) and ``model``
    before it is evaluated; see the module docstring.

    Parameters
    ----------
    model
        The gate's judge, as in :func:`rubrictools.grade` (a model string, a Judge or a
        ScriptedJudge); a cheap model is enough.
    rubric
        The gate's rubric (binary or scaled criteria; its score is in [0, 1]).
    min_score
        The score a proposal needs to be evaluated.
    retries
        How many times a turned-down proposal is sent back with the gate's reasons (at most
        :data:`MAX_RETRIES`).

    A gate call that fails (its judge raises or returns an error row) lets the proposal through
    and is counted in ``RubricEvolution.gate_log``; with several gate judges, their ensemble
    verdict decides.

    Example
    -------
    >>> import rubrictools as rt
    >>> from rubrictools.evolution import ProposalGate
    >>> strict = rt.ScriptedJudge(rule=lambda text, c: "MET" if len(text) > 20 else "UNMET")
    >>> gate = ProposalGate(model=strict)
    >>> gate.check("Names the source it relies on", request="...").passed
    True
    >>> gate.check("ok", request="...").reasons[0][:9]
    'same_kind'
    """

    model: Any
    rubric: Rubric = GATE_RUBRIC
    min_score: float = 0.6
    retries: int = 1

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Every field checked, naming it (also run by :func:`rubrictools.evolve_rubric` before
        any call, so a field changed after the gate was built is checked too)."""
        if not isinstance(self.rubric, Rubric):
            raise TypeError(f"ProposalGate rubric must be a rubrictools Rubric, got {type(self.rubric).__name__}")
        needs = sorted({k for c in self.rubric for k in (c.applies_when or {})} - {"text", "request"})
        if needs:
            raise ValueError(
                f"ProposalGate rubric: applies_when names {needs}, but the gate grades only the proposal ('text') and "
                "the request that produced it ('request')"
            )
        if self.model is None or (isinstance(self.model, str) and not self.model.strip()):
            raise ValueError("ProposalGate model must name the gate's judge, e.g. 'openai/gpt-4.1-mini'")
        try:
            judges = resolve_judges(self.model)
            require_credentials([j for j in judges if isinstance(j, Judge)])
        except (TypeError, ValueError) as e:
            raise type(e)(f"ProposalGate model: {e}") from None
        if not judges:
            raise ValueError("ProposalGate model is an empty list: name the gate's judge, e.g. 'openai/gpt-4.1-mini'")
        v = self.min_score
        if isinstance(v, bool) or not isinstance(v, Real) or not 0.0 < float(v) <= 1.0:
            hint = " (a gate at 0 turns nothing down: pass gate=None instead)" if v == 0 else ""
            raise ValueError(f"ProposalGate min_score must be a number in (0, 1], got {v!r}{hint}")
        r = self.retries
        if isinstance(r, bool) or not isinstance(r, Integral) or not 0 <= r <= MAX_RETRIES:
            raise ValueError(f"ProposalGate retries must be an int from 0 to {MAX_RETRIES}, got {r!r}")
        self.min_score, self.retries = float(v), int(r)  # a Fraction or numpy value compared exactly no more

    def check(self, proposal: str, *, request: str) -> GateVerdict:
        """The gate's verdict on ``proposal``, written in answer to ``request``. A call that
        fails, or a score the gate cannot give (every criterion CANNOT_ASSESS), lets the
        proposal through with ``error=True``: the gate only saves money, it never decides."""
        frame = pl.DataFrame({"id": ["proposal"], "text": [proposal], "request": [request]})
        v = grade(frame, self.rubric, model=self.model, column="text", id_column="id", query_column="request",
                  cache=False, progress=False, record=False)  # fmt: skip
        cost = float(v["cost_usd"].fill_null(0).sum()) if "cost_usd" in v.columns else 0.0
        failed = v.filter(pl.col("error").is_not_null() & (pl.col("judge") != "ensemble"))
        if "judge" in v.columns and (v["judge"] == "ensemble").any():  # several gate judges: their verdict
            v = v.filter(pl.col("judge").is_in(["ensemble", "rule"]))  # rule criteria have no ensemble row
        if failed.height:  # a judge could not answer: the proposal goes through, counted
            return GateVerdict(True, None, [f"gate call failed: {failed['error'][0]}"], cost, error=True)
        s = score(v, self.rubric, on_error="null")["score"][0]
        if s is None:
            why = "the gate could not score the proposal (no criterion it could assess)"
            return GateVerdict(True, None, [why], cost, error=True)
        reasons, missed = _reasons(v, self.rubric)
        return GateVerdict(s >= self.min_score - 1e-9, s, reasons, cost, missed=missed)


def _reasons(v: pl.DataFrame, rubric: Rubric) -> tuple[list[str], list[str]]:
    """What the proposal missed (a reward criterion not fully met, a penalty or disqualifier
    met), in words and by criterion name."""
    out, names = [], []
    for r in v.iter_rows(named=True):
        c = rubric[r["criterion"]]
        bad = c.weight < 0 or c.disqualifier
        value = r["value"] if r["value"] is not None else (0.0 if not bad else 1.0)
        if (value > 0) if bad else (value < 1):
            said = r["explanation"] or "no reason given"
            out.append(f"{'avoid: ' if bad else ''}{r['criterion']}: {c.requirement} ({said})")
            names.append(str(r["criterion"]))
    return out, names


@dataclass
class GateVerdict:
    """One gate check: whether the proposal goes on, its gate score, the criteria it missed."""

    passed: bool
    score: float | None
    reasons: list[str]
    cost_usd: float
    error: bool = False
    missed: list[str] = field(default_factory=list)  # the names of the criteria the reasons are about


_AGAIN = """

A reviewer turned down this proposal:
```
{proposal}
```
Its reasons: {reasons}.
Write a better version, again as the new text alone inside one ``` block."""


def gated(lm: Callable[[str], str], gate: ProposalGate, log: list[dict[str, Any]]) -> Callable[[str], str]:
    """``lm`` with every proposal checked by ``gate``; a proposal turned down ``gate.retries + 1``
    times raises :class:`ProposalRejected` (GEPA skips it). The gate reads the text GEPA would
    adopt (its own extractor); each check is appended to ``log``, this run's own."""
    from gepa.strategies.instruction_proposal import (  # reason: gepa is the optional [evolve] extra
        InstructionProposalSignature,
    )

    def ask(prompt: str) -> str:
        request = prompt if isinstance(prompt, str) else str(prompt)
        for attempt in range(gate.retries + 1):
            reply = lm(prompt)
            proposal = InstructionProposalSignature.output_extractor(reply)["new_instruction"]
            try:
                verdict = gate.check(proposal, request=request)
            except Exception as e:  # noqa: BLE001  # the gate could not judge: the proposal goes on, counted
                verdict = GateVerdict(True, None, [f"{type(e).__name__}: {e}"], 0.0, error=True)
            log.append({"attempt": attempt + 1, "score": verdict.score, "passed": verdict.passed,
                        "error": verdict.error, "cost_usd": verdict.cost_usd,
                        "reason": "; ".join(verdict.reasons) or None, "missed": verdict.missed,
                        "proposal": proposal})  # fmt: skip
            if verdict.passed:
                return reply
            prompt = request + _AGAIN.format(proposal=proposal, reasons="; ".join(verdict.reasons) or "none given")
        raise ProposalRejected(f"the gate turned the proposal down {gate.retries + 1} time(s)")

    return ask
