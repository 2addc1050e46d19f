"""The plan of a grading run: every judge call it needs, built before any call is made.

A *mode* (``grade(mode=...)``) says how one submission becomes judge tasks
(:mod:`rubrictools.judge.tasks`); :data:`MODES` maps each name to its task builder. The plan
is shared by live grading, streaming, provider batch jobs and Ray: they differ only in how
the calls get their answers.
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from rubrictools.grading.assemble import assemble
from rubrictools.grading.budget import budget_limit
from rubrictools.grading.conditions import not_applicable_table
from rubrictools.grading.examples import Example, HolisticExample, examples_by_criterion, holistic_examples
from rubrictools.grading.inputs import (
    AnyJudge,
    Inputs,
    cache_path,
    prepare,
    resolve_judges,
)
from rubrictools.grading.options import GradeOptions
from rubrictools.grading.preferences import PAIR_MODES, preference_table
from rubrictools.grading.rules import rule_table
from rubrictools.judge import (
    Call,
    CriterionTask,
    Grader,
    HolisticTask,
    ItemTask,
    Judge,
    JudgeTask,
    PromptParts,
    RequestKeys,
    RowSink,
    Subject,
    dialects,
)
from rubrictools.judge.constraints import constraints_note
from rubrictools.judge.pricing import require_prices, require_vision, warn_over_context, warn_unknown_prices
from rubrictools.judge.providers import token_limit
from rubrictools.rubric import UNGROUPED, Rubric
from rubrictools.submissions import graded_text

__all__ = ["MODES", "ModeContext", "Plan", "assign_keys", "build_calls", "build_plan", "judge_dialects"]


@dataclass(frozen=True)
class ModeContext:
    """What a mode needs besides the subject: few-shot examples, option shuffling, evidence."""

    examples: dict[str, list[Example]]
    shuffle_options: bool
    seed: int
    evidence: bool | None  # None: per criterion (``Criterion.evidence``)
    full: bool = False  # criterion_context="full": each call also lists the rest of the rubric
    confidence: bool = False  # ask for a confidence per verdict
    scored: Callable[[Rubric], list[HolisticExample]] = lambda rubric: []  # holistic mode's examples
    parts: dict[int, list[Rubric]] = field(default_factory=dict)  # grouped mode: a rubric's call units
    places: dict[int, tuple[Rubric, dict[str, int]]] = field(default_factory=dict)  # see positions()
    prompts: PromptParts = field(default_factory=PromptParts)  # prompt sections built once per run

    def others(self, subject: Subject, asked: Rubric | Sequence[Any]) -> tuple[Any, ...]:
        """The criteria of the subject's rubric a call does not ask about (when ``full``)."""
        if not self.full:
            return ()
        names = {c.name for c in asked}
        return tuple(c for c in subject.rubric if c.name not in names)

    def positions(self, rubric: Rubric) -> dict[str, int]:
        """Each criterion's place in ``rubric``, found once per rubric of the run."""
        found = self.places.get(id(rubric))
        if found is None or found[0] is not rubric:
            found = self.places[id(rubric)] = (rubric, {n: i for i, n in enumerate(rubric.names)})
        return found[1]

    def wants_evidence(self, c: Any) -> bool:
        return bool(c.evidence) if self.evidence is None else self.evidence

    def order(self, sid: Any, c: Any) -> list[int] | None:
        """A seeded permutation of ``c``'s options when shuffling, else None."""
        if not (self.shuffle_options and c.options):
            return None
        rng = random.Random(f"{self.seed}|{sid}|{c.name or ''}")
        order = list(range(len(c.options)))
        rng.shuffle(order)
        return order


def _per_criterion(subject: Subject, judged: Rubric, ctx: ModeContext) -> list[JudgeTask]:
    where = ctx.positions(subject.rubric)
    return [
        CriterionTask(
            subject,
            c,
            option_order=ctx.order(subject.sid, c),
            evidence=ctx.wants_evidence(c),
            examples=ctx.examples.get(c.name or "", ()),
            others=ctx.others(subject, [c]),
            confidence=ctx.confidence,
            position=where[c.name or ""],
            parts=ctx.prompts,
        )
        for c in judged
    ]


def _per_item(subject: Subject, judged: Rubric, ctx: ModeContext) -> list[JudgeTask]:
    orders = {c.name or "": o for c in judged if (o := ctx.order(subject.sid, c)) is not None}
    evidence = frozenset(c.name or "" for c in judged if ctx.wants_evidence(c))
    shots = {c.name or "": ctx.examples[c.name or ""] for c in judged if ctx.examples.get(c.name or "")}
    others = ctx.others(subject, judged)
    return [
        ItemTask(
            subject,
            judged,
            option_orders=orders,
            evidence=evidence,
            examples=shots,
            others=others,
            confidence=ctx.confidence,
        )
    ]


def _holistic(subject: Subject, judged: Rubric, ctx: ModeContext) -> list[JudgeTask]:
    rubric = subject.rubric
    if rubric.has_rules:
        raise ValueError(
            "mode='holistic' asks for one number for the whole rubric; a rubric with rule criteria "
            f"({[c.name for c in rubric if c.rule is not None]}) needs mode='per_criterion' or 'per_item'"
        )
    return [HolisticTask(subject, examples=ctx.scored(rubric))]


def _group_parts(judged: Rubric, memo: dict[int, list[Rubric]]) -> list[Rubric]:
    """``judged`` split into one rubric per scoring group (in first-member order) and one per
    ungrouped criterion; built once per distinct rubric, so each part's schema is built once."""
    k = id(judged)
    if k not in memo:
        by_group: dict[str, list[Any]] = {}
        parts: list[list[Any]] = []
        for c in judged:
            if c.group is None or c.group == UNGROUPED:
                parts.append([c])
            elif c.group in by_group:
                by_group[c.group].append(c)
            else:
                by_group[c.group] = [c]
                parts.append(by_group[c.group])
        memo[k] = [Rubric(p) for p in parts]
    return memo[k]


def _grouped(subject: Subject, judged: Rubric, ctx: ModeContext) -> list[JudgeTask]:
    """One per-item call per scoring group (rubrify's ``"grouped"`` strategy: criteria of a
    group judged together, for coherence within it) and one per-criterion call per ungrouped
    criterion."""
    tasks: list[JudgeTask] = []
    for part in _group_parts(judged, ctx.parts):
        if len(part) == 1 and part[0].group in (None, UNGROUPED):
            tasks.extend(_per_criterion(subject, part, ctx))
        else:
            tasks.extend(_per_item(subject, part, ctx))
    return tasks


MODES: dict[str, Callable[[Subject, Rubric, ModeContext], list[JudgeTask]]] = {
    "per_criterion": _per_criterion,
    "per_item": _per_item,
    "grouped": _grouped,
    "holistic": _holistic,
}
"""``grade(mode=...)`` name -> the tasks one submission needs (``judged``: its judge-decided criteria)."""


def _llm_part(rub: Rubric, memo: dict[int, Rubric | None]) -> Rubric | None:
    """The rubric restricted to judge-decided criteria (``None`` when every criterion is a rule)."""
    k = id(rub)
    if k not in memo:
        crit = rub.llm_criteria
        memo[k] = None if not crit else (rub if not rub.has_rules else Rubric(list(crit)))
    return memo[k]


def _scored_examples(opts: GradeOptions) -> Callable[[Rubric], list[HolisticExample]]:
    """Holistic mode's scored examples for a rubric, built once per distinct rubric."""
    memo: dict[int, list[HolisticExample]] = {}

    def scored(rubric: Rubric) -> list[HolisticExample]:
        if id(rubric) not in memo:
            memo[id(rubric)] = holistic_examples(opts.examples, opts.column, opts.max_examples, rubric)
        return memo[id(rubric)]

    return scored


def _task_builder(opts: GradeOptions, ctx: ModeContext) -> Callable[[Subject, Rubric], list[JudgeTask]]:
    """How one row becomes tasks: a pairwise mode (:data:`PAIR_MODES`) or a single one (:data:`MODES`)."""
    registry: dict[str, Any] = PAIR_MODES if opts.pairwise else MODES
    make = registry.get(opts.mode)
    if make is None:
        raise ValueError(f"mode must be one of {', '.join(map(repr, registry))}; got {opts.mode!r}")
    settings: Any = opts if opts.pairwise else ctx
    return lambda subject, judged: make(subject, judged, settings)


def judge_dialects(judges: Sequence[AnyJudge], opts: GradeOptions, *, probe: bool = True) -> list[str | None]:
    """Each judge's structured-output dialect (:mod:`rubrictools.judge.dialects`; None for a
    scripted judge). ``probe=False`` never asks a server (cost estimates): a dialect only a
    probe could tell is taken as ``json_schema``."""
    where = cache_path(opts.cache, judges) if probe else None
    store = where.parent if where is not None else None
    out: list[str | None] = []
    for j in judges:
        if not isinstance(j, Judge):
            out.append(None)
        elif probe:
            out.append(dialects.resolve(j, store=store))
        else:
            out.append(dialects.static_dialect(j) or "json_schema")
    return out


def build_calls(
    inp: Inputs, judges: Sequence[AnyJudge], opts: GradeOptions, styles: Sequence[str | None] | None = None
) -> list[Call]:
    """One call per (task, judge), in input order; ``styles`` are the judges' dialects
    (:func:`judge_dialects`; default: without probing)."""
    holistic = not opts.pairwise and opts.mode == "holistic"
    ctx = ModeContext(
        {} if holistic else examples_by_criterion(opts.examples, opts.column, opts.max_examples),
        opts.shuffle_options,
        opts.seed,
        opts.evidence,
        opts.criterion_context == "full",
        opts.confidence,
        _scored_examples(opts) if holistic else (lambda rubric: []),
    )
    make_tasks = _task_builder(opts, ctx)
    note = constraints_note(opts.output_constraints)
    formats: dict[tuple[int, Hashable], dict[str, Any]] = {}
    memo: dict[int, Rubric | None] = {}
    styles = judge_dialects(judges, opts, probe=False) if styles is None else styles

    def output(ji: int, task: JudgeTask) -> dict[str, Any]:
        style = styles[ji]
        if style is None:
            return {}
        k = (ji, task.schema_key())
        if k[1] is None:
            k = (ji, json.dumps(task.schema()[0], sort_keys=True))
        if k not in formats:
            schema, name = task.schema()
            formats[k] = dialects.format_fields(style, schema, name)
        return formats[k]

    def call(ji: int, task: JudgeTask, msgs: list[dict[str, Any]]) -> Call:
        j = judges[ji]
        cap = token_limit(j, task.token_cap()) if isinstance(j, Judge) else None
        return Call(task=task, judge_i=ji, messages=msgs, output=output(ji, task), max_tokens=cap)

    calls: list[Call] = []
    for row, (sid, rub, sub) in enumerate(zip(inp.ids, inp.rubrics, inp.subs, strict=True)):
        judged = _llm_part(rub, memo)
        other = inp.others[row] if inp.others is not None else None
        subject = Subject(
            row=row,
            sid=sid,
            submission=sub,
            text=graded_text(sub, opts.grade_part),
            rubric=rub,
            part=opts.grade_part,
            query=inp.queries[row],
            reference=inp.references[row],
            other=other,
            other_text=None if other is None else graded_text(other, opts.grade_part),
        )
        tasks = make_tasks(subject, judged) if judged is not None else []
        for ji, j in enumerate(judges):
            sp = getattr(j, "system_prompt", None)
            role = r.render() if (r := getattr(j, "role", None)) is not None else None
            for task in tasks:
                calls.append(call(ji, task, task.request(system_prompt=sp, role=role, note=note)))
    return calls


@dataclass
class Plan:
    """Everything a grading run asks, before any call: shared by live, streamed and batch grading."""

    inp: Inputs
    judges: list[AnyJudge]
    calls: list[Call]
    texts: list[str]
    rules: pl.DataFrame | None
    opts: GradeOptions
    skipped: list[Call] = field(default_factory=list)  # calls of null submissions: error rows, never sent

    def verdicts(self) -> pl.DataFrame:
        """The verdict table from the calls' current answers and errors (for a pairwise run,
        the preference table of :mod:`rubrictools.grading.preferences`)."""
        sink = RowSink([j.label for j in self.judges], keep_replies=bool(self.opts.output_constraints))
        for call in (*self.calls, *self.skipped):
            call.task.rows(call, sink)
        if self.opts.pairwise:
            return preference_table(sink.cols, self.inp, self.judges, self.opts)
        keep: set[str] = {"warnings"} if (self.opts.output_constraints or self.opts.confidence) else set()
        if any(c.enforcement == "disqualify" for c in self.opts.output_constraints):
            keep.add("disqualified_by")
        for c in self.calls:
            keep |= c.task.optional_columns()
            if c.wants_distribution:
                keep.add("distribution")
        return assemble(
            sink.cols, self.inp, self.judges, self.opts, texts=self.texts, rules=self.rules, keep=frozenset(keep)
        )


def _rule_rows(inp: Inputs, texts: list[str]) -> pl.DataFrame | None:
    """Verdict rows decided without a judge: every rule criterion (polars expressions per
    distinct rubric) and every conditional criterion a row does not meet (``NOT_APPLICABLE``)."""
    by_rubric: dict[int, list[int]] = {}
    for i, r in enumerate(inp.rubrics):
        if r.has_rules:
            by_rubric.setdefault(id(r), []).append(i)
    if not by_rubric and inp.not_applicable is None:
        return None
    ids = pl.Series("id", inp.ids, dtype=inp.id_dtype)
    text = pl.Series("text", texts, dtype=pl.String)
    parts = []
    for rows in by_rubric.values():
        idx = pl.Series(rows, dtype=pl.Int64)
        rubric = inp.rubrics[rows[0]]
        on_tools = any(c.rule is not None and c.rule.on_trajectory for c in rubric)
        subs = [inp.subs[i] for i in rows] if on_tools else None  # only rules on tool calls read them
        parts.append(rule_table(ids.gather(idx), text.gather(idx), rubric, rows=idx, subs=subs))
    if inp.not_applicable is not None:
        parts.append(not_applicable_table(inp.not_applicable, inp.ids, inp.id_dtype))
    out = pl.concat(parts)
    if not inp.row_errors:
        return out
    null = pl.col("__row").is_in(sorted(inp.row_errors))
    why = pl.col("__row").replace_strict(inp.row_errors, default=None, return_dtype=pl.String)
    return out.with_columns(
        pl.when(null).then(None).otherwise(pl.col(c)).alias(c) for c in ("verdict", "value", "explanation")
    ).with_columns(pl.when(null).then(why).otherwise(pl.col("error")).alias("error"))


def build_plan(df: Any, rubric: Rubric | None, opts: GradeOptions) -> Plan:
    """Check every input and build every call of a run (no call is made)."""
    inp = prepare(df, rubric, opts)
    opts = with_rubric_constraints(opts, inp.rubrics)
    if opts.pairwise and (rules := sorted({c.name or "" for r in inp.rubrics for c in r if c.rule is not None})):
        raise ValueError(
            f"pairwise grading asks a judge; rule criteria {rules} are decided per answer without one: "
            "grade each system with rt.grade and compare scores (rt.preferences_from_scores)"
        )
    if opts.pairwise and inp.not_applicable is not None:
        raise ValueError(
            f"pairwise grading compares two answers on the same criteria; criteria with applies_when "
            f"({sorted(inp.not_applicable['criterion'].unique())}) leave some rows out: grade each system with "
            "rt.grade and compare scores (rt.preferences_from_scores)"
        )
    judges = resolve_judges(opts.model)
    llm_judges = [j for j in judges if isinstance(j, Judge)]
    require_prices(llm_judges, budget_limit(opts.max_cost_usd))
    require_vision(llm_judges, sum(1 for s in inp.subs if s.images) + sum(1 for s in inp.others or () if s.images))
    warn_unknown_prices(llm_judges)
    calls = build_calls(inp, judges, opts, judge_dialects(judges, opts))
    on_evidence = [c.id for c in opts.output_constraints if c.target == "evidence"]
    if on_evidence and not any("evidence" in c.task.optional_columns() for c in calls):
        raise ValueError(
            f"output_constraints {on_evidence} check the evidence quote, and no verdict of this run asks for one: "
            "pass evidence=True (or Criterion(evidence=True)), or target the explanation"
        )
    skipped = [c for c in calls if c.task.subject.row in inp.row_errors]
    for c in skipped:
        c.error, c.error_kind = inp.row_errors[c.task.subject.row], "input"
    calls = [c for c in calls if c.task.subject.row not in inp.row_errors] if skipped else calls
    for ji, j in enumerate(judges):
        if isinstance(j, Judge):
            warn_over_context(j, [(c.task.subject.sid, c.messages) for c in calls if c.judge_i == ji])
    texts = [graded_text(sub, opts.grade_part) for sub in inp.subs]
    if opts.distribution:
        for c in calls:
            c.dist_samples = opts.distribution_samples
            if isinstance(judges[c.judge_i], Judge):
                c.extra = {"logprobs": True, "top_logprobs": 20}
    return Plan(inp, judges, calls, texts, _rule_rows(inp, texts), opts, skipped)


def _sample_indices(judges: Sequence[AnyJudge]) -> list[int]:
    """For each judge, how many earlier judges send identical requests (self-consistency
    ensembles: ``Judge(name="s1")``, ``Judge(name="s2")``... of one model): 0 for the first."""
    seen: dict[str, int] = {}
    out = []
    for j in judges:
        ident = json.dumps(j.request_identity(), sort_keys=True, default=str) if isinstance(j, Judge) else None
        k = seen.get(ident, 0) if ident is not None else 0
        if ident is not None:
            seen[ident] = k + 1
        out.append(k)
    return out


def _fixed_identity(c: Call, j: Judge, sample: int) -> dict[str, Any]:
    """What besides its messages makes a call's answer: the judge's settings and the request fields."""
    fixed = {**j.request_identity(), "response_format": None, **c.output}
    if sample:
        fixed["sample"] = sample
    if c.extra is not None:
        fixed.update(extra=c.extra, distribution_samples=c.dist_samples)
    return fixed


def assign_keys(plan: Plan) -> None:
    """Set each LLM call's cache key: a hash of everything that changes the answer, no secrets.
    The k-th of several judges with identical requests adds ``sample: k`` (k >= 1), so n
    samples stay n answers on a re-run; a lone judge's keys are unchanged."""
    samples = _sample_indices(plan.judges)
    keys = RequestKeys()
    for c in plan.calls:
        j = plan.judges[c.judge_i]
        if isinstance(j, Judge):
            share = (c.judge_i, id(c.output), id(c.extra), c.dist_samples)  # the calls keep these objects alive
            c.key = keys.key(
                c.messages, share=share, fixed=functools.partial(_fixed_identity, c, j, samples[c.judge_i])
            )
        elif isinstance(j, Grader) and (ident := j.request_identity()) is not None:
            c.key = keys.key(c.messages, share=(c.judge_i, c.dist_samples), fixed=functools.partial(dict, ident))


def with_rubric_constraints(opts: GradeOptions, rubrics: Sequence[Rubric]) -> GradeOptions:
    """``opts`` with the rubrics' own output constraints added to ``output_constraints=``; one id
    given twice with different rules is refused, naming it."""
    carried = {rub.output_constraints for rub in rubrics}
    if len(carried) > 1:
        raise ValueError(
            "output_constraints: the rubrics of this run (rubric_column) carry different output constraints, and a "
            "run checks one set on every reply: give every row's rubric the same constraints, or pass them to "
            "grade(output_constraints=) and leave them out of the rubrics"
        )
    given = {c.id: c for c in opts.output_constraints}
    for c in next(iter(carried), ()):  # the one set every rubric of the run carries
        if c.id in given and given[c.id] != c:
            raise ValueError(
                f"output_constraints: {c.id!r} is given twice with different rules (by the rubric and by "
                "output_constraints=): rename one"
            )
        given.setdefault(c.id, c)
    if len(given) == len(opts.output_constraints):
        return opts
    return opts.replace(output_constraints=tuple(given.values()))
