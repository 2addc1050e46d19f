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

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from rubrictools.rubric.constraints import OutputConstraint, parse_constraints
from rubrictools.rubric.criterion import Criterion, kind_note
from rubrictools.rubric.display import rubric_html
from rubrictools.rubric.formats import RUBRIC_KEYS, field_errors, flatten, format_validation_error
from rubrictools.rubric.groups import Group, Threshold, check_groups, parse_thresholds
from rubrictools.rubric.labels import normalize_label
from rubrictools.rubric.markdown import to_markdown
from rubrictools.rubric.rubrify import rubrify_spec
from rubrictools.rubric.scoring import CannotAssess
from rubrictools.rubric.scoring import score as score_table

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl

__all__ = ["RUBRIC_KEYS", "Rubric"]


class Rubric(BaseModel):
    """An ordered, immutable collection of uniquely named criteria.

    Build it from :class:`Criterion` objects (``Rubric([c1, c2])``) or load it with
    :meth:`from_dict`, :meth:`from_yaml`, :meth:`from_json` or :meth:`from_file`; files
    written for autorubric and the ``rubric`` package load unchanged.

    Parameters
    ----------
    criteria
        The criteria (:class:`Criterion`), in the order verdict tables and charts show them;
        names unique.
    groups
        Scoring groups (:class:`Group`) the criteria name with ``group=``; none: one score over
        all criteria.
    thresholds
        Decision cut-offs (``Threshold(label=, min=)``): :func:`rubrictools.score` gives each
        submission the label of the highest cut-off its score reaches, in a ``decision``
        column.
    guidelines
        Free text that applies to every criterion (autorubric's ``guidelines``): shown to the
        judge, escaped, above the rubric in every mode (blank: none).
    disqualified_decision
        The ``decision`` of a submission a disqualifier or required criterion capped (rubrify's
        ``"Rejected"``), instead of the threshold its capped score reaches.
    output_constraints
        Rules every judge reply must follow (rubrify's output constraints, :class:`OutputConstraint`),
        added to ``grade(output_constraints=...)`` whenever this rubric is graded.

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
    guidelines: str | None = None
    disqualified_decision: str | None = None
    output_constraints: tuple[OutputConstraint, ...] = ()

    def __init__(self, criteria: Sequence[Criterion] | None = None, /, **data: Any) -> None:
        if criteria is not None:
            data["criteria"] = criteria
        super().__init__(**data)

    @field_validator("guidelines", mode="before")
    @classmethod
    def _blank_guidelines(cls, v: Any) -> Any:
        if v is not None and not isinstance(v, str):
            raise ValueError(f"guidelines must be text, got {type(v).__name__}")
        return v if v is None or v.strip() else None

    @field_validator("output_constraints", mode="before")
    @classmethod
    def _parse_constraints(cls, v: Any) -> Any:
        return parse_constraints(v, "output_constraints")

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
                raise ValueError(f"groups[{i}]: {field_errors(e, 'group')}") from None
        return tuple(out)

    @model_validator(mode="after")
    def _some_weight(self) -> Rubric:
        scored = [c for c in self.criteria if not c.disqualifier]
        if scored and all(c.weight == 0 for c in scored):
            raise ValueError(
                "every criterion has weight 0, so every submission would score 0.0: give at least one "
                "criterion a non-zero weight (field 'weight')"
            )
        return self

    @model_validator(mode="after")
    def _check_groups(self) -> Rubric:
        if self.groups:
            check_groups(self.groups, self.criteria)
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

    def __iter__(self) -> Iterator[Criterion]:  # type: ignore[override]  # pydantic's BaseModel.__iter__ yields fields; a Rubric iterates its criteria
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

    @property
    def holistic_weight(self) -> float:
        """Weight of a holistic (whole-rubric) verdict row, the total positive weight, or for a
        rubric of penalties only minus their total ``-N``; such a row's ``value`` is then the
        share of the penalties incurred, ``1 - score / 100``.

        >>> penalties = [{"requirement": "rude", "weight": -2}, {"requirement": "wrong", "weight": -3}]
        >>> Rubric.from_dict(penalties).holistic_weight
        -5.0
        """
        pos = self.total_positive_weight
        return pos if pos > 0 else -float(sum(-c.weight for c in self.criteria if c.weight < 0))

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
        """Every allowed label of every criterion (:attr:`Criterion.answer_labels`) with its score fraction.

        Columns: ``criterion, label, key`` (normalised label), ``value`` (null for
        CANNOT_ASSESS/NA), ``weight``, ``worst_value``. Used to validate and score
        verdict tables with joins instead of Python loops.
        """
        import polars as pl

        rows: dict[str, list[Any]] = {k: [] for k in ("criterion", "label", "key", "value", "weight", "worst_value")}
        for c in self.criteria:
            if c.range is not None:  # numbers are validated by expression, not by lookup
                continue
            for lab in c.answer_labels:
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
        while isinstance(data, Mapping) and (set(data) & {"rubric", *RUBRIC_KEYS}):
            data = dict(data)
            for k in RUBRIC_KEYS:  # an inner value beside an outer one is ambiguous
                if k in data and k in extras:
                    raise ValueError(f"rubric: {k!r} is given both beside and inside 'rubric'")
                if k in data:
                    extras[k] = data.pop(k)
            if "rubric" not in data:
                break
            data = data["rubric"]
        try:
            if "thresholds" in extras:
                extras["thresholds"] = parse_thresholds(extras["thresholds"])
            if "groups" in extras:
                extras["groups"] = cls._parse_groups(extras["groups"])
            extras["guidelines"] = cls._blank_guidelines(extras.get("guidelines"))
        except ValueError as e:
            raise ValueError(f"rubric: {e}") from None
        items = flatten(data)
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
                raise ValueError(format_validation_error(i, name, e)) from None
        try:
            return cls(criteria, **extras)
        except ValidationError as e:
            raise ValueError("; ".join(x["msg"].removeprefix("Value error, ") for x in e.errors())) from None

    @classmethod
    def from_value(cls, value: Any) -> Rubric:
        """A rubric from a cell of a rubric column: a Rubric, a dict/list (also a list of
        HealthBench items, as polars gives a ``List(Struct)`` cell), or JSON/YAML text."""
        if isinstance(value, Rubric):
            return value
        if isinstance(value, str):
            return cls.from_json(value) if value.lstrip()[:1] in "[{" else cls.from_yaml(value)
        return cls.from_dict(value)

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
    def from_file(cls, path: str | Path | IO[str] | IO[bytes]) -> Rubric:
        """Load a ``.yaml``, ``.yml`` or ``.json`` rubric file: a path, or an open file object
        whose ``name`` ends in one of those (the format comes from the name)."""
        if hasattr(path, "read"):
            name = str(getattr(path, "name", "") or "")
            if Path(name).suffix.lower() not in {".yaml", ".yml", ".json"}:
                raise ValueError(
                    f"rubric: cannot tell the format of file object {name or '(no name)'!r}; give it a name ending "
                    "in .yaml, .yml or .json, or use Rubric.from_yaml(f.read()) / Rubric.from_json(f.read())"
                )
            raw = path.read()
            text = raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)
            return cls.from_json(text) if name.lower().endswith(".json") else cls.from_yaml(text)
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
        plain = not (self.groups or self.thresholds or self.output_constraints)
        if plain and self.guidelines is None and self.disqualified_decision is None:
            return crit
        out: dict[str, Any] = {"criteria": crit}
        for key in ("guidelines", "disqualified_decision"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.groups:
            out["groups"] = [g.model_dump(exclude_defaults=True) for g in self.groups]
        if self.thresholds:
            out["thresholds"] = [{"label": t.label, "min": t.min} for t in self.thresholds]
        if self.output_constraints:
            out["output_constraints"] = [c.model_dump(exclude_defaults=True) for c in self.output_constraints]
        return out

    def to_markdown(self) -> str:
        """A prompt-ready Markdown table of the rubric (see :func:`rubrictools.rubric.markdown.to_markdown`)."""
        return to_markdown(self)

    @classmethod
    def from_rubrify(cls, source: Any) -> Rubric:
        """Load a rubrify rubric (JSON text, a path, or its dumped dict); see :mod:`rubrictools.rubric.rubrify`."""
        return cls.from_dict(rubrify_spec(source))

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
        cannot_assess: CannotAssess = "skip",
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

        if len(labels) != len(self.criteria):
            raise ValueError(f"expected {len(self.criteria)} labels (one per criterion), got {len(labels)}")
        table = pl.DataFrame({"id": [0] * len(labels), "criterion": list(self.names), "verdict": list(labels)})
        out = score_table(table, self, cannot_assess=cannot_assess, partial_credit=partial_credit, normalize=normalize)
        if out["error"][0] is not None:
            raise ValueError(out["error"][0])
        return out["score"][0]

    # ------------------------------------------------------------------ display
    def __repr__(self) -> str:
        return f"Rubric({len(self)} criteria: {', '.join(self.names)})"

    def __str__(self) -> str:
        lines = [f"Rubric with {len(self)} criteria (total positive weight {self.total_positive_weight:g})"]
        for c in self.criteria:
            lines.append(f"  {c.name:<12} {c.weight:>+7g}  {c.requirement}{kind_note(c)}")
        for g in self.groups:
            lines.append(f"  group {g.name!r}: weight {g.weight:g}, {g.aggregation}")
        if self.thresholds:
            lines.append("  decisions: " + ", ".join(f"{t.label} >= {t.min:g}" for t in self.thresholds))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return rubric_html(self.criteria, total_positive_weight=self.total_positive_weight)
