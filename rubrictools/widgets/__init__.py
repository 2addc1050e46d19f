"""Interactive ipywidgets for the notebook: calibrate a judge against humans, label data,
explore verdict tables. Widgets are plain Python objects holding polars state, so they can
be driven programmatically (``widget.next_button.click()``) and tested headless.

>>> from rubrictools import widgets   # ipywidgets loads only when a widget is built
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rubrictools.widgets.adjudication import CalibrationWidget
from rubrictools.widgets.explorer import VerdictExplorer
from rubrictools.widgets.labelling import LabelWidget

if TYPE_CHECKING:  # pragma: no cover
    from rubrictools.rubric import Rubric

__all__ = ["CalibrationWidget", "LabelWidget", "VerdictExplorer", "calibrate", "explore", "label"]


def calibrate(
    verdicts: Any,
    human: Any,
    rubric: Rubric | None = None,
    *,
    submissions: Any = None,
    column: str = "submission",
    metric: str = "cohen_kappa",
    chart: bool = True,
) -> CalibrationWidget:
    """Review judge/human disagreements one at a time; see :class:`CalibrationWidget`."""
    return CalibrationWidget(
        verdicts, human, rubric, submissions=submissions, column=column, metric=metric, chart=chart
    )


def label(
    df: Any,
    rubric: Rubric,
    *,
    column: str = "submission",
    id_column: str = "id",
    rater: str = "me",
    path: str | Path | None = None,
    criteria: list[str] | None = None,
    queue: Any = None,
) -> LabelWidget:
    """Collect human labels per criterion; see :class:`LabelWidget`."""
    return LabelWidget(
        df, rubric, column=column, id_column=id_column, rater=rater, path=path, criteria=criteria, queue=queue
    )


def explore(
    verdicts: Any, *, page_size: int = 20, submissions: Any = None, column: str = "submission"
) -> VerdictExplorer:
    """Filter and page through a verdict table (``id, criterion, verdict[, explanation, error,
    judge]``), with each submission's text when ``submissions`` (``id`` and ``column``) is
    given; see :class:`VerdictExplorer`."""
    return VerdictExplorer(verdicts, page_size=page_size, submissions=submissions, column=column)
