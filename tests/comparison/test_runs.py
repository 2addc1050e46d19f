"""compare_runs: paired changes with cluster-bootstrap intervals, flips and costs, against a plain oracle."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import rubrictools as rt
from rubrictools.metrics import resampling as bs

RUBRIC = rt.Rubric.from_dict(
    [
        {"name": "correct", "weight": 3, "requirement": "The answer is correct"},
        {"name": "cites", "weight": 1, "requirement": "It cites a source"},
        {"name": "rude", "weight": -2, "requirement": "It is rude"},
    ]
)


def _verdicts(seed: int, n: int = 60, p: tuple[float, float, float] = (0.5, 0.5, 0.2)) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        for c, q in zip(("correct", "cites", "rude"), p, strict=True):
            met = rng.random() < q
            rows.append(
                {
                    "id": i,
                    "criterion": c,
                    "verdict": "MET" if met else "UNMET",
                    "value": float(met),
                    "explanation": f"{c} {i} {seed}",
                    "error": None,
                    "judge": "m",
                    "cost_usd": 0.001,
                    "prompt_tokens": 100,
                    "completion_tokens": 10,
                    "cached": False,
                    "latency_s": 0.5 + seed,
                }
            )
    return pl.DataFrame(rows)


def test_changes_and_intervals_equal_a_plain_loop_over_the_same_draws() -> None:
    a, b = _verdicts(0), _verdicts(1, p=(0.8, 0.5, 0.1))
    cmp = rt.compare_runs(a, b, rubric=RUBRIC, n_resamples=500, seed=7)
    sa = rt.score(a, RUBRIC)["score"].to_numpy()
    sb = rt.score(b, RUBRIC)["score"].to_numpy()
    d = sb - sa
    w = bs.cluster_weights(60, 500, seed=7)  # the documented draws: submissions with replacement
    boot = np.array([np.repeat(d, w[k].astype(int)).mean() for k in range(500)])
    row = cmp.summary.row(0, named=True)
    assert row["criterion"] == "overall score" and row["n"] == 60
    assert row["change"] == pytest.approx(d.mean()) and row["mean_b"] - row["mean_a"] == pytest.approx(d.mean())
    lo, hi = np.quantile(boot, [0.025, 0.975])
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((lo, hi))
    assert row["p_value"] == pytest.approx((1 + np.sum(np.abs(boot - d.mean()) >= abs(d.mean()))) / 501)
    # a criterion's change is the mean change of its verdict value, resampled with the same draws
    va = a.filter(pl.col("criterion") == "correct")["value"].to_numpy()
    vb = b.filter(pl.col("criterion") == "correct")["value"].to_numpy()
    got = cmp.summary.filter(pl.col("criterion") == "correct").row(0, named=True)
    cb = np.array([np.repeat(vb - va, w[k].astype(int)).mean() for k in range(500)])
    assert got["change"] == pytest.approx((vb - va).mean())
    assert (got["ci_low"], got["ci_high"]) == pytest.approx(tuple(np.quantile(cb, [0.025, 0.975])))
    assert "+" in repr(cmp) or "-" in repr(cmp)


def test_flips_costs_and_unpaired_ids() -> None:
    a = _verdicts(0, n=10)
    b = _verdicts(1, n=12).filter(pl.col("id") != 0)
    cmp = rt.compare_runs(a, b, rubric=RUBRIC, names=("before", "after"), n_resamples=0)
    assert cmp.only_a == [0] and cmp.only_b == [10, 11] and cmp.scores.height == 9
    joined = a.join(b, on=["id", "criterion"], suffix="_b")
    flipped = joined.filter(pl.col("verdict") != pl.col("verdict_b"))
    assert cmp.flips.height == flipped.height
    assert set(cmp.flips.columns) == {"id", "criterion", "verdict_a", "verdict_b", "explanation_a", "explanation_b"}
    assert cmp.flips["explanation_b"].str.ends_with(" 1").all()  # each side keeps its own explanation
    costs = dict(zip(cmp.costs["measure"], cmp.costs["change"], strict=True))
    assert costs["verdict rows from the judge"] == b.height - a.height and costs[
        "mean latency, fresh calls (s)"
    ] == pytest.approx(1)
    assert cmp.summary["ci_low"].null_count() == cmp.summary.height  # bootstrap=0: no intervals
    # a scripted judge makes no call (attempts 0): no latency to average, shown as missing, not as 0.000 s
    scripted = rt.compare_runs(
        a.with_columns(attempts=pl.lit(0), latency_s=pl.lit(0.0)),
        b.with_columns(attempts=pl.lit(0), latency_s=pl.lit(0.0)),
        rubric=RUBRIC,
        n_resamples=0,
    )
    latency = scripted.costs.filter(pl.col("measure") == "mean latency, fresh calls (s)").row(0, named=True)
    assert latency["a"] is None and latency["b"] is None and latency["change"] is None
    assert repr(cmp).startswith("RunComparison(after - before: score ") and "p n/a" in repr(cmp)  # it crashed
    with pytest.raises(ValueError, match="share no submission"):
        rt.compare_runs(a, b.with_columns(pl.col("id") + 100), rubric=RUBRIC)


def test_two_rubrics_compare_on_shared_criteria_and_several_judges_need_a_choice() -> None:
    a = _verdicts(0, n=20)
    b = _verdicts(0, n=20).filter(pl.col("criterion") != "rude")
    v2 = rt.Rubric.from_dict([c.model_dump() for c in RUBRIC if c.name != "rude"])
    with pytest.warns(UserWarning, match=r"only in a: \['rude'\]"):
        cmp = rt.compare_runs(a, b, rubric=RUBRIC, rubric_b=v2, n_resamples=100)
    assert cmp.summary["criterion"].to_list() == ["overall score", "correct", "cites"]
    assert cmp.flips.height == 0 and cmp.summary["change"][1:].to_list() == [0.0, 0.0]
    two = pl.concat([a, a.with_columns(pl.lit("n").alias("judge"))])
    with pytest.raises(ValueError, match="pass judge="):
        rt.compare_runs(two, a, rubric=RUBRIC)
    assert rt.compare_runs(two, a, rubric=RUBRIC, judge="m", n_resamples=0).summary["change"][0] == 0.0


def test_recorded_runs_compare_by_id(tmp_path) -> None:
    df = pl.DataFrame({"submission": ["hello", "hi", "bye", "hello you"]})
    rub = rt.Rubric.from_dict([{"name": "greets", "requirement": "Says hello"}])
    for rule in (lambda t, c: "MET" if "hello" in t else "UNMET", lambda t, c: "UNMET" if "bye" in t else "MET"):
        rt.grade(df, rub, model=rt.ScriptedJudge(rule=rule), progress=False, record=tmp_path)
    first, second = rt.runs(tmp_path)["id"]
    cmp = rt.compare_runs(first, second, root=tmp_path, n_resamples=100)
    assert cmp.summary["change"][0] == pytest.approx(0.25) and cmp.flips["id"].to_list() == [1]
    assert cmp.costs.filter(pl.col("measure") == "run duration (s)")["a"][0] > 0


def test_runs_graded_with_different_rubrics_say_so() -> None:
    a_rub = rt.Rubric.from_dict(
        [{"name": "greets", "requirement": "Says hello"}, {"name": "brief", "requirement": "Short"}]
    )
    b_rub = rt.Rubric.from_dict(
        [{"name": "greets", "requirement": "Says hello warmly"}, {"name": "polite", "requirement": "Polite"}]
    )
    df = pl.DataFrame({"submission": ["hello", "bye", "hello there", "hi"]})
    judge = rt.ScriptedJudge(rule=lambda t, c: "MET" if "hello" in t else "UNMET")
    va = rt.grade(df, a_rub, model=judge, progress=False, record=False)
    vb = rt.grade(df, b_rub, model=judge, progress=False, record=False)
    with pytest.warns(UserWarning, match=r"rubrics differ \(greets: requirement changed; only in a: \['brief'\]"):
        cmp = rt.compare_runs(va, vb, rubric=a_rub, rubric_b=b_rub, n_resamples=50)
    notes = dict(cmp.summary.select("criterion", "note").iter_rows())
    assert notes == {"overall score": "rubrics differ", "greets": "requirement changed"}
    assert cmp.criteria_only_a == ["brief"] and cmp.criteria_only_b == ["polite"]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same rubric: no warning, no note
        same = rt.compare_runs(va, va, rubric=a_rub, n_resamples=50)
    assert same.summary["note"].null_count() == same.summary.height


def test_bad_pairings_are_named_not_computed() -> None:
    v = _verdicts(0, n=8)
    with pytest.raises(ValueError, match="names must be two different strings"):
        rt.compare_runs(v, v, rubric=RUBRIC, names=("a", "a"))
    with pytest.raises(ValueError, match="ids are of different types"):
        rt.compare_runs(v, v.with_columns(pl.col("id").cast(pl.String)), rubric=RUBRIC)
    with pytest.raises(ValueError, match="rubric_b= without rubric="):
        rt.compare_runs(v, v, rubric_b=RUBRIC)
    with pytest.raises(TypeError, match=r"rubric must be an rt\.Rubric"):
        rt.compare_runs(v, v, rubric="rubric.yaml")
    as_list = rt.compare_runs(v, v, rubric=[c.model_dump() for c in RUBRIC], n_resamples=0)  # a rubric list reads
    assert as_list.summary["change"].to_list() == [0.0] * as_list.summary.height
    with pytest.warns(UserWarning, match=r"2 submissions pair; 6 graded in a only"):
        rt.compare_runs(v, v.filter(pl.col("id") < 2), rubric=RUBRIC, n_resamples=0)


def test_the_means_cover_the_submissions_the_change_covers() -> None:
    """Before: with a failed call in one run, mean_a covered 60 submissions and mean_b 59, while the
    change covered the 59 both scored, so change != mean_b - mean_a."""
    a = _verdicts(0)
    b = _verdicts(1).with_columns(
        pl.when(pl.col("id") == 3).then(pl.lit("timeout")).otherwise(pl.col("error")).alias("error"),
        pl.when(pl.col("id") == 3).then(None).otherwise(pl.col("verdict")).alias("verdict"),
    )
    cmp = rt.compare_runs(a, b, rubric=RUBRIC, n_resamples=0)
    for r in cmp.summary.iter_rows(named=True):
        assert r["change"] == pytest.approx(r["mean_b"] - r["mean_a"]), r["criterion"]
