"""`rt.rubric_report`: discrimination, redundancy, judge consistency, human agreement, cost."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import rubrictools as rt

from ..vega import walk


@pytest.fixture
def setup():
    rng = np.random.default_rng(0)
    n = 120
    truth = {c: rng.random(n) < 0.5 for c in ("a", "b", "d")}
    truth["c"] = np.ones(n, dtype=bool)  # never discriminates
    truth["dup"] = truth["a"].copy()  # redundant with a
    rubric = rt.Rubric.from_dict(
        [
            {"name": k, "requirement": f"Req {k}", "weight": w}
            for k, w in [("a", 10), ("b", 10), ("c", 5), ("d", 2), ("dup", 5)]
        ]
    )
    ids = np.arange(n)

    def table(flip):  # the judge flips each criterion's truth with its own rate
        rows = []
        for c, t in truth.items():
            j = np.where(rng.random(n) < flip.get(c, 0.02), ~t, t)
            rows.append(pl.DataFrame({"id": ids, "criterion": c, "verdict": np.where(j, "MET", "UNMET")}))
        return pl.concat(rows)

    human = pl.concat(
        [
            pl.DataFrame({"id": ids, "criterion": c, "label": np.where(t, "MET", "UNMET"), "rater": "h"})
            for c, t in truth.items()
        ]
    )
    return rubric, table, human


def test_report_flags_the_planted_problems(setup):
    rubric, table, human = setup
    v = table({"b": 0.35})
    rep = rt.rubric_report(v, human, rubric)
    t = rep.table
    assert t["criterion"].to_list() == list(rubric.names)
    row = {r["criterion"]: r for r in t.iter_rows(named=True)}
    assert not row["c"]["discriminates"] and "never discriminates" in row["c"]["flags"]
    assert (
        row["a"]["most_correlated"] == "dup"
        and row["a"]["correlation"] > 0.85
        and "redundant with dup" in row["a"]["flags"]
    )
    assert row["b"]["human_kappa"] < 0.4 and "low human agreement" in row["b"]["flags"]
    assert row["b"]["score_gain"] == max(r["score_gain"] for r in row.values() if r["score_gain"] is not None)
    assert rep.weakest(1) == ["b"]
    assert any("'b'" in f for f in rep.findings) and "<li>" in rep._repr_html_()
    # the partner is chosen by |r|: the notebook view's headers say so (a negative r is no "most correlated")
    shown = rep._repr_html_()
    assert "strongest |r| with" in shown and "Pearson r with it" in shown and "most correlated" not in shown
    spec = rep.chart().to_dict()
    assert len(spec["hconcat"]) == 2
    # the criterion to fix first is marked whatever its colour; correlations on their whole scale
    text = str(spec)
    assert "b · fix first" in text or "fix first" in text
    heat = [n for n in walk(spec) if isinstance(n.get("color"), dict) and n["color"].get("field") == "r"]
    assert heat and heat[0]["color"]["scale"]["domain"] == [-1.0, 1.0]
    # every bar prints its value with two decimals (before: "0.5" beside "0.69")
    import re

    rows = [r for n in walk(spec) for r in (n.get("values") or []) if isinstance(r, dict) and "number" in r]
    assert rows and all(re.match(r"^-?\d\.\d\d$", r["number"]) for r in rows), rows
    # the flags sit in their own column at the axis's end, not after the value past the panel
    assert {r["criterion"]: r["label"] for r in rows}["b"].startswith("fix first: ")
    flag_layers = [n for n in walk(spec) if n.get("encoding", {}).get("x", {}).get("datum") == 1.0]
    assert flag_layers and flag_layers[0]["encoding"]["text"]["field"] == "label"


def test_report_without_humans_and_with_several_judges(setup):
    rubric, table, _ = setup
    j1 = table({}).with_columns(pl.lit("j1").alias("judge"))
    j2 = table({"d": 0.5}).with_columns(pl.lit("j2").alias("judge"))
    v = pl.concat([j1, j2, rt.ensemble(pl.concat([j1, j2]), rubric)], how="diagonal_relaxed")
    rep = rt.rubric_report(v, rubric=rubric)
    t = rep.table
    assert t["human_kappa"].null_count() == t.height and t["score_gain"].null_count() == t.height
    jk = dict(zip(t["criterion"], t["judge_kappa"], strict=False))
    assert jk["d"] < 0.4 < jk["a"] and "judges disagree" in t.filter(pl.col("criterion") == "d")["flags"].item()
    assert rep.weakest(1) == ["d"]
    with pytest.raises(ValueError, match="several judges"):
        rt.rubric_report(pl.concat([j1, j2]), rubric=rubric)
    assert rt.rubric_report(pl.concat([j1, j2]), rubric=rubric, judge="j1").table["n"].to_list() == [120] * 5


def test_demo_dataset_report():
    d = rt.datasets.load("demo_support")
    rep = rt.rubric_report(d.verdicts, d.human, d.rubric)
    assert rep.weakest(1) == ["polite"]
    assert rep.table["score_gain"].null_count() == 0


def test_the_report_names_the_criterion_to_fix_first_as_its_chart_does() -> None:
    """Before: the headline and flags named only the costliest criterion (answers_question) while the
    chart marked the lowest-kappa one (polite) 'fix first', so a reader got two answers."""
    s = rt.datasets.load("demo_support")
    report = rt.rubric_report(s.verdicts, s.human, s.rubric)
    flags = dict(report.table.select("criterion", "flags").iter_rows())
    assert report.weakest(1) == ["polite"] and flags["polite"][0] == "lowest human agreement"
    assert report.findings[0] == (
        "'polite' agrees least with the humans (kappa 0.44, 95% interval 0.26 to 0.61, overlapping every other "
        "criterion's): read its wording first"
    )
    assert flags["answers_question"] == ["costliest disagreement"]
    assert report.findings[1].startswith("'answers_question' costs the score most")
    assert not any("the judge and humans disagree on 'polite'" in f for f in report.findings)  # said once


def test_the_report_gives_each_kappa_its_interval_and_draws_it() -> None:
    """Before: the chart ranked point estimates only, so 'fix first' read as 'clearly worst'."""
    s = rt.datasets.load("demo_support")
    report = rt.rubric_report(s.verdicts, s.human, s.rubric)
    direct = rt.agreement(s.verdicts, s.human, s.rubric, level="criterion", metrics=["cohen_kappa"], seed=0)
    got = report.table.join(direct, on="criterion")
    assert (got["human_kappa_low"] - got["ci_low"]).abs().max() < 1e-12  # the same bootstrap as rt.agreement's
    assert (got["human_kappa_high"] - got["ci_high"]).abs().max() < 1e-12
    bars = report.chart().to_dict()["hconcat"][0]
    rules = [layer for layer in bars["layer"] if layer["mark"] == "rule" or layer["mark"].get("type") == "rule"]
    assert bars["title"] == "Judge vs human (Cohen's kappa, 95% interval)" and len(rules) == 1
    assert rules[0]["encoding"]["x"]["field"] == "lo" and rules[0]["encoding"]["x2"]["field"] == "hi"
    colour = next(layer["encoding"]["color"] for layer in bars["layer"] if "color" in layer.get("encoding", {}))
    assert colour["legend"]["symbolStrokeWidth"] == 0  # only the bar to fix first is outlined, not the swatches
    bare = rt.rubric_report(s.verdicts, s.human, s.rubric, n_resamples=0)
    assert bare.table["human_kappa_low"].null_count() == bare.table.height
    assert bare.chart().to_dict()["hconcat"][0]["title"] == "Judge vs human (Cohen's kappa)"


def test_the_report_charts_axis_names_the_measure_not_the_panel_title_again() -> None:
    """Before: the bars' axis title repeated the panel title word for word (notebook 07)."""
    d = rt.datasets.load("demo_support")
    bars = rt.rubric_report(d.verdicts, d.human, d.rubric).chart().to_dict()["hconcat"][0]
    axes = {layer["encoding"]["x"].get("title") for layer in bars["layer"] if "title" in layer["encoding"].get("x", {})}
    assert axes == {"Cohen's kappa (line: 95% interval)"} and bars["title"] not in axes
