"""The judge's side of output constraints: telling the judge every rule its reply must follow
(:class:`~rubrictools.OutputConstraint`, in :mod:`rubrictools.rubric.constraints`)."""

from __future__ import annotations

from collections.abc import Sequence

from rubrictools.rubric.constraints import OutputConstraint

__all__ = ["constraints_note"]


def constraints_note(constraints: Sequence[OutputConstraint]) -> str | None:
    """The system-message section telling the judge every constraint (None: there are none)."""
    if not constraints:
        return None
    where = {
        "criterion": "",
        "call": " (over all verdicts of one reply)",
        "judgment": " (over all your verdicts on the submission together)",
    }
    lines = "\n".join(f"- {c.render()}{where[c.scope]}" for c in constraints)
    return f"Constraints on your reply (they apply to every verdict you give):\n{lines}"
