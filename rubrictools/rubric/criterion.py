"""One rubric criterion: a requirement, a weight and the answers it allows."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from rubrictools.rubric.labels import (
    BINARY_LABELS,
    CANNOT_ASSESS,
    MET,
    UNMET,
    Aggregation,
    Scale,
    format_number,
    normalize_label,
    require_finite,
)
from rubrictools.rubric.options import NumericRange, Option
from rubrictools.rubric.rule import Rule

__all__ = ["Criterion", "kind_note"]

_BINARY_VALUES: dict[str, float | None] = {MET: 1.0, UNMET: 0.0, CANNOT_ASSESS: None}


class Criterion(BaseModel):
    """A single weighted requirement.

    Parameters
    ----------
    requirement
        What the submission must do (or, for a penalty, must not do).
    weight
        Finite float, default ``10.0``. Negative means a penalty: MET subtracts.
    name
        Short identifier, unique within a rubric (case-insensitive). Auto-named
        ``c1..cn`` by position when omitted.
    options
        ``None`` for a binary criterion; otherwise at least two non-NA :class:`Option`.
    scale
        ``"ordinal"`` (ordered options, default) or ``"nominal"`` for multi-choice criteria;
        ``"numeric"`` for a number on ``range``. ``scale_type`` (autorubric's key) is an alias.
    range
        A :class:`NumericRange` (``{"min": 0, "max": 5, "step": 1, "anchors": {...}}``):
        the judge answers a number, normalised to ``[0, 1]`` for scoring.
    group
        Group name: a declared :class:`Group` of the rubric, or a section name kept from
        sectioned rubric files.
    aggregation
        Optional per-criterion ensemble aggregation override. autorubric's names are read
        as ours: ``mode`` is ``majority`` and ``weighted_mode`` is ``weighted``.
    rule
        A deterministic :class:`~rubrictools.rubric.Rule` (regex, substring, length,
        JSON schema) deciding the criterion without an LLM; ``requirement`` then defaults to
        the rule's description.
    disqualifier, cap
        ``disqualifier=True``: when MET, the submission's score is capped at ``cap``
        (default 0) and ``score`` says why. A disqualifier adds nothing to the weighted sum
        (its weight is 0).
    required
        When the criterion earns its lowest outcome (UNMET, the lowest option, the range
        minimum), the score is capped at ``cap`` (default 0), like a disqualifier.
    evidence
        Ask the judge to quote the passage supporting its verdict; the quote is checked
        against the submission (``evidence_ok`` column of the verdict table).
    tags
        Free labels (``"axis:accuracy"``, ``"theme:emergency"``...); unlike ``group`` a
        criterion may carry several. :func:`rubrictools.healthbench_score` reports a
        sub-score per tag. Not shown to the judge.
    applies_when
        ``{column: [values]}``: the criterion applies only to rows whose ``column`` (of the
        graded frame) holds one of ``values`` (every condition must hold; values compare as
        text; a null never matches), as rubrify's genre-conditional criteria. Elsewhere it is
        not asked and gets a ``NOT_APPLICABLE`` row, which no scoring strategy counts.

    Example
    -------
    >>> Criterion(requirement="Cites a source", weight=5).is_binary
    True
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    requirement: str = ""
    weight: float = 10.0
    name: str | None = None
    options: tuple[Option, ...] | None = None
    scale: Scale | None = Field(default=None, alias="scale_type")
    range: NumericRange | None = None
    group: str | None = None
    aggregation: Aggregation | None = None
    rule: Rule | None = None
    disqualifier: bool = False
    required: bool = False
    cap: float | None = None
    evidence: bool = False
    tags: tuple[str, ...] = ()
    applies_when: dict[str, tuple[str, ...]] | None = None

    @field_validator("applies_when", mode="before")
    @classmethod
    def _conditions(cls, v: Any) -> Any:
        if v is None:
            return None
        if not isinstance(v, dict) or not v:
            raise ValueError(f"applies_when must be a mapping {{column: [values]}}, got {v!r}")
        out = {}
        for col, vals in v.items():
            if not isinstance(col, str) or not col.strip():
                raise ValueError(f"applies_when: a column name must be non-blank text, got {col!r}")
            vals = [vals] if isinstance(vals, (str, int, float)) and not isinstance(vals, bool) else vals
            if not isinstance(vals, (list, tuple)) or not vals or any(isinstance(x, (bool, dict, list)) for x in vals):
                raise ValueError(f"applies_when[{col!r}] must be a value or a non-empty list of values, got {vals!r}")
            out[col] = tuple(str(x) for x in vals)
        return out

    @field_validator("tags", mode="before")
    @classmethod
    def _tags_text(cls, v: Any) -> Any:
        if v is None:
            return ()
        if isinstance(v, str):
            raise ValueError(f"tags must be a list of strings, got the string {v!r}; write [{v!r}]")
        items = list(v)
        bad = [t for t in items if not isinstance(t, str) or not t.strip()]
        if bad:
            raise ValueError(f"tags must be non-blank strings, got {bad[0]!r}")
        dup = sorted({t for t in items if items.count(t) > 1})
        if dup:
            raise ValueError(f"duplicate tags {dup}")
        return tuple(items)

    @field_validator("aggregation", mode="before")
    @classmethod
    def _peer_aggregation_names(cls, v: Any) -> Any:
        return {"mode": "majority", "weighted_mode": "weighted"}.get(v, v) if isinstance(v, str) else v

    @field_validator("name")
    @classmethod
    def _name_not_blank(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("name must not be blank (omit it to auto-name)")
        return v

    @field_validator("weight", mode="before")
    @classmethod
    def _weight_number(cls, v: Any) -> Any:
        if isinstance(v, (bool, str)):
            raise ValueError(f"weight must be a number, got {v!r} ({type(v).__name__}); write it without quotes")
        return v

    @field_validator("weight")
    @classmethod
    def _weight_finite(cls, v: float) -> float:
        return require_finite(v, "weight")

    @field_validator("cap")
    @classmethod
    def _cap_in_unit_interval(cls, v: float | None) -> float | None:
        if v is not None and not (math.isfinite(v) and 0.0 <= v <= 1.0):
            raise ValueError(f"cap must be a score in [0, 1], got {v!r}")
        return v

    @model_validator(mode="after")
    def _check_kind(self) -> Criterion:
        if not self.requirement.strip():
            if self.rule is None:
                raise ValueError("requirement must not be blank")
            object.__setattr__(self, "requirement", f"The submission {self.rule.describe()}")
        if self.rule is not None and (self.options is not None or self.range is not None or self.scale is not None):
            raise ValueError("a rule criterion is binary (MET when the rule holds): drop options/range/scale")
        if self.disqualifier:
            if self.required:
                raise ValueError("a criterion is either a disqualifier (MET caps the score) or required, not both")
            if self.options is not None or self.range is not None:
                raise ValueError("a disqualifier must be binary (MET triggers it): drop options/range")
            if "weight" in self.model_fields_set and self.weight != 0:
                raise ValueError(
                    f"a disqualifier acts through its cap, not its weight; omit weight or set it to 0 (got "
                    f"{self.weight:g})"
                )
            object.__setattr__(self, "weight", 0.0)
        if self.cap is not None and not (self.disqualifier or self.required):
            raise ValueError("cap only applies to a disqualifier or a required criterion")
        if self.range is not None or self.scale == "numeric":
            if self.range is None:
                raise ValueError("a numeric criterion needs range={'min': ..., 'max': ...}")
            if self.options is not None:
                raise ValueError("a numeric criterion has a range, not options")
            object.__setattr__(self, "scale", "numeric")
            return self
        if self.options is None:
            if self.scale is not None:
                raise ValueError(
                    "scale only applies to multi-choice criteria (set options) or numeric ones (set range)"
                )
            return self
        if sum(not o.na for o in self.options) < 2:
            raise ValueError("a multi-choice criterion needs at least 2 non-NA options")
        seen: dict[str, str] = {}
        for o in self.options:
            key = normalize_label(o.label)
            if key in seen:
                raise ValueError(f"duplicate option label {o.label!r} (same as {seen[key]!r} ignoring case/spaces)")
            seen[key] = o.label
        if self.scale is None:
            object.__setattr__(self, "scale", "ordinal")
        return self

    # ------------------------------------------------------------------ queries
    @property
    def is_binary(self) -> bool:
        """True when the criterion answers MET/UNMET/CANNOT_ASSESS."""
        return self.options is None and self.range is None

    @property
    def is_multi_choice(self) -> bool:
        """True when the criterion has options."""
        return self.options is not None

    @property
    def is_numeric(self) -> bool:
        """True when the judge answers a number on ``range``."""
        return self.range is not None

    @property
    def is_rule(self) -> bool:
        """True when a deterministic rule decides the criterion (no LLM)."""
        return self.rule is not None

    @property
    def kind(self) -> str:
        """``"binary"``, ``"ordinal"``, ``"nominal"`` or ``"numeric"``."""
        if self.range is not None:
            return "numeric"
        return "binary" if self.options is None else str(self.scale)

    @property
    def labels(self) -> tuple[str, ...]:
        """Every label a judge may answer, in presentation order (numeric, the grid
        points of a stepped range, empty for a continuous one)."""
        if self.range is not None:
            pts = self.range.points
            return tuple(format_number(p) for p in pts) if pts is not None else ()
        if self.options is None:
            return BINARY_LABELS
        return tuple(o.label for o in self.options)

    @property
    def answer_labels(self) -> tuple[str, ...]:
        """Every label accepted from a judge, that is :attr:`labels`, plus CANNOT_ASSESS on a
        multi-choice criterion without an NA option (an NA verdict, never scored: the channel
        autorubric opens by appending an NA option). The judge is offered :attr:`labels` only,
        so requests and cache keys are unchanged; an answer of CANNOT_ASSESS is kept, not
        turned into a parse error.

        >>> Criterion(requirement="x", options=[{"label": "a", "value": 0}, {"label": "b", "value": 1}]).answer_labels
        ('a', 'b', 'CANNOT_ASSESS')
        """
        return _answer_labels(self.options) if self.range is None else self.labels

    def canonical_label(self, label: str) -> str | None:
        """Return the canonical spelling of ``label`` or ``None`` if it is not allowed.

        >>> Criterion(requirement="x").canonical_label(" met ")
        'MET'
        >>> Criterion(requirement="x", range={"min": 0, "max": 5, "step": 0.5}).canonical_label("3.50")
        '3.5'
        """
        if self.range is not None:
            try:
                x = float(str(label).strip())
            except ValueError:
                return None
            return format_number(x) if self.range.contains(x) else None
        return _label_index(self.options).get(normalize_label(label))

    def value_of(self, label: str) -> float | None:
        """Score fraction earned by ``label`` (``None`` for CANNOT_ASSESS / NA options).

        Raises ``ValueError`` for a label the criterion does not allow.
        """
        if self.options is None and self.range is None and label in _BINARY_VALUES:
            return _BINARY_VALUES[label]  # the usual binary label, already canonical
        canon = self.canonical_label(label)
        if canon is None:
            raise ValueError(
                f"criterion {self.name!r}: label {label!r} not allowed; expected one of {list(self.labels)}"
            )
        if self.range is not None:
            return self.range.unit(float(canon))
        if self.options is None:
            return _BINARY_VALUES[canon]
        opt = next((o for o in self.options if o.label == canon), None)
        return None if opt is None or opt.na else opt.value

    @property
    def worst_value(self) -> float:
        """Score fraction of the score-minimising realisable outcome.

        For a positive weight the lowest option value (UNMET = 0); for a negative weight
        the highest (MET = 1), since MET on a penalty subtracts most.
        """
        if self.options is None:
            return 1.0 if self.weight < 0 else 0.0
        values = [o.value for o in self.options if not o.na]
        return max(values) if self.weight < 0 else min(values)

    @property
    def floor_value(self) -> float:
        """The lowest score fraction a verdict can have (UNMET, the lowest option, ``range.min``)."""
        if self.options is None:
            return 0.0
        return min(o.value for o in self.options if not o.na)

    @property
    def lowest_label(self) -> str | None:
        """The label with the lowest score fraction (``None`` for a continuous numeric range)."""
        if self.range is not None:
            return format_number(self.range.min)
        if self.options is None:
            return UNMET
        return min((o for o in self.options if not o.na), key=lambda o: o.value).label

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form (only non-default fields), loadable by :meth:`Rubric.from_dict`."""
        d: dict[str, Any] = {"name": self.name, "requirement": self.requirement, "weight": self.weight}
        if self.rule is not None:
            d["rule"] = self.rule.model_dump(exclude_defaults=True)
            if self.requirement == f"The submission {self.rule.describe()}":
                del d["requirement"]
        if self.options is not None:
            d["options"] = [o.model_dump(exclude_defaults=True) | {"value": o.value} for o in self.options]
            d["scale"] = self.scale
        if self.range is not None:
            d["range"] = self.range.model_dump(exclude_defaults=True)
        if self.group is not None:
            d["group"] = self.group
        if self.aggregation is not None:
            d["aggregation"] = self.aggregation
        for flag in ("disqualifier", "required", "evidence"):
            if getattr(self, flag):
                d[flag] = True
        if self.disqualifier:
            del d["weight"]
        if self.cap is not None:
            d["cap"] = self.cap
        if self.tags:
            d["tags"] = list(self.tags)
        if self.applies_when is not None:
            d["applies_when"] = {k: list(v) for k, v in self.applies_when.items()}
        return d


def kind_note(c: Criterion) -> str:
    notes = []
    if c.options is not None:
        notes.append(f"{c.kind}: {' / '.join(c.labels)}")
    if c.range is not None:
        notes.append(f"numeric {c.range.describe()}")
    if c.rule is not None:
        notes.append("rule")
    if c.disqualifier:
        notes.append(f"disqualifier (cap {c.cap or 0:g})")
    if c.required:
        notes.append(f"required (cap {c.cap or 0:g})")
    if c.evidence:
        notes.append("evidence")
    return f" [{'; '.join(notes)}]" if notes else ""


class _Same:
    """An option set as a cache key by identity: hashing pydantic options on every lookup costs
    more than the lookup saves. The cache holds the key, so the id is not reused meanwhile."""

    __slots__ = ("options",)

    def __init__(self, options: tuple[Option, ...] | None) -> None:
        self.options = options

    def __hash__(self) -> int:
        return id(self.options)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.options is self.options


def _answer_labels(options: tuple[Option, ...] | None) -> tuple[str, ...]:
    """:attr:`Criterion.answer_labels` of an enumerated criterion, computed once per option set."""
    return _indexed(_Same(options))[0]


def _label_index(options: tuple[Option, ...] | None) -> dict[str, str]:
    """Normalised spelling -> canonical label, for every answer label (the first one wins)."""
    return _indexed(_Same(options))[1]


@lru_cache(maxsize=8192)
def _indexed(key: _Same) -> tuple[tuple[str, ...], dict[str, str]]:
    options = key.options
    if options is None:
        labels: tuple[str, ...] = BINARY_LABELS
    else:
        labels = tuple(o.label for o in options)
        if not any(o.na for o in options) and all(normalize_label(x) != normalize_label(CANNOT_ASSESS) for x in labels):
            labels = (*labels, CANNOT_ASSESS)
    index: dict[str, str] = {}
    for lab in labels:
        index.setdefault(normalize_label(lab), lab)
    return labels, index
