"""Inspect AI eval logs as rubrictools tables: scores per sample x scorer, and rubric verdicts.

A log is read with Inspect's own :func:`inspect_ai.log.read_eval_log` (``.eval`` and ``.json``
alike); a folder is listed with :func:`inspect_ai.log.list_eval_logs`. Several logs (one per
model, say) give one table, whose ``system`` column is each log's model: the table goes
straight to :func:`rubrictools.preferences_from_scores` and :func:`rubrictools.rank_systems`.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Iterator
from typing import Any

import polars as pl

from rubrictools.inspect.reading import each_log, sample_usage, sample_where, text_of
from rubrictools.inspect.scorer import METADATA_KEY, VERDICT_FIELDS
from rubrictools.rubric import Rubric
from rubrictools.stack import user_stacklevel
from rubrictools.verdicts import VERDICT_SCHEMA

__all__ = ["LOG_SCHEMA", "read_log", "read_rubric", "read_verdicts"]

_SAMPLE_SCHEMA: dict[str, pl.DataType] = {
    "log": pl.String(),
    "task": pl.String(),
    "run_id": pl.String(),
    "status": pl.String(),
    "system": pl.String(),
    "id": pl.String(),
    "epoch": pl.Int64(),
}
LOG_SCHEMA: dict[str, pl.DataType] = {
    **_SAMPLE_SCHEMA,
    "input": pl.String(),
    "target": pl.String(),
    "output": pl.String(),
    "scorer": pl.String(),
    "score": pl.Float64(),
    "value": pl.String(),
    "answer": pl.String(),
    "explanation": pl.String(),
    "reason": pl.String(),
    "input_tokens": pl.Int64(),
    "output_tokens": pl.Int64(),
    "total_tokens": pl.Int64(),
    "cost_usd": pl.Float64(),
    "judge_tokens": pl.Int64(),
    "judge_cost_usd": pl.Float64(),
    "error": pl.String(),
}
"""The columns of :func:`read_log`'s table, in order."""


def _number(value: Any, to_float: Any) -> float | None:
    if value is None or isinstance(value, (list, tuple, dict)):
        return None
    x = float(to_float(value))
    return None if math.isnan(x) else x


def _raw(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, default=str)


def _score_rows(name: str, s: Any, to_float: Any) -> Iterator[dict[str, Any]]:
    """A score as rows: one, or one per key of a dict value (scorer ``name/key``)."""
    parts = s.value.items() if isinstance(s.value, dict) else [(None, s.value)]
    for key, value in parts:
        yield {
            "scorer": name if key is None else f"{name}/{key}",
            "score": _number(value, to_float),
            "value": _raw(value),
            "answer": s.answer,
            "explanation": s.explanation,
            "reason": getattr(s, "reason", None),
            **_judge_usage(s),
        }


def _ours(s: Any) -> dict[str, Any] | None:
    """What :func:`rubric_scorer` left in a score's metadata (None: another scorer's score)."""
    return s.metadata.get(METADATA_KEY) if isinstance(s.metadata, dict) else None


def _judge_usage(s: Any) -> dict[str, Any]:
    """Tokens and cost of rubrictools' judge for one score (null for any other scorer)."""
    found = _ours(s)
    if not found:
        return {"judge_tokens": None, "judge_cost_usd": None}
    rows = found.get("verdicts", [])
    tokens = [(r.get("prompt_tokens") or 0) + (r.get("completion_tokens") or 0) for r in rows]
    costs = [r["cost_usd"] for r in rows if r.get("cost_usd") is not None]
    return {"judge_tokens": sum(tokens), "judge_cost_usd": sum(costs) if costs else None}


def _no_match(scorer: str, seen: set[str]) -> ValueError:
    hint = "; a dict-valued score's rows are named 'scorer/key'" if any("/" in n for n in seen) else ""
    return ValueError(f"scorer={scorer!r} matches no score in these logs (scorers: {sorted(seen)}){hint}")


def read_log(logs: Any, *, scorer: str | None = None) -> pl.DataFrame:
    """Inspect AI eval logs as one table: a row per sample x scorer (x key of a dict score).

    Parameters
    ----------
    logs
        A log file (``.eval`` or ``.json``), a folder of logs (searched recursively), an
        ``inspect_ai.log.EvalLog``, or a list of them.
    scorer
        Keep only this scorer's rows (a dict-valued score's rows are ``scorer/key``).

    Returns
    -------
    polars.DataFrame
        Columns :data:`LOG_SCHEMA`: ``log``, ``task``, ``run_id``, ``status`` (the run's:
        ``success``, ``error``, ``cancelled``...), ``system`` (the log's model),
        ``id`` (the sample id, as text), ``epoch``, ``input``, ``target``, ``output`` (the
        final completion), ``scorer``, ``score`` (the value as a number with Inspect's
        ``value_to_float``: C=1, P=0.5, I=0, N=0, booleans 0/1; null when unscored or not a
        scalar), ``value`` (the value as recorded, as text), ``answer``, ``explanation``,
        ``reason``, tokens and ``cost_usd`` as Inspect recorded them for the sample (the model
        under test and any grader Inspect called through its own models), ``judge_tokens`` and
        ``judge_cost_usd`` of rubrictools' judge (on :func:`rubric_scorer` rows; Inspect does not
        count them above), ``error`` (the sample's error; a sample that ended in an error keeps
        one row with a null ``scorer``).

    Raises
    ------
    ValueError
        When ``scorer`` names no score in the logs (the message lists the names found), or a
        file is not a readable Inspect log. A log without samples (an unfinished run, or one
        read ``header_only``) is warned about and contributes no row.

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> from inspect_ai import Task, eval
    >>> from inspect_ai.dataset import Sample
    >>> from inspect_ai.scorer import includes
    >>> task = Task(dataset=[Sample(input="Say hi", target="Default")], scorer=includes())
    >>> log = eval(task, model="mockllm/model", display="none", log_dir="/tmp/rt-doctest-logs")[0]
    >>> rt.inspect.read_log(log).select("system", "id", "scorer", "score").row(0)
    ('mockllm/model', '1', 'includes', 1.0)
    """
    from inspect_ai.scorer import value_to_float

    to_float = value_to_float()
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for log in each_log(logs, "rt.inspect.read_log"):
        for sample in log.samples or []:
            base = {
                **sample_where(log, sample),
                "input": text_of(sample.input),
                "target": text_of(sample.target),
                "output": sample.output.completion if sample.output else None,
                **sample_usage(sample),
                "error": sample.error.message if sample.error else None,
            }
            scores = [r for name, s in (sample.scores or {}).items() for r in _score_rows(name, s, to_float)]
            seen.update(r["scorer"] for r in scores)
            if scorer is not None:
                scores = [r for r in scores if r["scorer"] == scorer]
            if not scores and base["error"] is not None:
                scores = [dict.fromkeys(("scorer", "score", "value", "answer", "explanation", "reason"))]
            rows += [{**base, **r} for r in scores]
    if scorer is not None and scorer not in seen:
        raise _no_match(scorer, seen)
    return pl.DataFrame(rows, schema=LOG_SCHEMA) if rows else pl.DataFrame(schema=LOG_SCHEMA)


def read_verdicts(logs: Any, *, scorer: str | None = None) -> pl.DataFrame:
    """The per-criterion verdicts :func:`rubric_scorer` recorded in Inspect logs, as a verdict table.

    One row per sample x criterion (x judge), with the verdict table's columns
    (:data:`rubrictools.VERDICT_SCHEMA`, ``id`` being the sample id as text) and the sample's
    ``log``, ``task``, ``run_id``, ``system`` (model), ``epoch`` and ``scorer``. With one
    epoch per sample, :func:`rubrictools.score` on it gives the values Inspect recorded;
    with several, filter one ``epoch`` (or one ``system``) first: a verdict table has one row
    per id x criterion x judge.

    Parameters
    ----------
    logs
        As for :func:`read_log`.
    scorer
        The rubrictools scorer to read when a log has several (by its name).

    Raises
    ------
    ValueError
        When no score in ``logs`` was recorded by :func:`rubric_scorer` (it names the scorers
        found: :func:`read_log` reads those).

    Example
    -------
    >>> import rubrictools as rt
    >>> from inspect_ai import Task, eval
    >>> from inspect_ai.dataset import Sample
    >>> rubric = rt.Rubric.from_dict([{"name": "greets", "requirement": "Says hello"}])
    >>> task = Task(dataset=[Sample(input="Hi")], scorer=rt.inspect.rubric_scorer(rubric, model="rubrictools/scripted"))
    >>> log = eval(task, model="mockllm/model", display="none", log_dir="/tmp/rt-doctest-logs")[0]
    >>> v = rt.inspect.read_verdicts(log)
    >>> v.select("system", "id", "criterion", "verdict").row(0)
    ('mockllm/model', '1', 'greets', 'UNMET')
    """
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    ours: set[str] = set()
    for log in each_log(logs, "rt.inspect.read_verdicts"):
        for sample in log.samples or []:
            for name, s in (sample.scores or {}).items():
                seen.add(name)
                found = _ours(s)
                if found is None or (scorer is not None and name != scorer):
                    continue
                ours.add(name)
                where = {**sample_where(log, sample), "scorer": name}
                rows += [{**where, **{k: v.get(k) for k in VERDICT_FIELDS}} for v in found["verdicts"]]
    if not rows:
        which = "" if scorer is None else f" by scorer {scorer!r}"
        raise ValueError(
            f"logs: no verdicts recorded by rt.inspect.rubric_scorer{which} (scorers found: {sorted(seen)}); "
            "rt.inspect.read_log reads any scorer's scores"
        )
    if len(ours) > 1:
        raise ValueError(
            f"logs: {len(ours)} rubrictools scorers ({sorted(ours)}) graded with their own rubrics; "
            "choose one with scorer="
        )
    schema = {**_SAMPLE_SCHEMA, "scorer": pl.String(), **{k: VERDICT_SCHEMA[k] for k in VERDICT_FIELDS}}
    front = ["id", "criterion", "verdict", "value", "explanation", "error", "judge", "weight"]
    out = pl.DataFrame(rows, schema=schema).select(*front, pl.exclude(front))
    runs = out.group_by("task", "system").agg(pl.col("run_id").n_unique().alias("n")).filter(pl.col("n") > 1)
    if runs.height:
        warnings.warn(
            f"logs: {runs.height} task(s) and model(s) were run more than once ({runs.rows()[:3]}): the table has "
            "a row per run, so filter one run_id before rt.score or rt.agreement",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    epochs = out["epoch"].unique().sort().to_list()
    if len(epochs) > 1:
        warnings.warn(
            f"the samples were scored in {len(epochs)} epochs ({epochs}): the table has a row per epoch, so filter "
            "one (v.filter(pl.col('epoch') == 1)) before rt.score or rt.agreement",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    return out


def read_rubric(logs: Any, *, scorer: str | None = None) -> Rubric:
    """The rubric :func:`rubric_scorer` graded with, as Inspect recorded it in the logs' eval spec.

    Parameters
    ----------
    logs
        As for :func:`read_log`.
    scorer
        The rubrictools scorer's name when a log has several.

    Raises
    ------
    ValueError
        When no log holds a rubrictools scorer (named ``scorer``), or the logs hold different
        rubrics (read them one log at a time).

    Example
    -------
    >>> import rubrictools as rt
    >>> from inspect_ai import Task, eval
    >>> from inspect_ai.dataset import Sample
    >>> rubric = rt.Rubric.from_dict([{"name": "greets", "requirement": "Says hello"}])
    >>> task = Task(dataset=[Sample(input="Hi")], scorer=rt.inspect.rubric_scorer(rubric, model="rubrictools/scripted"))
    >>> log = eval(task, model="mockllm/model", display="none", log_dir="/tmp/rt-doctest-logs")[0]
    >>> rt.inspect.read_rubric(log) == rubric
    True
    """
    found: list[Any] = []
    names: list[str] = []
    for log in each_log(logs, "rt.inspect.read_rubric"):
        for s, shown in _scorer_names(log):
            names.append(shown)
            options = s.options or {}
            ours = "rubric" in options and "settings" in options and (scorer is None or shown == scorer)
            if ours and options["rubric"] not in found:
                found.append(options["rubric"])
    if not found:
        which = "" if scorer is None else f" named {scorer!r}"
        raise ValueError(f"logs: no rt.inspect.rubric_scorer{which} in these logs (scorers: {sorted(set(names))})")
    if len(found) > 1:
        raise ValueError(
            f"logs: {len(found)} different rubrics were graded with; read one log (or one scorer) at a time"
        )
    return Rubric.from_dict(found[0])


def _scorer_names(log: Any) -> list[tuple[Any, str]]:
    """Each scorer of the eval spec with the name its scores carry: Inspect renames a clashing
    name in the results (``rubric``, ``rubric1``) but not in the spec; the order is the same."""
    spec = list(log.eval.scorers or [])
    first = next((s for s in log.samples or [] if s.scores), None)
    shown = list(first.scores) if first is not None else []
    if len(shown) != len(spec):
        shown = [s.name for s in spec]
    return list(zip(spec, shown, strict=True))
