"""The vectorised bootstrap: weighted kernels equal the metric on the resampled data set,
resampling plans, percentile/BCa intervals, coverage on simulated data, degenerate resamples."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from rubrictools import metrics as m
from rubrictools.metrics import resampling as rs
from rubrictools.metrics.classification import accuracy_from_confusion, mcc_from_confusion
from rubrictools.metrics.correlation import kendall_weighted, pearson_weighted, spearman_weighted, weighted_midranks
from rubrictools.metrics.distribution import cdf_distances_weighted
from rubrictools.metrics.kappa import kappa_from_confusion


def _expand(w: np.ndarray, *arrays: np.ndarray) -> list[np.ndarray]:
    idx = np.repeat(np.arange(w.size), w.astype(int))
    return [a[idx] for a in arrays]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(3, 40))
def test_weighted_rank_kernels_equal_expanded_data(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 5, n).astype(float)
    y = x + rng.integers(-2, 3, n)
    w = rng.multinomial(n, np.full(n, 1 / n), size=4).astype(float)
    for b in range(4):
        xe, ye = _expand(w[b], x, y)
        if np.unique(xe).size < 2 or np.unique(ye).size < 2:
            continue
        assert spearman_weighted(x, y, w[b : b + 1])[0] == pytest.approx(stats.spearmanr(xe, ye).statistic, abs=1e-9)
        assert kendall_weighted(x, y, w[b : b + 1])[0] == pytest.approx(stats.kendalltau(xe, ye).statistic, abs=1e-9)
        assert pearson_weighted(x, y, w[b : b + 1])[0] == pytest.approx(stats.pearsonr(xe, ye).statistic, abs=1e-9)
        np.testing.assert_allclose(
            weighted_midranks(x, w[b : b + 1])[0][w[b] > 0],
            stats.rankdata(xe)[np.cumsum(w[b])[w[b] > 0].astype(int) - 1],
        )


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 40))
def test_weighted_cdf_distances_equal_expanded_data(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    u, v = rng.normal(size=n).round(1), rng.normal(0.5, 1, n).round(1)
    w = rng.multinomial(n, np.full(n, 1 / n), size=3).astype(float)
    w1, ks = cdf_distances_weighted(u, v, w, w)
    for b in range(3):
        ue, ve = _expand(w[b], u, v)
        assert w1[b] == pytest.approx(stats.wasserstein_distance(ue, ve), abs=1e-9)
        assert ks[b] == pytest.approx(stats.ks_2samp(ue, ve).statistic, abs=1e-9)


def test_linear_confusion_kernel_equals_metric_on_resample() -> None:
    rng = np.random.default_rng(5)
    n, k = 80, 3
    t = rng.integers(0, k, n)
    p = np.where(rng.random(n) < 0.6, t, rng.integers(0, k, n))
    stats_ = np.zeros((n, k * k))
    stats_[np.arange(n), t * k + p] = 1
    cluster = np.arange(n) // 2  # two rows per cluster: resampled together
    w = rs.cluster_weights(n // 2, 5, seed=1)
    kern = rs.Kernel(
        ("kappa",), lambda tot: {"kappa": kappa_from_confusion(tot.reshape(-1, k, k), "quadratic")}, stats=stats_
    )
    got = rs.evaluate(kern, cluster, w)["kappa"]
    for b in range(5):
        rows = np.repeat(np.arange(n), w[b][cluster].astype(int))
        assert got[b] == pytest.approx(
            m.cohen_kappa(t[rows], p[rows], labels=[0, 1, 2], weights="quadratic"), abs=1e-12
        )
    cm = m.confusion_matrix(t, p)[None]
    assert accuracy_from_confusion(cm)[0] == pytest.approx(m.accuracy(t, p))
    assert mcc_from_confusion(cm)[0] == pytest.approx(m.mcc(t, p))


def test_cluster_weights_plans() -> None:
    w = rs.cluster_weights(50, 200, seed=3)
    assert w.shape == (200, 50) and np.all(w.sum(1) == 50)
    np.testing.assert_array_equal(w, rs.cluster_weights(50, 200, seed=3))
    assert not np.array_equal(w, rs.cluster_weights(50, 200, seed=4))
    strata = np.array(["a"] * 10 + ["b"] * 40)
    ws = rs.cluster_weights(50, 100, seed=3, strata=strata)
    assert np.all(ws[:, :10].sum(1) == 10) and np.all(ws[:, 10:].sum(1) == 40)
    with pytest.raises(ValueError, match="one label per cluster"):
        rs.cluster_weights(50, 10, strata=strata[:5])


def test_jackknife_linear_and_generic_agree() -> None:
    rng = np.random.default_rng(2)
    x = rng.normal(size=30)
    lin = rs.Kernel(("mean",), lambda t: {"mean": t[:, 1] / t[:, 0]}, stats=np.column_stack([np.ones(30), x]))
    gen = rs.Kernel(("mean",), lambda w: {"mean": (w @ x) / w.sum(1)}, n_rows=30)
    cl = np.arange(30)
    np.testing.assert_allclose(rs.jackknife(lin, cl)["mean"], rs.jackknife(gen, cl)["mean"])
    loo = np.array([np.delete(x, i).mean() for i in range(30)])
    np.testing.assert_allclose(rs.jackknife(lin, cl)["mean"], loo)


def test_bca_close_to_scipy_on_skewed_data() -> None:
    rng = np.random.default_rng(0)
    x = rng.exponential(size=60)
    kern = rs.Kernel(("mean",), lambda t: {"mean": t[:, 1] / t[:, 0]}, stats=np.column_stack([np.ones(60), x]))
    w = rs.cluster_weights(60, 20_000, seed=1)
    ours = rs.bootstrap(kern, np.arange(60), w, method="bca")["mean"]
    ref = stats.bootstrap((x,), np.mean, n_resamples=20_000, method="BCa", random_state=2).confidence_interval
    assert ours.low == pytest.approx(ref.low, abs=0.02)
    assert ours.high == pytest.approx(ref.high, abs=0.02)
    pct = rs.bootstrap(kern, np.arange(60), w, method="percentile")["mean"]
    # BCa shifts the interval right for a right-skewed mean
    assert ours.low > pct.low and ours.high > pct.high


def test_degenerate_resamples_are_counted_not_fatal() -> None:
    # 19 agreeing MET pairs and one UNMET/UNMET pair: many resamples miss the UNMET item
    t = np.array([1] * 19 + [0])
    p = t.copy()
    stats_ = np.zeros((20, 4))
    stats_[np.arange(20), t * 2 + p] = 1
    kern = rs.Kernel(("kappa",), lambda tot: {"kappa": kappa_from_confusion(tot.reshape(-1, 2, 2))}, stats=stats_)
    res = rs.bootstrap(kern, np.arange(20), rs.cluster_weights(20, 1000, seed=0))["kappa"]
    assert res.value == 1.0
    expected_missing = 1000 * (19 / 20) ** 20  # P(the UNMET item is never drawn)
    assert abs(res.n_degenerate - expected_missing) < 60
    assert res.low == 1.0 and res.high == 1.0
    # all undefined: NaN interval, nothing raised
    one = rs.Kernel(("kappa",), kern.finish, stats=stats_[:19])
    res = rs.bootstrap(one, np.arange(19), rs.cluster_weights(19, 100, seed=0))["kappa"]
    assert np.isnan(res.value) and np.isnan(res.low) and res.n_degenerate == 100


def _kappa_coverage(method: str, reps: int, seed: int) -> float:
    """Share of intervals covering the true kappa of a known generating model.

    human ~ Bernoulli(p); judge copies the human with probability a, else draws an
    independent Bernoulli(p): population Cohen's kappa = a.
    """
    rng = np.random.default_rng(seed)
    a, p, n = 0.6, 0.3, 200
    hits = 0
    for _ in range(reps):
        h = (rng.random(n) < p).astype(int)
        j = np.where(rng.random(n) < a, h, (rng.random(n) < p).astype(int))
        s = np.zeros((n, 4))
        s[np.arange(n), h * 2 + j] = 1
        kern = rs.Kernel(("k",), lambda tot: {"k": kappa_from_confusion(tot.reshape(-1, 2, 2))}, stats=s)
        iv = rs.bootstrap(kern, np.arange(n), rs.cluster_weights(n, 500, seed=rng), method=method)["k"]  # type: ignore[arg-type]
        hits += iv.low <= a <= iv.high
    return hits / reps


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_bootstrap_coverage_of_known_kappa(method: str) -> None:
    cover = _kappa_coverage(method, reps=400, seed=11)
    # 95% nominal; SE of the estimate over 400 reps is ~0.011
    assert 0.91 <= cover <= 0.985, cover
