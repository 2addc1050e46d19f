"""rubrictools: rubric-based evaluation of LLM outputs, DataFrame-native and Jupyter-first.

>>> import rubrictools as rt
>>> rubric = rt.Rubric.from_dict([{"name": "answer", "requirement": "Gives the right answer"}])
>>> rubric.names
('answer',)

The public API is re-exported here and imported lazily, so ``import rubrictools`` stays fast
(litellm, altair and ipywidgets load only when a function that needs them is called).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # rubric model
    "Rubric": "rubrictools.rubric",
    "Criterion": "rubrictools.rubric",
    "Option": "rubrictools.rubric",
    "Group": "rubrictools.rubric",
    "NumericRange": "rubrictools.rubric",
    "Rule": "rubrictools.rules",
    "apply_rules": "rubrictools.rules",
    "lint": "rubrictools.linting",
    "rubric_report": "rubrictools.quality",
    "improve": "rubrictools.improvement",
    "MET": "rubrictools.rubric",
    "UNMET": "rubrictools.rubric",
    "CANNOT_ASSESS": "rubrictools.rubric",
    # verdict table
    "VERDICT_SCHEMA": "rubrictools.verdicts",
    "HOLISTIC": "rubrictools.verdicts",
    "validate_verdicts": "rubrictools.verdicts",
    # scoring
    "score": "rubrictools.scoring",
    "LengthPenalty": "rubrictools.scoring",
    "word_count": "rubrictools.scoring",
    # grading
    "grade": "rubrictools.grading",
    "agrade": "rubrictools.grading",
    "estimate_cost": "rubrictools.grading",
    "usage": "rubrictools.grading",
    "Judge": "rubrictools.judge.config",
    "ScriptedJudge": "rubrictools.judge.scripted",
    "ensemble": "rubrictools.ensembling",
    "submit_batch": "rubrictools.batching",
    "collect_batch": "rubrictools.batching",
    "BatchJob": "rubrictools.batching",
    "BatchGroup": "rubrictools.batching",
    # agreement with humans
    "agreement": "rubrictools.reliability",
    "inter_rater": "rubrictools.reliability",
    "compare": "rubrictools.reliability",
}
_SUBMODULES = ("metrics", "datasets", "charts", "widgets", "calibrate", "ray", "testing")

__all__ = sorted([*_EXPORTS, *_SUBMODULES, "__version__"])

if TYPE_CHECKING:  # pragma: no cover
    from rubrictools import calibrate, charts, datasets, metrics, ray, testing, widgets
    from rubrictools.ensembling import ensemble
    from rubrictools.batching import BatchGroup, BatchJob, collect_batch, submit_batch
    from rubrictools.reliability import agreement, compare, inter_rater
    from rubrictools.grading import agrade, estimate_cost, grade, usage
    from rubrictools.judge.config import Judge
    from rubrictools.judge.scripted import ScriptedJudge
    from rubrictools.rubric import CANNOT_ASSESS, MET, UNMET, Criterion, Group, NumericRange, Option, Rubric
    from rubrictools.rules import Rule, apply_rules
    from rubrictools.linting import lint
    from rubrictools.quality import rubric_report
    from rubrictools.improvement import improve
    from rubrictools.scoring import LengthPenalty, score, word_count
    from rubrictools.verdicts import HOLISTIC, VERDICT_SCHEMA, validate_verdicts


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        value = importlib.import_module(f"rubrictools.{name}")
        globals()[name] = value
        return value
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rubrictools' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
