"""A paginated, filterable view of a verdict table (fast on 100k+ rows: only a page is rendered)."""

from __future__ import annotations

from typing import Any

import polars as pl

from rubrictools.charts.base import require_columns
from rubrictools.frames import to_polars
from rubrictools.widgets.snapshot import html_table, snapshot_bundle

__all__ = ["VerdictExplorer"]

ALL = "(all)"


class VerdictExplorer:
    """Filter a verdict table by criterion, verdict, judge, errors and text; page through it.

    >>> import polars as pl
    >>> v = pl.DataFrame({"id": [1, 2], "criterion": "a", "verdict": ["MET", "UNMET"], "explanation": ["ok", "no"]})
    >>> ex = VerdictExplorer(v, page_size=1)
    >>> ex.verdict.value = "UNMET"
    >>> ex.current["id"].to_list()
    [2]
    """

    def __init__(
        self, verdicts: Any, *, page_size: int = 20, submissions: Any = None, column: str = "submission"
    ) -> None:
        import ipywidgets as w

        v = to_polars(verdicts, name="verdicts")
        score_table = " (this looks like a score table: explore takes the verdict table rt.grade returns)"
        require_columns(v, ["id", "criterion", "verdict"], "verdicts", score_table if "score" in v.columns else "")
        for c in ("explanation", "error", "judge"):
            if c not in v.columns:
                v = v.with_columns(pl.lit(None, dtype=pl.String).alias(c))
        if submissions is not None:
            s = to_polars(submissions, name="submissions").select("id", pl.col(column).alias("__text"))
            v = v.join(s, on="id", how="left", maintain_order="left")
        self.table = v
        self.page_size = page_size
        self.page = 0
        opts = lambda col: [ALL, *sorted(str(x) for x in v[col].drop_nulls().unique().to_list())]  # noqa: E731  # a one-line key function
        self.criterion = w.Dropdown(options=opts("criterion"), value=ALL, description="criterion")
        self.verdict = w.Dropdown(options=opts("verdict"), value=ALL, description="verdict")
        self.judge = w.Dropdown(options=opts("judge"), value=ALL, description="judge")
        self.errors_only = w.Checkbox(value=False, description="errors only")
        self.search = w.Text(placeholder="search explanations, errors, submissions", description="search")
        self.prev_button = w.Button(description="◀ prev")
        self.next_button = w.Button(description="next ▶")
        self.status = w.Label()
        self.body = w.HTML()
        for ctl in (self.criterion, self.verdict, self.judge, self.errors_only, self.search):
            ctl.observe(self._on_filter, names="value")
        self.prev_button.on_click(lambda _: self._go(-1))
        self.next_button.on_click(lambda _: self._go(1))
        self.widget = w.VBox(
            [
                w.HBox([self.criterion, self.verdict, self.judge]),
                w.HBox([self.errors_only, self.search]),
                w.HBox([self.prev_button, self.next_button, self.status]),
                self.body,
            ]
        )
        self._apply_filters()
        self._refresh()

    # ---------------------------------------------------------------- state
    @property
    def filtered(self) -> pl.DataFrame:
        """The rows matching the current filters (computed once per filter change)."""
        return self._filtered

    def _apply_filters(self) -> None:
        cond = pl.lit(True)
        if self.criterion.value != ALL:
            cond &= pl.col("criterion").cast(pl.String) == self.criterion.value
        if self.verdict.value != ALL:
            cond &= pl.col("verdict").cast(pl.String) == self.verdict.value
        if self.judge.value != ALL:
            cond &= pl.col("judge").cast(pl.String) == self.judge.value
        if self.errors_only.value:
            cond &= pl.col("error").is_not_null()
        q = self.search.value.strip()
        if q:
            text = pl.col("explanation").fill_null("").str.contains(q, literal=True)
            text |= pl.col("error").fill_null("").str.contains(q, literal=True)
            if "__text" in self.table.columns:
                text |= pl.col("__text").fill_null("").str.contains(q, literal=True)
            cond &= text
        self._filtered = self.table.filter(cond)

    @property
    def n_pages(self) -> int:
        return max(1, -(-self.filtered.height // self.page_size))

    @property
    def current(self) -> pl.DataFrame:
        """The rows on the current page."""
        return self.filtered.slice(self.page * self.page_size, self.page_size)

    def _on_filter(self, _: Any) -> None:
        self.page = 0
        self._apply_filters()
        self._refresh()

    def _go(self, step: int) -> None:
        self.page = min(max(0, self.page + step), self.n_pages - 1)
        self._refresh()

    def _shown(self) -> pl.DataFrame:
        """The current page's columns a reader needs: a rating table's ``rating`` beside (or
        instead of) an empty ``verdict``."""
        page = self.current
        cols = [
            c for c in _COLUMNS if c in page.columns and not (c in _OPTIONAL and page[c].null_count() == page.height)
        ]
        return page.select(cols)

    def _refresh(self) -> None:
        f = self.filtered
        self.status.value = f"page {self.page + 1} of {self.n_pages:,} · {f.height:,} of {self.table.height:,} rows"
        self.body.value = html_table(self._shown(), max_chars=600, labels=_LABELS)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        """The live widget plus a static snapshot for exports (:mod:`rubrictools.widgets.snapshot`)."""
        return snapshot_bundle(self.widget, "Verdict explorer", self.status.value, self._shown(), labels=_LABELS)


_COLUMNS = ("id", "criterion", "judge", "verdict", "rating", "score", "explanation", "error", "__text")
_OPTIONAL = ("verdict", "rating", "score", "explanation", "error")
"""Columns left out of a page where every row is empty (a rating table has no verdicts)."""
_LABELS = {"__text": "submission"}
