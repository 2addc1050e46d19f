"""A rubric as the HTML table Jupyter shows (:meth:`Rubric._repr_html_`): name, requirement,
signed weight (coloured, and printed with its sign), type and group of each criterion."""

from __future__ import annotations

import html
from collections.abc import Sequence

from rubrictools.palette import WEIGHT_NEGATIVE, WEIGHT_POSITIVE
from rubrictools.rubric.criterion import Criterion, kind_note

__all__ = ["rubric_html"]


def rubric_html(criteria: Sequence[Criterion], *, total_positive_weight: float) -> str:
    """The table of ``criteria``, every cell escaped.

    >>> from rubrictools.rubric.criterion import Criterion
    >>> page = rubric_html([Criterion(name="rude", requirement="Is rude", weight=-2)], total_positive_weight=0)
    >>> "\u22122" in page and "<code>rude</code>" in page
    True
    """
    esc = html.escape
    rows = []
    grouped = any(c.group for c in criteria)  # no empty group column
    for i, c in enumerate(criteria, 1):
        colour = WEIGHT_NEGATIVE if c.weight < 0 else WEIGHT_POSITIVE
        signed = f"{c.weight:+g}".replace("-", "\u2212")  # a typographic minus, as every table prints it
        if c.range is not None or c.rule is not None or c.disqualifier:
            kind = esc(kind_note(c).strip(" []") or c.kind)
        elif c.options is None:
            kind = "binary"
        else:
            opts = ", ".join(f"{esc(o.label)}{' (NA)' if o.na else f' = {o.value:g}'}" for o in c.options)
            kind = f"{esc(c.kind)}: {opts}"
        group = f"<td style='text-align:left'>{esc(c.group or '')}</td>" if grouped else ""
        rows.append(
            f"<tr><td style='text-align:right'>{i}</td>"
            f"<td style='text-align:left'><code>{esc(c.name or '')}</code></td>"
            f"<td style='text-align:left'>{esc(c.requirement)}</td>"
            f"<td style='color:{colour};text-align:right'>{signed}</td>"
            f"<td style='text-align:left'>{kind}</td>{group}</tr>"
        )
    left = "style='text-align:left'"
    heads = (
        "".join(f"<th {left}>{h}</th>" for h in ("name", "requirement")) + "<th style='text-align:right'>weight</th>"
    )
    heads += f"<th {left}>type</th>" + (f"<th {left}>group</th>" if grouped else "")
    return (
        f"<div><b>Rubric</b> &middot; {len(criteria)} criteria &middot; total positive weight "
        f"{total_positive_weight:g}<table><thead><tr><th style='text-align:right'>#</th>{heads}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )
