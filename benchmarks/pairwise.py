"""Pairwise judging and leaderboards: speed, side by side in one run.

1. `rank_systems` on 50 systems x 20,000 comparisons (prompts of 4 comparisons each) with
   1,000 cluster-bootstrap resamples, Bradley-Terry and Elo (median of --runs, with range);
   next to it the peers' own code: FastChat's `get_bootstrap_result` with its
   `compute_elo_mle_with_tie` and `compute_elo` (``pip install --no-deps fschat``; timed on 20
   rounds and scaled to 1,000), and choix's `opt_pairwise` in a bootstrap loop.
2. Pairwise grading throughput per call against the loopback fake server, next to single
   grading with the same number of calls, transport, latency and concurrency (target:
   within 10 %).

Run: python benchmarks/pairwise.py [--systems 50 --comparisons 20000 --boot 1000 --calls 2000]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
import types
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("TQDM_DISABLE", "1")  # FastChat's bootstrap loop draws a progress bar
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import polars as pl
from timing import timed  # a sibling script: benchmarks/ is on sys.path when this runs

import rubrictools as rt
from rubrictools.leaderboard.bradley_terry import fit, win_matrix
from rubrictools.testing import FakeLLMServer


def tournament(k: int, n: int, seed: int = 0) -> tuple[pl.DataFrame, tuple[np.ndarray, ...]]:
    rng = np.random.default_rng(seed)
    i = rng.integers(0, k, n)
    j = (i + rng.integers(1, k, n)) % k
    strength = rng.normal(0, 1, k)
    p = 1 / (1 + np.exp(-(strength[i] - strength[j])))
    u, tie = rng.random(n), rng.random(n) < 0.15
    s = np.where(tie, 0.5, (u < p).astype(float))
    names = np.array([f"model-{x:02d}" for x in range(k)])
    prefs = pl.DataFrame({"id": np.arange(n) // 4, "system_a": names[i], "system_b": names[j], "value": s})
    return prefs, (i, j, s)


def fastchat_elo_analysis() -> Any | None:
    """FastChat's own leaderboard code (``fastchat/serve/monitor/elo_analysis.py`` of ``pip install
    --no-deps fschat``), or None. Its module also imports plotting, the model registry and log
    helpers that the rating functions never call; those imports get empty stand-ins, so the
    functions timed are FastChat's, unchanged."""
    if importlib.util.find_spec("fastchat") is None or importlib.util.find_spec("pandas") is None:
        return None
    for name in ("plotly", "plotly.express", "plotly.graph_objects"):
        sys.modules.setdefault(name, types.ModuleType(name))
    stand_ins = {
        "fastchat.model": {"__path__": []},
        "fastchat.model.model_registry": {"get_model_info": None},
        "fastchat.serve.monitor.basic_stats": {"get_log_files": None},
        "fastchat.serve.monitor.clean_battle_data": {"clean_battle_data": None},
    }
    for name, attrs in stand_ins.items():
        if name not in sys.modules:
            module = types.ModuleType(name)
            module.__dict__.update(attrs)
            sys.modules[name] = module
    try:
        from fastchat.serve.monitor import elo_analysis
    except ImportError as e:
        print(f"FastChat's elo_analysis not importable here ({e})")
        return None
    return elo_analysis


def battles(prefs: pl.DataFrame) -> Any:
    """Our comparisons as FastChat's battle table (model_a, model_b, winner)."""
    winner = pl.when(pl.col("value") == 1).then(pl.lit("model_a"))
    winner = winner.when(pl.col("value") == 0).then(pl.lit("model_b")).otherwise(pl.lit("tie"))
    return prefs.select(
        pl.col("system_a").alias("model_a"), pl.col("system_b").alias("model_b"), winner.alias("winner")
    ).to_pandas()


def ranking(k: int, n: int, boot: int, runs: int) -> None:
    prefs, (i, j, s) = tournament(k, n)
    rt.rank_systems(prefs.head(2000), n_resamples=5, regularization=1e-3)  # warm up imports
    print(f"{k} systems x {n:,} comparisons, {boot:,} bootstrap resamples; median of {runs} (range)")
    ours = {}
    for method in ("bradley_terry", "elo"):
        t = timed(lambda m=method: rt.rank_systems(prefs, method=m, n_resamples=boot), runs)  # type: ignore[misc]
        ours[method] = t[0]
        print(f"  rubrictools rank_systems {method:14s} {t[0]:7.2f} s ({t[1]:.2f}-{t[2]:.2f})")
    ea = fastchat_elo_analysis()
    if ea is None:
        print("  FastChat (pip install --no-deps fschat==0.2.36, plus pandas and scikit-learn): not installed")
    else:
        df = battles(prefs)
        full = ea.compute_elo_mle_with_tie(df)
        mine = fit(win_matrix(i, j, s, k)) * 400 / np.log(10)
        names = [f"model-{x:02d}" for x in range(k)]
        theirs = full.reindex(names).to_numpy()
        diff = np.abs((mine - mine.mean()) - (theirs - theirs.mean())).max()
        rounds = max(1, min(boot, 20))
        for label, func, ours_t in (
            ("compute_elo_mle_with_tie", ea.compute_elo_mle_with_tie, ours["bradley_terry"]),
            ("compute_elo (online)", ea.compute_elo, ours["elo"]),
        ):
            t = timed(lambda f=func: ea.get_bootstrap_result(df, f, rounds), 1)[0] / rounds * boot
            print(
                f"  FastChat get_bootstrap_result + {label:24s} ~{t:7.1f} s for {boot:,} "
                f"({rounds} rounds timed and scaled): {t / ours_t:.0f}x rubrictools"
            )
        print(
            f"  full-data ratings, ours vs FastChat's: max difference {diff:.1f} Elo points (FastChat's "
            "LogisticRegression keeps scikit-learn's default L2 penalty C=1; ours is the unpenalised MLE)"
        )
    if importlib.util.find_spec("choix") is None:
        print("  choix: not installed (pip install choix)")
        return
    import choix

    decisive = s != 0.5
    wi, wj = np.where(s[decisive] == 1, i[decisive], j[decisive]), np.where(s[decisive] == 1, j[decisive], i[decisive])
    m = wi.size
    rng = np.random.default_rng(1)
    rounds = max(1, min(boot, 50))

    def choix_boot() -> None:  # choix's fastest route: a dense win matrix per resample, then I-LSR
        for _ in range(rounds):
            picked = rng.integers(0, m, m)
            wins = np.zeros((k, k))
            np.add.at(wins, (wi[picked], wj[picked]), 1.0)
            choix.ilsr_pairwise_dense(wins, alpha=1e-3)

    t = timed(choix_boot, 1)[0] / rounds * boot
    print(
        f"  choix ilsr_pairwise_dense in a bootstrap loop (decisive comparisons only; {rounds} fits timed and "
        f"scaled): ~{t:7.2f} s for {boot:,}: {t / ours['bradley_terry']:.1f}x rubrictools"
    )


def throughput(calls: int, latency: float, concurrency: int) -> None:
    rubric = rt.Rubric.from_dict([{"name": "good", "requirement": "The answer is good"}])
    n_pairs = calls // 2
    pairs = pl.DataFrame(
        {
            "response_a": [f"answer {x} good" for x in range(n_pairs)],
            "response_b": [f"answer {x} bad" for x in range(n_pairs)],
        }
    )
    single = pl.DataFrame({"submission": [f"answer {x} {'good' if x % 2 else 'bad'}" for x in range(calls)]})
    with FakeLLMServer(latency=latency) as srv:
        judge = rt.Judge(
            model="openai/gpt-4.1-mini",
            api_base=srv.url,
            api_key="sk-bench",
            max_concurrency=concurrency,
            transport="direct",
        )
        common = dict(model=judge, cache=False, progress=False, record=False)
        rt.grade(single.head(20), rubric, **common)  # warm up
        for _round in range(2):
            srv.reset()
            t0 = time.perf_counter()
            v = rt.grade(single, rubric, **common)
            t_single = time.perf_counter() - t0
            assert srv.hits == calls and v["error"].null_count() == v.height
            srv.reset()
            t0 = time.perf_counter()
            p = rt.grade_pairs(pairs, rubric, **common)
            t_pairs = time.perf_counter() - t0
            assert srv.hits == calls and p["error"].null_count() == p.height
            print(
                f"{calls:,} calls, latency {latency * 1000:.0f} ms, concurrency {concurrency}: single grading "
                f"{calls / t_single:7.1f} calls/s, pairwise {calls / t_pairs:7.1f} calls/s "
                f"(pairwise/single = {t_single / t_pairs:.2f})"
            )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--systems", type=int, default=50)
    ap.add_argument("--comparisons", type=int, default=20_000)
    ap.add_argument("--boot", type=int, default=1000)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--latency", type=float, default=0.02)
    ap.add_argument("--concurrency", type=int, default=50)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    ranking(a.systems, a.comparisons, a.boot, a.runs)
    throughput(a.calls, a.latency, a.concurrency)


if __name__ == "__main__":
    main()
