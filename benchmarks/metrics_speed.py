"""Agreement metrics with bootstrap intervals: rubrictools vs autorubric, same data, same run.

Part 1: 2,000 submissions x 5 binary criteria, every classification metric per criterion,
1,000 bootstrap resamples. rubrictools: ``rt.agreement(..., bootstrap=1000)`` (accuracy,
precision, recall, F1, MCC, Cohen's kappa, Gwet's AC1 per criterion, plus score-level
correlations, errors and distances with intervals). autorubric 1.6.1:
``compute_metrics(eval_result, dataset, bootstrap=True, n_bootstrap=1000)`` on the same
verdicts and labels, wrapped in its own result objects (no LLM call is made by either).

Part 2: 1,000,000 verdict rows (200,000 submissions x 5 criteria), agreement without
bootstrap: wall time and peak RSS of a fresh process.

    python benchmarks/metrics_speed.py            # both parts
    python benchmarks/metrics_speed.py --quick    # part 1 with 200 resamples, part 2 with 100k rows
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from datetime import datetime

import numpy as np
import polars as pl

N_CRITERIA = 5


def simulate(n: int, seed: int = 0) -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(seed)
    crit = np.tile(np.arange(N_CRITERIA), n)
    ids = np.repeat(np.arange(n), N_CRITERIA)
    human = rng.random(n * N_CRITERIA) < np.array([0.7, 0.5, 0.3, 0.6, 0.2])[crit]
    judge = np.where(rng.random(n * N_CRITERIA) < 0.8, human, rng.random(n * N_CRITERIA) < 0.5)
    names = np.array([f"c{i + 1}" for i in range(N_CRITERIA)])[crit]
    lab = lambda b: np.where(b, "MET", "UNMET")  # noqa: E731
    v = pl.DataFrame({"id": ids, "criterion": names, "verdict": lab(judge)})
    h = pl.DataFrame({"id": ids, "criterion": names, "label": lab(human)})
    return v, h


def rubric():
    import rubrictools as rt

    return rt.Rubric.from_dict(
        [
            {"name": f"c{i + 1}", "weight": w, "requirement": f"criterion {i + 1}"}
            for i, w in enumerate([10, 5, 5, 3, -4])
        ]
    )


def run_rubrictools(v: pl.DataFrame, h: pl.DataFrame, n_resamples: int) -> tuple[float, pl.DataFrame]:
    import rubrictools as rt

    rb = rubric()
    rt.agreement(v.head(50), h.head(50), rb, n_resamples=10)  # warm imports
    t0 = time.perf_counter()
    out = rt.agreement(v, h, rb, n_resamples=n_resamples, seed=0)
    return time.perf_counter() - t0, out


def run_autorubric(v: pl.DataFrame, h: pl.DataFrame, n_resamples: int) -> tuple[float, object] | None:
    try:
        import autorubric as ar
        from autorubric.eval import EvalResult, EvalTimingStats, ItemResult
        from autorubric.types import CriterionReport, CriterionVerdict, EvaluationReport
    except ImportError:
        return None
    rb = rubric()
    ar_rubric = ar.Rubric.from_dict([{"name": c.name, "weight": c.weight, "requirement": c.requirement} for c in rb])
    judge = v.sort("id", "criterion")["verdict"].to_numpy().reshape(-1, N_CRITERIA)
    truth = h.sort("id", "criterion")["label"].to_numpy().reshape(-1, N_CRITERIA)
    items, results = [], []
    import rubrictools as rt

    scores = rt.score(v, rb).sort("id")
    for i in range(judge.shape[0]):
        item = ar.DataItem(
            submission=f"answer {i}", description=f"item {i}", ground_truth=[CriterionVerdict(x) for x in truth[i]]
        )
        items.append(item)
        reports = [
            CriterionReport(
                name=c.name,
                weight=c.weight,
                requirement=c.requirement,
                verdict=CriterionVerdict(judge[i, k]),
                reason="",
            )
            for k, c in enumerate(ar_rubric.rubric)
        ]
        s = scores["score"][i]
        report = EvaluationReport(
            score=s, raw_score=scores["raw_score"][i], llm_raw_score=scores["raw_score"][i], report=reports
        )
        results.append(ItemResult(item_idx=i, item=item, report=report, duration_seconds=0.0))
    dataset = ar.RubricDataset(prompt="q", rubric=ar_rubric, items=items)
    now = datetime.now()
    ev = EvalResult(
        item_results=results,
        total_items=len(items),
        successful_items=len(items),
        failed_items=0,
        total_token_usage=None,
        total_completion_cost=None,
        timing_stats=EvalTimingStats.from_durations([0.0] * len(items), 1.0),
        started_at=now,
        completed_at=now,
    )
    from autorubric.metrics import compute_metrics

    t0 = time.perf_counter()
    res = compute_metrics(ev, dataset, bootstrap=True, n_bootstrap=n_resamples, seed=0)
    return time.perf_counter() - t0, res


def part1(n_resamples: int) -> None:
    v, h = simulate(2000)
    t_rt, out = run_rubrictools(v, h, n_resamples)
    print(f"part 1: 2,000 submissions x {N_CRITERIA} binary criteria, {n_resamples} cluster-bootstrap resamples")
    print(f"  rubrictools agreement(): {t_rt:8.3f} s  ({out.height} metric rows, each with a CI)")
    ar_res = run_autorubric(v, h, n_resamples)
    if ar_res is None:
        print("  autorubric not installed: pip install -e '.[peers]' to compare")
        return
    t_ar, res = ar_res
    print(f"  autorubric compute_metrics(bootstrap=True): {t_ar:8.3f} s")
    print(f"  speed-up: {t_ar / t_rt:,.0f}x")
    # sanity: both report the same pooled accuracy
    acc = out.filter(pl.col("metric") == "accuracy")
    pooled = float((acc["value"] * acc["n"]).sum() / acc["n"].sum())
    print(f"  pooled accuracy: rubrictools {pooled:.6f}, autorubric {res.criterion_accuracy:.6f}")


def part2_child(n_rows: int) -> None:
    import rubrictools as rt

    n = n_rows // N_CRITERIA
    v, h = simulate(n, seed=1)
    t0 = time.perf_counter()
    out = rt.agreement(v, h, rubric(), n_resamples=0)
    dt = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": dt, "peak_rss_mb": rss, "rows": out.height}))


def part2(n_rows: int) -> None:
    res = subprocess.run([sys.executable, __file__, "--child", str(n_rows)], capture_output=True, text=True, check=True)
    d = json.loads(res.stdout.strip().splitlines()[-1])
    print(f"part 2: {n_rows:,} verdict rows, agreement without bootstrap (criterion + score level)")
    print(
        f"  wall {d['seconds']:.2f} s, peak RSS of the whole process {d['peak_rss_mb']:.0f} MB (target < 5 s, < 2 GB)"
    )


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--child", type=int)
    a = ap.parse_args()
    if a.child:
        part2_child(a.child)
    else:
        part1(200 if a.quick else 1000)
        part2(100_000 if a.quick else 1_000_000)
