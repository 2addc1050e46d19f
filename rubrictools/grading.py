"""`grade`: turn a column of submissions into a verdict table with LLM judges.

Works the same in a script, a Jupyter cell (where an event loop already runs) and async code
(:func:`agrade`). Every (submission, criterion) gets a row; a failed call is an explicit error
row, never a silent verdict. Successful answers are cached on disk as they arrive, so a re-run
makes no calls and an interrupted run resumes where it stopped.

Example
-------
>>> import polars as pl, rubrictools as rt
>>> rubric = rt.Rubric.from_dict([{"name": "greets", "requirement": "Says hello"}])
>>> judge = rt.ScriptedJudge(rule=lambda text, c: "MET" if "hello" in text.lower() else "UNMET")
>>> df = pl.DataFrame({"id": [1, 2], "response": ["Hello there", "Go away"]})
>>> v = df.pipe(rt.grade, rubric, model=judge, column="response", id_column="id", progress=False)
>>> v.select("id", "criterion", "verdict").rows()
[(1, 'greets', 'MET'), (2, 'greets', 'UNMET')]
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import polars as pl

from rubrictools.judge.aggregate import aggregate_votes
from rubrictools.judge.cache import CachedResponse, ResponseCache, cache_key, default_cache_path
from rubrictools.judge.client import CallResult
from rubrictools.judge.config import Judge
from rubrictools.judge.parsing import (
    ParseError,
    parse_criterion,
    parse_evidence,
    parse_holistic,
    parse_item,
    parse_item_evidence,
)
from rubrictools.judge.prompts import (
    HOLISTIC_SCHEMA,
    Submission,
    criterion_messages,
    criterion_schema,
    graded_text,
    holistic_messages,
    item_messages,
    item_schema,
    split_submission,
)
from rubrictools.judge.scripted import ScriptedJudge
from rubrictools.rubric import Rubric
from rubrictools.verdicts import HOLISTIC, VERDICT_SCHEMA, to_polars

__all__ = ["agrade", "estimate_cost", "grade", "usage"]

Mode = Literal["per_criterion", "per_item", "holistic"]
OnUnsupported = Literal["flag", "downgrade"]
BUDGET_ERROR = "budget exceeded: call not made (max_cost_usd reached)"
CANCELLED_ERROR = "cancelled: call not made (run interrupted)"


# --------------------------------------------------------------------------- inputs
@dataclass
class _Inputs:
    frame: pl.DataFrame
    ids: list[Any]
    id_dtype: pl.DataType
    rubrics: list[Rubric]
    subs: list[Submission]
    queries: list[str | None]
    references: list[str | None]


def _coerce_rubric(value: Any, i: int) -> Rubric:
    if isinstance(value, Rubric):
        return value
    try:
        if isinstance(value, str):
            return Rubric.from_json(value) if value.lstrip()[:1] in "[{" else Rubric.from_yaml(value)
        return Rubric.from_dict(value)
    except ValueError as e:
        raise ValueError(f"rubric_column: row {i}: {e}") from None


def _prepare(
    df: Any,
    rubric: Rubric | None,
    column: str,
    id_column: str | None,
    query_column: str | None,
    reference_column: str | None,
    rubric_column: str | None,
) -> _Inputs:
    frame = to_polars(df)
    for name, col in [("column", column), ("id_column", id_column), ("query_column", query_column),
                      ("reference_column", reference_column), ("rubric_column", rubric_column)]:
        if col is not None and col not in frame.columns:
            raise ValueError(f"{name}={col!r} is not a column of the DataFrame (columns: {frame.columns})")
    if id_column is None:
        ids: list[Any] = list(range(frame.height))
        id_dtype: pl.DataType = pl.Int64()
    else:
        idcol = frame[id_column]
        if idcol.null_count():
            raise ValueError(f"id_column {id_column!r} has null ids")
        dup = idcol.filter(idcol.is_duplicated())
        if dup.len():
            raise ValueError(f"id_column {id_column!r} has duplicate ids, e.g. {dup.unique().head(3).to_list()}")
        ids, id_dtype = idcol.to_list(), idcol.dtype
    if rubric_column is not None:
        cache: dict[int, Rubric] = {}
        rubrics = []
        for i, value in enumerate(frame[rubric_column].to_list()):
            if value is None:
                if rubric is None:
                    raise ValueError(f"rubric_column: row {i} has no rubric and no default rubric was given")
                rubrics.append(rubric)
                continue
            key = id(value) if not isinstance(value, str) else hash(value)
            if key not in cache:
                cache[key] = _coerce_rubric(value, i)
            rubrics.append(cache[key])
    else:
        if rubric is None:
            raise ValueError("grade needs a rubric (or rubric_column=)")
        rubric = Rubric.from_dict(rubric) if not isinstance(rubric, Rubric) else rubric
        rubrics = [rubric] * frame.height
    subs = []
    for i, value in enumerate(frame[column].to_list()):
        try:
            subs.append(split_submission(value))
        except ValueError as e:
            raise ValueError(f"column {column!r}: row {i} (id {ids[i]!r}): {e}") from None
    queries = frame[query_column].cast(pl.String).to_list() if query_column else [None] * frame.height
    refs = frame[reference_column].cast(pl.String).to_list() if reference_column else [None] * frame.height
    return _Inputs(frame, ids, id_dtype, rubrics, subs, queries, refs)


def _resolve_judges(model: Any, judge_kwargs: dict[str, Any]) -> list[Judge | ScriptedJudge]:
    if model is None:
        raise ValueError("grade needs model= (a litellm model string, a Judge, a ScriptedJudge or a list of them)")
    items = list(model) if isinstance(model, (list, tuple)) else [model]
    judges: list[Judge | ScriptedJudge] = []
    for m in items:
        if isinstance(m, (Judge, ScriptedJudge)):
            if judge_kwargs:
                raise ValueError(f"judge settings {sorted(judge_kwargs)} go inside the Judge(...) when model= is a Judge")
            judges.append(m)
        elif isinstance(m, str):
            judges.append(ScriptedJudge() if m == "rubrictools/scripted" else Judge(model=m, **judge_kwargs))
        else:
            raise TypeError(f"model: expected str, Judge or ScriptedJudge, got {type(m).__name__}")
    labels = [j.label for j in judges]
    if len(set(labels)) != len(labels):
        raise ValueError(f"judges need distinct names (Judge(name=...)); got {labels}")
    if "ensemble" in labels:
        raise ValueError("'ensemble' is reserved for aggregated rows; rename the judge")
    return judges


# --------------------------------------------------------------------------- calls
@dataclass(kw_only=True)
class _Call(CallResult):
    """One logical judge call: what to send, and (inherited) what came back."""

    judge_i: int
    kind: str  # "criterion" | "item" | "holistic"
    row: int
    sid: Any
    text: str
    rubric: Rubric
    criterion: Any = None
    messages: list[dict[str, str]]
    response_format: dict[str, Any] | None
    option_order: list[int] | None = None
    key: str | None = None
    cached: bool = False
    parsed: Any = None
    problems: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] | None = None  # extra request fields (logprobs) that also key the cache
    dist_samples: int = -1  # -1: no distribution wanted; 0: logprobs only; k: fall back to k samples
    dist: dict[str, float] | None = None
    dist_source: str | None = None
    evidence: frozenset[str] = frozenset()  # criteria whose verdict must quote the submission
    judged: Rubric | None = None  # the criteria this call asks about (item mode: the non-rule ones)


def _examples_by_criterion(examples: Any, column: str, max_examples: int) -> dict[str, list[tuple[str, str, str | None]]]:
    if examples is None:
        return {}
    ex = to_polars(examples, name="examples")
    text_col = "submission" if "submission" in ex.columns else column
    need = {text_col, "criterion", "verdict"}
    if not need <= set(ex.columns):
        raise ValueError(f"examples: expected columns {sorted(need)}, got {ex.columns}")
    has_expl = "explanation" in ex.columns
    out: dict[str, list[tuple[str, str, str | None]]] = {}
    for r in ex.iter_rows(named=True):
        lst = out.setdefault(str(r["criterion"]), [])
        if len(lst) < max_examples:
            text = split_submission(r[text_col]).output
            lst.append((text, str(r["verdict"]), r["explanation"] if has_expl else None))
    return out


def _permutation(seed: int, sid: Any, name: str, n: int) -> list[int]:
    rng = random.Random(f"{seed}|{sid}|{name}")
    order = list(range(n))
    rng.shuffle(order)
    return order


def _llm_part(rub: Rubric, memo: dict[int, Rubric | None]) -> Rubric | None:
    """The rubric restricted to judge-decided criteria (``None`` when every criterion is a rule)."""
    k = id(rub)
    if k not in memo:
        if not rub.has_rules:
            memo[k] = rub
        else:
            crit = rub.llm_criteria
            memo[k] = Rubric(list(crit)) if crit else None
    return memo[k]


def _build_calls(
    inp: _Inputs,
    judges: Sequence[Judge | ScriptedJudge],
    mode: Mode,
    *,
    part: str,
    examples: dict[str, list[tuple[str, str, str | None]]],
    shuffle_options: bool,
    seed: int,
    evidence: bool | None = None,
) -> list[_Call]:
    from rubrictools.judge.client import response_format_for

    calls: list[_Call] = []
    fmt_cache: dict[tuple[int, str], Any] = {}
    llm_memo: dict[int, Rubric | None] = {}

    def wants(c: Any) -> bool:
        return bool(c.evidence) if evidence is None else evidence

    def fmt(ji: int, j: Any, schema: dict[str, Any], name: str) -> Any:
        if isinstance(j, ScriptedJudge):
            return None
        k = (ji, json.dumps(schema, sort_keys=True))
        if k not in fmt_cache:
            fmt_cache[k] = response_format_for(j, schema, name)
        return fmt_cache[k]

    for row, (sid, rub, sub) in enumerate(zip(inp.ids, inp.rubrics, inp.subs)):
        q, ref = inp.queries[row], inp.references[row]
        text = graded_text(sub, part)
        judged = _llm_part(rub, llm_memo)
        if mode == "holistic" and rub.has_rules:
            raise ValueError(
                "mode='holistic' asks for one number for the whole rubric; a rubric with rule criteria "
                f"({[c.name for c in rub if c.rule is not None]}) needs mode='per_criterion' or 'per_item'"
            )
        if judged is None:
            continue
        for ji, j in enumerate(judges):
            sp = getattr(j, "system_prompt", None)
            if mode == "per_criterion":
                for c in judged:
                    ev = wants(c)
                    order = _permutation(seed, sid, c.name or "", len(c.options)) if (shuffle_options and c.options) else None
                    msgs = criterion_messages(c, sub, part=part, query=q, reference=ref,  # type: ignore[arg-type]
                                              examples=examples.get(c.name or "", ()), option_order=order, system_prompt=sp,
                                              evidence=ev)  # fmt: skip
                    calls.append(_Call(judge_i=ji, kind="criterion", row=row, sid=sid, text=text, rubric=rub, criterion=c,
                                       messages=msgs, response_format=fmt(ji, j, criterion_schema(c, evidence=ev), "criterion_verdict"),
                                       option_order=order, evidence=frozenset([c.name]) if ev else frozenset()))  # fmt: skip
            elif mode == "per_item":
                orders = {c.name or "": _permutation(seed, sid, c.name or "", len(c.options))
                          for c in judged if shuffle_options and c.options}
                ev_names = frozenset(c.name for c in judged if wants(c))
                msgs = item_messages(judged, sub, part=part, query=q, reference=ref, option_orders=orders, system_prompt=sp,  # type: ignore[arg-type]
                                     evidence=ev_names)  # fmt: skip
                calls.append(_Call(judge_i=ji, kind="item", row=row, sid=sid, text=text, rubric=rub, judged=judged,
                                   messages=msgs, evidence=ev_names,
                                   response_format=fmt(ji, j, item_schema(judged, evidence=bool(ev_names)), "rubric_verdicts")))
            elif mode == "holistic":
                msgs = holistic_messages(rub, sub, part=part, query=q, reference=ref, system_prompt=sp)  # type: ignore[arg-type]
                calls.append(_Call(judge_i=ji, kind="holistic", row=row, sid=sid, text=text, rubric=rub, messages=msgs,
                                   response_format=fmt(ji, j, HOLISTIC_SCHEMA, "holistic_score")))
            else:
                raise ValueError(f"mode must be 'per_criterion', 'per_item' or 'holistic', got {mode!r}")
    return calls


def _parse(call: _Call) -> bool:
    """Parse ``call.content`` into ``call.parsed``; return True when fully valid."""
    try:
        if call.kind == "criterion":
            call.parsed = parse_criterion(call.content, call.criterion)
        elif call.kind == "item":
            call.parsed, call.problems = parse_item(call.content, call.judged or call.rubric)
            return not call.problems
        else:
            call.parsed = parse_holistic(call.content)
        call.problems = {}
        return True
    except ParseError as e:
        call.parsed = None
        call.problems = {"*": f"parse: {e}"}
        return False


# --------------------------------------------------------------------------- run
class _Run:
    def __init__(self, judges: Sequence[Any], cache: ResponseCache | None, max_cost_usd: float | None,
                 progress: Any, cancel: threading.Event) -> None:
        self.judges = judges
        self.cache = cache
        self.max_cost = max_cost_usd
        self.spent = 0.0
        self.bar = progress
        self.cancel = cancel
        self.sems = [asyncio.Semaphore(getattr(j, "max_concurrency", 16)) for j in judges]
        self.stats = {"calls": 0, "errors": 0}

    def _tick(self, call: _Call) -> None:
        if self.bar is None:
            return
        if call.error or call.problems:
            self.stats["errors"] += 1
        self.bar.update(1)
        self.bar.set_postfix(calls=self.stats["calls"], errors=self.stats["errors"], cost=f"${self.spent:.4f}", refresh=False)

    async def run_one(self, call: _Call) -> None:
        judge = self.judges[call.judge_i]
        if isinstance(judge, ScriptedJudge):
            call.content, call.attempts = judge.reply(call), 1
            if not _parse(call):
                call.error = next(iter(call.problems.values()))
            elif call.dist_samples >= 0 and call.kind == "criterion":
                label = call.parsed[0]
                call.dist = {lab: float(lab == label) for lab in call.criterion.labels}
                call.dist_source = "scripted"
            self._tick(call)
            return
        from rubrictools.judge.client import complete

        async with self.sems[call.judge_i]:
            budget = 1 + judge.max_retries
            t0 = time.perf_counter()
            while budget > 0:
                if self.cancel.is_set():
                    call.error = call.error or CANCELLED_ERROR
                    break
                if self.max_cost is not None and self.spent >= self.max_cost:
                    call.error = BUDGET_ERROR
                    break
                self.stats["calls"] += 1
                res = await complete(judge, call.messages, call.response_format, max_attempts=budget, extra=call.extra)
                budget -= res.attempts
                call.add_usage(res)
                if res.cost_usd:
                    self.spent += res.cost_usd
                if res.error is not None:
                    call.error = res.error
                    break
                call.content = res.content
                if _parse(call):
                    call.error = None
                    extra = None
                    if call.dist_samples >= 0 and call.kind == "criterion":
                        budget = await self._distribution(call, judge, res, budget)
                        extra = _dist_extra(call.dist, call.dist_source)
                    if self.cache is not None and call.key is not None:
                        self.cache.put(call.key, judge.model, CachedResponse(
                            call.content or "", call.prompt_tokens, call.completion_tokens, call.cost_usd, extra))
                    break
                if call.kind != "item" or call.parsed is None:
                    call.error = next(iter(call.problems.values()))
            call.latency_s = time.perf_counter() - t0
        self._tick(call)


    async def _distribution(self, call: _Call, judge: Any, res: Any, budget: int) -> int:
        """Fill ``call.dist`` from the answer's logprobs, else from ``dist_samples`` sampled answers."""
        from rubrictools.judge.client import complete
        from rubrictools.judge.distribution import from_logprobs, from_samples

        dist = from_logprobs(res.content, res.logprobs, call.criterion)
        if dist is not None:
            call.dist, call.dist_source = dist, "logprobs"
            return budget
        if call.dist_samples > 0 and budget > 0 and not (self.max_cost is not None and self.spent >= self.max_cost):
            self.stats["calls"] += 1
            more = await complete(judge, call.messages, call.response_format, max_attempts=budget,
                                  extra={"n": call.dist_samples, "temperature": 1.0})  # fmt: skip
            budget -= more.attempts
            call.add_usage(more)
            if more.cost_usd:
                self.spent += more.cost_usd
            if more.error is None:
                dist = from_samples(more.choices or [more.content], call.criterion)
                if dist is not None:
                    call.dist, call.dist_source = dist, f"samples:{len(more.choices or [more.content])}"
                    return budget
        call.dist, call.dist_source = None, "unavailable"
        return budget


def _progress_bar(total: int, enabled: bool, desc: str) -> Any:
    if not enabled or total == 0:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="call")


def _dist_extra(dist: dict[str, float] | None, source: str | None) -> str:
    """How a call's distribution is kept beside its answer in the response cache."""
    return json.dumps({"distribution": dist, "source": source})


def _from_cache(c: _Call, hit: CachedResponse) -> bool:
    """Answer ``c`` from a cache entry. False, leaving ``c`` unanswered, when the entry does
    not parse (stale or foreign) or lacks the distribution the call asks for."""
    c.content = hit.content
    if c.dist_samples >= 0 and c.kind == "criterion":
        try:
            stored = json.loads(hit.extra) if hit.extra else None
        except ValueError:
            stored = None
        if not stored or "source" not in stored:
            c.content = None
            return False
        c.dist, c.dist_source = stored.get("distribution"), stored["source"]
    if _parse(c):
        c.cached, c.attempts = True, 0
        c.prompt_tokens, c.completion_tokens, c.cost_usd = hit.prompt_tokens, hit.completion_tokens, hit.cost_usd
        return True
    c.content, c.parsed, c.problems, c.dist, c.dist_source = None, None, {}, None, None
    return False


async def _execute(calls: list[_Call], judges: Sequence[Any], cache: ResponseCache | None, max_cost_usd: float | None,
                   progress: bool, cancel: threading.Event) -> None:
    # 1. answers already in the cache
    if cache is not None:
        keyed = [c for c in calls if c.key is not None]
        hits = cache.get_many(c.key for c in keyed)  # type: ignore[misc]
        for c in keyed:
            hit = hits.get(c.key)  # type: ignore[arg-type]
            if hit is None:
                continue
            _from_cache(c, hit)  # when it does not parse, the call is asked again
    todo = [c for c in calls if not c.cached]
    bar = _progress_bar(len(todo), progress, "grading")
    run = _Run(judges, cache, max_cost_usd, bar, cancel)
    queue: asyncio.Queue[_Call] = asyncio.Queue()
    for c in todo:
        queue.put_nowait(c)
    n_workers = max(1, min(len(todo), sum(min(getattr(j, "max_concurrency", 16), 512) for j in judges)))

    async def worker() -> None:
        while True:
            try:
                c = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            try:
                await run.run_one(c)
            except asyncio.CancelledError:
                c.error = c.error or CANCELLED_ERROR
                raise
            except Exception as e:  # noqa: BLE001 - never lose a row
                c.error = f"internal: {type(e).__name__}: {e}"

    try:
        await asyncio.gather(*(worker() for _ in range(n_workers)))
    finally:
        for c in todo:
            if c.content is None and c.error is None:
                c.error = CANCELLED_ERROR
        if bar is not None:
            bar.close()


# --------------------------------------------------------------------------- rows
_ROW_COLUMNS = (
    "__row", "__pos", "__judge", "id", "criterion", "verdict", "value", "explanation", "error", "judge", "weight",
    "prompt_tokens", "completion_tokens", "cost_usd", "cached", "attempts", "latency_s", "raw_response",
    "option_order", "llm_raw_score", "distribution", "distribution_source", "evidence", "__ev", "__needs",
    "__floor_label", "__floor_value",
)  # fmt: skip


def _rows(calls: list[_Call], judges: Sequence[Any]) -> dict[str, list[Any]]:
    cols: dict[str, list[Any]] = {k: [] for k in _ROW_COLUMNS}

    def add(call: _Call, pos: int, name: str, verdict: Any, value: Any, expl: Any, err: Any, weight: float,
            share: int, n_share: int, order: Any = None, llm: Any = None, crit: Any = None, quote: Any = None) -> None:
        def split_int(x: int | None) -> int | None:
            if x is None:
                return None
            return x // n_share + (x % n_share if share == 0 else 0)

        cols["__row"].append(call.row)
        cols["__pos"].append(pos)
        cols["__judge"].append(call.judge_i)
        cols["id"].append(call.sid)
        cols["criterion"].append(name)
        cols["verdict"].append(verdict if err is None else None)
        cols["value"].append(value if err is None else None)
        cols["explanation"].append(expl)
        cols["error"].append(err)
        cols["judge"].append(judges[call.judge_i].label)
        cols["weight"].append(weight)
        cols["prompt_tokens"].append(split_int(call.prompt_tokens))
        cols["completion_tokens"].append(split_int(call.completion_tokens))
        cols["cost_usd"].append(None if call.cost_usd is None else call.cost_usd / n_share)
        cols["cached"].append(call.cached)
        cols["attempts"].append(call.attempts)
        cols["latency_s"].append(call.latency_s)
        cols["raw_response"].append(call.content if err is not None else None)
        cols["option_order"].append(order)
        cols["llm_raw_score"].append(llm)
        has_dist = call.kind == "criterion" and call.dist_samples >= 0
        dist = call.dist if (has_dist and err is None and call.dist) else None
        cols["distribution"].append(None if dist is None else [{"label": k, "prob": float(v)} for k, v in dist.items()])
        cols["distribution_source"].append(call.dist_source if has_dist else None)
        ev = name in call.evidence
        cols["evidence"].append(quote if ev and err is None else None)
        cols["__ev"].append(ev and err is None)
        floor = crit.floor_value if crit is not None else None
        cols["__needs"].append(ev and err is None and value is not None and floor is not None and value > floor + 1e-12)
        cols["__floor_label"].append(crit.lowest_label if crit is not None else None)
        cols["__floor_value"].append(floor)

    for call in calls:
        if call.kind == "criterion":
            c = call.criterion
            pos = call.rubric.names.index(c.name)
            if call.error is None and call.parsed is not None:
                label, expl = call.parsed
                quote = parse_evidence(call.content) if call.evidence else None
                add(call, pos, c.name, label, c.value_of(label), expl, None, c.weight, 0, 1, call.option_order,
                    crit=c, quote=quote)  # fmt: skip
            else:
                add(call, pos, c.name, None, None, None, call.error or "unknown failure", c.weight, 0, 1,
                    call.option_order, crit=c)  # fmt: skip
        elif call.kind == "item":
            judged = call.judged or call.rubric
            names = call.rubric.names
            n = len(judged)
            parsed = call.parsed or {}
            quotes = parse_item_evidence(call.content, judged) if (call.evidence and parsed) else {}
            for share, c in enumerate(judged):
                pos = names.index(c.name)
                if call.error is not None and not parsed:
                    add(call, pos, c.name, None, None, None, call.error, c.weight, share, n, crit=c)
                elif c.name in parsed and c.name not in call.problems:
                    label, expl = parsed[c.name]
                    add(call, pos, c.name, label, c.value_of(label), expl, None, c.weight, share, n, crit=c,
                        quote=quotes.get(c.name))  # fmt: skip
                else:
                    msg = call.problems.get(c.name) or call.problems.get("*") or call.error or "judge omitted this criterion"
                    add(call, pos, c.name, None, None, None, f"parse: {msg}" if not msg.startswith("parse") else msg,
                        c.weight, share, n, crit=c)  # fmt: skip
        else:
            tpw = call.rubric.total_positive_weight
            if call.error is None and call.parsed is not None:
                s, expl = call.parsed
                add(call, 0, HOLISTIC, f"{s:g}", s / 100.0, expl, None, tpw, 0, 1, llm=s)
            else:
                add(call, 0, HOLISTIC, None, None, None, call.error or "unknown failure", tpw, 0, 1)
    return cols


_QUOTE_CHARS = "\"'“”‘’«»`"


def _normalise_text(e: pl.Expr) -> pl.Expr:
    """Whitespace collapsed, typographic quotes and dashes made plain."""
    return (
        e.str.replace_all(r"[“”«»]", '"')
        .str.replace_all(r"[‘’]", "'")
        .str.replace_all(r"[–—]", "-")
        .str.replace_all(r"\s+", " ")
        .str.strip_chars()
    )


def _check_evidence(df: pl.DataFrame, texts: Sequence[str], on_unsupported: OnUnsupported) -> pl.DataFrame:
    """Add ``evidence_ok``: the quote is in the graded text, exactly or after normalising
    whitespace and typographic quotes (null where no quote was asked). A verdict that claims
    something (MET, or above the lowest option) needs a quote; an empty quote is fine for the
    lowest outcome. With ``on_unsupported="downgrade"`` an unsupported claim falls to the
    criterion's lowest label and says so in its explanation."""
    if df.height == 0 or not df["__ev"].any():
        return df.with_columns(pl.lit(None, dtype=pl.Boolean).alias("evidence_ok"))
    rows = pl.DataFrame({"__row": pl.Series(range(len(texts)), dtype=pl.Int64), "__text": pl.Series(list(texts), dtype=pl.String)})
    df = df.join(rows, on="__row", how="left", maintain_order="left")
    quote = pl.col("evidence").str.strip_chars(f" \n\t{_QUOTE_CHARS}").str.strip_chars(".…").str.strip_chars()
    has_quote = quote.fill_null("").str.len_chars() > 0
    t = pl.col("__text").fill_null("")
    found = t.str.contains(quote, literal=True) | _normalise_text(t).str.contains(_normalise_text(quote), literal=True)
    ok = pl.when(~pl.col("__ev")).then(None).when(has_quote).then(found.fill_null(False)).otherwise(~pl.col("__needs"))
    df = df.with_columns(ok.alias("evidence_ok")).drop("__text")
    if on_unsupported == "downgrade":
        down = pl.col("__needs") & (pl.col("evidence_ok") == False)  # noqa: E712 - null stays null
        df = df.with_columns(
            pl.when(down)
            .then(pl.format("[downgraded from {}: the quoted evidence is not in the submission] {}", pl.col("verdict"),
                            pl.col("explanation").fill_null("")))  # fmt: skip
            .otherwise(pl.col("explanation"))
            .alias("explanation"),
            pl.when(down).then(pl.col("__floor_label")).otherwise(pl.col("verdict")).alias("verdict"),
            pl.when(down).then(pl.col("__floor_value")).otherwise(pl.col("value")).alias("value"),
        )
    return df


def _assemble(cols: dict[str, list[Any]], inp: _Inputs, judges: Sequence[Any], mode: Mode, aggregate: str,
              *, texts: Sequence[str] = (), rules: pl.DataFrame | None = None,
              on_unsupported: OnUnsupported = "flag", keep: frozenset[str] = frozenset()) -> pl.DataFrame:
    schema = {k: (v if v is not None else inp.id_dtype) for k, v in VERDICT_SCHEMA.items()}
    schema.update({"__row": pl.Int64(), "__pos": pl.Int64(), "__judge": pl.Int64(), "raw_response": pl.String(),
                   "option_order": pl.List(pl.Int64()), "llm_raw_score": pl.Float64(),
                   "distribution": pl.List(pl.Struct({"label": pl.String(), "prob": pl.Float64()})),
                   "distribution_source": pl.String(), "evidence": pl.String(), "__ev": pl.Boolean(),
                   "__needs": pl.Boolean(), "__floor_label": pl.String(), "__floor_value": pl.Float64()})
    df = pl.DataFrame(cols, schema=schema)
    asked_evidence = bool(df["__ev"].any()) if df.height else False
    df = _check_evidence(df, texts, on_unsupported)

    def conform(extra: pl.DataFrame, **values: Any) -> pl.DataFrame:
        fill = [pl.lit(values.get(c), dtype=df.schema[c]).alias(c) for c in df.columns if c not in extra.columns or c in values]
        return extra.with_columns(fill).select(df.columns).cast(df.schema)  # type: ignore[arg-type]

    if len(judges) > 1:
        jw = {j.label: float(getattr(j, "weight", 1.0)) for j in judges}
        votes = df.with_columns(pl.col("judge").replace_strict(jw, return_dtype=pl.Float64).alias("judge_weight"))
        overrides = {c.name: c.aggregation for r in {id(r): r for r in inp.rubrics}.values() for c in r if c.aggregation}
        agg = aggregate_votes(votes, overrides, aggregate).with_columns(pl.lit(len(judges)).cast(pl.Int64).alias("__judge"))
        pos = df.select("__row", "criterion", "__pos").unique(["__row", "criterion"])
        agg = agg.join(pos, on=["__row", "criterion"], how="left")
        llm = df.group_by("__row", "criterion").agg(pl.col("llm_raw_score").mean())
        agg = agg.join(llm, on=["__row", "criterion"], how="left")
        agg = agg.drop([c for c in ("raw_response", "option_order", "distribution", "distribution_source", "evidence",
                                    "evidence_ok") if c in agg.columns])  # fmt: skip
        df = pl.concat([df, conform(agg)], how="vertical")
    if rules is not None and rules.height:
        src = "rule" if df["distribution_source"].null_count() < df.height else None
        df = pl.concat([df, conform(rules.with_columns(pl.lit(len(judges) + 1).cast(pl.Int64).alias("__judge")),
                                    distribution_source=src)], how="vertical")  # fmt: skip
    df = df.sort(["__row", "__pos", "__judge"])
    # optional columns appear when asked for (``keep``: the same columns for every slice of a
    # large job, even one whose calls all failed), or when some row has them
    drop = ["__row", "__pos", "__judge", "__ev", "__needs", "__floor_label", "__floor_value"]
    if mode != "holistic":
        drop.append("llm_raw_score")
    if "option_order" not in keep and df["option_order"].null_count() == df.height:
        drop.append("option_order")
    if "distribution" not in keep and df["distribution_source"].null_count() == df.height:
        drop += ["distribution", "distribution_source"]
    if "evidence" not in keep and not asked_evidence:
        drop += ["evidence", "evidence_ok"]
    return df.drop(drop)


# --------------------------------------------------------------------------- public
def _cache_path(cache: bool | str | Path | None, judges: Sequence[Any] = ()) -> Path | None:
    """Where ``cache=`` says answers go: ``True`` is the judges' own cache file (they must
    agree) or the user cache dir; a path is itself; ``False``/``None`` is no cache."""
    if cache is False or cache is None:
        return None
    if cache is True:
        paths = {str(j.cache) for j in judges if isinstance(j, Judge) and j.cache is not None}
        if len(paths) > 1:
            raise ValueError(f"judges name different cache files {sorted(paths)}; pass cache=... to choose one")
        return Path(paths.pop()) if paths else default_cache_path()
    return Path(cache)


def _open_cache(cache: bool | str | Path | ResponseCache | None, judges: Sequence[Any] = ()) -> ResponseCache | None:
    if isinstance(cache, ResponseCache):
        return cache
    path = _cache_path(cache, judges)
    return None if path is None else ResponseCache(path)


def _check_budget(judges: Sequence[Any], max_cost_usd: float | None) -> None:
    if max_cost_usd is None:
        return
    if max_cost_usd < 0:
        raise ValueError("max_cost_usd must be >= 0")
    from rubrictools.judge.client import _litellm

    litellm = _litellm()
    for j in judges:
        if isinstance(j, ScriptedJudge):
            continue
        try:
            litellm.cost_per_token(model=j.model, prompt_tokens=1, completion_tokens=1)
        except Exception:
            raise ValueError(
                f"max_cost_usd cannot be enforced: litellm has no price for model {j.model!r}"
            ) from None


async def agrade(
    df: Any,
    rubric: Rubric | None = None,
    *,
    model: Any = None,
    column: str = "submission",
    id_column: str | None = None,
    query_column: str | None = None,
    reference_column: str | None = None,
    rubric_column: str | None = None,
    mode: Mode = "per_criterion",
    aggregate: str = "majority",
    examples: Any = None,
    max_examples: int = 3,
    shuffle_options: bool = False,
    seed: int = 0,
    grade_part: Literal["output", "thinking", "all"] = "output",
    cache: bool | str | Path | ResponseCache | None = True,
    max_cost_usd: float | None = None,
    progress: bool = True,
    distribution: bool = False,
    distribution_samples: int = 10,
    evidence: bool | None = None,
    on_unsupported: OnUnsupported = "flag",
    _cancel: threading.Event | None = None,
    **judge_kwargs: Any,
) -> pl.DataFrame:
    """Async version of :func:`grade` (``await rt.agrade(...)``); same arguments and result."""
    plan = _plan(df, rubric, model=model, column=column, id_column=id_column, query_column=query_column,
                 reference_column=reference_column, rubric_column=rubric_column, mode=mode, aggregate=aggregate,
                 examples=examples, max_examples=max_examples, shuffle_options=shuffle_options, seed=seed,
                 grade_part=grade_part, max_cost_usd=max_cost_usd, distribution=distribution,
                 distribution_samples=distribution_samples, evidence=evidence, on_unsupported=on_unsupported,
                 judge_kwargs=judge_kwargs)  # fmt: skip
    judges = plan.judges
    store = _open_cache(cache, judges)
    if store is not None:
        _assign_keys(plan)
    try:
        await _execute(plan.calls, judges, store, max_cost_usd, progress, _cancel or threading.Event())
    finally:
        if store is not None and not isinstance(cache, ResponseCache):
            store.close()
        if any(isinstance(j, Judge) and j.transport == "direct" for j in judges):
            from rubrictools.judge.client import aclose_clients

            await aclose_clients()
    return plan.verdicts()


@dataclass
class _Plan:
    """Everything a grading run asks, before any call: shared by live and batch grading."""

    inp: _Inputs
    judges: list[Judge | ScriptedJudge]
    calls: list[_Call]
    texts: list[str]
    rules: pl.DataFrame | None
    mode: Mode
    aggregate: str
    on_unsupported: OnUnsupported

    def verdicts(self) -> pl.DataFrame:
        """The verdict table from the calls' current answers and errors."""
        keep = set()
        if any(c.evidence for c in self.calls):
            keep.add("evidence")
        if any(c.dist_samples >= 0 for c in self.calls):
            keep.add("distribution")
        if any(c.option_order is not None for c in self.calls):
            keep.add("option_order")
        return _assemble(_rows(self.calls, self.judges), self.inp, self.judges, self.mode, self.aggregate,
                         texts=self.texts, rules=self.rules, on_unsupported=self.on_unsupported,
                         keep=frozenset(keep))  # fmt: skip


def _plan(
    df: Any,
    rubric: Rubric | None,
    *,
    model: Any,
    column: str,
    id_column: str | None,
    query_column: str | None,
    reference_column: str | None,
    rubric_column: str | None,
    mode: Mode,
    aggregate: str,
    examples: Any,
    max_examples: int,
    shuffle_options: bool,
    seed: int,
    grade_part: Literal["output", "thinking", "all"],
    max_cost_usd: float | None,
    distribution: bool,
    distribution_samples: int,
    evidence: bool | None,
    on_unsupported: OnUnsupported,
    judge_kwargs: dict[str, Any],
) -> _Plan:
    if on_unsupported not in ("flag", "downgrade"):
        raise ValueError(f"on_unsupported must be 'flag' or 'downgrade', got {on_unsupported!r}")
    if mode not in ("per_criterion", "per_item", "holistic"):
        raise ValueError(f"mode must be 'per_criterion', 'per_item' or 'holistic', got {mode!r}")
    inp = _prepare(df, rubric, column, id_column, query_column, reference_column, rubric_column)
    judges = _resolve_judges(model, judge_kwargs)
    _check_budget(judges, max_cost_usd)
    ex = _examples_by_criterion(examples, column, max_examples)
    calls = _build_calls(inp, judges, mode, part=grade_part, examples=ex, shuffle_options=shuffle_options, seed=seed,
                         evidence=evidence)  # fmt: skip
    texts = [graded_text(sub, grade_part) for sub in inp.subs]
    rules = _rule_rows(inp, texts)
    if distribution:
        if mode != "per_criterion":
            raise ValueError("distribution=True needs mode='per_criterion' (one answer per criterion)")
        if distribution_samples < 0:
            raise ValueError("distribution_samples must be >= 0")
        for c in calls:
            c.dist_samples = distribution_samples
            if isinstance(judges[c.judge_i], Judge):
                c.extra = {"logprobs": True, "top_logprobs": 20}
    return _Plan(inp, judges, calls, texts, rules, mode, aggregate, on_unsupported)


def _assign_keys(plan: _Plan) -> None:
    """Set each LLM call's cache key: a hash of everything that changes the answer, no secrets."""
    for c in plan.calls:
        j = plan.judges[c.judge_i]
        if isinstance(j, Judge):
            ident = {**j.request_identity(), "messages": c.messages, "response_format": c.response_format}
            if c.extra is not None:
                ident.update(extra=c.extra, distribution_samples=c.dist_samples)
            c.key = cache_key(ident)


def _rule_rows(inp: _Inputs, texts: list[str]) -> pl.DataFrame | None:
    """Verdict rows of every rule criterion, evaluated as polars expressions per distinct rubric."""
    from rubrictools.rules import rule_table

    by_rubric: dict[int, list[int]] = {}
    for i, r in enumerate(inp.rubrics):
        if r.has_rules:
            by_rubric.setdefault(id(r), []).append(i)
    if not by_rubric:
        return None
    ids = pl.Series("id", inp.ids, dtype=inp.id_dtype)
    text = pl.Series("text", texts, dtype=pl.String)
    parts = []
    for rows in by_rubric.values():
        idx = pl.Series(rows, dtype=pl.Int64)
        parts.append(rule_table(ids.gather(idx), text.gather(idx), inp.rubrics[rows[0]], rows=idx))
    return pl.concat(parts)


def grade(df: Any, rubric: Rubric | None = None, **kwargs: Any) -> pl.DataFrame:
    """Grade every submission of ``df`` against ``rubric`` with one or more LLM judges.

    Parameters
    ----------
    df
        polars DataFrame or LazyFrame, or pandas DataFrame, one submission per row.
    rubric
        The :class:`~rubrictools.Rubric` (or rubric dict); optional with ``rubric_column``.
    model
        A litellm model string, a :class:`~rubrictools.Judge`, a
        :class:`~rubrictools.ScriptedJudge` (offline, not a model; also ``"rubrictools/scripted"``),
        or a list of them for an ensemble.
    column, id_column
        Submission column (strings, ``{"thinking", "output"}`` structs, or text with
        ``<thinking>/<output>`` markers) and id column (row index when None; must be unique).
    query_column, reference_column
        Optional prompt and exemplar answer shown to the judge.
    rubric_column
        A column holding each row's own rubric (Rubric, dict/list, or JSON/YAML text).
    mode
        ``"per_criterion"`` (one call per submission x criterion), ``"per_item"`` (one call per
        submission, aligned by criterion name) or ``"holistic"`` (one 0-100 score).
    aggregate
        Ensemble aggregation (see :mod:`rubrictools.judge.aggregate`).
    examples, max_examples
        Labelled few-shot examples (``submission, criterion, verdict[, explanation]``).
    shuffle_options, seed
        Present multi-choice options in a seeded random order (recorded in ``option_order``).
    grade_part
        For thinking/output submissions: grade the ``"output"`` (default), ``"thinking"`` or ``"all"``.
    cache
        ``True`` (user cache dir), a path, a :class:`ResponseCache` or ``False``.
    max_cost_usd
        Stop making calls once this much has been spent; the rest become error rows.
    progress
        Show a tqdm progress bar.
    distribution, distribution_samples
        ``distribution=True`` (per-criterion mode) also records the judge's probability for
        every allowed label in a ``distribution`` column (list of ``{label, prob}``), from the
        token logprobs at the verdict (``logprobs=True, top_logprobs=20``) or, when those are
        missing or cannot separate the labels, from ``distribution_samples`` answers sampled
        at temperature 1 (``0`` disables sampling). ``distribution_source`` says which
        (``logprobs``, ``samples:n``, ``scripted`` or ``unavailable``). Feed it to
        :mod:`rubrictools.calibrate` via ``calibrate.distributions_from_verdicts``.
    evidence, on_unsupported
        ``evidence=True`` asks the judge to quote the passage behind every verdict (``None``:
        only for criteria with ``evidence=True``; ``False``: never). The quote goes in an
        ``evidence`` column and ``evidence_ok`` says whether it is in the submission (exact or
        whitespace-normalised match). A verdict that claims something (MET, or above the
        lowest option) without a matching quote is flagged (``on_unsupported="flag"``) or
        falls to the criterion's lowest label (``"downgrade"``).
    output, batch_size
        Stream instead of holding everything in memory: ``df`` may then also be a parquet
        path or glob; it is graded ``batch_size`` rows at a time into parquet parts under the
        ``output`` directory, resumably, and a LazyFrame over the parts is returned (see
        :mod:`rubrictools.streaming`).
    batch, batch_dir, poll_interval
        ``batch=True`` sends the requests as provider batch jobs (about half price, answered
        within 24 h) instead of live calls, waits for them (polling every ``poll_interval``
        seconds) and returns the same verdict table; the job is kept in ``batch_dir`` so a
        closed notebook can collect it later (see :mod:`rubrictools.batching`,
        :func:`~rubrictools.submit_batch` and :func:`~rubrictools.collect_batch`).
    **judge_kwargs
        Passed to :class:`~rubrictools.Judge` when ``model`` is a string
        (``api_base``, ``api_key``, ``temperature``, ``max_concurrency``, ``max_retries``, ...).

    Returns
    -------
    polars.DataFrame
        The verdict table (:data:`rubrictools.VERDICT_SCHEMA` plus ``raw_response``), in input
        order, one row per (submission, criterion, judge) plus ``judge="ensemble"`` rows for
        ensembles. Rule criteria (``Criterion(rule=...)``) are decided without any call, once
        per submission, in rows with ``judge="rule"``.
    """
    output = kwargs.pop("output", None)
    batch_size = kwargs.pop("batch_size", 10_000)
    batch = kwargs.pop("batch", False)
    batch_dir = kwargs.pop("batch_dir", None)
    poll_interval = kwargs.pop("poll_interval", 30.0)
    if batch:
        if output is not None:
            raise ValueError("batch=True and output= cannot be combined; submit_batch a slice at a time instead")
        from rubrictools.batching import submit_batch

        progress = kwargs.pop("progress", True)
        job = submit_batch(df, rubric, path=batch_dir, **kwargs)
        return job.collect(poll_interval=poll_interval, progress=progress)
    if output is not None:
        from rubrictools.streaming import grade_to_parquet

        return grade_to_parquet(df, rubric, output, batch_size=batch_size, **kwargs)  # type: ignore[return-value]
    cancel = threading.Event()
    return run_sync(agrade(df, rubric, _cancel=cancel, **kwargs), cancel)


def run_sync(coro: Any, cancel: threading.Event | None = None) -> Any:
    """Run a coroutine to completion from sync code, also inside a running event loop
    (Jupyter): there it runs on a private loop in a worker thread. On Ctrl-C, ``cancel`` is
    set (no new calls start), calls in flight finish, then KeyboardInterrupt is re-raised."""
    try:
        asyncio.get_running_loop()
        in_loop = True
    except RuntimeError:
        in_loop = False
    if not in_loop:  # outside the except block, so a failure is not chained to "no running event loop"
        return asyncio.run(coro)
    result: dict[str, Any] = {}
    finished = threading.Event()

    def target() -> None:
        try:
            result["value"] = asyncio.run(coro)
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            result["error"] = e
        finally:
            finished.set()

    t = threading.Thread(target=target, name="rubrictools-grade", daemon=True)
    t.start()
    try:
        # wait on an Event, not Thread.join: a join interrupted by Ctrl-C can later return early
        while not finished.wait(0.1):
            pass
    except KeyboardInterrupt:
        if cancel is not None:
            cancel.set()  # no new calls; calls in flight finish and their answers are cached
        while True:
            try:
                finished.wait()
                break
            except KeyboardInterrupt:  # a second Ctrl-C while in-flight calls finish
                continue
        raise
    if "error" in result:
        raise result["error"]
    return result["value"]


def estimate_cost(
    df: Any,
    rubric: Rubric | None = None,
    *,
    model: Any,
    column: str = "submission",
    mode: Mode = "per_criterion",
    completion_tokens: int = 80,
    **kwargs: Any,
) -> pl.DataFrame:
    """Calls, prompt tokens (litellm's token counter) and dollars before running anything.

    ``completion_tokens`` is the assumed reply length per call (per criterion in
    ``per_item`` mode). Returns one row per judge: ``judge, calls, prompt_tokens,
    completion_tokens, cost_usd`` (null when the model has no known price).
    """
    grade_keys = {"id_column", "query_column", "reference_column", "rubric_column"}
    prep = {k: kwargs.pop(k) for k in list(kwargs) if k in grade_keys}
    inp = _prepare(df, rubric, column, prep.get("id_column"), prep.get("query_column"), prep.get("reference_column"),
                   prep.get("rubric_column"))
    judges = _resolve_judges(model, kwargs)
    calls = _build_calls(inp, judges, mode, part="output", examples={}, shuffle_options=False, seed=0)
    from rubrictools.judge.client import _litellm

    litellm = _litellm()
    rows = []
    for ji, j in enumerate(judges):
        mine = [c for c in calls if c.judge_i == ji]
        if isinstance(j, ScriptedJudge):
            rows.append((j.label, len(mine), 0, 0, 0.0))
            continue
        pt = sum(litellm.token_counter(model=j.model, messages=c.messages) for c in mine)
        per_call = completion_tokens * (len(mine[0].rubric) if mode == "per_item" and mine else 1)
        ct = per_call * len(mine)
        try:
            p_cost, c_cost = litellm.cost_per_token(model=j.model, prompt_tokens=pt, completion_tokens=ct)
            cost: float | None = float(p_cost + c_cost)
        except Exception:
            cost = None
        rows.append((j.label, len(mine), pt, ct, cost))
    return pl.DataFrame(rows, schema={"judge": pl.String, "calls": pl.Int64, "prompt_tokens": pl.Int64,
                                      "completion_tokens": pl.Int64, "cost_usd": pl.Float64}, orient="row")


def usage(verdicts: Any) -> pl.DataFrame:
    """Summarise a grading run per judge: calls, cache hits, errors, tokens, cost, latency.

    ``cost_usd`` is what this run spent (cache hits cost nothing); ``cost_saved_usd`` is
    what the cached answers had cost when first made.
    """
    v = to_polars(verdicts, name="verdicts").filter(pl.col("judge") != "ensemble")
    return (
        v.group_by("judge", maintain_order=True)
        .agg(
            pl.len().alias("rows"),
            pl.col("cached").sum().alias("cached"),
            pl.col("error").is_not_null().sum().alias("errors"),
            pl.col("attempts").sum().alias("http_attempts"),
            pl.col("prompt_tokens").filter(~pl.col("cached")).sum().alias("prompt_tokens"),
            pl.col("completion_tokens").filter(~pl.col("cached")).sum().alias("completion_tokens"),
            pl.col("cost_usd").filter(~pl.col("cached")).sum().alias("cost_usd"),
            pl.col("cost_usd").filter(pl.col("cached")).sum().alias("cost_saved_usd"),
            pl.col("latency_s").filter(~pl.col("cached")).mean().alias("mean_latency_s"),
            pl.col("latency_s").filter(~pl.col("cached")).max().alias("max_latency_s"),
        )
    )
