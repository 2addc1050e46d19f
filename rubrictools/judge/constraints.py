"""Output constraints: rules a judge's reply must follow (rubrify's ``OutputConstraint``).

A constraint names a field of each verdict (``explanation`` or ``evidence``) and a rule:

================= ====================================================================
``kind``          the field must ...
================= ====================================================================
``word_count``    have at least ``min`` and at most ``max`` words (runs of non-space)
``char_limit``    have at least ``min`` and at most ``max`` characters
``item_count``    hold at least ``min`` and at most ``max`` items (non-blank lines)
``prefix_suffix`` start with ``prefix`` and/or end with ``suffix`` (after trimming spaces)
``token``         contain ``token`` (``forbid=True``: must not contain it)
================= ====================================================================

The judge is told every constraint (a "Constraints on your reply" section of its system
message), and every answered verdict is checked, with polars expressions over the whole table
(:func:`rubrictools.grading.constraints.check_constraints`). A ``soft`` constraint that fails
adds a line to the row's ``warnings``; a ``hard`` one makes the row an error row (``error_kind
"constraint"``), its reply kept in ``raw_response``. Constraints are checked per verdict
(rubrify's ``scope="criterion"``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["OutputConstraint", "constraints_note"]

Kind = Literal["word_count", "char_limit", "item_count", "prefix_suffix", "token"]

_NEEDS = {
    "word_count": ("min", "max"),
    "char_limit": ("min", "max"),
    "item_count": ("min", "max"),
    "prefix_suffix": ("prefix", "suffix"),
    "token": ("token",),
}
_UNIT = {"word_count": "words", "char_limit": "characters", "item_count": "items (non-blank lines)"}


class OutputConstraint(BaseModel):
    """One rule on a field of the judge's reply (see the module docstring).

    Example
    -------
    >>> import rubrictools as rt
    >>> c = rt.OutputConstraint(id="because", kind="prefix_suffix", prefix="BECAUSE:")
    >>> c.render()
    'the explanation must start with "BECAUSE:"'
    >>> rt.OutputConstraint(id="len", kind="word_count", min=10, enforcement="hard").render()
    'the explanation must have at least 10 words'
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    kind: Kind
    target: Literal["explanation", "evidence"] = "explanation"
    enforcement: Literal["soft", "hard"] = "soft"
    min: int | None = Field(default=None, ge=0)
    max: int | None = Field(default=None, ge=0)
    prefix: str | None = None
    suffix: str | None = None
    token: str | None = None
    forbid: bool = False
    description: str | None = None

    @model_validator(mode="after")
    def _fields_of_kind(self) -> OutputConstraint:
        allowed = _NEEDS[self.kind]
        given = [f for f in ("min", "max", "prefix", "suffix", "token") if getattr(self, f) not in (None, "")]
        stray = [f for f in given if f not in allowed]
        if stray:
            raise ValueError(f"constraint {self.id!r}: a {self.kind} constraint takes {list(allowed)}, not {stray}")
        if not any(f in given for f in allowed):
            raise ValueError(f"constraint {self.id!r}: a {self.kind} constraint needs one of {list(allowed)}")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"constraint {self.id!r}: min ({self.min}) is above max ({self.max})")
        if self.forbid and self.kind != "token":
            raise ValueError(f"constraint {self.id!r}: forbid= applies to a token constraint only")
        return self

    def render(self) -> str:
        """The rule in words, as the judge is told it."""
        if self.description:
            return self.description
        f = f"the {self.target}"
        if self.kind in _UNIT:
            bounds = [f"at least {self.min}" if self.min is not None else "", f"at most {self.max}" if self.max else ""]
            if self.max == 0:
                bounds[1] = "at most 0"
            return f"{f} must have {' and '.join(b for b in bounds if b)} {_UNIT[self.kind]}"
        if self.kind == "prefix_suffix":
            ends = [
                f'start with "{self.prefix}"' if self.prefix else "",
                f'end with "{self.suffix}"' if self.suffix else "",
            ]
            return f"{f} must {' and '.join(e for e in ends if e)}"
        return f'{f} must {"not " if self.forbid else ""}contain "{self.token}"'

    def _measure(self, text: pl.Expr) -> pl.Expr:
        if self.kind == "word_count":
            return text.str.count_matches(r"\S+")
        if self.kind == "char_limit":
            return text.str.len_chars()
        return text.str.count_matches(r"(?m)^[ \t]*\S")  # item_count: non-blank lines

    def broken(self) -> pl.Expr:
        """True where a row's ``target`` breaks this constraint (a null field counts as empty)."""
        text = pl.col(self.target).fill_null("").str.strip_chars()
        if self.kind in _UNIT:
            n = self._measure(text)
            low = (n < self.min) if self.min is not None else pl.lit(False)
            high = (n > self.max) if self.max is not None else pl.lit(False)
            return low | high
        if self.kind == "prefix_suffix":
            bad = pl.lit(False)
            if self.prefix:
                bad = bad | ~text.str.starts_with(self.prefix)
            if self.suffix:
                bad = bad | ~text.str.ends_with(self.suffix)
            return bad
        has = text.str.contains(self.token or "", literal=True)
        return has if self.forbid else ~has

    def message(self) -> str:
        """What a row that breaks it is told (``warnings`` or ``error``)."""
        return f"constraint {self.id}: {self.render()}"


def constraints_note(constraints: Sequence[OutputConstraint]) -> str | None:
    """The system-message section telling the judge every constraint (None: there are none)."""
    if not constraints:
        return None
    lines = "\n".join(f"- {c.render()}" for c in constraints)
    return f"Constraints on your reply (they apply to every verdict you give):\n{lines}"
