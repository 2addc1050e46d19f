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

_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
_TOKEN = re.compile(r"[a-z]{3,}|\d+(?:\.\d+)?")
_KEY = re.compile(r"\d+(?:\.\d+)?|'([^']+)'|\"([^\"]+)\"")
_EXAMPLES = re.compile(r"\(([^)]*)\)")
_STOP = frozenset(
    {
        "the",
        "and",
        "for",
        "are",
        "its",
        "not",
        "but",
        "any",
        "all",
        "can",
        "has",
        "had",
        "was",
        "were",
        "been",
        "being",
        "into",
        "onto",
        "than",
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
        "what",
        "when",
        "where",
        "whom",
        "whose",
        "who",
        "how",
        "why",
        "your",
        "you",
        "our",
        "they",
        "them",
        "then",
        "response",
        "submission",
        "answer",
        "answers",
        "states",
        "mentions",
        "gives",
        "uses",
        "least",
        "more",
        "most",
        "some",
        "such",
        "each",
        "other",
        "very",
        "also",
        "only",
        "just",
        "like",
        "e.g",
        "etc",
        "customer",
        "customers",
        "reader",
        "user",
        "users",
    }
)
# Cue phrases that show common rubric concepts in a text (a requirement word's 5-letter stem ->
# phrases): a crude stand-in for what a model understands, so the demos show a mix.
_POLITE = ("thank", "sorry", "happy to help", "please", "appreciate", "glad", "understand")
_STEPS = ("1)", "1.", "first", "then", "go to", "open ", "click", "press", "choose", "use the", " > ")
_POLICY = ("policy", "help page", "guide", "terms", "help >", "documentation", "article")
_PROMISE = ("promise", "guarantee", "definitely", "i will", "never have to", "tomorrow", "today")
_CUES: dict[str, tuple[str, ...]] = {
    "court": _POLITE,
    "polit": _POLITE,
    "ackno": _POLITE,
    "empat": _POLITE,
    "steps": _STEPS,
    "concr": _STEPS,
    "instr": _STEPS,
    "polic": _POLICY,
    "refer": _POLICY,
    "promi": _PROMISE,
    "guara": _PROMISE,
    "direc": ("yes", "no,", "you can", "it is", "your ", "because"),
    "quest": ("yes", "no,", "you can", "it is", "your ", "because"),
    "expla": ("because", "so ", "which means", "this is why", "due to"),
    "evide": ("for example", "study", "studies", "percent", "%", "data", "research"),
}


def _stem(word: str) -> str:
    return word if word[0].isdigit() else word[:5]


def _found(stem: str, text: str, stems: set[str]) -> bool:
    return stem in stems or any(cue in text for cue in _CUES.get(stem, ()))


def _overlap(text: str, requirement: str) -> tuple[float, str]:
    """(fraction of the requirement met, why): numbers and quoted terms in the requirement must
    all appear; examples in parentheses count as one term met by any of them; the other
    content words (3+ letters, stop words out, compared by their first five letters, or by a
    cue phrase for a few common concepts) count by share."""
    low, req = text.lower(), requirement.lower()
    stems = {_stem(w) for w in _TOKEN.findall(low)}
    keys = [m.group(1) or m.group(2) or m.group(0) for m in _KEY.finditer(req)]
    missing = [k for k in keys if not re.search(rf"(?<![\w.]){re.escape(k)}(?![\w])", low)]
    if keys:
        return (0.0 if missing else 1.0), f"scripted heuristic: {len(keys) - len(missing)}/{len(keys)} key terms found"
    examples = [_EXAMPLES.findall(req)]
    plain = _EXAMPLES.sub(" ", req)
    words = sorted({_stem(w) for w in _TOKEN.findall(plain) if w not in _STOP})
    hits = sum(_found(w, low, stems) for w in words)
    terms = len(words)
    for group in examples[0]:
        alts = {_stem(w) for w in _TOKEN.findall(group) if w not in _STOP}
        if alts:
            terms += 1
            hits += any(_found(w, low, stems) for w in alts)
    frac = hits / terms if terms else 0.0
    return frac, f"scripted heuristic: {hits}/{terms} requirement terms found"


def overlap_rule(text: str, criterion: Criterion) -> tuple[str, str, str | None]:
    """Crude heuristic (not a model): MET when the text holds the requirement's numbers and
    quoted terms, or at least 40% of its other terms (words of 3+ letters compared by their
    first five letters, a few common concepts such as politeness, steps, policy and promises
    also by cue phrases).

    Multi-choice criteria pick the option at the same fraction of the option list, numeric
    ones the point at that fraction of the range. The evidence is the first sentence that
    holds a requirement term.

    >>> c = Criterion(name="correct", requirement="Gives the right answer (42)")
    >>> overlap_rule("6 x 7 = 42.", c)[0], overlap_rule("Obviously 41.", c)[0]
    ('MET', 'UNMET')
    """
    frac, why = _overlap(text, criterion.requirement)
    words = {w for w in _TOKEN.findall(criterion.requirement.lower()) if w not in _STOP}
    quote = next(
        (m.group(0).strip() for m in _SENTENCE.finditer(text) if any(_stem(w) in m.group(0).lower() for w in words)),
        None,
    )
    if criterion.range is not None:
        r = criterion.range
        x = r.min + frac * (r.max - r.min)
        if r.step is not None:
            x = r.min + round((x - r.min) / r.step) * r.step
        return format_number(x), why, quote
    if criterion.options is None:
        return (MET if frac >= 0.4 else UNMET), why, quote
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
