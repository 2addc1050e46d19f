"""rubrictools.calibrate: models against references, serialisation, honest cross-validation."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import rubrictools as rt
from rubrictools import calibrate


def _binary(n: int = 400, seed: int = 0) -> tuple[pl.DataFrame, pl.DataFrame, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    q = rng.random(n)
    y = rng.random(n) < q**2  # an overconfident judge
    d = pl.DataFrame({"id": np.repeat(np.arange(n), 2), "criterion": "c", "label": ["MET", "UNMET"] * n,
                      "prob": np.column_stack([q, 1 - q]).ravel()})  # fmt: skip
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

    assert m.expected_calibration_error(y.astype(int), cal.predict(d)["p_MET"]) < 0.5 * m.expected_calibration_error(y.astype(int), q)


def test_multinomial_learns_rater_bias_and_shared_signal() -> None:
    rng = np.random.default_rng(1)
    n = 600
    p_good = rng.random(n)
    quality = (p_good > 0.5).astype(int)
    rater = rng.choice(["harsh", "kind"], n)
    rating = np.clip(2 + quality + np.where(rater == "kind", 1, -1) * (rng.random(n) < 0.8), 1, 4).astype(int)
    d = pl.DataFrame({"id": np.repeat(np.arange(n), 2), "criterion": "signal", "label": ["good", "bad"] * n,
                      "prob": np.column_stack([p_good, 1 - p_good]).ravel()})  # fmt: skip
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
    assert back.raters == cal.raters and back.labels == ["1.0", "2.0", "3.0", "4.0"]


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
    metrics, preds = calibrate.cross_validate(real.tables["distributions"], real.human, target="Q0", bootstrap=200, seed=0)
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
