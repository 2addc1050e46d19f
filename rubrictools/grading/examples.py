"""Few-shot examples: labelled submissions shown to the judge for calibration.

One table serves every mode. Per criterion (per-criterion, per-item and grouped modes) it holds
``submission, criterion, verdict[, explanation]``; each criterion is shown its own rows.
Holistic mode asks for one 0-100 score, so its examples are scored submissions: either a
``score`` column (0-100) given directly, or the same per-criterion table, where a submission
labelled on every criterion of the rubric is scored by the rubric's own formula,
``100 * rubric.score(labels)``, which is what a judge deciding those labels should answer.
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from rubrictools.frames import to_polars
from rubrictools.rubric import Rubric
from rubrictools.submissions import split_submission

__all__ = ["Example", "HolisticExample", "examples_by_criterion", "holistic_examples"]

Example = tuple[str, str, str | None]
"""One per-criterion example: ``(submission text, verdict label, explanation or None)``."""

HolisticExample = tuple[str, float, str | None]
"""One holistic example: ``(submission text, 0-100 score, explanation or None)``."""


def _frame(examples: Any, column: str) -> tuple[pl.DataFrame, str]:
    ex = to_polars(examples, name="examples")
    return ex, ("submission" if "submission" in ex.columns else column)


def examples_by_criterion(examples: Any, column: str, max_examples: int) -> dict[str, list[Example]]:
    """Few-shot examples per criterion (``submission|column, criterion, verdict[, explanation]``),
    at most ``max_examples`` each, in table order.

    >>> import polars as pl
    >>> ex = pl.DataFrame({"submission": ["Hi there", "Go away"], "criterion": ["polite"] * 2,
    ...                    "verdict": ["MET", "UNMET"]})
    >>> examples_by_criterion(ex, "submission", 3)["polite"][1]
    ('Go away', 'UNMET', None)
    """
    if examples is None:
        return {}
    ex, text_col = _frame(examples, column)
    need = {text_col, "criterion", "verdict"}
    if not need <= set(ex.columns):
        raise ValueError(f"examples: expected columns {sorted(need)}, got {ex.columns}")
    has_expl = "explanation" in ex.columns
    out: dict[str, list[Example]] = {}
    for r in ex.iter_rows(named=True):
        lst = out.setdefault(str(r["criterion"]), [])
        if len(lst) < max_examples:
            text = split_submission(r[text_col]).output
            lst.append((text, str(r["verdict"]), r["explanation"] if has_expl else None))
    return out


def _given_scores(ex: pl.DataFrame, text_col: str, max_examples: int) -> list[HolisticExample]:
    score = ex["score"]
    if not score.dtype.is_numeric():
        raise ValueError(f"examples: column 'score' must hold numbers from 0 to 100, got {score.dtype}")
    has_expl = "explanation" in ex.columns
    out: list[HolisticExample] = []
    for i, r in enumerate(ex.head(max_examples).iter_rows(named=True)):
        s = r["score"]
        if s is None or not math.isfinite(s) or not 0 <= s <= 100:
            raise ValueError(f"examples: row {i} has score {s!r}; a holistic example's score is a number from 0 to 100")
        out.append((split_submission(r[text_col]).output, float(s), r["explanation"] if has_expl else None))
    return out


def holistic_examples(examples: Any, column: str, max_examples: int, rubric: Rubric) -> list[HolisticExample]:
    """Scored examples for holistic mode (see the module docstring), at most ``max_examples``.

    With per-criterion rows, each submission labelled on every criterion of ``rubric`` becomes
    one example whose score is ``100 * rubric.score(labels)`` and whose explanation lists its
    verdicts (``"a: MET; b: UNMET"``, then the row explanations when given). A table in which
    no submission is labelled on every criterion is refused, naming the criteria missing.

    >>> import polars as pl, rubrictools as rt
    >>> r = rt.Rubric.from_dict([{"name": "a", "requirement": "x", "weight": 3},
    ...                          {"name": "b", "requirement": "y", "weight": 1}])
    >>> ex = pl.DataFrame({"submission": ["s1", "s1"], "criterion": ["a", "b"], "verdict": ["MET", "UNMET"]})
    >>> holistic_examples(ex, "submission", 3, r)
    [('s1', 75.0, 'a: MET; b: UNMET')]
    """
    if examples is None or max_examples == 0:
        return []
    ex, text_col = _frame(examples, column)
    if text_col not in ex.columns:
        raise ValueError(f"examples: expected a {text_col!r} column, got {ex.columns}")
    if "score" in ex.columns:
        return _given_scores(ex, text_col, max_examples)
    need = {"criterion", "verdict"}
    if not need <= set(ex.columns):
        raise ValueError(
            f"examples: holistic mode needs a 'score' column (0-100) or per-criterion columns {sorted(need)}; "
            f"got {ex.columns}"
        )
    has_expl = "explanation" in ex.columns
    names = list(rubric.names)
    seen: dict[str, dict[str, tuple[str, str | None]]] = {}
    for r in ex.iter_rows(named=True):
        label = (str(r["verdict"]), r["explanation"] if has_expl else None)
        seen.setdefault(r[text_col], {})[str(r["criterion"])] = label
    out: list[HolisticExample] = []
    best_missing: list[str] = names
    for raw, labels in seen.items():
        missing = [n for n in names if n not in labels]
        if missing:
            best_missing = min(best_missing, missing, key=len)
            continue
        score = rubric.score([labels[n][0] for n in names])
        why = "; ".join(f"{n}: {labels[n][0]}" + (f" ({labels[n][1]})" if labels[n][1] else "") for n in names)
        out.append((split_submission(raw).output, round(100 * (score or 0.0), 2), why))
        if len(out) == max_examples:
            break
    if not out:
        raise ValueError(
            "examples: holistic mode shows scored submissions, and no example submission has a verdict for every "
            f"criterion of the rubric (the closest lacks {best_missing}); give a 'score' column (0-100) or label "
            "each example on every criterion"
        )
    return out
