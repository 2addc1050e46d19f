"""Review judge/human disagreements one at a time and adjudicate them.

For every disagreement (same submission and criterion, judge label != human label) the
widget shows the submission, the criterion, the judge's verdict and explanation and the
human's label. The reviewer decides: *judge right* (the human label is replaced by the
judge's), *human right* (kept), *rubric unclear* (kept, flagged) or a new label. The
agreement table is recomputed after every decision, so the effect of each adjudication on
kappa and accuracy is visible immediately.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
from IPython.core.formatters import DisplayFormatter

from rubrictools.charts import before_after
from rubrictools.frames import to_polars
from rubrictools.human_agreement import agreement, criterion_pairs, human_frame
from rubrictools.metrics.names import METRIC_NAMES
from rubrictools.widgets.snapshot import snapshot_bundle

if TYPE_CHECKING:  # pragma: no cover
    from rubrictools.rubric import Rubric

__all__ = ["CalibrationWidget"]

ALL = "(all)"
DECISIONS = ("judge_right", "human_right", "rubric_unclear", "relabel")


class CalibrationWidget:
    """Adjudicate disagreements between a judge and human labels.

    Parameters: the verdict table, the human labels (``id, criterion, label[, rater]``), the
    rubric, optionally ``submissions`` (``id`` + ``column``) to show the text, and
    ``metric`` (default ``cohen_kappa``) for the live summary.

    :attr:`labels` is the adjudicated human-label table (``id, criterion, rater, label,
    decision``) to save with :meth:`save` or pass back to :func:`rubrictools.agreement`.

    >>> import polars as pl, rubrictools as rt
    >>> v = pl.DataFrame({"id": [1, 2], "criterion": "a", "verdict": ["MET", "UNMET"]})
    >>> h = pl.DataFrame({"id": [1, 2], "criterion": "a", "label": ["UNMET", "UNMET"]})
    >>> cw = CalibrationWidget(v, h, rt.Rubric.from_dict([{"name": "a", "requirement": "x"}]), chart=False)
    >>> len(cw.disagreements), cw.judge_right_button.click(), cw.labels["label"].to_list()
    (1, None, ['MET', 'UNMET'])
    """

    def __init__(
        self,
        verdicts: Any,
        human: Any,
        rubric: Rubric | None = None,
        *,
        submissions: Any = None,
        column: str = "submission",
        metric: str = "cohen_kappa",
        chart: bool = True,
    ) -> None:
        import ipywidgets as w

        self.rubric = rubric
        self.metric = metric
        self.verdicts = to_polars(verdicts, name="verdicts")
        self.human = human_frame(human).with_columns(pl.col("label").cast(pl.String))
        pairs = criterion_pairs(self.verdicts, self.human, rubric, ["criterion"], "exclude", "each").frame
        v = self.verdicts
        if "explanation" not in v.columns:
            v = v.with_columns(pl.lit(None, dtype=pl.String).alias("explanation"))
        judge_cols = v.select("id", "criterion", pl.col("verdict").alias("judge_label"), "explanation")
        human_cols = self.human.select("id", "criterion", "rater", pl.col("label").alias("human_label"))
        dis = (
            pairs.filter(pl.col("h_code") != pl.col("j_code"))
            .select("id", "criterion", "rater", "classes", "h_code", "j_code")
            .join(judge_cols, on=["id", "criterion"], how="left")
            .join(human_cols, on=["id", "criterion", "rater"], how="left")
            .with_columns(pl.format("judge {} / human {}", "judge_label", "human_label").alias("kind"))
        )
        self.disagreements = dis
        self.texts: dict[Any, str] = {}
        if submissions is not None:
            s = to_polars(submissions, name="submissions")
            self.texts = dict(zip(s["id"].to_list(), s[column].to_list(), strict=False))
        self.decisions: dict[tuple[Any, str, str], tuple[str, str]] = {}
        self.pos = 0

        self.criterion = w.Dropdown(
            options=[ALL, *sorted(dis["criterion"].unique().to_list())], value=ALL, description="criterion"
        )
        self.kind = w.Dropdown(options=[ALL, *sorted(dis["kind"].unique().to_list())], value=ALL, description="type")
        self.undecided_only = w.Checkbox(value=False, description="undecided only")
        self.card = w.HTML()
        self.judge_right_button = w.Button(description="judge right", button_style="success")
        self.human_right_button = w.Button(description="human right", button_style="info")
        self.unclear_button = w.Button(description="rubric unclear", button_style="warning")
        self.relabel = w.Dropdown(options=[], description="relabel")
        self.relabel_button = w.Button(description="set label")
        self.prev_button = w.Button(description="◀ prev")
        self.next_button = w.Button(description="next ▶")
        self.status = w.Label()
        self.summary = w.HTML()
        self.chart_out = w.Output() if chart else None
        self.judge_right_button.on_click(lambda _: self.decide("judge_right"))
        self.human_right_button.on_click(lambda _: self.decide("human_right"))
        self.unclear_button.on_click(lambda _: self.decide("rubric_unclear"))
        self.relabel_button.on_click(lambda _: self.decide("relabel", self.relabel.value))
        self.prev_button.on_click(lambda _: self._go(-1))
        self.next_button.on_click(lambda _: self._go(1))
        for ctl in (self.criterion, self.kind, self.undecided_only):
            ctl.observe(self._on_filter, names="value")
        parts = [
            w.HBox([self.criterion, self.kind, self.undecided_only]),
            w.HBox([self.prev_button, self.next_button, self.status]),
            self.card,
            w.HBox([self.judge_right_button, self.human_right_button, self.unclear_button]),
            w.HBox([self.relabel, self.relabel_button]),
            self.summary,
        ]
        if self.chart_out is not None:
            parts.append(self.chart_out)
        self.widget = w.VBox(parts)
        self._baseline = self._agreement(self.human)
        self._render()
        self._update_summary()

    # ---------------------------------------------------------------- state
    @property
    def visible(self) -> pl.DataFrame:
        """Disagreements matching the filters."""
        d = self.disagreements
        if self.criterion.value != ALL:
            d = d.filter(pl.col("criterion") == self.criterion.value)
        if self.kind.value != ALL:
            d = d.filter(pl.col("kind") == self.kind.value)
        if self.undecided_only.value and self.decisions:
            done = pl.DataFrame(
                [{"id": k[0], "criterion": k[1], "rater": k[2]} for k in self.decisions],
                schema={"id": d.schema["id"], "criterion": pl.String, "rater": pl.String},
            )
            d = d.join(done, on=["id", "criterion", "rater"], how="anti", maintain_order="left")
        return d

    @property
    def current(self) -> dict[str, Any] | None:
        vis = self.visible
        if vis.height == 0:
            return None
        self.pos = min(self.pos, vis.height - 1)
        return vis.row(self.pos, named=True)

    def decide(self, decision: str, label: str | None = None) -> None:
        """Record a decision for the current disagreement and move to the next one."""
        if decision not in DECISIONS:
            raise ValueError(f"decision must be one of {DECISIONS}")
        cur = self.current
        if cur is None:
            return
        if decision == "judge_right":
            new = cur["judge_label"]
        elif decision == "relabel":
            if not label:
                self.status.value = "choose a label to set"
                return
            new = label
        else:
            new = cur["human_label"]
        self.decisions[(cur["id"], cur["criterion"], cur["rater"])] = (decision, str(new))
        if not self.undecided_only.value:
            self.pos += 1
        self._render()
        self._update_summary()

    @property
    def labels(self) -> pl.DataFrame:
        """The adjudicated human labels, the originals with decisions applied, plus ``decision``."""
        if not self.decisions:
            return self.human.select(
                "id", "criterion", "rater", "label", pl.lit(None, dtype=pl.String).alias("decision")
            )
        dec = pl.DataFrame(
            [
                {"id": k[0], "criterion": k[1], "rater": k[2], "decision": d, "new_label": lab}
                for k, (d, lab) in self.decisions.items()
            ],
            schema={
                "id": self.human.schema["id"],
                "criterion": pl.String,
                "rater": pl.String,
                "decision": pl.String,
                "new_label": pl.String,
            },
        )
        out = self.human.join(dec, on=["id", "criterion", "rater"], how="left", maintain_order="left")
        return out.select("id", "criterion", "rater", pl.coalesce("new_label", "label").alias("label"), "decision")

    def save(self, path: str | Path) -> Path:
        """Write :attr:`labels` to ``.parquet`` or ``.csv`` (by suffix)."""
        p = Path(path)
        if p.suffix == ".parquet":
            self.labels.write_parquet(p)
        elif p.suffix == ".csv":
            self.labels.write_csv(p)
        else:
            raise ValueError("save to a .parquet or .csv path")
        return p

    # ---------------------------------------------------------------- view
    def _agreement(self, human: pl.DataFrame) -> pl.DataFrame:
        return agreement(
            self.verdicts,
            human.select("id", "criterion", "rater", "label"),
            self.rubric,
            level="criterion",
            metrics=[self.metric, "accuracy"],
            n_resamples=0,
        )

    def _on_filter(self, _: Any) -> None:
        self.pos = 0
        self._render()

    def _go(self, step: int) -> None:
        n = self.visible.height
        self.pos = min(max(0, self.pos + step), max(n - 1, 0))
        self._render()

    def _render(self) -> None:
        cur = self.current
        n = self.visible.height
        decided = len(self.decisions)
        total = self.disagreements.height
        where = "" if n == total else " matching the filter"
        self.status.value = f"disagreement {min(self.pos + 1, n)} of {n}{where} · {decided} of {total} decided"
        if cur is None:
            self.card.value = "<i>No disagreement matches the filters.</i>"
            self.relabel.options = []
            return
        req = ""
        if self.rubric is not None and cur["criterion"] in self.rubric.names:
            req = html.escape(self.rubric[cur["criterion"]].requirement)
        text = self.texts.get(cur["id"])
        decision = self.decisions.get((cur["id"], cur["criterion"], cur["rater"]))
        self.card.value = (
            f"<div><b>submission</b> {html.escape(str(cur['id']))} · <b>criterion</b> "
            f"{html.escape(cur['criterion'])}: {req}</div>"
            + (
                f"<div style='white-space:pre-wrap;border:1px solid #ccc;padding:6px;margin:4px "
                f"0'>{html.escape(str(text))}</div>"
                if text is not None
                else ""
            )
            + f"<div><b>judge</b>: {html.escape(str(cur['judge_label']))} — "
            f"<i>{html.escape(str(cur['explanation'] or ''))}</i></div>"
            + f"<div><b>human</b> ({html.escape(str(cur['rater']))}): {html.escape(str(cur['human_label']))}</div>"
            + (f"<div><b>decided</b>: {decision[0]} → {html.escape(decision[1])}</div>" if decision else "")
        )
        self.relabel.options = list(cur["classes"])

    def _update_summary(self) -> None:
        now = self._agreement(self.labels)
        base = self._baseline.select("criterion", "metric", pl.col("value").alias("before"))
        table = (
            now.select("criterion", "metric", pl.col("value").alias("now"))
            .join(base, on=["criterion", "metric"], how="left")
            .select("criterion", "metric", "before", "now")
        )
        self.table = table
        rows = "".join(
            f"<tr><td>{html.escape(r['criterion'])}</td><td>{r['metric']}</td><td>{_fmt(r['before'])}</td><td>{_fmt(r['now'])}</td></tr>"
            for r in table.iter_rows(named=True)
        )
        self.summary.value = (
            f"<table><tr><th>criterion</th><th>metric</th><th>before</th><th>now</th></tr>{rows}</table>"
        )
        if self.chart_out is not None:
            shown = table.filter(pl.col("metric") == self.metric)
            words = METRIC_NAMES.get(self.metric, self.metric)
            title = f"{words[0].upper()}{words[1:]} with the human labels, before and after your decisions"
            self.chart = before_after(
                shown, by="criterion", before="before", after="now", title=title, metric=self.metric
            )
            self.chart_out.outputs = (_display_output(self.chart),)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        """The live widget plus a static snapshot for exports (:mod:`rubrictools.widgets.snapshot`)."""
        cols = ["id", "criterion", "rater", "judge_label", "human_label", "explanation"]  # the labels say the kind
        shown = self.disagreements.select(c for c in cols if c in self.disagreements.columns)
        if "rater" in shown.columns:  # one row per (answer, criterion, labels): the raters who gave it listed
            keys = [c for c in shown.columns if c != "rater"]
            rater = pl.col("rater").cast(pl.String).fill_null("–")
            shown = shown.group_by(keys, maintain_order=True).agg(rater.str.join(", ").alias("raters"))
            shown = shown.select(*keys[:2], "raters", *keys[2:])
        shown = shown.rename({"judge_label": "judge's label", "human_label": "human's label"}, strict=False)
        if self.texts:  # the answer each disagreement is about, beside the judge's explanation
            ids = pl.Series("id", list(self.texts), dtype=shown.schema["id"], strict=False)
            answers = pl.DataFrame([ids, pl.Series("answer", [str(t) for t in self.texts.values()])])
            shown = shown.join(answers, on="id", how="left", maintain_order="left")
        drawn = self.chart_out.outputs if self.chart_out is not None else ()
        svg = drawn[0]["data"].get("image/svg+xml") if drawn else None  # with rt.charts.offline()
        decide = (self.judge_right_button, self.human_right_button, self.unclear_button)
        buttons = "".join(f"<code>[{b.description}]</code> " for b in decide)
        menu = " | ".join(html.escape(str(o)) for o in self.relabel.options) or "–"
        relabel = f"relabel menu: <code>[{menu}]</code> then <code>[{self.relabel_button.description}]</code>"
        current = f"{self.card.value}<p>buttons: {buttons}· {relabel}</p>"
        if shown.height != self.disagreements.height:  # rows grouped by rater: say how the counts relate
            current += (
                f"<p>The table lists the {self.disagreements.height:,} disagreements (one per rater) as "
                f"{shown.height:,} rows, one per answer, criterion and pair of labels.</p>"
            )
        return snapshot_bundle(self.widget, "Adjudication", self.status.value, shown, figure=svg, current=current)


def _display_output(obj: Any) -> dict[str, Any]:
    """``obj`` as one ``display_data`` output, for an ``ipywidgets.Output``'s ``outputs`` trait.

    The chart is set as the widget's state rather than displayed inside ``with output:``. A
    headless executor (nbclient, behind ``nbconvert --execute`` and nbmake) mimics the Output
    widget and answers every output captured that way with a message on the shell channel, while
    it awaits the cell's reply on that same channel; under CPU load the reply's wake-up can be
    lost and the notebook hangs for good (jupyter/nbclient#312). Setting the state sends nothing
    back, and every frontend draws the new outputs just the same.

    >>> _display_output("<b>x</b>")["data"]["text/plain"]
    "'<b>x</b>'"
    """
    data, metadata = DisplayFormatter().format(obj)
    return {"output_type": "display_data", "data": data, "metadata": metadata}


def _fmt(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"
