"""Pairwise judging and leaderboards: speed, side by side in one run.

1. `rank_systems` on 50 systems x 20,000 comparisons (prompts of 4 comparisons each) with
   1,000 cluster-bootstrap resamples, Bradley-Terry and Elo; next to it, Chatbot Arena's
   way of getting the same intervals (one scikit-learn LogisticRegression per resample,
   timed on 20 resamples and scaled to 1,000), and the maximum rating difference between
   our fit and scikit-learn's on the full data.
2. Pairwise grading throughput per call against the loopback fake server, next to single
   grading with the same number of calls, transport, latency and concurrency (target:
   within 10 %).

Run: python benchmarks/pairwise.py [--systems 50 --comparisons 20000 --boot 1000 --calls 2000]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import polars as pl

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


def sklearn_fit(i: np.ndarray, j: np.ndarray, s: np.ndarray, k: int, weight: np.ndarray | None = None) -> np.ndarray:
    from sklearn.linear_model import LogisticRegression

    n = s.size
    x = np.zeros((n, k))
    x[np.arange(n), i], x[np.arange(n), j] = 1.0, -1.0
    w = np.ones(n) if weight is None else weight
    m = LogisticRegression(C=np.inf, fit_intercept=False, tol=1e-8, max_iter=10_000)
    m.fit(np.vstack([x, x]), np.r_[np.ones(n), np.zeros(n)], sample_weight=np.r_[w * s, w * (1 - s)])
    return m.coef_[0]


def ranking(k: int, n: int, boot: int) -> None:
    prefs, (i, j, s) = tournament(k, n)
    rt.rank_systems(prefs.head(2000), n_boot=5, regularization=1e-3)  # warm up imports
    for method in ("bradley_terry", "elo"):
        t0 = time.perf_counter()
        board = rt.rank_systems(prefs, method=method, n_boot=boot)  # type: ignore[arg-type]
        dt = time.perf_counter() - t0
        width = (board["ci_high"] - board["ci_low"]).median()
        print(
            f"rank_systems {method:14s} {k} systems x {n:,} comparisons, {boot:,} resamples: {dt:6.2f} s "
            f"(median CI width {width:.1f} Elo)"
        )
    ours = fit(win_matrix(i, j, s, k))
    t0 = time.perf_counter()
    ref = sklearn_fit(i, j, s, k)
    one = time.perf_counter() - t0
    print(f"max |ours - sklearn| on the full data: {np.abs(ours - (ref - ref.mean())).max():.2e} logits")
    rng = np.random.default_rng(1)
    m = n // 4
    t0 = time.perf_counter()
    for _ in range(20):
        counts = np.bincount(rng.integers(0, m, m), minlength=m).astype(float)
        sklearn_fit(i, j, s, k, weight=np.repeat(counts, 4)[:n])
    per = (time.perf_counter() - t0) / 20
    print(
        f"Chatbot Arena style (sklearn LogisticRegression per resample): {one:.2f} s for one fit, "
        f"{per:.3f} s per resample -> ~{per * boot:.0f} s for {boot:,} resamples"
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
        common = dict(
            model="openai/gpt-4.1-mini",
            api_base=srv.url,
            api_key="sk-bench",
            cache=False,
            progress=False,
            max_concurrency=concurrency,
            transport="direct",
        )
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
    a = ap.parse_args()
    ranking(a.systems, a.comparisons, a.boot)
    throughput(a.calls, a.latency, a.concurrency)


if __name__ == "__main__":
    main()
