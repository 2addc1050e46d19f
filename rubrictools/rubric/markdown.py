"""A rubric as a Markdown table, ready to paste into a prompt or a report."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from rubrictools.rubric.model import Rubric

__all__ = ["to_markdown"]


def _cell(text: Any) -> str:
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", "<br>")


def to_markdown(rubric: Rubric) -> str:
    """The rubric as a Markdown table, ready to paste into a prompt or a report.

    >>> import rubrictools as rt
    >>> print(rt.Rubric.from_dict([{"name": "a", "requirement": "Says | hi", "weight": 2}]).to_markdown())
    | # | Criterion | Weight | Requirement | Answer |
    |---|---|---|---|---|
    | 1 | a | +2 | Says \\| hi | MET / UNMET |
    """
    lines = ["| # | Criterion | Weight | Requirement | Answer |", "|---|---|---|---|---|"]
    for i, c in enumerate(rubric, 1):
        if c.rule is not None:
            answer = "MET / UNMET (checked by rule)"
        elif c.range is not None:
            answer = f"number, {c.range.describe()}"
            if c.range.anchors:
                answer += " (" + "; ".join(f"{k:g} = {v}" for k, v in sorted(c.range.anchors.items())) + ")"
        elif c.options is not None:
            answer = " / ".join(o.label + (f" ({o.description})" if o.description else "") for o in c.options)
        else:
            answer = "MET / UNMET"
        weight = "disqualifier" if c.disqualifier else f"{c.weight:+g}".replace("-", "\u2212")  # a minus, not a hyphen
        req = c.requirement + (" **(required)**" if c.required else "")
        lines.append(f"| {i} | {_cell(c.name)} | {weight} | {_cell(req)} | {_cell(answer)} |")
    if rubric.groups:
        lines += ["", "| Group | Weight | Aggregation | Criteria |", "|---|---|---|---|"]
        for g in rubric.groups:
            members = ", ".join(c.name or "" for c in rubric if c.group == g.name)
            weight = f"{g.weight:g}".replace("-", "\u2212")
            lines.append(f"| {_cell(g.name)} | {weight} | {g.aggregation} | {_cell(members)} |")
    if rubric.output_constraints:
        lines += ["", "| Rule on the judge's replies | Id | Scope | If broken |", "|---|---|---|---|"]
        broken = {"soft": "warning", "hard": "error row", "disqualify": "disqualifies the submission"}
        for k in rubric.output_constraints:
            lines.append(f"| {_cell(k.render())} | {_cell(k.id)} | {k.scope} | {broken[k.enforcement]} |")
    if rubric.thresholds:
        lines += [
            "",
            "Decisions: " + "; ".join(f"**{_cell(t.label)}** if score >= {t.min:g}" for t in rubric.thresholds),
        ]
    return "\n".join(lines)
