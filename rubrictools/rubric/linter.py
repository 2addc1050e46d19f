"""Static checks of a rubric, before any money is spent grading with it.

:func:`lint` reads the criteria's text, weights and structure and returns one row per
finding. The text checks are heuristics (word lists and patterns, documented per check);
they point at criteria a person should reread, they do not prove a criterion bad.

=========================== ======== ==================================================
check                       severity what it flags
=========================== ======== ==================================================
``vague``                   warning  no observable condition: judgement words ("good",
                                     "appropriate", "clear") and no observable verb,
                                     number or quote, or fewer than three words
``double_barrelled``        warning  two requirements in one ("explains X and proposes Y"):
                                     a conjunction followed by a second verb
``overlap``                 warning  two criteria share most content words (Jaccard >= 0.5)
``zero_weight``             warning  weight 0 on a scored criterion: paid for, never counts
``negligible_weight``       warning  under 2% of the positive weight: moves the score < 2 points in 100
``dominant_weight``         info     one criterion carries >= 60% of the positive weight
``penalty_phrased_as_quality`` error a negative weight on a desirable property: MET
                                     would subtract for doing well
``reward_phrased_as_fault`` error    a positive weight on a fault: MET would add for a failure
``indistinct_options``      warning  ordinal options sharing a value
``numeric_without_anchors`` info     a numeric range with no anchor text
``unreachable_threshold``   warning  a decision cut-off outside [0, 1]
=========================== ======== ==================================================

Example
-------
>>> import rubrictools as rt
>>> r = rt.Rubric.from_dict([{"name": "good", "requirement": "The answer is good"},
...                          {"name": "clear", "requirement": "Is clear and concise", "weight": -5}])
>>> rt.lint(r).select("criterion", "check").rows()
[('clear', 'penalty_phrased_as_quality'), ('good', 'vague'), ('clear', 'vague')]
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import combinations
from typing import TYPE_CHECKING, Any

from rubrictools.rubric.criterion import Criterion
from rubrictools.rubric.linter_words import CONJ, FAULT, OBSERVABLE, QUALITY, STOP, VAGUE, VERBS, WORD
from rubrictools.rubric.model import Rubric

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl

__all__ = ["CHECKS", "lint"]


CHECKS = (
    "vague",
    "double_barrelled",
    "overlap",
    "zero_weight",
    "negligible_weight",
    "dominant_weight",
    "penalty_phrased_as_quality",
    "reward_phrased_as_fault",
    "indistinct_options",
    "numeric_without_anchors",
    "unreachable_threshold",
)


_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def _words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def _content(text: str) -> set[str]:
    return {w.rstrip("s") if len(w) > 3 else w for w in _words(text) if w not in STOP}


def _listed(words: Iterable[str]) -> str:
    """Words as a reader writes them: 'clear', 'concise' (not Python's ['clear', 'concise'])."""
    return ", ".join(repr(w) for w in sorted(words))


def _is_vague(c: Criterion) -> str | None:
    words = _words(c.requirement)
    if len(words) < 3:
        return f"{c.requirement!r} is too short to say what to look for; state an observable condition"
    vague = sorted({w for w in words if w in VAGUE})
    concrete = any(w in OBSERVABLE for w in words) or bool(re.search(r"\d|[\"'`]", c.requirement))
    if vague and not concrete:
        return (
            f"judgement word(s) {_listed(vague)} with nothing observable to check; say what in the answer shows it "
            f"(a phrase, a step, a fact the judge can point to)"
        )
    return None


def _double_barrelled(c: Criterion) -> str | None:
    for m in CONJ.finditer(c.requirement):
        verb = (m.group(1) or m.group(2) or "").lower()
        before = c.requirement[: m.start()]
        if verb in VERBS and len(_words(before)) >= 2:
            return (
                f"joins two requirements ('...{m.group(0).strip()}...'); split it so a submission meeting one "
                "half is not forced to a single verdict"
            )
    return None


def _polarity(c: Criterion) -> tuple[str, str] | None:
    words = set(_words(c.requirement))
    fault = words & FAULT
    quality = words & QUALITY
    if c.weight < 0 and quality and not fault:
        return (
            "penalty_phrased_as_quality",
            f"negative weight on a desirable property ({_listed(quality)}): MET would subtract for doing well; "
            "phrase the fault ('contains a factual error') or make the weight positive",
        )
    if c.weight > 0 and fault and not c.disqualifier:
        first = _words(c.requirement)[:2]
        if any(w in FAULT - {"no", "not", "without", "never"} for w in first) or c.requirement.lower().startswith(
            ("contains", "includes irrelevant", "hallucinat")
        ):
            return (
                "reward_phrased_as_fault",
                f"positive weight on a fault ({_listed(fault)}): MET would add points for a failure; "
                "give it a negative weight or phrase the desired behaviour",
            )
    return None


def lint(rubric: Rubric | Any) -> pl.DataFrame:
    """Check a rubric for wording, weighting and structure problems (see module docstring).

    Parameters
    ----------
    rubric
        A :class:`~rubrictools.Rubric` or a rubric dict/list.

    Returns
    -------
    polars.DataFrame
        ``criterion, check, severity, message, other`` (the second criterion of a pair),
        errors first. An empty frame means nothing was found.

    Example
    -------
    >>> import rubrictools as rt
    >>> rubric = rt.Rubric.from_dict([
    ...     {"name": "accurate", "requirement": "States the correct refund window and cites the policy page"},
    ...     {"name": "thanks", "requirement": "Thanks the customer", "weight": 0.1}])
    >>> rt.lint(rubric).select("criterion", "check", "severity").rows()
    [('accurate', 'double_barrelled', 'warning'), ('thanks', 'negligible_weight', 'warning')]
    """
    import polars as pl

    rubric = rubric if isinstance(rubric, Rubric) else Rubric.from_dict(rubric)
    rows: list[dict[str, Any]] = []

    def add(crit: str | None, check: str, severity: str, message: str, other: str | None = None) -> None:
        rows.append(dict(criterion=crit, check=check, severity=severity, message=message, other=other))

    tpw = rubric.total_positive_weight
    scored = [c for c in rubric if not c.disqualifier]
    for c in rubric:
        if c.rule is None:
            if (msg := _is_vague(c)) is not None and c.options is None and c.range is None:
                add(c.name, "vague", "warning", msg)
            if (msg := _double_barrelled(c)) is not None:
                add(c.name, "double_barrelled", "warning", msg)
        if (pol := _polarity(c)) is not None:
            add(c.name, pol[0], "error", pol[1])
        if not c.disqualifier:
            if c.weight == 0:
                add(
                    c.name,
                    "zero_weight",
                    "warning",
                    "weight 0: the criterion is graded (and paid for) but never changes the score",
                )
            elif tpw > 0 and abs(c.weight) / tpw < 0.02:
                add(
                    c.name,
                    "negligible_weight",
                    "warning",
                    f"|weight| {abs(c.weight):g} is {100 * abs(c.weight) / tpw:.1f}% of the positive weight {tpw:g}: "
                    f"it moves the score by at most {100 * abs(c.weight) / tpw:.1f} points in 100",
                )
            if c.weight > 0 and tpw > 0 and len(scored) >= 3 and c.weight / tpw >= 0.6:
                add(
                    c.name,
                    "dominant_weight",
                    "info",
                    f"weight {c.weight:g} carries {100 * c.weight / tpw:.0f}% of the positive weight {tpw:g}: the "
                    "score is mostly this one verdict, whatever the other criteria say",
                )
        if c.options is not None and c.scale == "ordinal":
            vals = [o.value for o in c.options if not o.na]
            if len(set(vals)) < len(vals):
                add(
                    c.name,
                    "indistinct_options",
                    "warning",
                    f"ordinal options share values {vals}: the judge's choice between them cannot change the score",
                )
        if c.range is not None and not c.range.anchors:
            add(
                c.name,
                "numeric_without_anchors",
                "info",
                f"numeric range {c.range.describe()} has no anchors: say what the ends (and middle) of the scale mean",
            )
    llm = [c for c in rubric if c.rule is None]
    bags = {c.name: _content(c.requirement) for c in llm}
    for a, b in combinations(llm, 2):
        A, B = bags[a.name], bags[b.name]
        if len(A) >= 3 and len(B) >= 3:
            jac = len(A & B) / len(A | B)
            if jac >= 0.5:
                add(
                    a.name,
                    "overlap",
                    "warning",
                    f"shares {len(A & B)} of {len(A | B)} content words with {b.name!r} (Jaccard {jac:.2f}): "
                    "merge them or make each ask for something different",
                    other=b.name,
                )
    for t in rubric.thresholds:
        if not 0.0 <= t.min <= 1.0:
            add(
                None,
                "unreachable_threshold",
                "warning",
                f"decision {t.label!r} starts at {t.min:g}, outside the normalised score range [0, 1]",
            )
    schema = {
        "criterion": pl.String,
        "check": pl.String,
        "severity": pl.String,
        "message": pl.String,
        "other": pl.String,
    }
    out = pl.DataFrame(rows, schema=schema)
    pos = {n: i for i, n in enumerate(rubric.names)}
    return (
        out.with_columns(
            pl.col("severity").replace_strict(_SEVERITY_ORDER, return_dtype=pl.Int64).alias("__s"),
            pl.col("criterion").replace_strict(pos, default=len(pos), return_dtype=pl.Int64).alias("__p"),
        )
        .sort("__s", "__p", maintain_order=True)
        .drop("__s", "__p")
    )
