"""PPI formulas against the reference implementation, and their coverage by simulation."""

from __future__ import annotations

import numpy as np
import pytest

from rubrictools.ppi import core

ppi_py = pytest.importorskip("ppi_py")


def data(rng, n, big_n, bias=0.15, rho=0.6):
    truth = rng.normal(0.5, 0.25, n + big_n)
    judge = 0.5 + rho * (truth - 0.5) + np.sqrt(1 - rho**2) * 0.25 * rng.normal(size=n + big_n) + bias
    return truth[:n], judge[:n], judge[n:]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("lam", [1.0, None, 0.3])
def test_agrees_with_ppi_python(seed, lam):
    rng = np.random.default_rng(seed)
    y, f, f_u = data(rng, int(rng.integers(15, 400)), int(rng.integers(100, 5000)))
    if seed % 2:  # binary labels and verdicts too
        y, f, f_u = (y > 0.5).astype(float), (f > 0.6).astype(float), (f_u > 0.6).astype(float)
    ours = core.ppi(y, f, f_u, lam=lam, ci=0.9)
    lo, hi = ppi_py.ppi_mean_ci(y, f, f_u, alpha=0.1, lam=lam)
    point = ppi_py.ppi_mean_pointestimate(y, f, f_u, lam=lam)
    assert abs(ours.estimate - float(np.squeeze(point))) < 1e-6
    assert abs(ours.ci_low - float(np.squeeze(lo))) < 1e-6 and abs(ours.ci_high - float(np.squeeze(hi))) < 1e-6


def test_lambda_zero_is_classical_and_a_constant_judge_tunes_to_zero():
    rng = np.random.default_rng(1)
    y, f, f_u = data(rng, 50, 500)
    assert core.ppi(y, f, f_u, lam=0.0).estimate == pytest.approx(core.classical(y).estimate)
    assert core.tuned_lambda(y, np.ones(50), np.ones(500)) == 0.0


def test_coverage_of_nominal_95_percent_intervals():
    """A judge biased by +0.15 with correlation 0.6: PPI++ covers about 95 %, the naive
    judge-only interval almost never (figures in the issue note)."""
    rng = np.random.default_rng(2026)
    hits = {"ppi": 0, "ppi1": 0, "classical": 0, "naive": 0}
    reps, n, big_n = 600, 100, 2000
    for _ in range(reps):
        y, f, f_u = data(rng, n, big_n)
        truth = 0.5
        for name, est in (
            ("ppi", core.ppi(y, f, f_u)),
            ("ppi1", core.ppi(y, f, f_u, lam=1.0)),
            ("classical", core.classical(y)),
            ("naive", core.naive(np.concatenate([f, f_u]))),
        ):
            hits[name] += est.ci_low <= truth <= est.ci_high
    cover = {k: v / reps for k, v in hits.items()}
    assert 0.93 <= cover["ppi"] <= 0.97 and 0.93 <= cover["ppi1"] <= 0.97 and 0.93 <= cover["classical"] <= 0.97
    assert cover["naive"] < 0.05


def test_inverse_probability_estimator_is_unbiased_under_uneven_sampling():
    rng = np.random.default_rng(3)
    big_n = 3000
    truth = (rng.random(big_n) < 0.3).astype(float)
    judge = np.where(rng.random(big_n) < 0.75, truth, 1 - truth)  # 25 % wrong, so biased towards 0.5
    pi = np.where(judge == 1, 0.15, 0.03)  # MET verdicts labelled five times as often
    est, cover = [], 0
    for _ in range(400):
        labelled = rng.random(big_n) < pi
        e = core.ipw(truth, judge, labelled, pi)
        est.append(e.estimate)
        cover += e.ci_low <= truth.mean() <= e.ci_high
    assert abs(np.mean(est) - truth.mean()) < 0.005
    assert 0.92 <= cover / 400 <= 0.98
