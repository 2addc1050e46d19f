"""Rubric file layouts (autorubric's, the ``rubric`` package's, ours) and their error messages."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from rubrictools.stack import user_stacklevel

__all__ = ["RUBRIC_KEYS", "criterion_id", "field_errors", "flatten", "format_validation_error", "healthbench_item"]

RUBRIC_KEYS = (
    "groups",
    "thresholds",
    "guidelines",
    "disqualified_decision",
    "output_constraints",
)  # rubric-level keys beside the criteria


def flatten(data: Any) -> list[tuple[dict[str, Any], str | None]]:
    """Accept the rubric file shapes of autorubric and ``rubric`` and return criteria dicts.

    Shapes: a flat list of criteria; a list of sections ``{"name"?, "criteria": [...]}``;
    ``{"sections": [...]}``; ``{"rubric": <any of the above>}``; ``{"criteria": [...]}``;
    a list of HealthBench rubric items (:func:`healthbench_item`). A section may name itself
    by ``name``, ``title``, ``section`` or ``id``; a rubric's own ``id`` and ``version`` are
    labels and are read past; a criterion's ``id`` (the peers ignore it)
    is its name when it has none (:func:`criterion_id`).
    """
    if isinstance(data, Mapping):
        allowed = {"rubric", "sections", "criteria", "name", "title", "id", "version", "description", *RUBRIC_KEYS}
        unknown = set(data) - allowed
        if unknown:
            raise ValueError(f"rubric: unknown top-level keys {sorted(unknown)}; expected one of {sorted(allowed)}")
        if "rubric" in data:
            return flatten(data["rubric"])
        if "sections" in data:
            sections = data["sections"]
            if not isinstance(sections, list):
                raise ValueError(f"rubric: 'sections' must be a list, got {type(sections).__name__}")
            return flatten(sections)
        if "criteria" in data:
            return flatten([data])
        raise ValueError("rubric: a mapping must contain 'rubric', 'sections' or 'criteria'")
    if not isinstance(data, list):
        raise ValueError(f"rubric: expected a list of criteria or sections, got {type(data).__name__}")
    out: list[tuple[dict[str, Any], str | None]] = []
    for i, item in enumerate(data):
        if not isinstance(item, Mapping):
            raise ValueError(f"rubric: item {i} must be a mapping, got {type(item).__name__}")
        if "criteria" in item:
            extra = set(item) - {"criteria", "name", "title", "section", "description", "id"}
            if extra:
                raise ValueError(f"rubric: section {i}: unknown keys {sorted(extra)}")
            crit = item["criteria"]
            if not isinstance(crit, list):
                raise ValueError(f"rubric: section {i}: 'criteria' must be a list, got {type(crit).__name__}")
            section = item.get("name") or item.get("title") or item.get("section") or item.get("id")
            section = None if section is None else str(section)
            for j, c in enumerate(crit):
                if not isinstance(c, Mapping):
                    raise ValueError(f"rubric: section {i}, criterion {j} must be a mapping, got {type(c).__name__}")
                out.append((criterion_id(c), section))
        else:
            out.append((criterion_id(healthbench_item(item, i)), None))
    return out


def criterion_id(item: Mapping[str, Any]) -> dict[str, Any]:
    """A criterion dict with a peer's ``id`` key resolved: the name when the criterion has
    none; dropped with a warning when it differs from the name (nothing else reads it)."""
    d = dict(item)
    if "id" not in d:
        return d
    ident = d.pop("id")
    if d.get("name") is None:
        d["name"] = str(ident)
    elif str(ident) != d["name"]:
        warnings.warn(
            f"rubric: criterion {d['name']!r}: its 'id' {ident!r} is dropped (the name identifies it)",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    return d


def healthbench_item(item: Mapping[str, Any], i: int = 0) -> dict[str, Any]:
    """A criterion dict from an item as given; a HealthBench rubric item (``{"criterion": text,
    "points": int, "tags": [...]}``, openai/simple-evals ``healthbench_eval.py``) becomes
    ``{"requirement", "weight": points, "tags"}`` (negative points: a penalty)."""
    if "criterion" not in item or "points" not in item or "requirement" in item:
        return dict(item)
    points = item["points"]
    if isinstance(points, (bool, str)) or not isinstance(points, (int, float)):
        raise ValueError(f"rubric: item {i}: field 'points' must be a number, got {points!r}")
    d = {k: v for k, v in item.items() if k not in ("criterion", "points")}
    return {"requirement": item["criterion"], "weight": item["points"], **d}


def field_errors(err: ValidationError, what: str) -> str:
    """``field 'x': message; ...`` for a pydantic error on a ``what`` (criterion, group...)."""
    parts = []
    for e in err.errors():
        field = ".".join(str(p) for p in e["loc"]) or what
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = f"unknown key (not a {what} field)"
        parts.append(f"field {field!r}: {msg}")
    return "; ".join(parts)


def format_validation_error(index: int, name: str | None, err: ValidationError) -> str:
    label = f"criterion {index}" + (f" ({name!r})" if name else "")
    return f"{label}: " + field_errors(err, "criterion")
