"""A rubric as an Inspect AI scorer: each sample graded by rubrictools' judges, every verdict in the log.

The scorer grades one sample per call with :func:`rubrictools.agrade` (the same judges, cache,
retries and budget as :func:`rubrictools.grade`) and scores it with :func:`rubrictools.score`.
Inspect records, per sample, the rubric score as the value, a line per criterion as the
explanation, and every verdict row in the score's metadata (under :data:`METADATA_KEY`), which
Inspect's log viewer shows and :func:`rubrictools.inspect.read_verdicts` reads back.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import polars as pl

from rubrictools.conversations import ConversationPart
from rubrictools.grading import agrade
from rubrictools.grading.budget import Budget
from rubrictools.grading.executor import BUDGET_ERROR
from rubrictools.grading.options import CacheSetting, Mode
from rubrictools.inspect.checks import check_settings
from rubrictools.inspect.messages import as_messages
from rubrictools.inspect.requires import require_inspect
from rubrictools.rubric import Rubric, score

if TYPE_CHECKING:  # pragma: no cover
    from inspect_ai.scorer import Score, Scorer, Target
    from inspect_ai.solver import TaskState

__all__ = ["METADATA_KEY", "VERDICT_FIELDS", "rubric_scorer"]

METADATA_KEY = "rubrictools"
"""The key of a score's metadata under which the scorer keeps the rubric score and its verdicts."""

VERDICT_FIELDS: tuple[str, ...] = (
    "criterion",
    "verdict",
    "value",
    "weight",
    "explanation",
    "error",
    "judge",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "cached",
)
"""The verdict columns kept per criterion in the score's metadata."""

Submission = Literal["output", "messages"]


def _frame(state: TaskState, target: Target, submission: Submission, query: bool, reference: bool) -> pl.DataFrame:
    """The sample as a one-row frame: ``id``, ``submission`` and optionally ``query``, ``reference``."""
    cols: dict[str, list[Any]] = {"id": [str(state.sample_id)]}
    if submission == "messages":
        cols["submission"] = [as_messages(state.messages)]
    else:
        cols["submission"] = [state.output.completion]
        if query:
            cols["query"] = [state.input_text]
    if reference:  # a target of several answers: each on its own, a blank line between
        answers = [target.target] if isinstance(target.target, str) else list(target.target)
        cols["reference"] = ["\n\n".join(a for a in answers if a) or None]
    return pl.DataFrame(cols, schema_overrides={"reference": pl.String} if reference else None)


def _explanation(verdicts: pl.DataFrame, value: float | None) -> str:
    head = "rubric score: not computed" if value is None else f"rubric score: {value:.3g}"
    lines = [head]
    for c, v, e, err in verdicts.select("criterion", "verdict", "explanation", "error").iter_rows():
        lines.append(f"- {c}: {v if err is None else 'ERROR ' + err}" + (f" ({e})" if e and err is None else ""))
    return "\n".join(lines)


def _score(verdicts: pl.DataFrame, rubric: Rubric, answer: str) -> Score:
    """The Inspect score of one sample's verdicts (unscored, with the reason, when no score)."""
    from inspect_ai.scorer import Score

    kept = verdicts.filter(pl.col("judge") == "ensemble") if verdicts["judge"].n_unique() > 1 else verdicts
    table = score(kept, rubric)
    value, raw = table["score"][0], table["raw_score"][0]
    value = None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)
    meta = {METADATA_KEY: {"score": value, "raw_score": raw, "verdicts": verdicts.select(VERDICT_FIELDS).to_dicts()}}
    text = _explanation(kept, value)
    if value is None:
        errors = verdicts["error"].drop_nulls()
        unpaid = errors.len() > 0 and bool(errors.str.starts_with(BUDGET_ERROR[:15]).all())
        why = "scoring_failed" if unpaid else "grader_failed"  # the budget stopped it, not the judge
        return Score.unscored(reason=why, answer=answer, explanation=text, metadata=meta)
    return Score(value=value, answer=answer, explanation=text, metadata=meta)


def rubric_scorer(
    rubric: Rubric | dict[str, Any] | Sequence[Any] | str,
    *,
    model: Any,
    mode: Mode = "per_criterion",
    submission: Submission = "output",
    conversation_part: ConversationPart = "last_assistant",
    query: bool = True,
    reference: bool = False,
    cache: CacheSetting = True,
    max_cost_usd: float | None = None,
    name: str = "rubric",
) -> Scorer:
    """An Inspect AI ``Scorer`` that grades each sample against ``rubric`` with rubrictools' judges.

    Parameters
    ----------
    rubric
        A :class:`~rubrictools.Rubric`, a rubric dict/list, or a ``.yaml``/``.json`` path.
    model
        The judge, as for :func:`rubrictools.grade`: a litellm model string, a
        :class:`~rubrictools.Judge`, a :class:`~rubrictools.ScriptedJudge` (offline, not a
        model) or a list of them (the ``ensemble`` rows are scored: a majority vote, a tie
        counting as not met). Its provider, API key and (with a budget) price are checked
        when the scorer is built, before Inspect runs any sample.
    mode
        How the judge is asked (:func:`rubrictools.grade`'s ``mode``).
    submission
        ``"output"``: the sample's final completion, with its input as the query (``query``);
        ``"messages"``: the sample's whole message history with tool calls and results, read as
        a conversation (agent tasks), graded per ``conversation_part`` (the input is then in
        the history, and ``query`` is not used).
    conversation_part
        With ``submission="messages"``: ``"last_assistant"``, ``"all_assistant"`` or ``"whole"``.
    query, reference
        Show the judge the sample's input (``query``) and its target (``reference``, as an
        exemplar answer; an empty target shows none).
    cache
        rubrictools' response cache (:func:`rubrictools.grade`; ``True``: the default file in
        the user's cache folder): re-running an eval does not pay again for a verdict already
        given. Opened once when the scorer is built, so a path that cannot be written fails then.
    max_cost_usd
        Cap on what this scorer spends across the whole eval, kept as in one
        :func:`rubrictools.grade` run: every judge request of every sample reserves its worst
        case from one shared budget before it is sent, so the cap is never passed, at any
        concurrency. A sample whose requests no longer fit is unscored (``scoring_failed``),
        its verdict rows saying ``budget exceeded``. The budget belongs to the scorer object:
        passed to several evals (or models), it covers all of them; build a new scorer for a
        new budget.
    name
        The scorer's name in the log (its metrics are ``mean`` and ``stderr`` of the score).

    Returns
    -------
    Scorer
        Per sample: ``Score.value`` is the rubric score :math:`\\sum_i w_i v_i / \\sum_{w_i>0} w_i`
        (:func:`rubrictools.score`); ``explanation`` a line per criterion; ``metadata["rubrictools"]``
        the score, the raw score and every verdict row (criterion, verdict, value, weight,
        explanation, error, judge, tokens, cost). A sample whose verdicts give no score (a
        failed judge call) is ``Score.unscored(reason="grader_failed")`` with the error rows kept;
        Inspect leaves unscored samples out of ``mean`` and ``stderr`` (its results count them
        as ``unscored_samples``), so check that count before comparing runs.

    Example
    -------
    >>> import rubrictools as rt
    >>> from inspect_ai import Task, eval
    >>> from inspect_ai.dataset import Sample
    >>> rubric = rt.Rubric.from_dict([{"name": "greets", "requirement": "Says hello"}])
    >>> judge = rt.ScriptedJudge(rule=lambda text, c: "MET" if "hello" in text.lower() else "UNMET")
    >>> task = Task(dataset=[Sample(input="Greet me")], scorer=rt.inspect.rubric_scorer(rubric, model=judge))
    >>> log = eval(task, model="mockllm/model", display="none", log_dir="/tmp/rt-doctest-logs")[0]
    >>> log.samples[0].scores["rubric"].metadata["rubrictools"]["verdicts"][0]["verdict"]
    'UNMET'
    """
    rub = check_settings(locals())
    inspect_scorer = require_inspect("rt.inspect.rubric_scorer")
    budget = None if max_cost_usd is None else Budget(float(max_cost_usd))
    settings = {"mode": mode, "submission": submission, "conversation_part": conversation_part}

    async def grade_sample(state: TaskState, target: Target) -> Score:
        frame = _frame(state, target, submission, query and submission == "output", reference)
        verdicts = await agrade(
            frame,
            rub,
            model=model,
            id_column="id",
            query_column="query" if "query" in frame.columns else None,
            reference_column="reference" if reference else None,
            mode=mode,
            conversation_part=conversation_part,
            cache=cache,
            max_cost_usd=budget,
            progress=False,
            record=False,
        )
        return _score(verdicts, rub, state.output.completion)

    return inspect_scorer(grade_sample, name=name, rubric=rub.to_dict(), settings=settings)
