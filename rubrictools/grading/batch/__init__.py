"""Provider batch jobs: see :mod:`rubrictools.grading.batch.job` for the whole story."""

from __future__ import annotations

from rubrictools.grading.batch.group import BatchGroup, collect_batch
from rubrictools.grading.batch.job import BatchJob
from rubrictools.grading.batch.submit import submit_batch, submit_batch_plan

__all__ = ["BatchGroup", "BatchJob", "collect_batch", "submit_batch", "submit_batch_plan"]
