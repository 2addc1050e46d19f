"""Judge modes as tasks: :class:`JudgeTask` and the built-in per-criterion, per-item, holistic and pairwise modes.

``MODES`` maps each ``grade(mode=...)`` name to how that mode splits one submission into tasks
(see :mod:`rubrictools.grading.plan`).
"""

from __future__ import annotations

from rubrictools.judge.tasks.base import Decide, JudgeTask, Parsed, Subject
from rubrictools.judge.tasks.criterion import CriterionTask, PromptParts
from rubrictools.judge.tasks.holistic import HolisticTask
from rubrictools.judge.tasks.item import ItemTask
from rubrictools.judge.tasks.pairwise import PAIR_VALUES, PairTask

__all__ = [
    "PAIR_VALUES",
    "CriterionTask",
    "Decide",
    "HolisticTask",
    "ItemTask",
    "JudgeTask",
    "PairTask",
    "Parsed",
    "PromptParts",
    "Subject",
]
