"""JSON schemas of the judge's replies, one per judge mode: a constrained decoder given one can
only answer with the rubric's labels, on its scale, for every criterion asked."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from rubrictools.rubric import Criterion, Rubric

__all__ = ["HOLISTIC_SCHEMA", "criterion_schema", "item_schema"]


def _verdict_schema(criterion: Criterion) -> dict[str, Any]:
    """A label from the criterion's list; a numeric criterion's number with the scale's bounds
    (and its points, when the scale is stepped), so a constrained decoder keeps it on the scale."""
    scale = criterion.range
    if scale is None:
        return {"type": "string", "enum": list(criterion.labels)}
    out: dict[str, Any] = {"type": "number", "minimum": scale.min, "maximum": scale.max}
    if scale.points is not None:
        out["enum"] = list(scale.points)
    return out


_CONFIDENCE = {"type": "number", "minimum": 0, "maximum": 1}


def criterion_schema(criterion: Criterion, *, evidence: bool = False, confidence: bool = False) -> dict[str, Any]:
    """JSON schema of a per-criterion reply (labels restricted to the allowed ones)."""
    props: dict[str, Any] = {"verdict": _verdict_schema(criterion), "explanation": {"type": "string"}}
    if evidence:
        props["evidence"] = {"type": "string"}
    if confidence:
        props["confidence"] = _CONFIDENCE
    return {
        "type": "object",
        "properties": props,
        "required": list(props),
        "additionalProperties": False,
    }


def item_schema(
    rubric: Rubric, *, evidence: bool | Collection[str] = False, confidence: bool = False
) -> dict[str, Any]:
    """JSON schema of a per-item reply: ``{"verdicts": {<criterion name>: {"verdict", "explanation"}}}``
    with every criterion required and each verdict restricted to that criterion's labels (a
    constrained decoder then cannot omit a criterion or invent a label). The parser also
    accepts the list form ``{"verdicts": [{"criterion", "verdict", ...}]}``.

    ``evidence``: ``True`` asks every criterion for an ``evidence`` quote; a collection of
    criterion names asks only those (as the prompt does), so a constrained decoder is not made
    to quote for a criterion nobody asked a quote for.
    """
    entries: dict[str, Any] = {}
    for c in rubric:
        entry: dict[str, Any] = {"verdict": _verdict_schema(c), "explanation": {"type": "string"}}
        if evidence is True or (not isinstance(evidence, bool) and c.name in evidence):
            entry["evidence"] = {"type": "string"}
        if confidence:
            entry["confidence"] = _CONFIDENCE
        entries[c.name or ""] = {
            "type": "object",
            "properties": entry,
            "required": list(entry),
            "additionalProperties": False,
        }
    verdicts = {"type": "object", "properties": entries, "required": list(entries), "additionalProperties": False}
    return {
        "type": "object",
        "properties": {"verdicts": verdicts},
        "required": ["verdicts"],
        "additionalProperties": False,
    }


HOLISTIC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "score": {"type": "integer", "minimum": 0, "maximum": 100},
        "explanation": {"type": "string"},
    },
    "required": ["score", "explanation"],
    "additionalProperties": False,
}
