"""Interactive ipywidgets for the notebook: calibrate a judge against humans, label data,
explore verdict tables. Widgets are plain Python objects holding polars state, so they can
be driven programmatically (``widget.next_button.click()``) and tested headless.

>>> from rubrictools import widgets   # ipywidgets loads only when a widget is built
"""

from __future__ import annotations

from typing import Any

from rubrictools.widgets.adjudication import CalibrationWidget
from rubrictools.widgets.explorer import VerdictExplorer
from rubrictools.widgets.labelling import LabelWidget

__all__ = ["CalibrationWidget", "LabelWidget", "VerdictExplorer", "calibrate", "explore", "label"]


calibrate = CalibrationWidget
"""Review judge/human disagreements one at a time: ``widgets.calibrate(verdicts, human, rubric)``
builds a :class:`CalibrationWidget` (the same parameters)."""

label = LabelWidget
"""Collect human labels per criterion: ``widgets.label(df, rubric, rater=..., path=...)`` builds a
:class:`LabelWidget` (the same parameters)."""


def explore(
    verdicts: Any, *, page_size: int = 20, submissions: Any = None, column: str = "submission"
) -> VerdictExplorer:
    """Filter and page through a verdict table (``id, criterion, verdict[, explanation, error,
    judge]``), with each submission's text when ``submissions`` (``id`` and ``column``) is
    given; see :class:`VerdictExplorer`."""
    return VerdictExplorer(verdicts, page_size=page_size, submissions=submissions, column=column)
