"""assert_score: passes on the lower confidence bound only, fails readably, never passes an outage."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import rubrictools as rt
from rubrictools.metrics import resampling as bs

RUB = rt.Rubric.from_dict(
    [{"name": "correct", "weight": 2, "requirement": "Correct"}, {"name": "cites", "requirement": "Cites"}]
)


def _table(n: int, p_correct: float, p_cites: float, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    c, s = rng.random(n) < p_correct, rng.random(n) < p_cites
    rows = [(i, "correct", bool(c[i])) for i in range(n)] + [(i, "cites", bool(s[i])) for i in range(n)]
    return pl.DataFrame(rows, schema=["id", "criterion", "met"], orient="row").select(
        "id",
        "criterion",
        pl.when("met").then(pl.lit("MET")).otherwise(pl.lit("UNMET")).alias("verdict"),
        pl.col("met").cast(pl.Float64).alias("value"),
        pl.lit(None, dtype=pl.String).alias("error"),
    )


def test_the_bound_not_the_mean_decides_and_equals_a_plain_bootstrap() -> None:
    v = _table(25, 0.9, 0.7)
    s = rt.score(v, RUB)["score"].to_numpy()
    w = bs.cluster_weights(25, 2000, seed=0)
    bound = np.quantile([np.repeat(s, w[k].astype(int)).mean() for k in range(2000)], 0.05)
    gates = rt.assert_score(v, RUB, at_least=bound - 1e-9)
    assert gates["lower_bound"][0] == pytest.approx(bound) and gates["mean"][0] == pytest.approx(s.mean())
    # the mean clears the bar, its lower bound does not: the gate fails
    assert s.mean() > bound + 0.02
    with pytest.raises(AssertionError, match=r"95% bootstrap lower bound .* < .*help the score least .*: cites"):
        rt.assert_score(v, RUB, at_least=s.mean() - 0.01)
    # more submissions at the same rates narrow the bound until it clears
    assert rt.assert_score(_table(2000, 0.9, 0.7), RUB, at_least=s.mean() - 0.05)["passed"].all()


def test_criterion_gates_name_the_failing_criterion() -> None:
    v = _table(400, 0.95, 0.5)
    failed = r"cites \d+\.\d\d% on 400 verdicts, 95% bootstrap lower bound \d+\.\d\d% < 80%"
    with pytest.raises(AssertionError, match=failed):
        rt.assert_score(v, RUB, at_least=0.1, criteria={"correct": 0.9, "cites": 0.8})
    assert rt.assert_score(v, RUB, at_least=0.1, criteria={"correct": 0.9}).height == 2
    with pytest.raises(ValueError, match="not in the verdict table"):
        rt.assert_score(v, RUB, at_least=0.1, criteria={"polite": 0.9})


def test_shares_print_with_two_decimals_so_51_of_80_is_not_63_7() -> None:
    """Before: one decimal printed 51 of 80 as "63.7%" beside tables that show 63.75%."""
    met = np.arange(80) < 51
    v = (
        _table(80, 1.0, 1.0)
        .with_columns(
            pl.when((pl.col("criterion") == "cites") & ~pl.col("id").is_in(np.flatnonzero(met).tolist()))
            .then(pl.lit("UNMET"))
            .otherwise(pl.col("verdict"))
            .alias("verdict")
        )
        .with_columns((pl.col("verdict") == "MET").cast(pl.Float64).alias("value"))
    )
    with pytest.raises(AssertionError, match=r"cites 63\.75% on 80 verdicts.*least.*cites 63\.75%"):
        rt.assert_score(v, RUB, at_least=0.1, criteria={"cites": 0.9})


def test_failed_calls_fail_the_gate_unless_told_otherwise() -> None:
    v = _table(200, 1.0, 1.0).with_columns(
        pl.when(pl.col("id") < 3).then(pl.lit("HTTP 500")).otherwise(pl.col("error")).alias("error"),
        pl.when(pl.col("id") < 3).then(pl.lit(None)).otherwise(pl.col("verdict")).alias("verdict"),
    )
    with pytest.raises(AssertionError, match=r"3 of 200 submissions have failed judge calls"):
        rt.assert_score(v, RUB, at_least=0.5)
    assert rt.assert_score(v, RUB, at_least=0.9, on_error="exclude")["n"][0] == 197
    with pytest.raises(AssertionError):
        rt.assert_score(v, RUB, at_least=0.999, on_error="zero")  # three zeros pull the bound down
    with pytest.raises(ValueError, match="ci must be"):
        rt.assert_score(v, RUB, at_least=0.5, ci=95)


def test_a_recorded_run_is_gated_by_id(tmp_path) -> None:
    rub = rt.Rubric.from_dict([{"name": "greets", "requirement": "Says hello"}])
    df = pl.DataFrame({"submission": ["hello"] * 30})
    rt.grade(df, rub, model=rt.ScriptedJudge(rule=lambda t, c: "MET"), progress=False, record=tmp_path)
    assert rt.assert_score("last", root=tmp_path, at_least=0.95)["passed"].all()


def test_a_gate_that_cannot_fail_or_cannot_be_computed_is_refused() -> None:
    v = pl.DataFrame({"id": range(10), "criterion": "c", "verdict": "MET", "value": 1.0})
    rub = rt.Rubric.from_dict([{"name": "c", "requirement": "x"}])
    with pytest.raises(ValueError, match="at_least must be a score between 0 and 1"):
        rt.assert_score(v, rub, at_least=-1)
    with pytest.raises(ValueError, match=r"criteria\['c'\] must be a score between 0 and 1"):
        rt.assert_score(v, rub, at_least=0.5, criteria={"c": 90})
    with pytest.raises(ValueError, match="n_resamples must be an int >= 2"):
        rt.assert_score(v, rub, at_least=0.5, n_resamples=0)
    with pytest.raises(ValueError, match="seed must be an int >= 0"):
        rt.assert_score(v, rub, at_least=0.5, seed=-1)


def test_a_penalty_rarely_met_is_named_as_helping_the_score() -> None:
    rub = rt.Rubric.from_dict(
        [
            {"name": "correct", "weight": 2, "requirement": "Correct"},
            {"name": "rude", "weight": -1, "requirement": "Rude"},
        ]
    )
    v = (
        _table(200, 0.3, 0.0)
        .with_columns(
            pl.when(pl.col("criterion") == "cites").then(pl.lit("rude")).otherwise("criterion").alias("criterion"),
            pl.when((pl.col("criterion") == "cites") & (pl.col("id") < 20)).then(1.0).otherwise("value").alias("value"),
        )
        .with_columns(pl.when(pl.col("value") == 1).then(pl.lit("MET")).otherwise(pl.lit("UNMET")).alias("verdict"))
    )
    # rude MET on 10%: good for the score on 90% of verdicts
    with pytest.raises(AssertionError, match=r"least .*: correct 2\d\.\d\d%, rude 90\.00%$"):
        rt.assert_score(v, rub, at_least=0.9)


def test_a_penalty_gate_bounds_the_share_of_answers_that_avoid_it() -> None:
    """Before: criteria={"rude": 0.9} gated the share of rude answers, so a run rude on 0% failed
    it and a run rude on 95% passed."""
    rub = rt.Rubric.from_dict(
        [{"name": "correct", "requirement": "Correct"}, {"name": "rude", "weight": -1, "requirement": "Rude"}]
    )
    never_rude = _table(200, 1.0, 0.0).with_columns(
        pl.when(pl.col("criterion") == "cites").then(pl.lit("rude")).otherwise("criterion").alias("criterion")
    )
    gates = rt.assert_score(never_rude, rub, at_least=0.5, criteria={"rude": 0.9}, n_resamples=200)
    row = gates.filter(pl.col("gate") == "rude (avoided)").row(0, named=True)
    assert row["mean"] == 1.0 and row["passed"]
    always_rude = never_rude.with_columns(
        pl.when(pl.col("criterion") == "rude").then(1.0).otherwise("value").alias("value"),
        pl.when(pl.col("criterion") == "rude").then(pl.lit("MET")).otherwise("verdict").alias("verdict"),
    )
    with pytest.raises(AssertionError, match=r"rude \(avoided\) 0\.00% on 200 verdicts"):
        rt.assert_score(always_rude, rub, at_least=0.0, criteria={"rude": 0.9}, n_resamples=200)


def test_without_a_rubric_the_tables_negative_weight_marks_a_penalty() -> None:
    table = _table(100, 1.0, 0.0).with_columns(
        pl.when(pl.col("criterion") == "cites").then(pl.lit("rude")).otherwise("criterion").alias("criterion"),
        pl.when(pl.col("criterion") == "cites").then(-5.0).otherwise(1.0).alias("weight"),
    )
    gates = rt.assert_score(table, at_least=0.0, criteria={"rude": 0.9}, n_resamples=100)
    assert gates.filter(pl.col("gate") == "rude (avoided)")["passed"].item()


def test_a_rubric_given_revalues_the_criterion_gates_as_it_does_the_score() -> None:
    """Before: rubric= changed the overall score but the per-criterion gates kept the table's old values."""
    old = rt.Rubric.from_dict([{"name": "q", "requirement": "x", "options": [
        {"label": "lo", "value": 0.0}, {"label": "mid", "value": 0.5}]}])  # fmt: skip
    new = rt.Rubric.from_dict([{"name": "q", "requirement": "x", "options": [
        {"label": "lo", "value": 0.0}, {"label": "mid", "value": 0.9}]}])  # fmt: skip
    v = pl.DataFrame({"id": range(50), "criterion": "q", "verdict": "mid", "value": 0.5, "error": None},
                     schema_overrides={"error": pl.String})  # fmt: skip
    gates = rt.assert_score(v, new, at_least=0.8, criteria={"q": 0.8}, n_resamples=100)
    assert gates["mean"].to_list() == [pytest.approx(0.9), pytest.approx(0.9)]
    assert old["q"].options is not None
