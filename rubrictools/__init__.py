"""rubrictools: rubric-based evaluation of LLM outputs, DataFrame-native and Jupyter-first.

>>> import rubrictools as rt
>>> rubric = rt.Rubric.from_dict([{"name": "answer", "requirement": "Gives the right answer"}])
>>> rubric.names
('answer',)

The package is the pipeline: ``rubric`` -> ``judge`` -> ``grading`` -> ``agreement`` (over
``metrics``) and ``leaderboard`` (pairwise preferences) -> ``calibration``, ``diagnostics``,
``charts``, ``widgets``. The public API is re-exported here and imported lazily, so
``import rubrictools`` stays fast (litellm, altair and ipywidgets load only when a function
that needs them is called).
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

__version__ = "0.3.0"

# litellm's own types trip a pydantic notice when their schemas are built ("... is using the
# `ReadOnly` qualifier"), at its import or at a later call, often inside a grading thread: not the
# user's concern, and it filled notebook cells. Only that message is silenced.
warnings.filterwarnings("ignore", message=r".*(is|are) using the `ReadOnly` qualifier", category=UserWarning)

__all__ = [
    "CANNOT_ASSESS",
    "HOLISTIC",
    "MET",
    "UNMET",
    "VERDICT_SCHEMA",
    "BatchGroup",
    "BatchJob",
    "Criterion",
    "FunctionJudge",
    "Grader",
    "Group",
    "Judge",
    "LengthPenalty",
    "NumericRange",
    "Option",
    "OutputConstraint",
    "Role",
    "Rubric",
    "RubricTree",
    "Rule",
    "ScriptedJudge",
    "__version__",
    "agrade",
    "agreement",
    "apply_rules",
    "assert_score",
    "calibrate",
    "charts",
    "choose_to_label",
    "collect_batch",
    "compare",
    "compare_runs",
    "consistency",
    "datasets",
    "draft_rubric",
    "ensemble",
    "estimate_cost",
    "evaluate_rubric",
    "evolution",
    "evolve_rubric",
    "grade",
    "grade_pairs",
    "grade_pairs_to_parquet",
    "grade_to_parquet",
    "healthbench_score",
    "improve",
    "inspect",
    "inter_rater",
    "judge_kappas",
    "labels_from_wide",
    "length_controlled_win_rates",
    "lint",
    "load_run",
    "meta_rubric",
    "metrics",
    "position_bias",
    "ppi",
    "ppi_estimate",
    "preferences_from_scores",
    "preferences_from_verdicts",
    "prompts",
    "rank_systems",
    "ray",
    "rerun",
    "rubric_report",
    "runs",
    "score",
    "search_rubric",
    "submit_batch",
    "testing",
    "usage",
    "validate_verdicts",
    "widgets",
    "win_rates",
    "word_count",
]

_EXPORTS: dict[str, str] = {
    **dict.fromkeys(
        [
            "Rubric",
            "RubricTree",
            "Criterion",
            "Option",
            "Group",
            "NumericRange",
            "Rule",
            "MET",
            "UNMET",
            "CANNOT_ASSESS",
            "lint",
            "score",
            "healthbench_score",
            "LengthPenalty",
            "word_count",
            "OutputConstraint",
        ],
        "rubrictools.rubric",
    ),
    **dict.fromkeys(["VERDICT_SCHEMA", "HOLISTIC", "validate_verdicts"], "rubrictools.verdicts"),
    **dict.fromkeys(["Judge", "ScriptedJudge", "Grader", "FunctionJudge", "Role"], "rubrictools.judge"),
    **dict.fromkeys(
        [
            "grade",
            "grade_to_parquet",
            "prompts",
            "rerun",
            "grade_pairs",
            "grade_pairs_to_parquet",
            "agrade",
            "estimate_cost",
            "usage",
            "ensemble",
            "apply_rules",
            "submit_batch",
            "collect_batch",
            "BatchJob",
            "BatchGroup",
        ],
        "rubrictools.grading",
    ),
    **dict.fromkeys(["runs", "load_run"], "rubrictools.records"),
    **dict.fromkeys(["compare_runs", "assert_score", "consistency"], "rubrictools.comparison"),
    **dict.fromkeys(
        ["agreement", "inter_rater", "judge_kappas", "compare", "labels_from_wide"], "rubrictools.human_agreement"
    ),
    **dict.fromkeys(
        [
            "win_rates",
            "length_controlled_win_rates",
            "rank_systems",
            "position_bias",
            "preferences_from_scores",
            "preferences_from_verdicts",
        ],
        "rubrictools.leaderboard",
    ),
    **dict.fromkeys(
        ["rubric_report", "improve", "search_rubric", "evaluate_rubric", "meta_rubric", "draft_rubric"],
        "rubrictools.diagnostics",
    ),
    **dict.fromkeys(["ppi_estimate", "choose_to_label"], "rubrictools.ppi"),
    **dict.fromkeys(["evolve_rubric"], "rubrictools.evolution"),
}
_SUBMODULES: dict[str, str] = {
    "metrics": "rubrictools.metrics",
    "datasets": "rubrictools.datasets",
    "charts": "rubrictools.charts",
    "widgets": "rubrictools.widgets",
    "calibrate": "rubrictools.calibration",
    "ray": "rubrictools.grading.ray",
    "ppi": "rubrictools.ppi",
    "testing": "rubrictools.testing",
    "inspect": "rubrictools.inspect",
    "evolution": "rubrictools.evolution",
}

if TYPE_CHECKING:  # pragma: no cover
    from rubrictools import calibration as calibrate
    from rubrictools import charts, datasets, evolution, inspect, metrics, ppi, testing, widgets
    from rubrictools.comparison import assert_score, compare_runs, consistency
    from rubrictools.diagnostics import (
        draft_rubric,
        evaluate_rubric,
        improve,
        meta_rubric,
        rubric_report,
        search_rubric,
    )
    from rubrictools.evolution import evolve_rubric
    from rubrictools.grading import (
        BatchGroup,
        BatchJob,
        agrade,
        apply_rules,
        collect_batch,
        ensemble,
        estimate_cost,
        grade,
        grade_pairs,
        grade_pairs_to_parquet,
        grade_to_parquet,
        prompts,
        rerun,
        submit_batch,
        usage,
    )
    from rubrictools.grading import ray as ray
    from rubrictools.human_agreement import agreement, compare, inter_rater, judge_kappas, labels_from_wide
    from rubrictools.judge import FunctionJudge, Grader, Judge, Role, ScriptedJudge
    from rubrictools.leaderboard import (
        length_controlled_win_rates,
        position_bias,
        preferences_from_scores,
        preferences_from_verdicts,
        rank_systems,
        win_rates,
    )
    from rubrictools.ppi import choose_to_label, ppi_estimate
    from rubrictools.records import load_run, runs
    from rubrictools.rubric import (
        CANNOT_ASSESS,
        MET,
        UNMET,
        Criterion,
        Group,
        LengthPenalty,
        NumericRange,
        Option,
        OutputConstraint,
        Rubric,
        RubricTree,
        Rule,
        healthbench_score,
        lint,
        score,
        word_count,
    )
    from rubrictools.verdicts import HOLISTIC, VERDICT_SCHEMA, validate_verdicts


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        value = importlib.import_module(_SUBMODULES[name])
    elif name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
    else:
        raise AttributeError(f"module 'rubrictools' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return list(__all__)
