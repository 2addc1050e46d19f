"""Widgets driven headless: set values, click buttons, assert on DataFrames and text."""

from __future__ import annotations

import html
import json
import re

import polars as pl
import pytest

import rubrictools as rt
from rubrictools import widgets
from tests.vega import walk

pytest.importorskip("ipywidgets")


@pytest.fixture
def support():
    return rt.datasets.load("demo_support")


def test_calibration_walkthrough(support, tmp_path) -> None:
    cw = widgets.calibrate(
        support.verdicts, support.human, support.rubric, submissions=support.submissions, chart=False
    )
    n = cw.disagreements.height
    assert n > 0 and f"of {n} decided" in cw.status.value
    # every disagreement really is one
    assert (cw.disagreements["judge_label"] != cw.disagreements["human_label"].str.to_uppercase()).all()
    assert cw.status.value == f"disagreement 1 of {n} · 0 of {n} decided"  # the position, not how many are listed
    cw.criterion.value = "answers_question"
    shown = cw.visible.height
    assert cw.status.value == f"disagreement 1 of {shown} matching the filter · 0 of {n} decided"
    cw.kind.value = "judge MET / human UNMET"
    first = cw.current
    assert first is not None and first["criterion"] == "answers_question" and "answers_question" in cw.card.value
    assert support.submissions.filter(pl.col("id") == first["id"])["submission"].item()[:20] in cw.card.value
    before = cw.table.filter((pl.col("criterion") == "answers_question") & (pl.col("metric") == "cohen_kappa"))[
        "now"
    ].item()
    cw.judge_right_button.click()  # the human label becomes MET
    after = cw.table.filter((pl.col("criterion") == "answers_question") & (pl.col("metric") == "cohen_kappa"))[
        "now"
    ].item()
    assert after > before  # one fewer disagreement: kappa rises, live
    second = cw.current
    cw.human_right_button.click()
    third = cw.current
    cw.unclear_button.click()
    labels = cw.labels

    def row(r):
        return labels.filter(
            (pl.col("id") == r["id"]) & (pl.col("criterion") == r["criterion"]) & (pl.col("rater") == r["rater"])
        ).row(0, named=True)

    assert row(first)["label"] == "MET" and row(first)["decision"] == "judge_right"
    assert row(second)["label"] == second["human_label"] and row(second)["decision"] == "human_right"
    assert row(third)["decision"] == "rubric_unclear"
    assert labels.height == support.human.height and labels["decision"].drop_nulls().len() == 3
    # relabel and the undecided-only filter
    cw.criterion.value = "(all)"
    cw.kind.value = "(all)"
    cw.undecided_only.value = True
    cur = cw.current
    assert (cur["id"], cur["criterion"], cur["rater"]) not in cw.decisions
    cw.relabel.value = cw.relabel.options[0]
    cw.relabel_button.click()
    assert cw.decisions[(cur["id"], cur["criterion"], cur["rater"])] == ("relabel", cw.relabel.options[0])
    p = cw.save(tmp_path / "adjudicated.parquet")
    assert pl.read_parquet(p).equals(cw.labels)
    cw.save(tmp_path / "adjudicated.csv")
    with pytest.raises(ValueError, match=r"parquet or .csv"):
        cw.save(tmp_path / "x.txt")
    # the adjudicated labels feed straight back into agreement
    assert rt.agreement(support.verdicts, cw.labels, support.rubric, n_resamples=0).height > 0


def test_calibration_chart_updates(support, capsys) -> None:
    cw = widgets.calibrate(support.verdicts, support.human, support.rubric)

    def values(chart):
        spec = chart.to_dict()
        tables = [*spec.get("datasets", {}).values()] + [
            n["data"]["values"] for n in walk(spec) if "values" in n.get("data", {})
        ]
        rows = next(t for t in tables if t and "group" in t[0])
        return {r["group"]: (r["before"], r["after"]) for r in rows}

    start = values(cw.chart)
    assert list(start) == [c.name for c in support.rubric.criteria]  # rubric order
    assert start["polite"][0] == start["polite"][1]
    cw.criterion.value = "polite"
    cw.judge_right_button.click()
    after = values(cw.chart)
    assert after["polite"][1] > after["polite"][0] == start["polite"][0]
    assert len(cw.chart_out.outputs) == 1  # redrawn in place, not appended


def test_labelling_buttons_keys_skip_undo_and_resume(support, tmp_path) -> None:
    path = tmp_path / "labels.jsonl"
    subs = support.submissions.head(3)
    lw = widgets.label(subs, support.rubric, rater="zoe", path=path)
    assert lw.progress.max == 15 and lw.current == ("t000", "answers_question")
    assert "Directly answers" in lw.requirement.value and subs["submission"][0][:15] in lw.text.value
    lw.buttons["MET"].click()
    lw.shortcut.value = "2"  # second label of gives_steps: UNMET
    lw.shortcut.value = "m"  # polite: MET
    assert lw.labels["label"].to_list() == ["MET", "UNMET", "MET"] and lw.shortcut.value == ""
    lw.shortcut.value = "zz"
    assert "no label" in lw.status.value
    lw.skip_button.click()  # cites_policy skipped
    assert lw.current == ("t000", "overpromises")
    lw.buttons["UNMET"].click()
    lw.undo_button.click()
    assert lw.current == ("t000", "overpromises") and len(lw.labels) == 3
    lw.buttons["MET"].click()
    assert lw.progress.value == 4
    # a restarted kernel: a new widget on the same file resumes, the undo is honoured
    again = widgets.label(subs, support.rubric, rater="zoe", path=path)
    assert again.labels.equals(lw.labels)
    assert again.current == ("t000", "cites_policy")  # the skipped pair is the first unlabelled
    # a torn last line (crash mid-write) is ignored
    with path.open("a") as fh:
        fh.write('{"id": "t001", "crit')
    assert widgets.label(subs, support.rubric, rater="zoe", path=path).labels.height == 4
    # another rater's labels in the same file are not mixed in
    assert widgets.label(subs, support.rubric, rater="yan", path=path).labels.height == 0
    lines = [json.loads(x) for x in path.read_text().splitlines()[:-1]]
    assert any(rec.get("undo") for rec in lines)


def test_labelling_finishes_and_feeds_agreement(support) -> None:
    subs = support.submissions.head(2)
    lw = widgets.label(subs, support.rubric, rater="zoe", criteria=["polite"])
    lw.shortcut.value = "1"
    lw.shortcut.value = "u"
    assert lw.current is None and "All pairs are labelled" in lw.text.value
    t = rt.agreement(
        support.verdicts.filter(pl.col("id").is_in(["t000", "t001"])),
        lw.labels,
        support.rubric,
        n_resamples=0,
        level="criterion",
    )
    assert t.filter(pl.col("metric") == "accuracy")["n"].item() == 2
    with pytest.raises(ValueError, match="not in the rubric"):
        widgets.label(subs, support.rubric, criteria=["nope"])
    with pytest.raises(ValueError, match="duplicate"):
        widgets.label(pl.concat([subs, subs]), support.rubric)


def test_explorer_filters_and_pages_on_a_big_table() -> None:
    hanna = rt.datasets.load("hanna")
    ex = widgets.explore(hanna.verdicts, page_size=25)  # 126,720 rows
    assert ex.current.height == 25 and "of 126,720 rows" in ex.status.value
    ex.judge.value = "Mistral-7B/p1"
    ex.errors_only.value = True
    assert ex.filtered.height == 253 and ex.page == 0
    ex.next_button.click()
    assert ex.page == 1 and "page 2 of 11" in ex.status.value
    for _ in range(20):
        ex.next_button.click()
    assert ex.page == 10 and ex.current.height == 253 - 250
    ex.search.value = "outside 1-5"
    assert ex.filtered.height == 253 and ex.page == 0
    ex.search.value = "nothing like this"
    assert ex.filtered.height == 0 and "page 1 of 1" in ex.status.value
    assert "<table>" in ex.body.value


def test_label_widget_takes_an_active_labelling_queue_and_returns_pi():
    import numpy as np

    from rubrictools.widgets.labelling import LabelWidget

    r = rt.Rubric.from_dict([{"name": "ok", "requirement": "is fine"}])
    df = pl.DataFrame({"id": range(6), "submission": [f"answer {i}" for i in range(6)]})
    verdicts = pl.DataFrame(
        {
            "id": np.repeat(np.arange(6), 2),
            "criterion": "ok",
            "judge": ["a", "b"] * 6,
            "verdict": ["MET", "UNMET", "MET", "MET", "UNMET", "MET", "MET", "MET", "UNMET", "UNMET", "MET", "UNMET"],
        }
    )
    queue = rt.choose_to_label(verdicts, 3, seed=2)
    lw = LabelWidget(df, r, queue=queue)
    assert [k[0] for k in lw.queue] == queue["id"].to_list()
    for _ in range(queue.height):
        lw.buttons["MET"].click()
    labels = lw.labels
    assert labels["id"].to_list() == queue["id"].to_list() and labels["pi"].to_list() == queue["pi"].to_list()
    with pytest.raises(ValueError, match="not in df"):
        LabelWidget(df, r, queue=pl.DataFrame({"id": [99]}))


def test_every_widget_carries_a_static_snapshot_for_exports() -> None:
    support = rt.datasets.load("demo_support")
    lw = rt.widgets.label(support.submissions.head(2), support.rubric, rater="me")
    lw.buttons["MET"].click()
    cw = rt.widgets.calibrate(support.verdicts, support.human, support.rubric)
    ex = rt.widgets.explore(support.verdicts, page_size=5)
    for widget, title, inside in (
        (lw, "Labelling", "answers_question"),
        (cw, "Adjudication", "human&#x27;s label"),
        (ex, "Verdict explorer", "page 1 of"),
    ):
        bundle = widget._repr_mimebundle_()
        assert "application/vnd.jupyter.widget-view+json" in bundle  # the live widget
        snap = bundle["text/html"]
        assert title in snap and inside in snap and "<table>" in snap
    # the adjudication snapshot shows the disagreement in hand and what its buttons do
    cw_snap = cw._repr_mimebundle_()["text/html"]
    first = cw.current
    assert first is not None and f"submission</b> {first['id']}" in cw_snap and "[judge right]" in cw_snap
    # the relabel menu and its options, which the introduction of notebook 04 tells the reader to use
    assert "relabel menu: <code>[UNMET | MET]</code> then <code>[set label]</code>" in cw_snap
    # the labelling snapshot says what its key box takes
    assert "key box: type 1-3 or m/u/c" in lw._repr_mimebundle_()["text/html"]
    # untrusted text is escaped in the snapshot
    hostile = rt.widgets.explore(support.verdicts.head(1).with_columns(explanation=pl.lit("<script>x</script>")))
    assert "<script>" not in hostile._repr_mimebundle_()["text/html"]


def test_calibration_snapshot_shows_its_chart_when_charts_render_offline() -> None:
    pytest.importorskip("vl_convert")
    import altair as alt

    support = rt.datasets.load("demo_support")
    before = alt.renderers.active
    try:
        no_svg = rt.widgets.calibrate(support.verdicts, support.human, support.rubric)._repr_mimebundle_()
        assert "<svg" not in no_svg["text/html"]  # the default renderer draws no SVG to show
        rt.charts.offline()
        cw = rt.widgets.calibrate(support.verdicts, support.human, support.rubric)
        snap = cw._repr_mimebundle_()["text/html"]
    finally:
        alt.renderers.enable(before)
    assert snap.count("<svg") == 1 and "now (filled)" in snap
    assert snap.index("<svg") < snap.index("<table>")  # the chart above the disagreement list


def test_snapshot_tables_show_floats_short() -> None:
    from rubrictools.widgets.snapshot import html_table

    cells = html_table(pl.DataFrame({"x": [2 / 3, -1 / 3, None, 3.0, -0.0001]}), max_chars=50)
    assert ">0.667<" in cells and ">\u2212" + "0.333<" in cells and ">–<" in cells and ">3.000<" in cells
    assert "0.6666" not in cells and ">0.000<" in cells and "-0.000" not in cells  # one format per column
    assert cells.count("text-align:right") == 6  # the header and five numbers, not to the left of a text column
    assert ">2<" in html_table(pl.DataFrame({"n": [2.0]}), max_chars=50)  # whole numbers stay whole


def test_snapshot_cuts_long_text_visibly_and_explorer_drops_empty_columns() -> None:
    """Before: answers were cut at 200 characters without a mark, and a rating table's explorer
    showed an empty verdict column beside 6-decimal ratings."""
    from rubrictools.widgets.snapshot import html_table

    assert "x" * 599 + "…" in html_table(pl.DataFrame({"a": ["x" * 700]}), max_chars=600)
    ratings = pl.DataFrame({"id": [1], "criterion": "a", "verdict": [None], "rating": [2 / 3], "explanation": ["e"]})
    shot = rt.widgets.explore(ratings)._repr_mimebundle_()["text/html"]
    assert ">rating<" in shot and ">verdict<" not in shot and ">0.667<" in shot


def test_explore_on_a_score_table_says_it_needs_the_verdict_table() -> None:
    """Before: polars' ColumnNotFoundError from inside the widget."""
    scores = pl.DataFrame({"id": [1, 2], "score": [0.5, 1.0], "raw_score": [1.0, 2.0], "error": [None, None]})
    with pytest.raises(ValueError, match=r"missing column\(s\) \['criterion', 'verdict'\].*score table"):
        rt.widgets.explore(scores)


def test_snapshots_show_the_item_in_hand_and_what_each_disagreement_is_about() -> None:
    """Before: a fresh labelling snapshot said '0 / 20' and '(no rows yet)'; the calibration
    snapshot listed disagreements without the answer or the judge's explanation."""
    support = rt.datasets.load("demo_support")
    first = support.submissions.head(1)
    lw = rt.widgets.label(first, support.rubric, rater="me")
    snap = lw._repr_mimebundle_()["text/html"]
    answer = first["text"].item() if "text" in first.columns else first[first.columns[1]].item()
    assert "(no rows yet)" not in snap and html.escape(answer)[:40] in snap
    assert "answers_question" in snap and "[1: MET]" in snap and "[skip]" in snap
    cw = rt.widgets.calibrate(support.verdicts, support.human, support.rubric, submissions=support.submissions)
    snap = cw._repr_mimebundle_()["text/html"]
    assert "<th style='text-align:left'>answer</th>" in snap and "<th style='text-align:left'>raters</th>" in snap
    # the demo judge gives one explanation everywhere: said once above the table, not on each of its rows
    assert (
        snap.count("every row's explanation: <i>simulated") == 1 and snap.count("simulated:") == 2
    )  # and the card in hand
    # one row per (answer, criterion, labels), the raters who gave that label listed together
    assert "ana, chloe" in snap or "ana, ben" in snap
    assert re.search(r"lists the 134 disagreements \(one per rater\) as \d+ rows, one per answer", snap)
