"""`rt.ppi_estimate` and `rt.choose_to_label` on tables: targets, strata, weights, errors, real data."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import rubrictools as rt
from rubrictools.ppi import core


def binary_tables(seed=0, big_n=2000, n=200, acc=0.8):
    rng = np.random.default_rng(seed)
    truth = rng.random(big_n) < 0.35
    judge = np.where(rng.random(big_n) < acc, truth, rng.random(big_n) < 0.7)  # errors lean to MET
    lab = lambda x: np.where(x, "MET", "UNMET")  # noqa: E731 - a two-word helper
    verdicts = pl.DataFrame(
        {"id": np.arange(big_n), "criterion": "c", "verdict": lab(judge), "judge": "j", "region": np.arange(big_n) % 3}
    )
    picked = rng.choice(big_n, n, replace=False)
    human = pl.DataFrame({"id": picked, "criterion": "c", "rater": "r1", "label": lab(truth[picked])})
    return verdicts, human, truth, judge, picked


def test_table_matches_the_formulas_and_reports_every_estimate():
    verdicts, human, truth, judge, picked = binary_tables()
    t = rt.ppi_estimate(verdicts, human)
    rest = np.setdiff1d(np.arange(truth.size), picked)
    want = core.ppi(truth[picked].astype(float), judge[picked].astype(float), judge[rest].astype(float))
    row = t.row(0, named=True)
    assert row["criterion"] == "c" and row["n_labeled"] == 200 and row["n_unlabeled"] == 1800
    assert row["estimate"] == pytest.approx(want.estimate) and row["ci_low"] == pytest.approx(want.ci_low)
    assert row["classical"] == pytest.approx(truth[picked].mean())
    assert row["naive"] == pytest.approx(judge.mean()) and row["naive"] > row["ci_high"]  # the judge over-says MET
    assert row["width_ratio"] < 1 and 0 < row["lam"] <= 1


def test_bootstrap_interval_is_close_to_the_clt_one():
    verdicts, human, *_ = binary_tables(1)
    clt = rt.ppi_estimate(verdicts, human).row(0, named=True)
    boot = rt.ppi_estimate(verdicts, human, method="bootstrap", n_resamples=3000).row(0, named=True)
    assert boot["estimate"] == clt["estimate"]
    assert abs((boot["ci_high"] - boot["ci_low"]) / (clt["ci_high"] - clt["ci_low"]) - 1) < 0.1


def test_stratified_estimate_weights_strata_by_size():
    verdicts, human, *_ = binary_tables(2)
    t = rt.ppi_estimate(verdicts, human, stratify="region").row(0, named=True)
    per = [
        rt.ppi_estimate(verdicts.filter(pl.col("region") == r), human).row(0, named=True)["estimate"] for r in range(3)
    ]
    sizes = verdicts.group_by("region").len().sort("region")["len"].to_numpy()
    assert t["estimate"] == pytest.approx(float(np.dot(sizes / sizes.sum(), per)))
    assert t["ci_low"] < t["estimate"] < t["ci_high"]


def test_label_share_and_mean_targets():
    verdicts, human, *_ = binary_tables(3)
    share = rt.ppi_estimate(verdicts, human, target="label_share", label="UNMET", lam=1.0).row(0, named=True)
    met = rt.ppi_estimate(verdicts, human, lam=1.0).row(0, named=True)
    assert share["estimate"] == pytest.approx(1 - met["estimate"])
    with pytest.raises(ValueError, match="needs label="):
        rt.ppi_estimate(verdicts, human, target="label_share")


def test_score_target_through_the_rubric():
    rubric = rt.Rubric.from_dict([{"name": "c", "requirement": "x", "weight": 2}, {"name": "d", "requirement": "y"}])
    verdicts, human, *_ = binary_tables(4)
    v2 = pl.concat([verdicts, verdicts.with_columns(pl.lit("d").alias("criterion"))])
    h2 = pl.concat([human, human.with_columns(pl.lit("d").alias("criterion"))])
    t = rt.ppi_estimate(v2, h2, rubric, target="score").row(0, named=True)
    met = rt.ppi_estimate(verdicts, human).row(0, named=True)
    # both criteria carry the same verdicts and labels: each item's score is its MET, so the score
    # target is the met rate exactly, interval and all
    assert t["criterion"] == "__score__"
    for k in ("estimate", "ci_low", "ci_high", "lam", "classical", "naive"):
        assert t[k] == pytest.approx(met[k], rel=1e-9, abs=1e-12), k


def test_active_labelling_keeps_the_estimate_unbiased():
    rng = np.random.default_rng(5)
    big_n = 3000
    truth = rng.random(big_n) < 0.3
    p_met = np.clip(np.where(truth, 0.8, 0.2) + rng.normal(0, 0.15, big_n), 0.01, 0.99)
    verdicts = pl.DataFrame(
        {
            "id": np.arange(big_n),
            "criterion": "c",
            "verdict": np.where(p_met > 0.5, "MET", "UNMET"),
            "distribution": [[{"label": "MET", "prob": p}, {"label": "UNMET", "prob": 1 - p}] for p in p_met],
        }
    )
    estimates = []
    for seed in range(60):
        queue = rt.choose_to_label(verdicts, 150, seed=seed)
        assert queue["uncertainty"].is_sorted(descending=True)
        human = queue.join(pl.DataFrame({"id": np.arange(big_n), "truth": truth}), on="id").select(
            "id",
            pl.lit("c").alias("criterion"),
            pl.when("truth").then(pl.lit("MET")).otherwise(pl.lit("UNMET")).alias("label"),
            "pi",
        )
        estimates.append(rt.ppi_estimate(verdicts, human, weights="pi")["estimate"][0])
    assert abs(np.mean(estimates) - truth.mean()) < 0.01


def test_several_judges_need_a_choice_and_uncertainty_from_disagreement():
    verdicts, human, *_ = binary_tables(6)
    two = pl.concat([verdicts, verdicts.with_columns(pl.lit("k").alias("judge"))])
    with pytest.raises(ValueError, match="several judges"):
        rt.ppi_estimate(two, human)
    assert rt.ppi_estimate(two, human, judge="k").height == 1
    q = rt.choose_to_label(two, 50)
    assert set(q.columns) == {"id", "pi", "uncertainty"}


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"human_ids": "shifted"}, "do not overlap the graded ids"),
        ({"constant": True}, "same value"),
        ({"n": 5}, "at least 10"),
    ],
)
def test_clear_errors(change, match):
    verdicts, human, *_ = binary_tables(7)
    if change.get("human_ids"):
        human = human.with_columns(pl.col("id") + 10_000)
    if change.get("constant"):
        verdicts = verdicts.with_columns(pl.lit("MET").alias("verdict"))
    if "n" in change:
        human = human.head(change["n"])
    with pytest.raises(ValueError, match=match):
        rt.ppi_estimate(verdicts, human)


def test_hanna_ppi_lands_within_its_interval_of_the_full_human_value():
    d = rt.datasets.load("hanna")
    v = d.verdicts.filter(pl.col("judge") == "ChatGPT/p1")
    curve = rt.ppi.width_curve(v, d.human, target="mean", prediction="rating", ns=(50, 200), reps=300, seed=1)
    ppi = curve.filter(pl.col("method") == "ppi")
    classical = curve.filter(pl.col("method") == "classical")
    assert (ppi["width"] < classical["width"]).mean() > 0.8  # narrower on most criteria
    assert ppi["covers"].min() >= 0.9 and curve.filter(pl.col("method") == "naive")["covers"].max() == 0.0


def test_an_unknown_target_names_the_valid_ones() -> None:
    """Before: target="metrate" said "the judge gives every item the same value (0)"."""
    v = pl.DataFrame({"id": [1, 2, 3], "criterion": "c", "verdict": ["MET", "UNMET", "MET"]})
    h = pl.DataFrame({"id": [1], "criterion": "c", "label": ["MET"]})
    with pytest.raises(ValueError, match=r"target must be one of \['mean', 'met_rate', 'label_share', 'score'\]"):
        rt.ppi_estimate(v, h, target="metrate")  # type: ignore[arg-type]


def test_width_curve_shows_progress_unless_told_not_to(capsys) -> None:
    rng = np.random.default_rng(0)
    truth = rng.random(300) < 0.4
    v = pl.DataFrame({"id": range(300), "criterion": "c", "verdict": np.where(truth, "MET", "UNMET")})
    h = pl.DataFrame({"id": range(300), "criterion": "c", "label": np.where(truth, "MET", "UNMET")})
    rt.ppi.width_curve(v, h, ns=(25, 50), reps=5, progress=True)
    assert "width curve" in capsys.readouterr().err
    rt.ppi.width_curve(v, h, ns=(25, 50), reps=5, progress=False)
    assert capsys.readouterr().err == ""


def test_width_curve_with_no_usable_n_names_how_many_items_are_labelled() -> None:
    rng = np.random.default_rng(0)
    truth = rng.random(300) < 0.4
    v = pl.DataFrame({"id": range(300), "criterion": "c", "verdict": np.where(truth, "MET", "UNMET")})
    h = pl.DataFrame({"id": range(40), "criterion": "c", "label": np.where(truth[:40], "MET", "UNMET")})
    with pytest.raises(ValueError, match=r"no n in \[50, 100\] is below the number of labelled items \('c': 40\)"):
        rt.ppi.width_curve(v, h, ns=(50, 100), reps=5, progress=False)
    with pytest.warns(UserWarning, match=r"left out n at or above .*'c' \(40 labelled\): n=\[50\]"):
        curve = rt.ppi.width_curve(v, h, ns=(20, 50), reps=5, progress=False)
    assert curve["n"].unique().to_list() == [20]
    for bad in (30, "25", [], [5, 20], [20.5], [True, 20]):
        with pytest.raises(ValueError, match="ns must"):
            rt.ppi.width_curve(v, h, ns=bad, reps=5, progress=False)  # type: ignore[arg-type]  # reason: bad input on purpose
    for bad in (0, -1, 2.5):
        with pytest.raises(ValueError, match="reps must be an int >= 1"):
            rt.ppi.width_curve(v, h, ns=(20,), reps=bad, progress=False)  # type: ignore[arg-type]  # reason: bad input on purpose


def test_one_criterion_gives_what_it_gives_among_others() -> None:
    """One criterion takes a shorter path (joined on id alone); its row must equal its row among several,
    including human labels of other criteria that share its ids."""
    verdicts, human, *_ = binary_tables(4)
    even = pl.when(pl.col("id") % 2 == 0).then(pl.lit("MET")).otherwise(pl.lit("UNMET"))
    other_v = verdicts.with_columns(pl.lit("d").alias("criterion"), even.alias("verdict"))
    other_h = human.with_columns(pl.lit("d").alias("criterion"), pl.lit("MET").alias("label"))
    both = rt.ppi_estimate(pl.concat([verdicts, other_v]), pl.concat([human, other_h]))
    alone = rt.ppi_estimate(verdicts, pl.concat([human, other_h]))
    assert alone.height == 1 and alone.equals(both.filter(pl.col("criterion") == "c"))
    strat = rt.ppi_estimate(verdicts, pl.concat([human, other_h]), stratify="region")
    assert strat.equals(rt.ppi_estimate(verdicts, human, stratify="region"))
