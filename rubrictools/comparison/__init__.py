"""Comparing grading runs: :func:`compare_runs` pairs two runs by submission and says what
changed (scores, verdicts, cost) with intervals."""

from __future__ import annotations

from rubrictools.comparison.runs import OVERALL, RunComparison, compare_runs

__all__ = ["OVERALL", "RunComparison", "compare_runs"]
