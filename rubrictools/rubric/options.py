"""The answers a criterion allows: multi-choice :class:`Option` and a :class:`NumericRange`."""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from rubrictools.rubric.labels import MAX_ENUMERATED_POINTS, format_number

__all__ = ["NumericRange", "Option"]


class Option(BaseModel):
    """One answer of a multi-choice criterion.

    ``value`` is the fraction of the criterion's weight earned when the option is picked
    (in ``[0, 1]``; an NA option is never scored, so its value may be any number, as
    autorubric allows). ``na=True`` marks an abstain option ("not applicable"), treated like a
    binary ``CANNOT_ASSESS`` by :func:`rubrictools.score`.

    Parameters
    ----------
    label
        What the judge answers to pick the option (shown to it, with ``description``).
    na
        ``True``: an abstain option ("not applicable"), never scored (default ``False``).
    value
        The fraction of the criterion's weight the option earns (``[0, 1]``; default 0).
    description
        What the option means, shown to the judge beside its label.

    Example
    -------
    >>> import rubrictools as rt
    >>> c = rt.Criterion(name="tone", requirement="How polite is it?", options=[
    ...     rt.Option(label="rude", value=0.0), rt.Option(label="neutral", value=0.5),
    ...     rt.Option(label="warm", value=1.0), rt.Option(label="no reply", na=True)])
    >>> [(o.label, o.value, o.na) for o in c.options]
    [('rude', 0.0, False), ('neutral', 0.5, False), ('warm', 1.0, False), ('no reply', 0.0, True)]
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    label: str = Field(min_length=1)
    na: bool = False  # before value: the value check reads it
    value: float = 0.0
    description: str | None = None

    @field_validator("label")
    @classmethod
    def _label_not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("option label must not be blank")
        return v

    @field_validator("value")
    @classmethod
    def _value_in_unit_interval(cls, v: float, info: ValidationInfo) -> float:
        # an NA option is never scored, so its value may be anything (autorubric files use e.g. 999)
        if not info.data.get("na") and not (math.isfinite(v) and 0.0 <= v <= 1.0):
            raise ValueError(f"option value must be a finite number in [0, 1], got {v!r}")
        return float(v)


class NumericRange(BaseModel):
    """The range of a numeric criterion: ``min..max``, optionally on a ``step`` grid.

    A judge's number ``x`` earns ``(x - min) / (max - min)`` of the weight. ``anchors`` maps
    points of the scale to what they mean (shown to the judge).

    Parameters
    ----------
    min, max
        The ends of the scale (``min < max``).
    step
        The grid a judge's number must lie on from ``min`` (e.g. 1 for whole points; none: any
        number in the range).
    anchors
        Points of the scale and what they mean, shown to the judge (each within the range).

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
        n = round((self.max - self.min) / self.step)
        if n + 1 > MAX_ENUMERATED_POINTS:
            return None
        return tuple(round(self.min + i * self.step, 12) for i in range(n + 1))

    def describe(self) -> str:
        """``"0 to 5 in steps of 1"``."""
        out = f"{format_number(self.min)} to {format_number(self.max)}"
        return out + (f" in steps of {format_number(self.step)}" if self.step is not None else "")
