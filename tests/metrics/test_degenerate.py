"""Degenerate inputs give NaN (or the exact limit), never a number made of rounding error."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import rubrictools as rt
from rubrictools.metrics import correlation, errors, multirater


def test_icc_of_constant_ratings_is_nan_and_perfect_agreement_has_p_zero():
    flat = np.full((5, 3), 0.1) + 1e6
    for kind in multirater.ICC_KINDS:
        assert np.isnan(float(multirater.icc(flat, kind=kind))), kind
    perfect = multirater.icc(np.array([[1, 1], [2, 2], [3, 3.0]]), kind="ICC1")
    assert float(perfect) == 1.0 and perfect.pvalue == 0.0


def test_icc_does_not_depend_on_an_offset():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 1)) + 0.5 * rng.normal(size=(6, 3))
    for kind in ("ICC1", "ICC2k", "ICC3k"):
        assert float(multirater.icc(x + 1e6, kind=kind)) == pytest.approx(float(multirater.icc(x, kind=kind)), abs=1e-9)


def test_pearson_weighted_is_nan_when_a_resample_has_a_constant_side():
    rng = np.random.default_rng(0)
    x = rng.normal(size=30) * 3 + 7
    y = np.round(rng.random(30) * 4) / 10 + 0.3
    same = np.flatnonzero(y == y[0])
    w = np.zeros((200, 30))
    for row in w:  # resamples drawn only from items sharing one y value: y is constant in each
        np.add.at(row, rng.choice(same, size=same.size), 1)
    assert np.isnan(correlation.pearson_weighted(x, y, w)).all()  # 0.1 gave a finite r in ~all of them
    r = correlation.pearson_weighted(x, y, np.ones((1, 30)))[0]
    assert r == pytest.approx(np.corrcoef(x, y)[0, 1])


def test_mean_bias_is_stable_when_the_bias_dwarfs_the_spread():
    rng = np.random.default_rng(1)
    t = rng.normal(size=200)
    noise = 0.01 * rng.normal(size=200)
    b = errors.mean_bias(t, t + 1e6 + noise)
    sd = np.std(noise, ddof=1)
    assert b.se == pytest.approx(sd / np.sqrt(200), rel=1e-6)  # the one-pass formula gave 0.0
    assert b.effect_size == pytest.approx((1e6 + noise.mean()) / sd, rel=1e-6)  # and NaN here


def test_f1_macro_ignores_a_class_absent_from_the_evaluated_pairs():
    r = rt.Rubric.from_dict(
        [
            {
                "name": "tone",
                "requirement": "x",
                "options": [{"label": "a", "value": 0}, {"label": "b", "value": 0.5}, {"label": "c", "value": 1}],
                "scale": "nominal",
            }
        ]
    )
    ids = list(range(8))
    human = pl.DataFrame({"id": ids, "criterion": "tone", "rater": "h", "label": ["a", "b"] * 4})
    verdicts = pl.DataFrame({"id": ids, "criterion": "tone", "verdict": ["a", "b"] * 4, "judge": "j"})
    t = rt.agreement(verdicts, human, r, metrics=["f1_macro"], n_resamples=50, seed=0)
    row = t.filter(pl.col("metric") == "f1_macro", pl.col("criterion") == "tone").row(0, named=True)
    assert row["value"] == 1.0 and row["ci_low"] == 1.0  # class "c" is in neither: not an F1 of 0


def test_icc_whose_denominator_cancels_is_nan_not_huge() -> None:
    """Before: ICC(2,k) of [[2,1],[1,2],[2,2]] was -1.2e16 (MSR + (MSC - MSE) / n cancels to ~1e-17)."""
    x = np.array([[2, 1], [1, 2], [2, 2]], dtype=float)
    assert np.isnan(float(multirater.icc(x, kind="ICC2k")))
    assert float(multirater.icc(x, kind="ICC2")) == pytest.approx(-1.0)
