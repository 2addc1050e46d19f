"""What a provider's prompt cache saves on per-criterion grading, and what the warm-first order costs in time.

Run: python benchmarks/prompt_cache.py [--submissions 200] [--latency 0.05]

200 submissions of about 1,500 tokens x 10 binary criteria, per-criterion mode, default settings
(concurrency 16) except the judge's price (openai/gpt-4.1-mini: input $0.40/M, cached input
$0.10/M, output $1.60/M), against the fake server simulating OpenAI's prompt cache (the longest
prefix shared with an answered request, from 1,024 tokens in 128-token steps:
``FakeLLMServer(prompt_cache=True)``) with a fixed latency per request. Printed side by side:

- rubrictools as shipped: the submission before the criterion, one request per submission first;
- the same layout sent all at once (the warm-first order switched off), for the wall time;
- the criterion-first layout (rubrictools before 0.3's prompt version 3, and the peers' order:
  autorubric, rubric and rubrify put the criterion before the submission), replayed through the
  same cache simulation in the most favourable order (one request at a time).

The goal (issue 47): billed input cost at most 40% of the uncached cost, wall time within 10%.
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

import polars as pl

import rubrictools as rt
import rubrictools.grading.schedule as schedule
from rubrictools.judge.prompts import shared_prefix
from rubrictools.testing import FakeLLMServer
from rubrictools.testing.prompt_cache import PromptCacheSim

MODEL = "openai/gpt-4.1-mini"
P_IN, P_CACHED, P_OUT = 0.40e-6, 0.10e-6, 1.60e-6


def billed(prompt: int, cached: int) -> float:
    return (prompt - cached) * P_IN + cached * P_CACHED


def inputs(n: int) -> tuple[pl.DataFrame, rt.Rubric]:
    rng = random.Random(0)
    words = ["the", "a", "customer", "order", "refund", "policy", "shipping", "account", "password", "export"]
    answers = [" ".join(rng.choice(words) for _ in range(1100)) for _ in range(n)]  # ~6,000 characters each
    rubric = rt.Rubric.from_dict(
        [{"name": f"c{i}", "weight": 1, "requirement": f"Addresses point {i} of the policy"} for i in range(10)]
    )
    return pl.DataFrame({"submission": answers}), rubric


def run(df: pl.DataFrame, rubric: rt.Rubric, latency: float, *, warm_first: bool) -> dict[str, Any]:
    original = schedule.prefix_key
    if not warm_first:
        schedule.prefix_key = lambda call, judge: None  # every call queued in plan order, as before
    try:
        with FakeLLMServer(prompt_cache=True, latency=latency) as srv:
            judge = rt.Judge(model=MODEL, api_base=srv.url, api_key="sk-bench")
            t0 = time.perf_counter()
            v = rt.grade(df, rubric, model=judge, cache=False, progress=False, record=False)
            wall = time.perf_counter() - t0
    finally:
        schedule.prefix_key = original
    prompt, cached = int(v["prompt_tokens"].sum()), int(v["cached_tokens"].fill_null(0).sum())
    return {
        "wall_s": wall,
        "prompt": prompt,
        "cached": cached,
        "billed_in": (prompt - cached) * P_IN + cached * P_CACHED,
    }


def criterion_first(df: pl.DataFrame, rubric: rt.Rubric) -> dict[str, Any]:
    """The same requests with the criterion moved before the submission, through the same cache."""
    asked = rt.prompts(df, rubric, model=MODEL)
    sim, prompt, cached = PromptCacheSim(), 0, 0
    for system, user in asked.select("system", "user").iter_rows():
        cut = shared_prefix(user)
        assert cut is not None
        reordered = user[cut:].lstrip("\n") + "\n\n" + user[:cut]
        prompt += len(reordered) // 4
        cached += sim.cached(system, reordered)
        sim.remember(system, reordered)
    return {
        "wall_s": float("nan"),
        "prompt": prompt,
        "cached": cached,
        "billed_in": (prompt - cached) * P_IN + cached * P_CACHED,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--submissions", type=int, default=200)
    ap.add_argument("--latency", type=float, default=0.05)
    a = ap.parse_args()
    df, rubric = inputs(a.submissions)
    rows = {
        "rubrictools (shared part first, warm-first order)": run(df, rubric, a.latency, warm_first=True),
        "same layout, all sent at once": run(df, rubric, a.latency, warm_first=False),
        "criterion first (0.2 layout; autorubric, rubric, rubrify order)": criterion_first(df, rubric),
    }
    print(f"{a.submissions} submissions x 10 criteria, fake latency {a.latency * 1000:.0f} ms, concurrency 16")
    print(f"{'layout':<66}{'wall s':>8}{'prompt tok':>12}{'cached':>9}{'billed input $':>16}{'of uncached':>13}")
    for name, r in rows.items():
        share = r["billed_in"] / (r["prompt"] * P_IN)
        cells = f"{r['wall_s']:>8.2f}{r['prompt']:>12,}{r['cached'] / r['prompt']:>9.0%}{r['billed_in']:>16.4f}"
        print(f"{name:<66}{cells}{share:>13.0%}")


if __name__ == "__main__":
    main()
