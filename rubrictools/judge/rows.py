"""Verdict rows as columns: what a judge task writes for each criterion it answered.

Tasks append through :meth:`RowSink.add`; the grading layer turns the columns into the
verdict table (:data:`rubrictools.VERDICT_SCHEMA` plus private ``__`` columns it drops).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rubrictools.judge.call import Call
from rubrictools.rubric import Criterion

__all__ = ["ROW_COLUMNS", "RowSink"]

ROW_COLUMNS = (
    "__row",
    "__pos",
    "__judge",
    "__variant",
    "__call",
    "id",
    "criterion",
    "verdict",
    "value",
    "explanation",
    "error",
    "error_kind",
    "judge",
    "weight",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "cached",
    "attempts",
    "latency_s",
    "raw_response",
    "reasoning",
    "cached_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "option_order",
    "llm_raw_score",
    "distribution",
    "distribution_source",
    "evidence",
    "confidence",
    "__ev",
    "__needs",
    "__floor_label",
    "__floor_value",
)


def _share(x: int | None, share: int, n_share: int) -> int | None:
    """Share ``share`` of ``n_share`` of a token count; the first share takes the remainder."""
    if x is None:
        return None
    return x // n_share + (x % n_share if share == 0 else 0)


class RowSink:
    """Column lists of verdict rows, appended one row at a time by the judge tasks."""

    def __init__(self, judge_labels: Sequence[str], *, keep_replies: bool = False) -> None:
        """``keep_replies``: every row keeps its call's reply in ``raw_response`` (for checks
        made on the whole table, such as output constraints, which may turn a row into an
        error row); otherwise only error rows keep it."""
        self.judge_labels = list(judge_labels)
        self.keep_replies = keep_replies
        self.cols: dict[str, list[Any]] = {k: [] for k in ROW_COLUMNS}
        self._last: Call | None = None  # a call's rows are added together: a new call object, a new index
        self._calls = -1

    def add(
        self,
        call: Call,
        *,
        criterion: str,
        position: int,
        verdict: str | None,
        value: float | None,
        explanation: str | None,
        error: str | None,
        weight: float,
        share: int = 0,
        n_share: int = 1,
        option_order: list[int] | None = None,
        llm_score: float | None = None,
        crit: Criterion | None = None,
        quote: str | None = None,
        evidence: bool = False,
        confidence: float | None = None,
        variant: int = 0,
    ) -> None:
        """One row of ``call``; tokens and cost are split over the ``n_share`` rows one call made.
        ``variant`` tells apart presentations of the same question (pairwise: the order shown)."""
        c = self.cols
        ok = error is None
        c["__row"].append(call.task.subject.row)
        c["__pos"].append(position)
        c["__judge"].append(call.judge_i)
        c["__variant"].append(variant)
        if call is not self._last:
            self._last, self._calls = call, self._calls + 1
        c["__call"].append(self._calls)
        c["id"].append(call.task.subject.sid)
        c["criterion"].append(criterion)
        c["verdict"].append(verdict if ok else None)
        c["value"].append(value if ok else None)
        c["explanation"].append(explanation)
        c["error"].append(error)
        c["error_kind"].append(None if ok else (call.error_kind or ("provider" if call.error else "parse")))
        c["judge"].append(self.judge_labels[call.judge_i])
        c["weight"].append(weight)
        c["prompt_tokens"].append(_share(call.prompt_tokens, share, n_share))
        c["completion_tokens"].append(_share(call.completion_tokens, share, n_share))
        c["cost_usd"].append(None if call.cost_usd is None else call.cost_usd / n_share)
        c["cached"].append(call.cached)
        c["attempts"].append(call.attempts)
        c["latency_s"].append(call.latency_s)
        c["raw_response"].append(call.content if (self.keep_replies or not ok) else None)
        c["reasoning"].append(call.reasoning if share == 0 else None)  # a per-item trace stands on its first row
        c["cached_tokens"].append(_share(call.cached_tokens, share, n_share))
        c["cache_write_tokens"].append(_share(call.cache_write_tokens, share, n_share))
        c["reasoning_tokens"].append(_share(call.reasoning_tokens, share, n_share))
        c["option_order"].append(option_order)
        c["llm_raw_score"].append(llm_score)
        dist = call.dist if (call.wants_distribution and ok and call.dist) else None
        c["distribution"].append(None if dist is None else [{"label": k, "prob": float(v)} for k, v in dist.items()])
        c["distribution_source"].append(call.dist_source if call.wants_distribution else None)
        ev = evidence and ok
        c["evidence"].append(quote if ev else None)
        c["confidence"].append(confidence if ok else None)
        c["__ev"].append(ev)
        floor = crit.floor_value if crit is not None else None
        c["__needs"].append(ev and value is not None and floor is not None and value > floor + 1e-12)
        c["__floor_label"].append(crit.lowest_label if crit is not None else None)
        c["__floor_value"].append(floor)
