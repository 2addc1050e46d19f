"""rubrictools.calibrate: models against references, serialisation, honest cross-validation."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import rubrictools as rt
import rubrictools.calibration.evaluation as calibration_evaluation
from rubrictools import calibrate


def _binary(n: int = 400, seed: int = 0) -> tuple[pl.DataFrame, pl.DataFrame, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    q = rng.random(n)
    y = rng.random(n) < q**2  # an overconfident judge
    d = pl.DataFrame(
        {
            "id": np.repeat(np.arange(n), 2),
            "criterion": "c",
            "label": ["MET", "UNMET"] * n,
            "prob": np.column_stack([q, 1 - q]).ravel(),
        }
    )
    h = pl.DataFrame({"id": np.arange(n), "criterion": "c", "rater": "a", "label": np.where(y, "MET", "UNMET")})
    return d, h, q, y


def test_isotonic_matches_sklearn() -> None:
    from sklearn.isotonic import IsotonicRegression

    d, h, q, y = _binary()
    cal = calibrate.fit(d, h, target="c", model="isotonic")
    ref = IsotonicRegression(out_of_bounds="clip").fit(q, y.astype(float))
    np.testing.assert_allclose(cal.predict(d)["p_MET"].to_numpy(), ref.predict(q), atol=1e-9)


def test_platt_matches_logistic_regression_on_the_logit() -> None:
    from sklearn.linear_model import LogisticRegression

    d, h, q, y = _binary()
    cal = calibrate.fit(d, h, target="c", model="platt", l2=0.0)
    z = np.log(q / (1 - q)).reshape(-1, 1)
    ref = LogisticRegression(C=1e12, tol=1e-10, max_iter=10_000).fit(z, y)
    np.testing.assert_allclose(cal.predict(d)["p_MET"].to_numpy(), ref.predict_proba(z)[:, 1], atol=1e-5)
    # calibration lowers the expected calibration error of an overconfident judge
    from rubrictools import metrics as m

    assert m.expected_calibration_error(y.astype(int), cal.predict(d)["p_MET"]) < 0.5 * m.expected_calibration_error(
        y.astype(int), q
    )


def test_multinomial_learns_rater_bias_and_shared_signal() -> None:
    rng = np.random.default_rng(1)
    n = 600
    p_good = rng.random(n)
    quality = (p_good > 0.5).astype(int)
    rater = rng.choice(["harsh", "kind"], n)
    rating = np.clip(2 + quality + np.where(rater == "kind", 1, -1) * (rng.random(n) < 0.8), 1, 4).astype(int)
    d = pl.DataFrame(
        {
            "id": np.repeat(np.arange(n), 2),
            "criterion": "signal",
            "label": ["good", "bad"] * n,
            "prob": np.column_stack([p_good, 1 - p_good]).ravel(),
        }
    )
    h = pl.DataFrame({"id": np.arange(n), "criterion": "overall", "rater": rater, "label": rating.astype(str)})
    cal = calibrate.fit(d, h, target="overall", features=["signal"])
    pred = cal.predict(d, h.select("id", "rater"))
    kind = pred.filter(pl.col("rater") == "kind")["expected"].mean()
    harsh = pred.filter(pl.col("rater") == "harsh")["expected"].mean()
    assert kind - harsh > 1.0  # the rater-specific part carries each rater's bias
    avg = cal.predict(d)
    corr = np.corrcoef(avg["expected"].to_numpy(), p_good)[0, 1]
    assert corr > 0.8  # the shared part carries the judge's signal
    assert cal.params["converged"]
    # unknown raters fall back to the average rater
    other = cal.predict(d, ["nobody"])
    np.testing.assert_allclose(other["expected"].to_numpy(), avg["expected"].to_numpy())


def test_serialisation_round_trip(tmp_path) -> None:
    real = rt.datasets.load("llm_rubric_real")
    cal = calibrate.fit(real.tables["distributions"], real.human, target="Q0")
    back = calibrate.load(cal.save(tmp_path / "cal.json"))
    assert back.predict(real.tables["distributions"]).equals(cal.predict(real.tables["distributions"]))
    assert back.raters == cal.raters and back.labels == ["1", "2", "3", "4"]  # as a person writes them, not "1.0"


def test_fine_tuning_starts_from_the_pretrained_model() -> None:
    syn = rt.datasets.load("llm_rubric_synth")
    real = rt.datasets.load("llm_rubric_real")
    pre = calibrate.fit(syn.tables["distributions"], syn.human, target="Q0")
    tuned = calibrate.fit(real.tables["distributions"], real.human, target="Q0", init=pre, anchor=1e6)
    # an enormous anchor keeps the shared weights at the pretrained ones
    np.testing.assert_allclose(tuned.params["W"], pre.params["W"], atol=1e-3)
    with pytest.raises(ValueError, match="binary target"):
        calibrate.fit(real.tables["distributions"], real.human, target="Q0", model="platt")


def test_cross_validation_on_llm_rubric_beats_the_uncalibrated_judge() -> None:
    real = rt.datasets.load("llm_rubric_real")
    metrics, preds = calibrate.cross_validate(
        real.tables["distributions"], real.human, target="Q0", n_resamples=200, seed=0
    )
    get = lambda meth, met: metrics.filter((pl.col("method") == meth) & (pl.col("metric") == met)).row(0, named=True)  # noqa: E731
    # the expected-value baseline is the published one (from the shipped probabilities)
    assert round(get("expected", "rmse")["value"], 4) == 0.9187
    assert round(get("expected", "pearson")["value"], 4) == 0.1773
    cal = get("calibrated", "rmse")
    assert cal["value"] < 0.75 and cal["ci_high"] < get("expected", "rmse")["ci_low"]
    assert get("calibrated", "pearson")["value"] > 0.35
    assert preds.height == 223 and preds["calibrated"].null_count() == 0
    # held-out: every prediction came from a model that never saw its dialogue
    assert set(preds["id"]) == set(real.human.filter(pl.col("criterion") == "Q0").drop_nulls("label")["id"])
    # each prediction says its fold (one per dialogue, 10 folds), so a baseline can use the very same folds
    assert sorted(preds["fold"].unique().to_list()) == list(range(10))
    assert preds.group_by("id").agg(pl.col("fold").n_unique())["fold"].max() == 1
    # fold 3's predictions are those of a calibrator fitted on the other folds' dialogues only
    refit = calibrate.fit(
        real.tables["distributions"],
        real.human.join(preds.filter(pl.col("fold") != 3).select("id").unique(), on="id"),
        target="Q0",
    )
    test = preds.filter(fold=3)
    again = refit.predict(
        real.tables["distributions"].join(test.select("id").unique(), on="id"), raters=test.select("id", "rater")
    )
    both = test.join(again, on=["id", "rater"], suffix="_refit")
    assert both.height == test.height and (both["calibrated"] - both["expected_refit"]).abs().max() < 1e-6


def test_evaluate_scores_a_calibrator_on_another_set() -> None:
    from rubrictools import metrics as m

    real, synth = rt.datasets.load("llm_rubric_real"), rt.datasets.load("llm_rubric_synth")
    cal = calibrate.fit(synth.tables["distributions"], synth.human, target="Q0")
    metrics, table = calibrate.evaluate(cal, real.tables["distributions"], real.human, n_resamples=200, seed=0)
    assert set(metrics["metric"]) == set(calibrate.REPORT_METRICS)
    assert table.height == 223 and table["known_rater"].all()  # all 13 real judges rated synthetic dialogues
    get = lambda meth, met: metrics.filter((pl.col("method") == meth) & (pl.col("metric") == met))["value"][0]  # noqa: E731
    # the table's numbers are the metric functions on its own columns
    y, p = table["human"].to_numpy(), table["calibrated"].to_numpy()
    assert get("calibrated", "rmse") == pytest.approx(m.rmse(y, p))
    assert get("calibrated", "pearson") == pytest.approx(float(m.pearson(y, p)))
    assert get("calibrated", "rmse_affine") == pytest.approx(y.std() * np.sqrt(1 - float(m.pearson(y, p)) ** 2))
    assert round(get("expected", "rmse"), 4) == 0.9187  # the published baseline, unchanged
    for method in ("calibrated", "expected", "argmax"):
        assert get(method, "rmse_affine") <= get(method, "rmse") + 1e-12
    # transferred rater offsets beat the raw judge, but less than fitting on real dialogues does
    assert get("calibrated", "rmse") < get("expected", "rmse")
    assert 0.1 < get("calibrated", "pearson") < 0.35


def test_evaluate_unknown_raters_and_bad_input() -> None:
    real = rt.datasets.load("llm_rubric_real")
    d, h = real.tables["distributions"], real.human
    cal = calibrate.fit(d, h.filter(pl.col("rater") != "22"), target="Q0")
    _, table = calibrate.evaluate(cal, d, h, n_resamples=0)
    assert not table.filter(pl.col("rater") == "22")["known_rater"].any()
    assert table.filter(pl.col("rater") != "22")["known_rater"].all()
    # an unknown rater gets the average-rater prediction
    avg = cal.predict(d)
    row = table.filter(pl.col("rater") == "22").row(0, named=True)
    assert row["calibrated"] == pytest.approx(avg.filter(pl.col("id") == row["id"])["expected"][0])
    _, flat = calibrate.evaluate(cal, d, h, n_resamples=0, per_rater=False)
    assert not flat["known_rater"].any()
    with pytest.raises(ValueError, match="no human labels"):
        calibrate.evaluate(cal, d, h.filter(pl.col("criterion") != "Q0"), n_resamples=0)
    bd, bh, _, _ = _binary(50)
    with pytest.raises(ValueError, match="non-numeric labels"):
        calibrate.evaluate(calibrate.fit(bd, bh, target="c", model="platt"), bd, bh, n_resamples=0)
    with pytest.raises(ValueError, match="folds must be"):
        calibrate.cross_validate(d, h, target="Q0", folds=1)


def test_tune_scores_every_combination_and_picks_the_best() -> None:
    real = rt.datasets.load("llm_rubric_real")
    d, h = real.tables["distributions"], real.human
    grid = {"l2": [1e-3, 1e-1], "l2_rater": [1e-3, 1e-1]}
    best, scores = calibrate.tune(d, h, target="Q0", grid=grid, folds=4)
    assert scores.height == 4 and scores["best"].sum() == 1 and (scores["n"] == 223).all()
    row = scores.filter("best").row(0, named=True)
    assert best == {"l2": row["l2"], "l2_rater": row["l2_rater"]} and row["rmse"] == scores["rmse"].min()
    # a score is the held-out RMSE of cross_validate with the same folds and settings
    m, _ = calibrate.cross_validate(d, h, target="Q0", folds=4, n_resamples=0, l2=1e-1, l2_rater=1e-1)
    got = scores.filter((pl.col("l2") == 1e-1) & (pl.col("l2_rater") == 1e-1))["rmse"][0]
    assert got == pytest.approx(m.filter((pl.col("method") == "calibrated") & (pl.col("metric") == "rmse"))["value"][0])
    # binary targets are tuned on log loss
    bd, bh, _, _ = _binary(120)
    best, scores = calibrate.tune(bd, bh, target="c", grid={"l2": [1e-4, 10.0]}, folds=3)
    assert scores["rmse"].null_count() == 2 and best == {"l2": 1e-4}
    with pytest.raises(ValueError, match="both in grid"):
        calibrate.tune(d, h, target="Q0", grid={"l2": [1e-3]}, l2=1e-2)
    with pytest.raises(ValueError, match="non-empty"):
        calibrate.tune(d, h, target="Q0", grid={"l2": []})
    with pytest.raises(ValueError, match="metric must be"):
        calibrate.tune(bd, bh, target="c", metric="rmse")


def test_nested_cross_validation_tunes_inside_training_folds_only(monkeypatch: pytest.MonkeyPatch) -> None:
    real = rt.datasets.load("llm_rubric_real")
    d, h = real.tables["distributions"], real.human
    seen: list[set] = []
    original = calibration_evaluation._search

    def spy(ex: object, rows: np.ndarray, **kw: object) -> tuple:
        seen.append(set(ex.table["id"][rows]))  # type: ignore[attr-defined]  # an Examples
        return original(ex, rows, **kw)  # type: ignore[arg-type]  # passed through unchanged

    monkeypatch.setattr(calibration_evaluation, "_search", spy)
    grid = {"l2_rater": [1e-3, 1e-1]}
    _metrics, preds = calibrate.cross_validate(d, h, target="Q0", folds=5, n_resamples=0, tune=grid, tune_folds=3)
    assert len(seen) == 5
    for train_ids in seen:  # each inner search saw its training folds, never the fold it predicts
        held = set(preds["id"]) - train_ids
        assert len(held) > 0 and held.isdisjoint(train_ids)
    assert set(preds["l2_rater"]) <= {1e-3, 1e-1} and preds.height == 223
    # p_true is the calibrated probability of the human's label
    assert ((preds["p_true"] > 0) & (preds["p_true"] < 1)).all()


def test_double_labels_stay_one_row_each() -> None:
    real = rt.datasets.load("llm_rubric_real")
    d = real.tables["distributions"]
    h = real.human.filter(pl.col("criterion") == "Q0")
    twice = pl.concat(
        [h, h.head(5).with_columns(pl.lit(1, dtype=h["label"].dtype).alias("label"))]
    )  # 5 raters labelled again
    _metrics, table = calibrate.cross_validate(d, twice, target="Q0", folds=5, n_resamples=0)
    assert table.height == twice.height
    _, table = calibrate.evaluate(calibrate.fit(d, twice, target="Q0"), d, twice, n_resamples=0)
    assert table.height == twice.height
    assert table.group_by("id", "rater").len()["len"].max() == 2


def test_long_calibration_runs_show_progress_and_can_hide_it(capsys) -> None:
    """Nested cross-validation takes seconds on the shipped data: it shows a bar (tqdm, as
    grade does), one step per outer fold; progress=False shows nothing."""
    real = rt.datasets.load("llm_rubric_real")
    d, h = real.tables["distributions"], real.human
    calibrate.cross_validate(d, h, target="Q0", folds=3, n_resamples=0, progress=True)
    err = capsys.readouterr().err
    assert "cross-validation" in err and "3/3" in err
    calibrate.cross_validate(d, h, target="Q0", folds=3, n_resamples=0, progress=False)
    calibrate.tune(d, h, target="Q0", grid={"l2": [1e-3]}, folds=2, progress=False)
    assert capsys.readouterr().err == ""
    calibrate.tune(d, h, target="Q0", grid={"l2": [1e-3, 1e-1]}, folds=2, progress=True)
    assert "tuning" in capsys.readouterr().err


def test_a_fold_is_a_fit_on_the_other_folds() -> None:
    """Cross-validation fits row subsets of arrays built once; each fold's predictions are
    those of fit() on the training submissions' own tables (to the optimiser's rounding: rows
    reach it in another order), predicted for the held-out ones."""
    real = rt.datasets.load("llm_rubric_real")
    d, h = real.tables["distributions"], real.human.filter(pl.col("criterion") == "Q0").drop_nulls("label")
    _metrics, preds = calibrate.cross_validate(d, h, target="Q0", folds=4, seed=3, n_resamples=0, progress=False)
    ids = h["id"].unique(maintain_order=True)
    fold = dict(zip(ids.to_list(), np.random.default_rng(3).permutation(ids.len()) % 4, strict=True))
    held = [i for i in ids.to_list() if fold[i] == 2]
    train = [i for i in ids.to_list() if fold[i] != 2]
    cal = calibrate.fit(d.filter(pl.col("id").is_in(train)), h.filter(pl.col("id").is_in(train)), target="Q0")
    want = cal.predict(d.filter(pl.col("id").is_in(held)), h.filter(pl.col("id").is_in(held)).select("id", "rater"))
    got = preds.filter(pl.col("id").is_in(held)).join(want, on=["id", "rater"])
    assert got.height == len(held) > 0
    np.testing.assert_allclose(got["calibrated"].to_numpy(), got["expected_right"].to_numpy(), rtol=0, atol=1e-7)


def test_tune_grid_takes_penalties_only() -> None:
    real = rt.datasets.load("llm_rubric_real")
    with pytest.raises(ValueError, match="grid searches the penalties"):
        calibrate.tune(real.tables["distributions"], real.human, target="Q0", grid={"model": ["platt"]})


def test_worker_processes_give_the_serial_results_and_bad_counts_are_refused() -> None:
    real = rt.datasets.load("llm_rubric_real")
    d, h = real.tables["distributions"], real.human
    grid = {"l2_rater": [1e-3, 1e-1]}
    kw = {"target": "Q0", "folds": 3, "n_resamples": 0, "tune": grid, "tune_folds": 2, "progress": False}
    serial = calibrate.cross_validate(d, h, **kw)  # type: ignore[arg-type]  # the keywords above
    spawned = calibrate.cross_validate(d, h, n_jobs=2, **kw)  # type: ignore[arg-type]  # the keywords above
    assert spawned[0].equals(serial[0]) and spawned[1].equals(serial[1])
    assert set(serial[1]["fold"]) == {0, 1, 2}
    best, scores = calibrate.tune(d, h, target="Q0", grid=grid, folds=2, progress=False)
    best_2, scores_2 = calibrate.tune(d, h, target="Q0", grid=grid, folds=2, progress=False, n_jobs=-1)
    assert best_2 == best and scores_2.equals(scores) and scores.height == 2
    for bad, error in ((0, ValueError), (-10_000, ValueError), (2.0, TypeError), (True, TypeError), ("2", TypeError)):
        with pytest.raises(error, match="n_jobs must be"):
            calibrate.cross_validate(d, h, target="Q0", n_jobs=bad)  # type: ignore[arg-type]  # on purpose
        with pytest.raises(error, match="n_jobs must be"):
            calibrate.tune(d, h, target="Q0", n_jobs=bad)  # type: ignore[arg-type]  # on purpose


def test_more_workers_than_cpus_are_capped_with_a_word_and_numpy_counts_are_counts() -> None:
    from rubrictools.calibration.workers import check_n_jobs

    cpus = __import__("joblib").cpu_count()
    with pytest.warns(UserWarning, match=f"n_jobs={cpus + 3} but {cpus} usable CPU"):
        assert check_n_jobs(cpus + 3) == cpus
    assert check_n_jobs(np.int64(1)) == 1 and check_n_jobs(None) == 1 and check_n_jobs(-1) == cpus
    assert check_n_jobs(-cpus) == 1


def test_settings_are_checked_before_any_fold_is_fitted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: features= crashed every fold with a TypeError; a bad grid value, tune_folds=1 or a
    platt model on 1-4 ratings failed only inside the folds (inside worker processes, late)."""
    real = rt.datasets.load("llm_rubric_real")
    d, h = real.tables["distributions"], real.human
    m, _ = calibrate.cross_validate(d, h, target="Q0", folds=3, n_resamples=0, progress=False, features=["Q0", "Q1"])
    assert m.height > 0
    best, _ = calibrate.tune(d, h, target="Q0", folds=2, progress=False, features=["Q0"], grid={"l2": [1e-3, 1e-1]})
    assert set(best) == {"l2"}
    fitted: list[int] = []
    original = calibration_evaluation.fit_examples
    monkeypatch.setattr(calibration_evaluation, "fit_examples", lambda *a, **k: fitted.append(1) or original(*a, **k))
    bad = (
        ({"tune": {"l2_rater": ["a"]}}, "grid\\['l2_rater'\\]: 'a' is not a finite number"),
        ({"tune": {"l2_rater": [-1.0]}}, "is not a finite number >= 0"),
        ({"tune": {"max_iter": [0]}}, "is not a whole number of at least 1"),
        ({"tune": True, "tune_folds": 1}, "tune_folds must be a whole number of at least 2"),
        ({"model": "platt", "n_jobs": 2}, "platt calibration needs a binary target"),
    )
    for kw, message in bad:
        with pytest.raises(ValueError, match=message):
            calibrate.cross_validate(d, h, target="Q0", folds=3, n_resamples=0, progress=False, **kw)  # type: ignore[arg-type]  # the cases above
    with pytest.raises(ValueError, match="isotonic calibration needs a binary target"):
        calibrate.tune(d, h, target="Q0", model="isotonic", grid={"l2": [1e-3]}, progress=False)
    assert fitted == []
