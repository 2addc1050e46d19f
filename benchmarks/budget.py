"""The cost budget: how much of ``max_cost_usd`` a run spends, and that it never spends more.

Grades more submissions than the budget pays for (1 criterion each) against the loopback fake
provider, which answers after ``--latency`` seconds and reports token usage, so each call
costs what ``--model``'s price says. The budget is worth about ``--calls`` calls. For each
concurrency (1, 16, 64) it runs ``--runs`` times and prints the fraction of the budget spent
(min / median / max: the goal is >= 0.90 and never > 1.00), the calls made and the rows that
became "budget exceeded: call not made".

Before issue 45 a budget worth ~530 calls spent 0.08 of itself at concurrency 40: a call that
did not fit while others held reservations failed instead of waiting for them to settle.

Run: python benchmarks/budget.py [--calls 200 --runs 5 --latency 0.02]
"""

from __future__ import annotations

import argparse
import os
import statistics

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import polars as pl

import rubrictools as rt
from rubrictools.testing import FakeLLMServer


def one_run(srv: FakeLLMServer, frame: pl.DataFrame, rubric: rt.Rubric, model: str, limit: float, conc: int) -> dict:
    judge = rt.Judge(model=model, api_base=srv.url, api_key="sk-fake", max_concurrency=conc)
    before = srv.hits
    v = rt.grade(
        frame, rubric, model=judge, id_column="id", cache=False, progress=False, record=False, max_cost_usd=limit
    )
    stopped = v.filter(pl.col("error_kind") == "budget").height
    return {"spent": v["cost_usd"].sum() / limit, "calls": srv.hits - before, "stopped": stopped}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=200, help="what the budget is worth, in calls")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--latency", type=float, default=0.02)
    ap.add_argument("--model", default="openai/gpt-4.1-mini")
    args = ap.parse_args()
    rubric = rt.Rubric.from_dict([{"name": "good", "requirement": "The answer is good"}])
    n = args.calls * 3  # three times more work than money: the budget decides where it stops
    frame = pl.DataFrame({"id": list(range(n)), "submission": [f"answer {i} is good" for i in range(n)]})
    with FakeLLMServer(latency=args.latency) as srv:
        probe = rt.grade(frame.head(1), rubric, model=rt.Judge(model=args.model, api_base=srv.url, api_key="sk-fake"),
                         id_column="id", cache=False, progress=False, record=False)  # fmt: skip
        limit = float(probe["cost_usd"].item()) * args.calls
        print(f"budget ${limit:.6f} (~{args.calls} calls of {args.model}), {n} submissions, latency {args.latency} s")
        print(f"{'concurrency':>11} {'spent min':>9} {'median':>7} {'max':>6} {'calls':>13} {'not made':>13}")
        for conc in (1, 16, 64):
            runs = [one_run(srv, frame, rubric, args.model, limit, conc) for _ in range(args.runs)]
            spent = [r["spent"] for r in runs]
            calls = f"{min(r['calls'] for r in runs)}-{max(r['calls'] for r in runs)}"
            stopped = f"{min(r['stopped'] for r in runs)}-{max(r['stopped'] for r in runs)}"
            print(
                f"{conc:>11} {min(spent):>9.3f} {statistics.median(spent):>7.3f} {max(spent):>6.3f} "
                f"{calls:>13} {stopped:>13}"
            )


if __name__ == "__main__":
    main()
