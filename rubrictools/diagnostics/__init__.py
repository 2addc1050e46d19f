"""Is the rubric any good? :func:`rubric_report` (per-criterion findings) and :func:`improve`
(rewrite the weakest criterion, keep the rewrite only if held-out agreement rises)."""

from __future__ import annotations

from rubrictools.diagnostics.improve import improve
from rubrictools.diagnostics.report import rubric_report

__all__ = ["improve", "rubric_report"]
