"""The rubric model: immutable, validated criteria with weights.

A :class:`Rubric` is an ordered tuple of :class:`Criterion`. A criterion is *binary*
(verdicts ``MET`` / ``UNMET`` / ``CANNOT_ASSESS``) unless it carries ``options``, in
which case it is *multi-choice*: the judge picks one option label and the criterion
contributes ``option.value * weight``. Negative weights are penalties.

Example
-------
>>> import rubrictools as rt
>>> rubric = rt.Rubric.from_dict([
...     {"name": "correct", "weight": 10, "requirement": "States the right answer"},
...     {"weight": 5, "requirement": "Explains the reasoning"},
...     {"weight": -15, "requirement": "Contains a factual error"},
... ])
>>> rubric.names
('correct', 'c2', 'c3')
>>> round(rubric.score(["MET", "UNMET", "UNMET"]), 4)
0.6667
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from rubrictools.rules import Rule

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl

__all__ = [
    "BINARY_LABELS", "CANNOT_ASSESS", "MET", "UNMET", "Criterion", "Group", "NumericRange", "Option", "Rubric",
    "Threshold",
]  # fmt: skip

MET = "MET"
UNMET = "UNMET"
CANNOT_ASSESS = "CANNOT_ASSESS"
BINARY_LABELS: tuple[str, str, str] = (MET, UNMET, CANNOT_ASSESS)

Scale = Literal["ordinal", "nominal", "numeric"]
GroupAggregation = Literal["weighted_mean", "min", "max", "all", "any"]
MAX_ENUMERATED_POINTS = 1001
Aggregation = Literal["majority", "weighted", "unanimous", "any", "mean", "median"]


def normalize_label(label: str) -> str:
    """Case- and whitespace-insensitive form of a label (``" Very  good "`` -> ``"very good"``)."""
    return " ".join(str(label).split()).lower()


class Option(BaseModel):
    """One answer of a multi-choice criterion.

    ``value`` is the fraction of the criterion's weight earned when the option is picked
    (in ``[0, 1]``). ``na=True`` marks an abstain option ("not applicable"), treated like a
    binary ``CANNOT_ASSESS`` by :func:`rubrictools.score`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    label: str = Field(min_length=1)
    value: float = 0.0
    na: bool = False
    description: str | None = None

    @field_validator("label")
    @classmethod
    def _label_not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("option label must not be blank")
        return v

    @field_validator("value")
    @classmethod
    def _value_in_unit_interval(cls, v: float) -> float:
        if not math.isfinite(v) or not 0.0 <= v <= 1.0:
            raise ValueError(f"option value must be a finite number in [0, 1], got {v!r}")
        return float(v)


def _require_finite(v: float, what: str) -> float:
    """``v`` as a float, or a ValueError naming ``what`` when it is NaN or infinite."""
    if not math.isfinite(v):
        raise ValueError(f"{what} must be finite, got {v!r}")
    return float(v)


def format_number(x: float) -> str:
    """Canonical text of a numeric verdict: ``3.0 -> "3"``, ``2.5 -> "2.5"``."""
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else repr(x)


class NumericRange(BaseModel):
    """The range of a numeric criterion: ``min..max``, optionally on a ``step`` grid.

    A judge's number ``x`` earns ``(x - min) / (max - min)`` of the weight. ``anchors`` maps
    points of the scale to what they mean (shown to the judge).

    >>> NumericRange(min=0, max=5, step=1, anchors={0: "unclear", 5: "crystal clear"}).unit(4)
    0.8
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    min: float
    max: float
    step: float | None = None
    anchors: dict[float, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> NumericRange:
        for name in ("min", "max"):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"range.{name} must be finite")
        if not self.max > self.min:
            raise ValueError(f"range.max ({self.max:g}) must be greater than range.min ({self.min:g})")
        if self.step is not None:
            if not (math.isfinite(self.step) and self.step > 0):
                raise ValueError(f"range.step must be a positive number, got {self.step!r}")
            n = (self.max - self.min) / self.step
            if abs(n - round(n)) > 1e-9 * max(1.0, n):
                raise ValueError(f"range.step {self.step:g} does not divide max - min = {self.max - self.min:g}")
        for k, text in self.anchors.items():
            if not self.contains(k):
                raise ValueError(f"range.anchors: {k:g} is not a point of the scale {self.describe()}")
            if not str(text).strip():
                raise ValueError(f"range.anchors: the anchor at {k:g} is blank")
        return self

    def contains(self, x: float) -> bool:
        """True when ``x`` is a point of the scale (in range and on the step grid)."""
        if not (math.isfinite(x) and self.min - 1e-12 <= x <= self.max + 1e-12):
            return False
        if self.step is None:
            return True
        k = (x - self.min) / self.step
        return abs(k - round(k)) <= 1e-9 * max(1.0, abs(k))

    def unit(self, x: float) -> float:
        """``x`` mapped to ``[0, 1]``."""
        return min(1.0, max(0.0, (float(x) - self.min) / (self.max - self.min)))

    @property
    def points(self) -> tuple[float, ...] | None:
        """Every point of a stepped scale (``None`` for a continuous or very fine one)."""
        if self.step is None:
            return None
        n = int(round((self.max - self.min) / self.step))
        if n + 1 > MAX_ENUMERATED_POINTS:
            return None
        return tuple(round(self.min + i * self.step, 12) for i in range(n + 1))

    def describe(self) -> str:
        """``"0 to 5 in steps of 1"``."""
        out = f"{format_number(self.min)} to {format_number(self.max)}"
        return out + (f" in steps of {format_number(self.step)}" if self.step is not None else "")


class Group(BaseModel):
    """A scoring group: a named set of criteria with its own aggregation and weight.

    ``aggregation`` turns the members' credits into a sub-score in ``[0, 1]``:
    ``weighted_mean`` (the rubric formula restricted to the group), ``min``, ``max``,
    ``all`` (1 when every member earns full credit) or ``any`` (1 when one does).
    A member's *credit* is its score fraction for a reward and ``1 - fraction`` for a penalty.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    weight: float = 1.0
    aggregation: GroupAggregation = "weighted_mean"
    description: str | None = None

    @field_validator("weight")
    @classmethod
    def _weight_ok(cls, v: float) -> float:
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"group weight must be a finite number >= 0, got {v!r}")
        return float(v)


class Threshold(BaseModel):
    """A decision cut-off: scores ``>= min`` (and below the previous cut-off) get ``label``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    label: str = Field(min_length=1)
    min: float

    @field_validator("min")
    @classmethod
    def _finite(cls, v: float) -> float:
        return _require_finite(v, "threshold min")


def parse_thresholds(value: Any, *, where: str = "thresholds") -> tuple[Threshold, ...]:
    """Accept ``{"pass": 0.8, "fail": 0}``, ``[("pass", 0.8), ...]`` or ``[{"label", "min"}, ...]``.

    Cut-offs must be strictly decreasing in the order given (highest label first).

    >>> [t.label for t in parse_thresholds({"pass": 0.8, "borderline": 0.5, "fail": 0})]
    ['pass', 'borderline', 'fail']
    """
    if value is None:
        return ()
    if isinstance(value, Mapping):
        items: list[Any] = [{"label": k, "min": v} for k, v in value.items()]
    elif isinstance(value, (list, tuple)):
        items = []
        for i, t in enumerate(value):
            if isinstance(t, Threshold):
                items.append(t.model_dump())
            elif isinstance(t, Mapping):
                items.append(dict(t))
            elif isinstance(t, (list, tuple)) and len(t) == 2:
                a, b = t
                items.append({"label": a, "min": b} if isinstance(a, str) else {"label": b, "min": a})
            else:
                raise ValueError(f"{where}[{i}]: expected (label, min), {{'label', 'min'}} or a Threshold, got {t!r}")
    else:
        raise ValueError(f"{where}: expected a mapping label -> min or a list of (label, min), got {type(value).__name__}")
    out = []
    for i, d in enumerate(items):
        try:
            out.append(Threshold.model_validate(d))
        except ValidationError as e:
            raise ValueError(f"{where}[{i}]: {_field_errors(e, 'threshold')}") from None
    for prev, cur in zip(out, out[1:]):
        if not cur.min < prev.min:
            raise ValueError(
                f"{where}: cut-offs must be strictly decreasing (highest first); {cur.label!r} ({cur.min:g}) "
                f"comes after {prev.label!r} ({prev.min:g})"
            )
    labels = [normalize_label(t.label) for t in out]
    if len(set(labels)) != len(labels):
        raise ValueError(f"{where}: duplicate labels {[t.label for t in out]}")
    return tuple(out)


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
        Optional per-criterion ensemble aggregation override.
    rule
        A deterministic :class:`~rubrictools.rules.Rule` (regex, substring, length,
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

    @field_validator("name")
    @classmethod
    def _name_not_blank(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("name must not be blank (omit it to auto-name)")
        return v

    @field_validator("weight")
    @classmethod
    def _weight_finite(cls, v: float) -> float:
        return _require_finite(v, "weight")

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
                    f"a disqualifier acts through its cap, not its weight; omit weight or set it to 0 (got {self.weight:g})"
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
                raise ValueError("scale only applies to multi-choice criteria (set options) or numeric ones (set range)")
            return self
        if sum(not o.na for o in self.options) < 2:
            raise ValueError("a multi-choice criterion needs at least 2 non-NA options")
        seen: dict[str, str] = {}
        for o in self.options:
            key = normalize_label(o.label)
            if key in seen:
                raise ValueError(
                    f"duplicate option label {o.label!r} (same as {seen[key]!r} ignoring case/spaces)"
                )
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
        """Every label a judge may answer, in presentation order (numeric: the grid
        points of a stepped range, empty for a continuous one)."""
        if self.range is not None:
            pts = self.range.points
            return tuple(format_number(p) for p in pts) if pts is not None else ()
        if self.options is None:
            return BINARY_LABELS
        return tuple(o.label for o in self.options)

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
        key = normalize_label(label)
        for lab in self.labels:
            if normalize_label(lab) == key:
                return lab
        return None

    def value_of(self, label: str) -> float | None:
        """Score fraction earned by ``label`` (``None`` for CANNOT_ASSESS / NA options).

        Raises ``ValueError`` for a label the criterion does not allow.
        """
        canon = self.canonical_label(label)
        if canon is None:
            raise ValueError(
                f"criterion {self.name!r}: label {label!r} not allowed; expected one of {list(self.labels)}"
            )
        if self.range is not None:
            return self.range.unit(float(canon))
        if self.options is None:
            return {MET: 1.0, UNMET: 0.0, CANNOT_ASSESS: None}[canon]
        opt = next(o for o in self.options if o.label == canon)
        return None if opt.na else opt.value

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
        return d


def _kind_note(c: Criterion) -> str:
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


def _flatten(data: Any) -> list[tuple[dict[str, Any], str | None]]:
    """Accept the rubric file shapes of autorubric and ``rubric`` and return criteria dicts.

    Shapes: a flat list of criteria; a list of sections ``{"name"?, "criteria": [...]}``;
    ``{"sections": [...]}``; ``{"rubric": <any of the above>}``; ``{"criteria": [...]}``.
    """
    if isinstance(data, Mapping):
        allowed = {"rubric", "sections", "criteria", "name", "title", "description", "groups", "thresholds"}
        unknown = set(data) - allowed
        if unknown:
            raise ValueError(f"rubric: unknown top-level keys {sorted(unknown)}; expected one of {sorted(allowed)}")
        if "rubric" in data:
            return _flatten(data["rubric"])
        if "sections" in data:
            sections = data["sections"]
            if not isinstance(sections, list):
                raise ValueError(f"rubric: 'sections' must be a list, got {type(sections).__name__}")
            return _flatten(sections)
        if "criteria" in data:
            return _flatten([data])
        raise ValueError("rubric: a mapping must contain 'rubric', 'sections' or 'criteria'")
    if not isinstance(data, list):
        raise ValueError(f"rubric: expected a list of criteria or sections, got {type(data).__name__}")
    out: list[tuple[dict[str, Any], str | None]] = []
    for i, item in enumerate(data):
        if not isinstance(item, Mapping):
            raise ValueError(f"rubric: item {i} must be a mapping, got {type(item).__name__}")
        if "criteria" in item:
            extra = set(item) - {"criteria", "name", "title", "section", "description"}
            if extra:
                raise ValueError(f"rubric: section {i}: unknown keys {sorted(extra)}")
            crit = item["criteria"]
            if not isinstance(crit, list):
                raise ValueError(f"rubric: section {i}: 'criteria' must be a list, got {type(crit).__name__}")
            section = item.get("name") or item.get("title") or item.get("section")
            for j, c in enumerate(crit):
                if not isinstance(c, Mapping):
                    raise ValueError(f"rubric: section {i}, criterion {j} must be a mapping, got {type(c).__name__}")
                out.append((dict(c), section))
        else:
            out.append((dict(item), None))
    return out


def _field_errors(err: ValidationError, what: str) -> str:
    """``field 'x': message; ...`` for a pydantic error on a ``what`` (criterion, group...)."""
    parts = []
    for e in err.errors():
        field = ".".join(str(p) for p in e["loc"]) or what
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = f"unknown key (not a {what} field)"
        parts.append(f"field {field!r}: {msg}")
    return "; ".join(parts)


def _format_validation_error(index: int, name: str | None, err: ValidationError) -> str:
    label = f"criterion {index}" + (f" ({name!r})" if name else "")
    return f"{label}: " + _field_errors(err, "criterion")


class Rubric(BaseModel):
    """An ordered, immutable collection of uniquely named criteria.

    Build it from :class:`Criterion` objects (``Rubric([c1, c2])``) or load it with
    :meth:`from_dict`, :meth:`from_yaml`, :meth:`from_json` or :meth:`from_file`; files
    written for autorubric and the ``rubric`` package load unchanged.

    Example
    -------
    >>> r = Rubric([Criterion(name="a", requirement="Says hello")])
    >>> len(r), r["a"].weight
    (1, 10.0)
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    criteria: tuple[Criterion, ...]
    groups: tuple[Group, ...] = ()
    thresholds: tuple[Threshold, ...] = ()

    def __init__(self, criteria: Sequence[Criterion] | None = None, /, **data: Any) -> None:
        if criteria is not None:
            data["criteria"] = criteria
        super().__init__(**data)

    @field_validator("thresholds", mode="before")
    @classmethod
    def _parse_thresholds(cls, v: Any) -> Any:
        return parse_thresholds(v)

    @field_validator("groups", mode="before")
    @classmethod
    def _parse_groups(cls, v: Any) -> Any:
        if v is None:
            return ()
        if isinstance(v, Mapping):  # {"name": {"weight": ..., "aggregation": ...}}
            v = [{"name": k, **(dict(g) if isinstance(g, Mapping) else {"weight": g})} for k, g in v.items()]
        out = []
        for i, g in enumerate(v):
            if isinstance(g, Group):
                out.append(g)
                continue
            try:
                out.append(Group.model_validate(g))
            except ValidationError as e:
                raise ValueError(f"groups[{i}]: {_field_errors(e, 'group')}") from None
        return tuple(out)

    @model_validator(mode="after")
    def _check_groups(self) -> Rubric:
        if not self.groups:
            return self
        names = [normalize_label(g.name) for g in self.groups]
        dup = sorted({g.name for g, k in zip(self.groups, names) if names.count(k) > 1})
        if dup:
            raise ValueError(f"groups: duplicate group name(s) {dup}")
        declared = {normalize_label(g.name): g.name for g in self.groups}
        members: dict[str, int] = {}
        for i, c in enumerate(self.criteria):
            if c.group is None:
                if c.disqualifier:
                    continue
                raise ValueError(
                    f"criterion {i} ({c.name!r}): field 'group': the rubric declares groups "
                    f"{[g.name for g in self.groups]}, so every scored criterion must name one"
                )
            key = normalize_label(c.group)
            if key not in declared:
                raise ValueError(
                    f"criterion {i} ({c.name!r}): field 'group': unknown group {c.group!r}; "
                    f"declared groups are {[g.name for g in self.groups]}"
                )
            if c.group != declared[key]:
                object.__setattr__(c, "group", declared[key])
            members[declared[key]] = members.get(declared[key], 0) + 1
        empty = [g.name for g in self.groups if g.name not in members]
        if empty:
            raise ValueError(f"groups: {empty} have no criteria")
        if sum(g.weight for g in self.groups) <= 0:
            raise ValueError("groups: at least one group needs a positive weight")
        return self

    @model_validator(mode="before")
    @classmethod
    def _autoname(cls, data: Any) -> Any:
        if not isinstance(data, Mapping) or "criteria" not in data:
            return data
        crit = data["criteria"]
        if isinstance(crit, (str, bytes)) or not isinstance(crit, Sequence):
            raise ValueError("criteria must be a list of Criterion")
        if len(crit) == 0:
            raise ValueError("a rubric needs at least one criterion")
        named = []
        for i, c in enumerate(crit):
            if isinstance(c, Mapping):
                c = Criterion.model_validate(c)
            if not isinstance(c, Criterion):
                raise ValueError(f"criterion {i}: expected a Criterion, got {type(c).__name__}")
            if c.name is None:
                c = c.model_copy(update={"name": f"c{i + 1}"})
            named.append(c)
        seen: dict[str, int] = {}
        for i, c in enumerate(named):
            key = normalize_label(c.name or "")
            if key in seen:
                raise ValueError(
                    f"criterion {i} ({c.name!r}): field 'name': duplicate of criterion {seen[key]} "
                    "(names are compared ignoring case and spaces)"
                )
            seen[key] = i
        return {**data, "criteria": tuple(named)}

    # ------------------------------------------------------------------ access
    def __len__(self) -> int:
        return len(self.criteria)

    def __iter__(self) -> Iterator[Criterion]:  # type: ignore[override]
        return iter(self.criteria)

    def __getitem__(self, key: int | str) -> Criterion:
        if isinstance(key, int):
            return self.criteria[key]
        k = normalize_label(key)
        for c in self.criteria:
            if normalize_label(c.name or "") == k:
                return c
        raise KeyError(f"no criterion named {key!r}; criteria are {list(self.names)}")

    @property
    def names(self) -> tuple[str, ...]:
        """Criterion names in order."""
        return tuple(c.name or "" for c in self.criteria)

    @property
    def has_rules(self) -> bool:
        """True when some criterion is decided by a deterministic rule."""
        return any(c.rule is not None for c in self.criteria)

    @property
    def llm_criteria(self) -> tuple[Criterion, ...]:
        """The criteria a judge decides (every criterion without a rule)."""
        return tuple(c for c in self.criteria if c.rule is None)

    def group_of(self, name: str) -> Group | None:
        """The declared :class:`Group` of criterion ``name`` (``None`` when not grouped)."""
        g = self[name].group
        return next((x for x in self.groups if x.name == g), None)

    @property
    def total_positive_weight(self) -> float:
        """Sum of the positive weights (the normalising denominator)."""
        return float(sum(max(0.0, c.weight) for c in self.criteria))

    def criteria_frame(self) -> pl.DataFrame:
        """One row per criterion: ``criterion, weight, kind, requirement, group, position``."""
        import polars as pl

        return pl.DataFrame(
            {
                "criterion": list(self.names),
                "weight": [c.weight for c in self.criteria],
                "kind": [c.kind for c in self.criteria],
                "requirement": [c.requirement for c in self.criteria],
                "group": [c.group for c in self.criteria],
                "position": list(range(len(self.criteria))),
            },
            schema={
                "criterion": pl.String,
                "weight": pl.Float64,
                "kind": pl.String,
                "requirement": pl.String,
                "group": pl.String,
                "position": pl.Int64,
            },
        )

    def label_frame(self) -> pl.DataFrame:
        """Every allowed label of every criterion with its score fraction.

        Columns: ``criterion, label, key`` (normalised label), ``value`` (null for
        CANNOT_ASSESS/NA), ``weight``, ``worst_value``. Used to validate and score
        verdict tables with joins instead of Python loops.
        """
        import polars as pl

        rows: dict[str, list[Any]] = {k: [] for k in ("criterion", "label", "key", "value", "weight", "worst_value")}
        for c in self.criteria:
            if c.range is not None:  # numbers are validated by expression, not by lookup
                continue
            for lab in c.labels:
                rows["criterion"].append(c.name)
                rows["label"].append(lab)
                rows["key"].append(normalize_label(lab))
                rows["value"].append(c.value_of(lab))
                rows["weight"].append(c.weight)
                rows["worst_value"].append(c.worst_value)
        return pl.DataFrame(
            rows,
            schema={
                "criterion": pl.String,
                "label": pl.String,
                "key": pl.String,
                "value": pl.Float64,
                "weight": pl.Float64,
                "worst_value": pl.Float64,
            },
        )

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_dict(cls, data: Any) -> Rubric:
        """Build a rubric from parsed JSON/YAML data.

        Accepts a flat list of criterion dicts, a list of sections with ``criteria``, a
        dict with ``sections``, or a dict with ``rubric``. Unknown keys are rejected with
        an error naming the criterion and field.
        """
        if isinstance(data, Rubric):
            return data
        extras: dict[str, Any] = {}
        while isinstance(data, Mapping) and "rubric" in data and not ({"groups", "thresholds"} & set(data)):
            data = data["rubric"]
        if isinstance(data, Mapping) and ({"groups", "thresholds"} & set(data)):
            data = dict(data)
            extras = {k: data.pop(k) for k in ("groups", "thresholds") if k in data}
            if "rubric" in data:
                data = data["rubric"]
        try:
            if "thresholds" in extras:
                extras["thresholds"] = parse_thresholds(extras["thresholds"])
            if "groups" in extras:
                extras["groups"] = cls._parse_groups(extras["groups"])
        except ValueError as e:
            raise ValueError(str(e)) from None
        items = _flatten(data)
        if not items:
            raise ValueError("a rubric needs at least one criterion")
        criteria = []
        for i, (d, section) in enumerate(items):
            name = d.get("name") if isinstance(d.get("name"), str) else None
            if section is not None and "group" not in d:
                d = {**d, "group": section}
            try:
                criteria.append(Criterion.model_validate(d))
            except ValidationError as e:
                raise ValueError(_format_validation_error(i, name, e)) from None
        try:
            return cls(criteria, **extras)
        except ValidationError as e:
            raise ValueError("; ".join(x["msg"].removeprefix("Value error, ") for x in e.errors())) from None

    @classmethod
    def from_json(cls, text: str) -> Rubric:
        """Parse a JSON string (see :meth:`from_dict` for the accepted shapes)."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"rubric: invalid JSON: {e}") from None
        return cls.from_dict(data)

    @classmethod
    def from_yaml(cls, text: str) -> Rubric:
        """Parse a YAML string with ``yaml.safe_load`` (never executes tags)."""
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise ValueError(f"rubric: invalid YAML: {e}") from None
        return cls.from_dict(data)

    @classmethod
    def from_file(cls, path: str | Path) -> Rubric:
        """Load a ``.yaml``, ``.yml`` or ``.json`` rubric file."""
        p = Path(path)
        ext = p.suffix.lower()
        if ext not in {".yaml", ".yml", ".json"}:
            raise ValueError(f"rubric: unsupported file extension {ext!r} for {p}; use .yaml, .yml or .json")
        if not p.is_file():
            raise FileNotFoundError(f"rubric file not found: {p}")
        text = p.read_text(encoding="utf-8")
        return cls.from_json(text) if ext == ".json" else cls.from_yaml(text)

    # ------------------------------------------------------------------ writing
    def to_dict(self) -> list[dict[str, Any]] | dict[str, Any]:
        """List of criterion dicts (a ``{"criteria", "groups", "thresholds"}`` mapping when the
        rubric declares groups or thresholds); ``Rubric.from_dict(r.to_dict()) == r``."""
        crit = [c.to_dict() for c in self.criteria]
        if not self.groups and not self.thresholds:
            return crit
        out: dict[str, Any] = {"criteria": crit}
        if self.groups:
            out["groups"] = [g.model_dump(exclude_defaults=True) for g in self.groups]
        if self.thresholds:
            out["thresholds"] = [{"label": t.label, "min": t.min} for t in self.thresholds]
        return out

    def to_markdown(self) -> str:
        """A prompt-ready Markdown table of the rubric (see :func:`rubrictools.interop.to_markdown`)."""
        from rubrictools.interop import to_markdown

        return to_markdown(self)

    @classmethod
    def from_rubrify(cls, source: Any) -> Rubric:
        """Load a rubrify rubric (JSON text, a path, or its dumped dict); see :mod:`rubrictools.interop`."""
        from rubrictools.interop import from_rubrify

        return from_rubrify(source)

    def to_json(self, indent: int | None = 2) -> str:
        """JSON text of :meth:`to_dict`."""
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def to_yaml(self) -> str:
        """YAML text of :meth:`to_dict`."""
        import yaml

        return yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True)

    # ------------------------------------------------------------------ scoring
    def score(
        self,
        labels: Sequence[str],
        *,
        cannot_assess: str = "skip",
        partial_credit: float = 0.5,
        normalize: bool = True,
    ) -> float | None:
        """Score one submission's labels (one per criterion, in rubric order).

        Same formulas and result as :func:`rubrictools.score` on the equivalent verdict table.

        >>> r = Rubric.from_dict([{"weight": 10, "requirement": "a"}, {"weight": -5, "requirement": "b"}])
        >>> r.score(["MET", "MET"])
        0.5
        """
        import polars as pl

        from rubrictools.scoring import score as _score

        if len(labels) != len(self.criteria):
            raise ValueError(f"expected {len(self.criteria)} labels (one per criterion), got {len(labels)}")
        table = pl.DataFrame({"id": [0] * len(labels), "criterion": list(self.names), "verdict": list(labels)})
        out = _score(table, self, cannot_assess=cannot_assess, partial_credit=partial_credit, normalize=normalize)
        if out["error"][0] is not None:
            raise ValueError(out["error"][0])
        return out["score"][0]

    # ------------------------------------------------------------------ display
    def __repr__(self) -> str:
        return f"Rubric({len(self)} criteria: {', '.join(self.names)})"

    def __str__(self) -> str:
        lines = [f"Rubric with {len(self)} criteria (total positive weight {self.total_positive_weight:g})"]
        for c in self.criteria:
            lines.append(f"  {c.name:<12} {c.weight:>+7g}  {c.requirement}{_kind_note(c)}")
        for g in self.groups:
            lines.append(f"  group {g.name!r}: weight {g.weight:g}, {g.aggregation}")
        if self.thresholds:
            lines.append("  decisions: " + ", ".join(f"{t.label} >= {t.min:g}" for t in self.thresholds))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        esc = html.escape
        rows = []
        for i, c in enumerate(self.criteria, 1):
            colour = "#b91c1c" if c.weight < 0 else "#166534"
            if c.range is not None or c.rule is not None or c.disqualifier:
                kind = esc(_kind_note(c).strip(" []") or c.kind)
            elif c.options is None:
                kind = "binary"
            else:
                opts = ", ".join(
                    f"{esc(o.label)}{' (NA)' if o.na else f' = {o.value:g}'}" for o in c.options
                )
                kind = f"{esc(c.kind)}: {opts}"
            rows.append(
                f"<tr><td>{i}</td><td><code>{esc(c.name or '')}</code></td>"
                f"<td style='text-align:left'>{esc(c.requirement)}</td>"
                f"<td style='color:{colour};text-align:right'>{c.weight:+g}</td>"
                f"<td style='text-align:left'>{kind}</td><td>{esc(c.group or '')}</td></tr>"
            )
        return (
            f"<div><b>Rubric</b> &middot; {len(self)} criteria &middot; total positive weight "
            f"{self.total_positive_weight:g}<table><thead><tr><th>#</th><th>name</th>"
            "<th>requirement</th><th>weight</th><th>type</th><th>group</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></div>"
        )
