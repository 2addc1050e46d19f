"""Bradley-Terry and Elo ratings against independent references; intervals; bad input."""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest

import rubrictools as rt
from rubrictools.leaderboard.bradley_terry import fit, online_elo, win_matrix


def tournament(seed, k=8, n=600, tie_share=0.2, ids=None):
    rng = np.random.default_rng(seed)
    i = rng.integers(0, k, n)
    j = (i + rng.integers(1, k, n)) % k
    strength = rng.normal(0, 1, k)
    p = 1 / (1 + np.exp(-(strength[i] - strength[j])))
    u, tie = rng.random(n), rng.random(n) < tie_share
    s = np.where(tie, 0.5, (u < p).astype(float))
    names = [f"s{x:02d}" for x in range(k)]
    return pl.DataFrame(
        {
            "id": ids if ids is not None else np.arange(n),
            "system_a": [names[x] for x in i],
            "system_b": [names[x] for x in j],
            "value": s,
        }
    ), (i, j, s, k)


def sklearn_bt(i, j, s, k, C=np.inf):
    """Chatbot Arena's computation: logistic regression on the +1/-1 design matrix, each
    comparison as a win row and a loss row weighted by A's share (ties: half each)."""
    from sklearn.linear_model import LogisticRegression

    n = s.size
    x = np.zeros((n, k))
    x[np.arange(n), i], x[np.arange(n), j] = 1.0, -1.0
    model = LogisticRegression(C=C, fit_intercept=False, tol=1e-12, max_iter=100_000)
    model.fit(np.vstack([x, x]), np.r_[np.ones(n), np.zeros(n)], sample_weight=np.r_[s, 1 - s])
    return model.coef_[0]


@pytest.mark.parametrize("seed", range(5))
def test_bradley_terry_equals_sklearn_logistic_regression(seed):
    _, (i, j, s, k) = tournament(seed, k=3 + seed * 2)
    ref = sklearn_bt(i, j, s, k)
    got = fit(win_matrix(i, j, s, k))
    assert np.abs((ref - ref.mean()) - got).max() < 1e-6


def test_regularised_fit_equals_sklearn_with_c():
    _, (i, j, s, k) = tournament(7)
    lam = 0.5
    ref = sklearn_bt(i, j, s, k, C=1 / lam)  # sklearn: ||w||^2 / 2 + C * loss, i.e. lambda = 1 / C
    assert np.abs(ref - fit(win_matrix(i, j, s, k), regularization=lam)).max() < 1e-6


def test_ratings_on_the_elo_scale_with_an_anchor():
    prefs, (i, j, s, k) = tournament(3)
    board = rt.rank_systems(prefs, anchor="s03", init=1000, n_resamples=200)
    ref = sklearn_bt(i, j, s, k)
    want = 1000 + 400 / np.log(10) * (ref - ref[3])
    got = dict(zip(board["system"], board["rating"], strict=True))
    assert all(abs(got[f"s{x:02d}"] - want[x]) < 1e-4 for x in range(k))
    assert got["s03"] == pytest.approx(1000)
    assert (board["ci_low"] <= board["rating"]).all() and (board["rating"] <= board["ci_high"]).all()
    assert (board["rank_best"] <= board["rank"]).all() and (board["rank"] <= board["rank_worst"]).all()
    assert board["rating"].is_sorted(descending=True) and board["rank"].to_list() == list(range(1, k + 1))


def test_cluster_bootstrap_widens_intervals_when_prompts_repeat():
    base, _ = tournament(4, k=4, n=150)
    prefs = pl.concat([base] * 6)  # each prompt's comparison six times: six copies are not six prompts
    clustered = rt.rank_systems(prefs, n_resamples=400)
    flat = rt.rank_systems(prefs.with_columns(pl.int_range(pl.len()).alias("id")), n_resamples=400)
    assert clustered["rating"].equals(flat["rating"])  # same point estimates
    ratio = ((clustered["ci_high"] - clustered["ci_low"]) / (flat["ci_high"] - flat["ci_low"])).mean()
    assert 2.0 < ratio < 3.0  # sqrt(6) = 2.45


def test_rank_interval_counts_systems_surely_above_and_below():
    rows = [("a", "b", 1.0)] * 40 + [("a", "b", 0.0)] * 10 + [("b", "c", 1.0)] * 25 + [("b", "c", 0.0)] * 25
    rows += [("a", "c", 1.0)] * 45 + [("a", "c", 0.0)] * 5
    prefs = pl.DataFrame(rows, schema=["system_a", "system_b", "value"], orient="row").with_row_index("id")
    board = rt.rank_systems(prefs, n_resamples=500)
    top = board.row(0, named=True)
    assert top["system"] == "a" and top["rank_best"] == 1 and top["rank_worst"] == 1
    assert set(board["rank_worst"][1:]) == {3}  # b and c cannot be told apart


def test_online_elo_matches_a_plain_loop():
    prefs, (i, j, s, k) = tournament(5, n=300)
    r = np.full(k, 1000.0)
    for a, b, out in zip(i, j, s, strict=True):
        ea = 1 / (1 + 10 ** ((r[b] - r[a]) / 400))
        r[a], r[b] = r[a] + 4 * (out - ea), r[b] - 4 * (out - ea)
    assert np.allclose(online_elo(i, j, s, k), r)
    board = rt.rank_systems(prefs, method="elo", n_resamples=50)
    got = dict(zip(board["system"], board["rating"], strict=True))
    assert all(abs(got[f"s{x:02d}"] - r[x]) < 1e-9 for x in range(k))


def test_a_disconnected_graph_is_an_error_naming_the_groups():
    prefs = pl.DataFrame(
        {
            "id": [1, 2, 3, 4],
            "system_a": ["a", "b", "c", "d"],
            "system_b": ["b", "a", "d", "c"],
            "value": [1.0, 0.0, 1.0, 0.5],
        }
    )
    with pytest.raises(ValueError, match=r"2 groups never compared with each other \[\['a', 'b'\], \['c', 'd'\]\]"):
        rt.rank_systems(prefs)


def test_a_system_that_never_lost_needs_regularization():
    prefs = pl.DataFrame(
        {"id": [1, 2, 3], "system_a": ["a", "b", "a"], "system_b": ["b", "c", "c"], "value": [1.0, 0.5, 1.0]}
    )
    with pytest.raises(
        ValueError, match=r"infinite: some systems never lost or never won against the rest \(\['a'\]\)"
    ):
        rt.rank_systems(prefs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        board = rt.rank_systems(prefs, regularization=0.1, n_resamples=50)
    assert board["system"][0] == "a" and board["rating"].is_finite().all()


def test_resamples_with_infinite_ratings_are_counted_and_warned():
    prefs = pl.DataFrame(
        {
            "id": range(6),
            "system_a": ["a", "a", "b", "b", "a", "c"],
            "system_b": ["b", "c", "c", "a", "b", "a"],
            "value": [1.0, 1.0, 1.0, 1.0, 0.0, 1.0],
        }
    )
    with pytest.warns(RuntimeWarning, match="resamples had infinite ratings"):
        board = rt.rank_systems(prefs, n_resamples=200)
    assert 0 < board["n_degenerate"][0] < 200


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"anchor": "zzz"}, "anchor='zzz' is not a compared system"),
        ({"method": "glicko"}, "method must be"),
        ({"criterion": "nope"}, "criterion='nope' is not in prefs"),
    ],
)
def test_bad_arguments(kw, match):
    prefs, _ = tournament(1, k=3, n=60)
    with pytest.raises(ValueError, match=match):
        rt.rank_systems(prefs.with_columns(pl.lit("c1").alias("criterion")), **kw)


def test_several_judges_must_be_chosen():
    prefs, _ = tournament(1, k=3, n=60)
    two = pl.concat([prefs.with_columns(pl.lit(j).alias("judge")) for j in ("j1", "j2")])
    with pytest.raises(ValueError, match=r"several judges \['j1', 'j2'\]; choose one with judge="):
        rt.rank_systems(two)
    assert rt.rank_systems(two, judge="j2", n_resamples=20).height == 3


def test_bad_values_and_self_pairs_are_refused():
    for bad in (1.7, -0.1, float("nan")):  # a soft preference is fine (0.7), a share outside [0, 1] is not
        with pytest.raises(ValueError, match=r"must be in \[0, 1\]"):
            rt.rank_systems(pl.DataFrame({"id": [1], "system_a": ["a"], "system_b": ["b"], "value": [bad]}))
    with pytest.raises(ValueError, match="value must be a number"):
        rt.win_rates(pl.DataFrame({"id": [1], "system_a": ["a"], "system_b": ["b"], "value": ["A"]}))
    with pytest.raises(ValueError, match="compare a system with itself"):
        rt.rank_systems(pl.DataFrame({"id": [1], "system_a": ["a"], "system_b": ["a"], "value": [1.0]}))
    with pytest.raises(ValueError, match=r"missing column\(s\) \['system_b'\]"):
        rt.rank_systems(pl.DataFrame({"id": [1], "system_a": ["a"], "value": [1.0]}))


def test_soft_preferences_are_fractional_wins_everywhere():
    """AlpacaEval's soft preferences: a 0.75 counts as three quarters of a win. Bradley-Terry on
    soft values equals it on hard comparisons in the same proportions (the likelihood scales)."""
    soft = pl.DataFrame({"id": [1, 2, 3, 4], "system_a": ["a", "a", "b", "c"], "system_b": ["b", "c", "c", "a"],
                         "value": [0.75, 0.6, 0.3, 0.55]})  # fmt: skip
    rows = []
    for r in soft.iter_rows(named=True):  # each soft comparison as 20 hard ones in its proportion
        won = round(r["value"] * 20)
        rows += [{**r, "value": 1.0}] * won + [{**r, "value": 0.0}] * (20 - won)
    hard = pl.DataFrame(rows)
    a = rt.rank_systems(soft, n_resamples=20).sort("system")
    b = rt.rank_systems(hard, n_resamples=20).sort("system")
    np.testing.assert_allclose(a["rating"].to_numpy(), b["rating"].to_numpy(), atol=1e-6)
    w = rt.win_rates(soft, n_resamples=50)
    got = w.filter((pl.col("system") == "a") & (pl.col("opponent") == "b")).row(0, named=True)
    assert got["win_rate"] == 0.75 and (got["wins"], got["ties"], got["losses"]) == (1, 0, 0)
    elo = rt.rank_systems(soft, method="elo", n_resamples=20)
    assert elo["rating"].is_finite().all()
