"""The judge's role: a persona with obligations and limits, put before its instructions.

rubrify's ``RoleSpec``: who the judge is (``persona``, ``domain``), how final its word is
(``authority``), what it MUST do (``obligations``) and what it MUST NOT do (``constraints``).
:meth:`Role.render` writes it as the opening paragraph of the system message; the grading
instructions and the reply format that follow it are unchanged, so a role can sharpen how a
judge reads the rubric but cannot remove the rules about untrusted data or the reply schema.
A role is the judge's configuration (trusted text), set with ``Judge(role=...)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["Role"]

Authority = Literal["absolute", "advisory", "peer"]

_AUTHORITY = {
    "absolute": "Your verdicts are final: decide every question yourself, without deferring or hedging.",
    "advisory": "Your verdicts advise a human reviewer who decides; say plainly when a case is borderline.",
    "peer": "You review as a peer of the author: judge by the standards of the field, fairly and specifically.",
}


class Role(BaseModel):
    """A judge's role (see the module docstring).

    Parameters
    ----------
    persona
        Who the judge is ("a senior clinical pharmacist").
    authority
        How final its word is: ``"absolute"`` (default: decide every question), ``"advisory"``
        (a human decides; say when a case is borderline) or ``"peer"`` (judge as a peer of the
        author).
    domain
        The field it works in, if any.
    obligations
        What it MUST do, one line each.
    constraints
        What it MUST NOT do, one line each.

    Example
    -------
    >>> import rubrictools as rt
    >>> role = rt.Role(persona="a senior clinical pharmacist", domain="medication safety",
    ...                obligations=["check every dose against the label"], constraints=["invent facts"])
    >>> print(role.render())  # doctest: +ELLIPSIS
    You are a senior clinical pharmacist, working in medication safety. Your verdicts are final: ...
    You MUST:
    - check every dose against the label
    You MUST NOT:
    - invent facts
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    persona: str = Field(min_length=1)
    authority: Authority = "absolute"
    domain: str | None = None
    obligations: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()

    @field_validator("obligations", "constraints", mode="before")
    @classmethod
    def _lines(cls, v: Any) -> Any:
        if isinstance(v, str):
            return (v,)
        return v

    @field_validator("persona", "obligations", "constraints", mode="after")
    @classmethod
    def _not_blank(cls, v: Any) -> Any:
        for s in (v,) if isinstance(v, str) else v:
            if not s.strip():
                raise ValueError("must not be blank")
        return v

    def render(self) -> str:
        """The role as the system message's opening paragraph."""
        who = self.persona.strip().rstrip(".")
        head = f"You are {who}" + (f", working in {self.domain.strip().rstrip('.')}" if self.domain else "") + "."
        lines = [f"{head} {_AUTHORITY[self.authority]}"]
        if self.obligations:
            lines += ["You MUST:", *(f"- {o.strip()}" for o in self.obligations)]
        if self.constraints:
            lines += ["You MUST NOT:", *(f"- {c.strip()}" for c in self.constraints)]
        return "\n".join(lines)

    @classmethod
    def from_rubrify(cls, spec: Mapping[str, Any]) -> Role:
        """A role from rubrify's ``RoleSpec`` JSON (``persona``, ``authority``, ``domain``,
        ``obligations``, ``constraints``; other keys are refused, naming them).

        >>> Role.from_rubrify({"persona": "an editor", "authority": "advisory"}).authority
        'advisory'
        """
        extra = sorted(set(spec) - set(cls.model_fields))
        if extra:
            raise ValueError(f"rubrify role: keys {extra} are not part of a RoleSpec ({sorted(cls.model_fields)})")
        return cls.model_validate(dict(spec))
