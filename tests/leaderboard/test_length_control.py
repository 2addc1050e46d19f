"""Length-controlled win rates: a planted length bias is removed, a real quality gap is kept."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy.special import expit

import rubrictools as rt
from rubrictools.leaderboard.length_control import _CS, _l1_logistic

N = 400


def planted(seed: int = 0) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, float]]:
    """A judge that adds 1.5 * tanh(length difference) to every system's true quality, on
    instructions of varied difficulty. Returns prefs (soft), lengths and each system's true
    length-free win rate against the baseline."""
    rng = np.random.default_rng(seed)
    gamma = rng.normal(0, 1, N)
    truth = {"verbose": 0.0, "better": 1.0, "both": 1.0, "terse": 0.0}
    extra = {"verbose": 400.0, "better": 0.0, "both": 400.0, "terse": -300.0}
    prefs, lengths = [], [pl.DataFrame({"id": range(N), "system": "base", "length": rng.normal(800, 50, N)})]
    for s in truth:
        d = extra[s] + rng.normal(0, 150, N)
        lengths.append(pl.DataFrame({"id": range(N), "system": s, "length": lengths[0]["length"].to_numpy() + d}))
        p = expit(truth[s] + 1.5 * np.tanh(d / d.std()) + gamma)
        flip = rng.random(N) < 0.5  # the baseline shown as A half of the time
        a, b = np.where(flip, "base", s), np.where(flip, s, "base")
        prefs.append(pl.DataFrame({"id": range(N), "system_a": a, "system_b": b, "value": np.where(flip, 1 - p, p)}))
    want = {s: float(expit(q + gamma).mean()) for s, q in truth.items()}
    return pl.concat(prefs), pl.concat(lengths), want


def test_a_planted_length_bias_is_removed_and_quality_kept() -> None:
    prefs, lengths, want = planted()
    t = rt.length_controlled_win_rates(prefs, baseline="base", lengths=lengths, n_resamples=30)
    got = {r["system"]: r for r in t.iter_rows(named=True)}
    assert got["verbose"]["win_rate"] > want["verbose"] + 0.1  # the raw rate rewards length ...
    assert got["terse"]["win_rate"] < want["terse"] - 0.1  # ... and punishes brevity
    for s in want:  # the length-controlled rate recovers the length-free truth
        assert got[s]["lc_win_rate"] == pytest.approx(want[s], abs=0.03), s
        assert got[s]["lc_ci_low"] <= got[s]["lc_win_rate"] <= got[s]["lc_ci_high"]
    assert got["both"]["lc_win_rate"] == pytest.approx(got["better"]["lc_win_rate"], abs=0.03)
    assert got["verbose"]["phi"] > 0.5 and got["verbose"]["psi"] > 0.5  # instruction term on (4 systems)


def test_given_difficulty_no_instruction_term_and_bad_inputs() -> None:
    prefs, lengths, _ = planted(1)
    two = prefs.filter(pl.col("system_a").is_in(["base", "verbose"]) & pl.col("system_b").is_in(["base", "verbose"]))
    t = rt.length_controlled_win_rates(two, baseline="base", lengths=lengths, n_resamples=0)
    assert t["psi"].null_count() == 1 and t["lc_ci_low"].null_count() == 1  # one system: no instruction term
    given = pl.DataFrame({"id": range(N), "difficulty": 0.0})
    t2 = rt.length_controlled_win_rates(
        two, baseline="base", lengths=lengths, instruction_difficulty=given, n_resamples=0
    )
    assert t2["psi"][0] == 0.0  # a constant difficulty carries no information
    with pytest.raises(ValueError, match="baseline='nobody' is in no comparison"):
        rt.length_controlled_win_rates(prefs, baseline="nobody", lengths=lengths)
    with pytest.raises(ValueError, match="no length for id"):
        rt.length_controlled_win_rates(prefs, baseline="base", lengths=lengths.filter(pl.col("id") != 3))


def test_the_l1_fit_is_the_l1_optimum() -> None:
    """The split-variable L-BFGS-B solve reaches liblinear's objective optimum: no coordinate
    move lowers ||w||_1 + C * logloss."""
    rng = np.random.default_rng(2)
    x = np.column_stack([np.ones(200), rng.normal(size=200), rng.normal(size=200)])
    y = expit(x @ np.array([0.5, 1.0, 0.0]) + rng.normal(0, 0.5, 200))
    for c in _CS[3:7]:
        w = _l1_logistic(x, y, c)

        def obj(v: np.ndarray, c: float = c) -> float:
            z = x @ v
            return float(np.abs(v).sum() + c * np.sum(np.logaddexp(0, z) - y * z))

        base = obj(w)
        for k in range(3):
            for step in (1e-3, -1e-3):
                v = w.copy()
                v[k] += step
                assert obj(v) >= base - 1e-6
