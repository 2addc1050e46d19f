"""Every metric against the established implementation on random inputs (to 1e-9)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.spatial.distance import jensenshannon

from rubrictools import metrics as m

sklearn_metrics = pytest.importorskip("sklearn.metrics")
inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
krippendorff = pytest.importorskip("krippendorff")

TOL = 1e-9
SEEDS = range(40)


def _labels(rng: np.random.Generator, n: int, k: int, agree: float) -> tuple[np.ndarray, np.ndarray]:
    t = rng.integers(0, k, n)
    p = np.where(rng.random(n) < agree, t, rng.integers(0, k, n))
    return t, p


@pytest.mark.parametrize("seed", SEEDS)
def test_classification_matches_sklearn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 6))
    n = int(rng.integers(5, 300))
    t, p = _labels(rng, n, k, rng.random())
    labels = list(range(k))
    assert m.accuracy(t, p) == pytest.approx(sklearn_metrics.accuracy_score(t, p), abs=TOL)
    np.testing.assert_allclose(
        m.confusion_matrix(t, p, labels=labels), sklearn_metrics.confusion_matrix(t, p, labels=labels)
    )
    for avg in ("macro", "micro", "weighted", None):
        for ours, theirs in (
            (m.precision, sklearn_metrics.precision_score),
            (m.recall, sklearn_metrics.recall_score),
            (m.f1, sklearn_metrics.f1_score),
        ):
            got = ours(t, p, labels=labels, average=avg)
            want = theirs(t, p, labels=labels, average=avg, zero_division=0.0)
            np.testing.assert_allclose(got, want, atol=TOL)
    if k == 2:
        for ours, theirs in (
            (m.precision, sklearn_metrics.precision_score),
            (m.recall, sklearn_metrics.recall_score),
            (m.f1, sklearn_metrics.f1_score),
        ):
            assert ours(t, p, pos_label=1) == pytest.approx(theirs(t, p, pos_label=1, zero_division=0.0), abs=TOL)
    want_mcc = sklearn_metrics.matthews_corrcoef(t, p)
    got_mcc = m.mcc(t, p)
    if np.isnan(got_mcc):  # undefined: sklearn reports 0 there
        assert want_mcc == 0.0
    else:
        assert got_mcc == pytest.approx(want_mcc, abs=TOL)
    for w in (None, "linear", "quadratic"):
        assert m.cohen_kappa(t, p, labels=labels, weights=w) == pytest.approx(
            sklearn_metrics.cohen_kappa_score(t, p, labels=labels, weights=w), abs=TOL
        )


@pytest.mark.parametrize("seed", SEEDS)
def test_kappa_standard_errors_match_statsmodels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 5))
    t, p = _labels(rng, int(rng.integers(20, 200)), k, 0.6)
    table = m.confusion_matrix(t, p, labels=list(range(k)))
    for w, wt in ((None, None), ("linear", "linear"), ("quadratic", "quadratic")):
        ours = m.cohen_kappa(t, p, labels=list(range(k)), weights=w)
        ref = inter_rater.cohens_kappa(table, wt=wt)
        assert float(ours) == pytest.approx(ref.kappa, abs=TOL)
        assert ours.se == pytest.approx(ref.std_kappa, abs=TOL)
        assert ours.se0 == pytest.approx(ref.std_kappa0, abs=TOL)
        assert ours.pvalue == pytest.approx(ref.pvalue_two_sided, abs=TOL)


@pytest.mark.parametrize("seed", SEEDS)
def test_fleiss_matches_statsmodels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_units, n_raters, k = int(rng.integers(3, 60)), int(rng.integers(2, 8)), int(rng.integers(2, 6))
    base = rng.integers(0, k, n_units)
    ratings = np.where(rng.random((n_units, n_raters)) < 0.6, base[:, None], rng.integers(0, k, (n_units, n_raters)))
    table, _ = inter_rater.aggregate_raters(ratings)
    assert m.fleiss_kappa(ratings) == pytest.approx(inter_rater.fleiss_kappa(table), abs=TOL)
    assert m.fleiss_kappa(counts=table) == pytest.approx(inter_rater.fleiss_kappa(table), abs=TOL)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
@pytest.mark.parametrize("seed", range(15))
def test_krippendorff_matches_package(seed: int, level: str) -> None:
    rng = np.random.default_rng(seed)
    n_units, n_raters = int(rng.integers(3, 50)), int(rng.integers(2, 7))
    base = rng.integers(1, 6, n_units)
    ratings = np.where(
        rng.random((n_units, n_raters)) < 0.7, base[:, None], rng.integers(1, 6, (n_units, n_raters))
    ).astype(float)
    ratings[rng.random(ratings.shape) < 0.25] = np.nan
    want = krippendorff.alpha(reliability_data=ratings.T, level_of_measurement=level)
    got = m.krippendorff_alpha(ratings, level=level)
    if np.isnan(want):
        assert np.isnan(got)
    else:
        assert got == pytest.approx(want, abs=TOL)


@pytest.mark.parametrize("seed", SEEDS)
def test_correlations_match_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 200))
    x = rng.integers(0, 6, n).astype(float) if seed % 2 else rng.normal(size=n) * 1e3 + 1e6
    y = x * rng.random() + rng.normal(size=n) * (3 if seed % 2 else 1e3)
    y = np.round(y) if seed % 3 == 0 else y
    for ours, theirs in ((m.pearson, stats.pearsonr), (m.spearman, stats.spearmanr), (m.kendall, stats.kendalltau)):
        got, want = ours(x, y), theirs(x, y)
        assert float(got) == pytest.approx(want.statistic, abs=TOL)
        assert got.pvalue == pytest.approx(want.pvalue, abs=TOL, rel=1e-9)


@pytest.mark.parametrize("seed", SEEDS)
def test_rmse_affine_is_the_least_squares_line(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 200))
    t = rng.integers(1, 5, n).astype(float)
    p = t * rng.normal() + rng.normal(size=n) * 2 + 7
    slope, intercept = np.polyfit(p, t, 1)
    assert m.rmse_affine(t, p) == pytest.approx(np.sqrt(np.mean((t - (intercept + slope * p)) ** 2)), abs=TOL)
    assert m.rmse_affine(t, p) <= m.rmse(t, p) + TOL  # no score has a lower RMSE than its floor
    assert m.rmse_affine(t, p * -3 + 1) == pytest.approx(m.rmse_affine(t, p), abs=TOL)  # invariant to affine maps
    # weighted form: row i counted w_i times equals the expanded data
    w = rng.integers(0, 4, n).astype(float)
    if w.sum() >= 3:
        from rubrictools.metrics.errors import rmse_affine_weighted

        got = rmse_affine_weighted(t, p, w[None, :])[0]
        assert got == pytest.approx(m.rmse_affine(np.repeat(t, w.astype(int)), np.repeat(p, w.astype(int))), abs=TOL)


@pytest.mark.parametrize("seed", SEEDS)
def test_errors_and_distributions_match_references(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 200))
    t = rng.integers(1, 5, n).astype(float)
    p = np.clip(t + rng.integers(-1, 2, n) + (seed % 3 - 1), 1, 4)
    assert m.rmse(t, p) == pytest.approx(sklearn_metrics.root_mean_squared_error(t, p), abs=TOL)
    assert m.mae(t, p) == pytest.approx(sklearn_metrics.mean_absolute_error(t, p), abs=TOL)
    b = m.mean_bias(t, p)
    assert float(b) == pytest.approx(np.mean(p - t), abs=TOL)
    if np.any(p != t):
        assert b.pvalue == pytest.approx(stats.ttest_rel(p, t).pvalue, abs=TOL)
        d = p - t
        if d.std() > 0:
            assert b.effect_size == pytest.approx(d.mean() / d.std(ddof=1), abs=TOL)
    u, v = rng.normal(size=n), rng.normal(0.3, 1.5, int(rng.integers(2, 100)))
    assert m.wasserstein(u, v) == pytest.approx(stats.wasserstein_distance(u, v), abs=TOL)
    ks = m.ks_2samp(u, v)
    ref = stats.ks_2samp(u, v)
    assert float(ks) == pytest.approx(ref.statistic, abs=TOL)
    assert ks.pvalue == pytest.approx(ref.pvalue, abs=TOL)
    a, c = rng.integers(0, 4, n), rng.integers(0, 4, n // 2 + 1)
    pa = np.bincount(a, minlength=4) / a.size
    pc = np.bincount(c, minlength=4) / c.size
    assert m.js_divergence(a, c, labels=[0, 1, 2, 3]) == pytest.approx(jensenshannon(pa, pc, base=2) ** 2, abs=TOL)


@pytest.mark.parametrize("seed", range(20))
def test_icc_matches_two_way_anova(seed: int) -> None:
    """ICC from the mean squares of statsmodels' two-way ANOVA (Shrout & Fleiss formulas)."""
    import pandas as pd
    from statsmodels.formula.api import ols
    from statsmodels.stats.anova import anova_lm

    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(4, 30)), int(rng.integers(2, 6))
    x = rng.normal(size=(n, 1)) * 2 + rng.normal(size=(1, k)) + rng.normal(size=(n, k))
    df = pd.DataFrame(
        {"y": x.ravel(), "unit": np.repeat(np.arange(n), k).astype(str), "rater": np.tile(np.arange(k), n).astype(str)}
    )
    table = anova_lm(ols("y ~ C(unit) + C(rater)", df).fit())
    msr, msc, mse = (table.loc[r, "mean_sq"] for r in ("C(unit)", "C(rater)", "Residual"))
    one_way = anova_lm(ols("y ~ C(unit)", df).fit())
    msw = one_way.loc["Residual", "mean_sq"]
    want = {
        "ICC1": (msr - msw) / (msr + (k - 1) * msw),
        "ICC2": (msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n),
        "ICC3": (msr - mse) / (msr + (k - 1) * mse),
        "ICC1k": (msr - msw) / msr,
        "ICC2k": (msr - mse) / (msr + (msc - mse) / n),
        "ICC3k": (msr - mse) / msr,
    }
    for kind, value in want.items():
        assert m.icc(x, kind=kind) == pytest.approx(value, abs=1e-9)
    assert m.icc(x, kind="ICC3").pvalue == pytest.approx(table.loc["C(unit)", "PR(>F)"], abs=1e-9)


def test_gwet_ac1_two_raters_equals_multirater_form() -> None:
    rng = np.random.default_rng(3)
    t, p = _labels(rng, 100, 3, 0.7)
    assert m.gwet_ac1(t, p) == pytest.approx(m.gwet_ac1(np.column_stack([t, p])), abs=TOL)
    # hand formula for two raters
    cm = m.confusion_matrix(t, p) / 100
    pi = (cm.sum(0) + cm.sum(1)) / 2
    pe = (pi * (1 - pi)).sum() / 2
    assert m.gwet_ac1(t, p) == pytest.approx((np.trace(cm) - pe) / (1 - pe), abs=TOL)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("seed", range(10))
def test_calibration_matches_sklearn(seed: int, strategy: str) -> None:
    from sklearn.calibration import calibration_curve

    rng = np.random.default_rng(seed)
    p = rng.random(int(rng.integers(20, 500)))
    y = (rng.random(p.size) < p ** rng.uniform(0.5, 2)).astype(int)
    prob_true, prob_pred = calibration_curve(y, p, n_bins=8, strategy=strategy)
    t = m.reliability_table(y, p, n_bins=8, strategy=strategy)
    np.testing.assert_allclose(t["accuracy"].to_numpy(), prob_true, atol=TOL)
    np.testing.assert_allclose(t["mean_confidence"].to_numpy(), prob_pred, atol=TOL)
    assert m.brier_score(y, p) == pytest.approx(sklearn_metrics.brier_score_loss(y, p), abs=TOL)
    ece = float(np.sum(t["n"].to_numpy() * np.abs(prob_true - prob_pred)) / p.size)
    assert m.expected_calibration_error(y, p, n_bins=8, strategy=strategy) == pytest.approx(ece, abs=TOL)
