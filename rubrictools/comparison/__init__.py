"""Comparing grading runs: :func:`compare_runs` pairs two runs by submission and says what
changed (scores, verdicts, cost) with intervals; :func:`assert_score` gates a run on the lower
confidence bound of its score (pytest, notebooks under nbmake, CI)."""

from __future__ import annotations

from rubrictools.comparison.gates import assert_score
from rubrictools.comparison.repeated import consistency
from rubrictools.comparison.runs import OVERALL, RunComparison, compare_runs

__all__ = ["OVERALL", "RunComparison", "assert_score", "compare_runs", "consistency"]
