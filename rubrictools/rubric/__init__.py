"""The rubric: criteria, weights and allowed answers, their file formats, lint and scoring.

This package is the bottom of the pipeline and imports nothing above it::

    rubric/  ->  judge/  ->  grading/  ->  agreement/  ->  calibration/, diagnostics/, charts, widgets

>>> import rubrictools as rt
>>> rt.Rubric.from_dict([{"name": "answer", "requirement": "Gives the right answer"}]).names
('answer',)
"""

from __future__ import annotations

from rubrictools.rubric.constraints import OutputConstraint
from rubrictools.rubric.criterion import Criterion
from rubrictools.rubric.groups import UNGROUPED, Group, Threshold, parse_thresholds
from rubrictools.rubric.healthbench import HealthBenchScores, healthbench_score
from rubrictools.rubric.labels import BINARY_LABELS, CANNOT_ASSESS, MET, UNMET, format_number, normalize_label
from rubrictools.rubric.length import LengthPenalty, word_count
from rubrictools.rubric.linter import lint
from rubrictools.rubric.markdown import to_markdown
from rubrictools.rubric.model import Rubric
from rubrictools.rubric.options import NumericRange, Option
from rubrictools.rubric.rule import Rule
from rubrictools.rubric.scoring import score
from rubrictools.rubric.tree import RubricTree, TreeNode

__all__ = [
    "BINARY_LABELS",
    "CANNOT_ASSESS",
    "MET",
    "UNGROUPED",
    "UNMET",
    "Criterion",
    "Group",
    "HealthBenchScores",
    "LengthPenalty",
    "NumericRange",
    "Option",
    "OutputConstraint",
    "Rubric",
    "RubricTree",
    "Rule",
    "Threshold",
    "TreeNode",
    "format_number",
    "from_rubrify",
    "healthbench_score",
    "lint",
    "normalize_label",
    "parse_thresholds",
    "score",
    "to_markdown",
    "word_count",
]


def from_rubrify(source: object) -> Rubric:
    """A :class:`Rubric` from a rubrify rubric (same as :meth:`Rubric.from_rubrify`)."""
    return Rubric.from_rubrify(source)
