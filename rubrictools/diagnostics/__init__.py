"""Is the rubric any good? :func:`rubric_report` (per-criterion findings), :func:`improve`
(rewrite the weakest criterion, keep the rewrite only if held-out agreement rises),
:func:`search_rubric` (rewrite the whole rubric on training labels, report the held-out gain),
:func:`evaluate_rubric` (an LLM's review against a meta-rubric) and :func:`draft_rubric` (a
model's first draft, linted and checked on labelled examples)."""

from __future__ import annotations

from rubrictools.diagnostics.draft import Draft, draft_rubric
from rubrictools.diagnostics.meta import META_RUBRIC, evaluate_rubric, meta_rubric
from rubrictools.diagnostics.report import rubric_report
from rubrictools.diagnostics.rewrite import improve
from rubrictools.diagnostics.search import RubricSearch, search_rubric

__all__ = [
    "META_RUBRIC",
    "Draft",
    "RubricSearch",
    "draft_rubric",
    "evaluate_rubric",
    "improve",
    "meta_rubric",
    "rubric_report",
    "search_rubric",
]
