"""Length-controlled win rates: a planted length bias is removed, a real quality gap is kept."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy.special import expit

import rubrictools as rt

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


def test_difficulty_ids_that_match_no_instruction_are_refused() -> None:
    """Before: ids missing from instruction_difficulty became difficulty 0 without a word
    (AlpacaEval's own file, keyed 0..804, passed as is did exactly that)."""
    prefs, lengths, _ = planted(3)
    shifted = pl.DataFrame({"id": range(100, 100 + N), "difficulty": 0.5})
    with pytest.raises(ValueError, match=r"instruction_difficulty: 100 of 400 instruction ids have no difficulty"):
        rt.length_controlled_win_rates(prefs, baseline="base", lengths=lengths, instruction_difficulty=shifted)
    with pytest.raises(ValueError, match=r"missing column\(s\) \['difficulty'\]"):
        rt.length_controlled_win_rates(
            prefs, baseline="base", lengths=lengths, instruction_difficulty=pl.DataFrame({"id": [1]})
        )


def test_reference_systems_bad_inputs() -> None:
    prefs, lengths, _ = planted(4)
    verbose = prefs.filter((pl.col("system_a") == "verbose") | (pl.col("system_b") == "verbose"))
    with pytest.raises(ValueError, match=r"reference_prefs: \['verbose'\] are also systems in prefs"):
        rt.length_controlled_win_rates(prefs, baseline="base", lengths=lengths, reference_prefs=verbose)
    rest = prefs.filter((pl.col("system_a") != "verbose") & (pl.col("system_b") != "verbose"))
    with pytest.raises(ValueError, match=r"reference_weight must be in \(0, 1\], got 0"):
        rt.length_controlled_win_rates(
            rest, baseline="base", lengths=lengths, reference_prefs=verbose, reference_weight=0
        )
    t = rt.length_controlled_win_rates(rest, baseline="base", lengths=lengths, reference_prefs=verbose, n_resamples=0)
    assert "verbose" not in t["system"].to_list() and t.height == 3


def test_a_grade_pairs_table_with_several_criteria_is_refused_not_pooled() -> None:
    """Before: two criteria per instruction were pooled into one fit (n doubled) and the bootstrap
    resampled rows, not instructions."""
    prefs = pl.DataFrame(
        {
            "id": [1, 1, 2, 2],
            "criterion": ["a", "b", "a", "b"],
            "system_a": "m",
            "system_b": "base",
            "value": [1.0, 0.0, 1.0, 1.0],
        }
    )
    lengths = pl.DataFrame({"id": [1, 1, 2, 2], "system": ["m", "base"] * 2, "length": [10, 5, 12, 6]})
    with pytest.raises(ValueError, match=r"on id 1 2 times; .* several criterion values, filter one first"):
        rt.length_controlled_win_rates(prefs, baseline="base", lengths=lengths, n_resamples=0)


def test_lengths_given_twice_are_refused_not_multiplied() -> None:
    prefs = pl.DataFrame({"id": [1, 2], "system_a": "m", "system_b": "base", "value": [1.0, 0.0]})
    lengths = pl.DataFrame({"id": [1, 1, 2, 2], "system": ["m", "base"] * 2, "length": [10, 5, 12, 6]})
    with pytest.raises(ValueError, match=r"lengths gives system 'm' on id 1 2 lengths: one per \(system, id\)"):
        rt.length_controlled_win_rates(prefs, baseline="base", lengths=pl.concat([lengths, lengths]), n_resamples=0)
