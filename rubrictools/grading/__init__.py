"""Grading: submissions + rubric + judges -> the verdict table.

In pipeline order: ``options`` (every setting, declared once) -> ``inputs`` (checked before
any call) -> ``plan`` (one :class:`~rubrictools.judge.Call` per judge task) -> ``executor``
(the one worker pool: cache, retries, budget) -> ``assemble`` (rows, evidence, ensembles,
rule criteria) -> the verdict table. ``live`` runs that on a frame; ``streaming`` on parquet
slices; ``batch`` through provider batch jobs; ``ray`` on a cluster. ``api`` holds
:func:`grade` and :func:`agrade`.
"""

from __future__ import annotations

from rubrictools.grading.api import agrade, grade
from rubrictools.grading.batch import BatchGroup, BatchJob, collect_batch, submit_batch
from rubrictools.grading.cost import estimate_cost, usage
from rubrictools.grading.ensembles import ensemble
from rubrictools.grading.options import GradeOptions
from rubrictools.grading.pair_api import grade_pairs, grade_pairs_to_parquet
from rubrictools.grading.prompt_export import prompts
from rubrictools.grading.rerun import rerun
from rubrictools.grading.rules import apply_rules
from rubrictools.grading.stream_api import grade_to_parquet
from rubrictools.grading.sync import run_sync

__all__ = [
    "BatchGroup",
    "BatchJob",
    "GradeOptions",
    "agrade",
    "apply_rules",
    "collect_batch",
    "ensemble",
    "estimate_cost",
    "grade",
    "grade_pairs",
    "grade_pairs_to_parquet",
    "grade_to_parquet",
    "prompts",
    "rerun",
    "run_sync",
    "submit_batch",
    "usage",
]
