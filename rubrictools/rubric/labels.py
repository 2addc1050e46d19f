"""Verdict labels and the small value helpers every other rubric module shares."""

from __future__ import annotations

import math
from typing import Literal

__all__ = [
    "BINARY_LABELS",
    "CANNOT_ASSESS",
    "MET",
    "UNMET",
    "format_number",
    "normalize_label",
    "require_finite",
]

MET = "MET"
UNMET = "UNMET"
CANNOT_ASSESS = "CANNOT_ASSESS"
BINARY_LABELS: tuple[str, str, str] = (MET, UNMET, CANNOT_ASSESS)

Scale = Literal["ordinal", "nominal", "numeric"]
GroupAggregation = Literal["weighted_mean", "weighted_sum", "min", "max", "all", "any"]
MAX_ENUMERATED_POINTS = 1001
Aggregation = Literal["majority", "weighted", "unanimous", "any", "mean", "weighted_mean", "median"]


def normalize_label(label: str) -> str:
    """Case- and whitespace-insensitive form of a label (``" Very  good "`` -> ``"very good"``)."""
    return " ".join(str(label).split()).lower()


def require_finite(v: float, what: str) -> float:
    """``v`` as a float, or a ValueError naming ``what`` when it is NaN or infinite."""
    if not math.isfinite(v):
        raise ValueError(f"{what} must be finite, got {v!r}")
    return float(v)


def format_number(x: float) -> str:
    """Canonical text of a numeric verdict: ``3.0 -> "3"``, ``2.5 -> "2.5"``."""
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else repr(x)
