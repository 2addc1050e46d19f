"""Output constraints: rules a judge's reply must follow (rubrify's ``OutputConstraint``).

A constraint names a field of each verdict (``explanation`` or ``evidence``) and a rule:

================= ====================================================================
``kind``          the field must ...
================= ====================================================================
``word_count``    have at least ``min`` and at most ``max`` words (runs of non-space)
``char_limit``    have at least ``min`` and at most ``max`` characters
``item_count``    hold at least ``min`` and at most ``max`` items (non-blank lines)
``prefix_suffix`` start with ``prefix`` and/or end with ``suffix`` (after trimming spaces)
``token``         contain ``token``, exactly (case-sensitive; ``forbid=True``: must not)
================= ====================================================================

The judge is told every constraint (a "Constraints on your reply" section of its system
message), and every answered verdict is checked, with polars expressions over the whole table
(:func:`rubrictools.grading.constraints.check_replies`). What a broken constraint does is its
``enforcement``:

* ``"soft"``: a line in the row's ``warnings``; the verdict stands;
* ``"hard"``: the row becomes an error row (``error_kind "constraint"``, verdict null), its
  reply kept in ``raw_response``;
* ``"disqualify"`` (rubrify's hard constraint): the verdict stands, the row's
  ``disqualified_by`` says which constraint it broke, and :func:`rubrictools.score` caps the
  submission's score at 0 (its ``disqualified`` column names the constraint, its ``decision``
  is the rubric's ``disqualified_decision``).

What is checked is its ``scope`` (rubrify's three):

* ``"criterion"`` (default): each verdict's field on its own;
* ``"call"``: the fields of all verdicts one judge call answered, joined by newlines (a text
  repeated on several rows of one call, a shared rationale, once), checked once; every row of
  the call shares the outcome. Per-criterion grading makes one call per criterion, so it
  equals ``"criterion"`` there;
* ``"judgment"``: the fields of all of one judge's verdicts on a submission, joined (a text
  repeated within one call once), checked once (e.g. "at most 200 words of explanation in
  all"); every row of the submission shares it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from rubrictools.rubric.formats import field_errors

__all__ = ["OutputConstraint", "from_rubrify", "parse_constraints"]

Kind = Literal["word_count", "char_limit", "item_count", "prefix_suffix", "token"]

_NEEDS = {
    "word_count": ("min", "max"),
    "char_limit": ("min", "max"),
    "item_count": ("min", "max"),
    "prefix_suffix": ("prefix", "suffix"),
    "token": ("token",),
}
_UNIT = {"word_count": "words", "char_limit": "characters", "item_count": "items (non-blank lines)"}
_ONE = {"word_count": "word", "char_limit": "character", "item_count": "item (non-blank line)"}


class OutputConstraint(BaseModel):
    """One rule on a field of the judge's reply (see the module docstring).

    Parameters
    ----------
    id
        A short name, quoted in warnings, error rows and ``disqualified_by``.
    kind
        ``"word_count"``, ``"char_limit"``, ``"item_count"``, ``"prefix_suffix"`` or
        ``"token"`` (the table above).
    target
        The field checked: ``"explanation"`` (default) or ``"evidence"``.
    enforcement
        ``"soft"`` (default), ``"hard"`` or ``"disqualify"``, as above.
    scope
        ``"criterion"`` (default), ``"call"`` or ``"judgment"``, as above.
    min, max
        The bounds of a count (``word_count``, ``char_limit``, ``item_count``), inclusive.
    prefix, suffix
        The start and/or end a ``prefix_suffix`` constraint asks for.
    token, forbid
        The text a ``token`` constraint asks for (``forbid=True``: must not contain).
    description
        Why the rule exists (shown to the judge after the rule).

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

    id: str = Field(min_length=1, pattern=r"^[^;\n]*[^;\s][^;\n]*$")  # shown joined by "; " in messages
    kind: Kind
    target: Literal["explanation", "evidence"] = "explanation"
    enforcement: Literal["soft", "hard", "disqualify"] = "soft"
    scope: Literal["criterion", "call", "judgment"] = "criterion"
    min: int | None = Field(default=None, ge=0)
    max: int | None = Field(default=None, ge=0)
    prefix: str | None = None
    suffix: str | None = None
    token: str | None = None
    forbid: bool = False
    description: str | None = None

    @field_validator("min", "max", mode="before")
    @classmethod
    def _count_not_bool(cls, v: Any) -> Any:
        if isinstance(v, bool):
            raise ValueError(f"a count is a whole number, not {v!r}")
        return v

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
        # the field is trimmed before the check: a prefix starting (a suffix ending) with a space never matches
        if (self.prefix or "x")[0].isspace() or (self.suffix or "x")[-1].isspace():
            raise ValueError(
                f"constraint {self.id!r}: a prefix may not start, nor a suffix end, with a space or line break "
                "(the reply is trimmed before the check, so it could never match)"
            )
        return self

    @classmethod
    def from_rubrify(cls, item: Mapping[str, Any]) -> OutputConstraint:
        """One of a rubrify rubric's ``output_constraints`` (see :func:`from_rubrify`)."""
        return from_rubrify(item)

    def render(self) -> str:
        """The rule in words, as the judge is told it (a ``description`` follows it in brackets:
        the rule checked is always the one stated)."""
        rule = self._rule()
        return f"{rule} ({self.description})" if self.description else rule

    def _rule(self) -> str:
        f = f"the {self.target}"
        if self.kind in _UNIT:
            bounds = [f"at least {self.min}" if self.min is not None else "", f"at most {self.max}" if self.max else ""]
            if self.max == 0:
                bounds[1] = "at most 0"
            last = self.max if self.max is not None else self.min
            unit = _ONE[self.kind] if last == 1 else _UNIT[self.kind]
            return f"{f} must have {' and '.join(b for b in bounds if b)} {unit}"
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

    def broken(self, text: pl.Expr | None = None) -> pl.Expr:
        """True where a row's ``target`` (or ``text``, e.g. a call's joined fields) breaks this
        constraint (a null field counts as empty)."""
        text = (pl.col(self.target) if text is None else text).fill_null("").str.strip_chars()
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
        """What a row that breaks it is told (``warnings``, ``error`` or ``disqualified_by``)."""
        over = {
            "criterion": "",
            "call": " (over its call's verdicts)",
            "judgment": " (over all verdicts on the submission)",
        }
        return f"constraint {self.id}: {self.render()}{over[self.scope]}"


_RUBRIFY_TARGETS = {"rationale": "explanation", "reasoning": "explanation", "explanation": "explanation",
                    "justification": "explanation", "evidence": "evidence", "quote": "evidence"}  # fmt: skip
_RUBRIFY_ENFORCEMENT = {"hard": "disqualify", "soft": "soft"}


def from_rubrify(item: Mapping[str, Any]) -> OutputConstraint:
    """One of a rubrify file's ``output_constraints``: ``kind``, ``id``, ``description``,
    ``target_field`` (its rationale is our explanation), ``enforcement`` (rubrify's ``"hard"``
    disqualifies: ``"disqualify"``), ``scope`` (rubrify's default ``"call"``) and the kind's
    own fields (``count`` with ``mode`` ``"min"``/``"max"``, or ``min``/``max``; ``prefix``,
    ``suffix``; ``token``, ``forbid``). A field with no meaning here is refused by name."""
    if not isinstance(item, Mapping):
        raise TypeError(f"an output constraint must be a mapping of its fields, got {type(item).__name__}")
    d = dict(item)
    if "target_field" in d and "target" in d:
        raise ValueError(f"output constraint {d.get('id')!r}: give target_field or target, not both")
    for key in ("enforcement", "scope", "mode", "kind", "target_field", "target"):
        if key in d and not isinstance(d[key], str):
            raise ValueError(f"output constraint {d.get('id')!r} field {key!r}: expected text, got {d[key]!r}")
    known = {"kind", "id", "description", "target_field", "target", "enforcement", "scope", "count", "mode"}
    known |= {"min", "max", "prefix", "suffix", "token", "forbid"}
    unknown = sorted(set(d) - known)
    if unknown:
        raise ValueError(f"output constraint {d.get('id')!r}: fields with no rubrictools meaning: {unknown}")
    target = str(d.pop("target_field", d.pop("target", "rationale")))
    if target not in _RUBRIFY_TARGETS:
        raise ValueError(
            f"output constraint {d.get('id')!r}: target_field {target!r} is not a field of a verdict "
            f"(one of {sorted(_RUBRIFY_TARGETS)})"
        )
    d["target"] = _RUBRIFY_TARGETS[target]
    enforcement = d.pop("enforcement", "soft")
    d["enforcement"] = _RUBRIFY_ENFORCEMENT.get(enforcement, enforcement)
    d.setdefault("scope", "call")
    if "mode" in d and "count" not in d:
        raise ValueError(f"output constraint {d.get('id')!r}: mode {d['mode']!r} needs a count")
    if "count" in d:
        mode = d.pop("mode", "max")
        if mode not in ("min", "max"):
            raise ValueError(f"output constraint {d.get('id')!r}: mode must be 'min' or 'max', got {mode!r}")
        if d.get(mode) is not None:
            raise ValueError(f"output constraint {d.get('id')!r}: count and {mode} are both given; give one")
        d[mode] = d.pop("count")
    return _validated(d, f"output constraint {d.get('id')!r}")


def _validated(fields: dict[str, Any], where: str) -> OutputConstraint:
    """An :class:`OutputConstraint` from its fields; an error names ``where`` and each field."""
    try:
        return OutputConstraint.model_validate(fields)
    except ValidationError as e:
        raise ValueError(f"{where} {field_errors(e, 'constraint')}") from None


def parse_constraints(value: Any, name: str) -> tuple[OutputConstraint, ...]:
    """``value`` (constraints or mappings of their fields) as a tuple of :class:`OutputConstraint`,
    each error naming its place (``name[i]``); duplicate ids are refused."""
    if value is None:
        return ()
    if isinstance(value, (OutputConstraint, Mapping)):  # one constraint
        value = [value]
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable) or hasattr(value, "columns"):
        raise TypeError(f"{name} must be a list of rt.OutputConstraint (or mappings), got {type(value).__name__}")
    if isinstance(value, (set, frozenset)):
        raise TypeError(
            f"{name} must be a list (in the order the judge is told them), got a {type(value).__name__}: its order "
            "changes between runs, and with it the prompt and its cache key"
        )
    out = []
    for i, c in enumerate(value):
        if isinstance(c, Mapping):
            c = _validated(dict(c), f"{name}[{i}]")
        if not isinstance(c, OutputConstraint):
            raise TypeError(f"{name}[{i}]: expected rt.OutputConstraint or a mapping, got {type(c).__name__}")
        out.append(c)
    ids = [c.id for c in out]
    if len(set(ids)) < len(ids):
        raise ValueError(f"{name}: duplicate ids {sorted({x for x in ids if ids.count(x) > 1})}")
    return tuple(out)
