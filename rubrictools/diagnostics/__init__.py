"""Is the rubric any good? :func:`rubric_report` (per-criterion findings) and :func:`improve`
(rewrite the weakest criterion, keep the rewrite only if held-out agreement rises)."""

from __future__ import annotations

from rubrictools.diagnostics.report import rubric_report
from rubrictools.diagnostics.rewrite import improve

__all__ = ["improve", "rubric_report"]
