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
    """Verdict rows, appended one row at a time by the judge tasks; :attr:`cols` holds them as
    column lists (one tuple per row is kept and turned into columns once, when asked)."""

    def __init__(self, judge_labels: Sequence[str], *, keep_replies: bool = False) -> None:
        """``keep_replies``: every row keeps its call's reply in ``raw_response`` (for checks
        made on the whole table, such as output constraints, which may turn a row into an
        error row); otherwise only error rows keep it."""
        self.judge_labels = list(judge_labels)
        self.keep_replies = keep_replies
        self._rows: list[tuple[Any, ...]] = []
        self._cols: dict[str, list[Any]] | None = None
        self._last: Call | None = None  # a call's rows are added together: a new call object, a new index
        self._calls = -1

    @property
    def cols(self) -> dict[str, list[Any]]:
        """The rows as one list per column of :data:`ROW_COLUMNS`."""
        if self._cols is None:
            values = list(zip(*self._rows, strict=True)) if self._rows else [()] * len(ROW_COLUMNS)
            self._cols = {k: list(v) for k, v in zip(ROW_COLUMNS, values, strict=True)}
        return self._cols

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
        ok = error is None
        if call is not self._last:
            self._last, self._calls = call, self._calls + 1
        subject = call.task.subject
        wants = call.wants_distribution
        dist = call.dist if (wants and ok and call.dist) else None
        ev = evidence and ok
        floor = crit.floor_value if crit is not None else None
        self._cols = None
        self._rows.append(
            (  # in the order of ROW_COLUMNS
                subject.row,
                position,
                call.judge_i,
                variant,
                self._calls,
                subject.sid,
                criterion,
                verdict if ok else None,
                value if ok else None,
                explanation,
                error,
                None if ok else (call.error_kind or ("provider" if call.error else "parse")),
                self.judge_labels[call.judge_i],
                weight,
                _share(call.prompt_tokens, share, n_share),
                _share(call.completion_tokens, share, n_share),
                None if call.cost_usd is None else call.cost_usd / n_share,
                call.cached,
                call.attempts,
                call.latency_s,
                call.content if (self.keep_replies or not ok) else None,
                call.reasoning if share == 0 else None,  # a per-item trace stands on its first row
                _share(call.cached_tokens, share, n_share),
                _share(call.cache_write_tokens, share, n_share),
                _share(call.reasoning_tokens, share, n_share),
                option_order,
                llm_score,
                None if dist is None else [{"label": k, "prob": float(v)} for k, v in dist.items()],
                call.dist_source if wants else None,
                quote if ev else None,
                confidence if ok else None,
                ev,
                ev and value is not None and floor is not None and value > floor + 1e-12,
                crit.lowest_label if crit is not None else None,
                floor,
            )
        )
