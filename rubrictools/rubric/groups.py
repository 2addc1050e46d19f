"""Scoring groups and decision thresholds of a rubric."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rubrictools.rubric.formats import field_errors
from rubrictools.rubric.labels import GroupAggregation, normalize_label, require_finite

__all__ = ["Group", "Threshold", "parse_thresholds"]


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
        return require_finite(v, "threshold min")


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
        raise ValueError(
            f"{where}: expected a mapping label -> min or a list of (label, min), got {type(value).__name__}"
        )
    out = []
    for i, d in enumerate(items):
        try:
            out.append(Threshold.model_validate(d))
        except ValidationError as e:
            raise ValueError(f"{where}[{i}]: {field_errors(e, 'threshold')}") from None
    for prev, cur in itertools.pairwise(out):
        if not cur.min < prev.min:
            raise ValueError(
                f"{where}: cut-offs must be strictly decreasing (highest first); {cur.label!r} ({cur.min:g}) "
                f"comes after {prev.label!r} ({prev.min:g})"
            )
    labels = [normalize_label(t.label) for t in out]
    if len(set(labels)) != len(labels):
        raise ValueError(f"{where}: duplicate labels {[t.label for t in out]}")
    return tuple(out)
