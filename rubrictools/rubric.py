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

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl

__all__ = ["BINARY_LABELS", "CANNOT_ASSESS", "MET", "UNMET", "Criterion", "Option", "Rubric"]

MET = "MET"
UNMET = "UNMET"
CANNOT_ASSESS = "CANNOT_ASSESS"
BINARY_LABELS: tuple[str, str, str] = (MET, UNMET, CANNOT_ASSESS)

Scale = Literal["ordinal", "nominal"]
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
        ``"ordinal"`` (ordered options, default) or ``"nominal"``; multi-choice only.
        ``scale_type`` (autorubric's key) is accepted as an alias.
    group
        Optional section name, kept from sectioned rubric files.
    aggregation
        Optional per-criterion ensemble aggregation override.

    Example
    -------
    >>> Criterion(requirement="Cites a source", weight=5).is_binary
    True
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    requirement: str
    weight: float = 10.0
    name: str | None = None
    options: tuple[Option, ...] | None = None
    scale: Scale | None = Field(default=None, alias="scale_type")
    group: str | None = None
    aggregation: Aggregation | None = None

    @field_validator("requirement")
    @classmethod
    def _requirement_not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("requirement must not be blank")
        return v

    @field_validator("name")
    @classmethod
    def _name_not_blank(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("name must not be blank (omit it to auto-name)")
        return v

    @field_validator("weight")
    @classmethod
    def _weight_finite(cls, v: float) -> float:
        if not math.isfinite(v):
            raise ValueError(f"weight must be finite, got {v!r}")
        return float(v)

    @model_validator(mode="after")
    def _check_options(self) -> Criterion:
        if self.options is None:
            if self.scale is not None:
                raise ValueError("scale only applies to multi-choice criteria (set options)")
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
        """True when the criterion has no options (MET/UNMET/CANNOT_ASSESS)."""
        return self.options is None

    @property
    def is_multi_choice(self) -> bool:
        """True when the criterion has options."""
        return self.options is not None

    @property
    def kind(self) -> str:
        """``"binary"``, ``"ordinal"`` or ``"nominal"``."""
        return "binary" if self.options is None else str(self.scale)

    @property
    def labels(self) -> tuple[str, ...]:
        """Every label a judge may answer, in presentation order."""
        if self.options is None:
            return BINARY_LABELS
        return tuple(o.label for o in self.options)

    def canonical_label(self, label: str) -> str | None:
        """Return the canonical spelling of ``label`` or ``None`` if it is not allowed.

        >>> Criterion(requirement="x").canonical_label(" met ")
        'MET'
        """
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

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form (only non-default fields), loadable by :meth:`Rubric.from_dict`."""
        d: dict[str, Any] = {"name": self.name, "requirement": self.requirement, "weight": self.weight}
        if self.options is not None:
            d["options"] = [
                {"label": o.label, "value": o.value, **({"na": True} if o.na else {})} for o in self.options
            ]
            d["scale"] = self.scale
        if self.group is not None:
            d["group"] = self.group
        if self.aggregation is not None:
            d["aggregation"] = self.aggregation
        return d


def _flatten(data: Any) -> list[tuple[dict[str, Any], str | None]]:
    """Accept the rubric file shapes of autorubric and ``rubric`` and return criteria dicts.

    Shapes: a flat list of criteria; a list of sections ``{"name"?, "criteria": [...]}``;
    ``{"sections": [...]}``; ``{"rubric": <any of the above>}``; ``{"criteria": [...]}``.
    """
    if isinstance(data, Mapping):
        allowed = {"rubric", "sections", "criteria", "name", "title", "description"}
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


def _format_validation_error(index: int, name: str | None, err: ValidationError) -> str:
    parts = []
    for e in err.errors():
        field = ".".join(str(p) for p in e["loc"]) or "criterion"
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown key (not a criterion field)"
        parts.append(f"field {field!r}: {msg}")
    label = f"criterion {index}" + (f" ({name!r})" if name else "")
    return f"{label}: " + "; ".join(parts)


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

    def __init__(self, criteria: Sequence[Criterion] | None = None, /, **data: Any) -> None:
        if criteria is not None:
            data["criteria"] = criteria
        super().__init__(**data)

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
            return cls(criteria)
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
    def to_dict(self) -> list[dict[str, Any]]:
        """List of criterion dicts; ``Rubric.from_dict(r.to_dict()) == r``."""
        return [c.to_dict() for c in self.criteria]

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
            extra = "" if c.options is None else f" [{c.kind}: {' / '.join(c.labels)}]"
            lines.append(f"  {c.name:<12} {c.weight:>+7g}  {c.requirement}{extra}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        esc = html.escape
        rows = []
        for i, c in enumerate(self.criteria, 1):
            colour = "#b91c1c" if c.weight < 0 else "#166534"
            if c.options is None:
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
