"""Record a grading run in the run store (:mod:`rubrictools.records`) once its table is built."""

from __future__ import annotations

import hashlib
import json
import warnings
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from rubrictools.frames import to_polars
from rubrictools.grading.plan import Plan
from rubrictools.judge import Judge
from rubrictools.judge.prompts import PROMPT_TEMPLATE_VERSION
from rubrictools.records import write_run
from rubrictools.stack import user_stacklevel

__all__ = ["record_run"]


def _judge_settings(j: Any) -> dict[str, Any]:
    if isinstance(j, Judge):  # every setting but the key
        return {"label": j.label, **j.model_dump(mode="json", exclude={"api_key"})}
    if getattr(j, "is_scripted", False):
        return {"label": j.label, "scripted": True}
    # a judge you wrote: its code is not recorded, its cache id is
    return {"label": j.label, "custom": type(j).__name__, "cache_id": getattr(j, "cache_id", None)}


def _request_hash(plan: Plan) -> str:
    """One hash over every request of the run: its cache key, or its messages when it has none."""
    parts = sorted(c.key or json.dumps(c.messages, sort_keys=True) for c in plan.calls)
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _inputs(plan: Plan) -> pl.DataFrame:
    """The input columns the run read (what :func:`rubrictools.rerun` needs), as given."""
    o = plan.opts
    names = [o.id_column, o.column, o.pair_column, o.query_column, o.reference_column, o.rubric_column]
    used = [n for n in dict.fromkeys(names) if n is not None and n in plan.inp.frame.columns]
    frame = plan.inp.frame.select(used)
    if o.rubric_column is not None and frame[o.rubric_column].dtype == pl.Object:
        dumped = [r.to_json(indent=None) if hasattr(r, "to_json") else json.dumps(r) for r in frame[o.rubric_column]]
        frame = frame.with_columns(pl.Series(o.rubric_column, dumped, dtype=pl.String))
    return frame


def record_run(root: Path, *, kind: str, plan: Plan, verdicts: pl.DataFrame, started: datetime) -> str | None:
    """Write the record of a finished run; a record that cannot be written is a warning, never
    a lost verdict table. Returns the run id (None when not written)."""
    unique = list({id(r): r for r in plan.inp.rubrics}.values())
    try:
        return write_run(
            root,
            kind=kind,
            started=started,
            finished=datetime.now().astimezone(),
            settings=plan.opts.settings(),
            judges=[_judge_settings(j) for j in plan.judges],
            rubrics=[r.to_dict() for r in unique],
            request_hash=_request_hash(plan),
            prompt_template_version=PROMPT_TEMPLATE_VERSION,
            inputs=_inputs(plan),
            verdicts=verdicts,
            examples=to_polars(plan.opts.examples, name="examples") if plan.opts.examples is not None else None,
        )
    except (OSError, pl.exceptions.PolarsError, TypeError, ValueError) as e:
        warnings.warn(
            f"the run record was not written under {root} ({e}); the verdict table is complete",
            stacklevel=user_stacklevel(),
        )
        return None
