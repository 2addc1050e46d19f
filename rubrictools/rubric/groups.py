"""Scoring groups and decision thresholds of a rubric."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rubrictools.rubric.formats import field_errors
from rubrictools.rubric.labels import GroupAggregation, normalize_label, require_finite

__all__ = ["UNGROUPED", "Group", "Threshold", "check_groups", "children_first", "parse_thresholds"]

UNGROUPED = "ungrouped"
"""The scoring group of criteria that belong to no group of their own (the rubrify reader puts
rubrify's loose criteria there): ``grade(mode="grouped")`` asks its criteria one by one."""


class Group(BaseModel):
    """A scoring group: a named set of criteria with its own aggregation and weight.

    ``aggregation`` turns the members' credits into a sub-score in ``[0, 1]``:
    ``weighted_mean`` (the rubric formula restricted to the group), ``weighted_sum`` (the same
    sub-score, and :func:`rubrictools.score` also reports the group's raw weighted sum in a
    ``raw:<group>`` column: rubrify's unnormalised ``weighted_sum``), ``min``, ``max``,
    ``all`` (1 when every member earns full credit) or ``any`` (1 when one does).
    A member's *credit* is its score fraction for a reward and ``1 - fraction`` for a penalty.

    Groups nest (rubrify's groups of groups): a group with a ``parent`` counts in that group,
    whose members are then its child groups (credit: their sub-scores, weight: their
    ``weight``) and never criteria. ``weighted_mean`` of a parent is ``sum_k W_k s_k / sum_k
    W_k`` over the children with a sub-score; ``min``/``max``/``all``/``any`` as above. The
    rubric score is the weighted mean of the top-level groups.

    Parameters
    ----------
    name
        The group's name (criteria join it with ``Criterion(group=name)``).
    weight
        The group's weight among its siblings (finite, ``>= 0``; default 1).
    aggregation
        ``"weighted_mean"`` (default), ``"weighted_sum"``, ``"min"``, ``"max"``, ``"all"`` or
        ``"any"``, as above.
    description
        What the group measures: kept with the rubric and its files (rubrify's group
        description), not shown to the judge.
    parent
        The name of the group this one counts in (none: a top-level group).

    Example
    -------
    >>> import rubrictools as rt
    >>> rubric = rt.Rubric.from_dict({"criteria": [
    ...     {"name": "correct", "requirement": "Is correct", "group": "substance"},
    ...     {"name": "polite", "requirement": "Is polite", "group": "manner"}],
    ...     "groups": [{"name": "substance", "weight": 3}, {"name": "manner", "aggregation": "min"}]})
    >>> [(g.name, g.weight, g.aggregation) for g in rubric.groups]
    [('substance', 3.0, 'weighted_mean'), ('manner', 1.0, 'min')]
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    weight: float = 1.0
    aggregation: GroupAggregation = "weighted_mean"
    description: str | None = None
    parent: str | None = None

    @field_validator("weight")
    @classmethod
    def _weight_ok(cls, v: float) -> float:
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"group weight must be a finite number >= 0, got {v!r}")
        return float(v)


def check_groups(groups: tuple[Group, ...], criteria: Any) -> None:
    """Check a rubric's groups against its criteria (the errors name the group or criterion) and
    give each criterion's ``group`` the declared spelling."""
    keys = [normalize_label(g.name) for g in groups]
    dup = sorted({g.name for g, k in zip(groups, keys, strict=True) if keys.count(k) > 1})
    if dup:
        raise ValueError(f"groups: duplicate group name(s) {dup}")
    declared = {normalize_label(g.name): g.name for g in groups}
    members: dict[str, int] = {}
    for i, c in enumerate(criteria):
        if c.group is None:
            if c.disqualifier or c.weight == 0:  # neither adds to a sub-score
                continue
            raise ValueError(
                f"criterion {i} ({c.name!r}): field 'group': the rubric declares groups "
                f"{[g.name for g in groups]}, so every scored criterion must name one"
            )
        key = normalize_label(c.group)
        if key not in declared:
            raise ValueError(
                f"criterion {i} ({c.name!r}): field 'group': unknown group {c.group!r}; "
                f"declared groups are {[g.name for g in groups]}"
            )
        if c.group != declared[key]:
            object.__setattr__(c, "group", declared[key])
        members[declared[key]] = members.get(declared[key], 0) + 1
    children: dict[str, list[str]] = {}
    for g in groups:
        if g.parent is not None:
            parent = declared.get(normalize_label(g.parent))
            if parent is None or parent == g.name:
                raise ValueError(f"group {g.name!r}: field 'parent': no other group is named {g.parent!r}")
            if parent in members:
                raise ValueError(f"group {parent!r} holds criteria and groups ({g.name!r}): a group holds one kind")
            children.setdefault(parent, []).append(g.name)
    children_first(groups)  # no cycles
    empty = [g.name for g in groups if g.name not in members and g.name not in children]
    if empty:
        raise ValueError(f"groups: {empty} have no criteria")
    if sum(g.weight for g in groups if g.parent is None) <= 0:
        raise ValueError("groups: at least one top-level group needs a positive weight")


def children_first(groups: tuple[Group, ...]) -> list[Group]:
    """The groups ordered so that every group comes after its child groups (an error on a cycle)."""
    done: list[Group] = []
    state: dict[str, int] = {}

    def visit(g: Group, path: list[str]) -> None:
        key = normalize_label(g.name)
        if state.get(key) == 2:
            return
        if state.get(key) == 1:
            raise ValueError(f"groups: a cycle of parents {[*path, g.name]}")
        state[key] = 1
        for child in (c for c in groups if c.parent is not None and normalize_label(c.parent) == key):
            visit(child, [*path, g.name])
        state[key] = 2
        done.append(g)

    for g in groups:
        visit(g, [])
    return done


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
