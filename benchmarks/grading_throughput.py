"""Grading throughput against the loopback fake server, side by side in one run.

200 submissions x 5 criteria (1,000 calls), server latency 50 ms, concurrency 50:
  * rubrictools `grade` (cache off)            -> wall time, calls/s
  * bare `litellm.acompletion` with a semaphore, sending the identical requests -> calls/s
    (the ceiling for any litellm client: no parsing, cost or verdict rows)
  * autorubric `evaluate` (when installed)       -> wall time, calls/s, HTTP requests seen
Then a fully cached re-run of 10,000 (item, criterion) pairs (target < 3 s, 0 calls).

Run: python benchmarks/grading_throughput.py [--items 200 --criteria 5 --latency 0.05 --concurrency 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import polars as pl

import rubrictools as rt
from rubrictools.testing import FakeLLMServer, default_script

MODEL = "openai/gpt-4.1-mini"
KEY = "sk-bench"


def script(req: dict) -> str:
    # answer in a shape both rubrictools and autorubric accept
    out = json.loads(default_script(req))
    if "verdict" in out:
        out["criterion_status"] = out["verdict"]
    return json.dumps(out)


def make_inputs(items: int, criteria: int) -> tuple[pl.DataFrame, rt.Rubric]:
    rubric = rt.Rubric.from_dict(
        [{"name": f"k{i}", "weight": 10 - i, "requirement": f"Requirement number {i} is good"} for i in range(criteria)]
    )
    df = pl.DataFrame(
        {"id": list(range(items)), "submission": [f"answer {i} is {'good' if i % 2 else 'bad'}" for i in range(items)]}
    )
    return df, rubric


def identical_requests(df: pl.DataFrame, rubric: rt.Rubric) -> list[tuple[list[dict], dict | None]]:
    """The exact (messages, response_format) pairs rubrictools sends, so both clients do the same work."""
    from rubrictools.grading.options import GradeOptions
    from rubrictools.grading.plan import build_plan

    plan = build_plan(df, rubric, GradeOptions(model=MODEL, id_column="id", api_base="x"))
    return [(c.messages, c.response_format) for c in plan.calls]


async def bare_litellm(srv: FakeLLMServer, requests: list[tuple[list[dict], dict | None]], concurrency: int) -> float:
    """Plain litellm.acompletion under a semaphore: no parsing, no cost, no rows (the ceiling)."""
    import litellm

    sem = asyncio.Semaphore(concurrency)

    async def one(messages: list[dict], fmt: dict | None) -> None:
        async with sem:
            await litellm.acompletion(
                model=MODEL,
                api_base=srv.url,
                api_key=KEY,
                max_retries=0,
                temperature=0.0,
                max_tokens=1024,
                messages=messages,
                response_format=fmt,
            )

    t0 = time.perf_counter()
    await asyncio.gather(*(one(m, f) for m, f in requests))
    return time.perf_counter() - t0


def run_autorubric(
    srv: FakeLLMServer, df: pl.DataFrame, rubric: rt.Rubric, concurrency: int
) -> tuple[float, int] | None:
    try:
        import autorubric as ar
        from autorubric.graders import CriterionGrader
    except ImportError:
        return None
    ar_rubric = ar.Rubric([ar.Criterion(name=c.name, weight=c.weight, requirement=c.requirement) for c in rubric])
    ds = ar.RubricDataset(prompt="benchmark", rubric=ar_rubric)
    for s in df["submission"]:
        ds.add_item(submission=s, description="b")
    cfg = ar.LLMConfig(
        model=MODEL, api_base=srv.url, api_key=KEY, max_parallel_requests=concurrency, cache_enabled=False
    )
    grader = CriterionGrader(llm_config=cfg)
    srv.reset()
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        asyncio.run(ar.evaluate(ds, grader, show_progress=False, experiments_dir=d, resume=False))
        return time.perf_counter() - t0, srv.hits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--items", type=int, default=200)
    ap.add_argument("--criteria", type=int, default=5)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--concurrency", type=int, default=50)
    ap.add_argument("--cached-pairs", type=int, default=10_000)
    args = ap.parse_args()
    df, rubric = make_inputs(args.items, args.criteria)
    n_calls = args.items * args.criteria
    with FakeLLMServer(script, latency=args.latency) as srv:
        # warm up litellm's import and client once, outside every measurement
        warm = {"model": MODEL, "api_base": srv.url, "api_key": KEY, "cache": False, "progress": False}
        rt.grade(df.head(1), rubric, transport="litellm", **warm)
        requests = identical_requests(df, rubric)
        asyncio.run(bare_litellm(srv, requests[:5], 5))

        srv.reset()
        t0 = time.perf_counter()
        v = rt.grade(
            df,
            rubric,
            model=MODEL,
            api_base=srv.url,
            api_key=KEY,
            cache=False,
            progress=False,
            max_concurrency=args.concurrency,
            transport="litellm",  # the default for this endpoint is "direct" (transport="auto")
        )
        t_rt = time.perf_counter() - t0
        assert v["error"].null_count() == v.height, v.filter(pl.col("error").is_not_null())["error"].head(3)
        rt_hits = srv.hits

        srv.reset()
        rt.grade(
            df.head(1),
            rubric,
            model=MODEL,
            api_base=srv.url,
            api_key=KEY,
            cache=False,
            progress=False,
            transport="direct",
        )  # warm-up
        srv.reset()
        t0 = time.perf_counter()
        vd = rt.grade(
            df,
            rubric,
            model=MODEL,
            api_base=srv.url,
            api_key=KEY,
            cache=False,
            progress=False,
            max_concurrency=args.concurrency,
            transport="direct",
        )
        t_direct = time.perf_counter() - t0
        assert vd["error"].null_count() == vd.height
        direct_hits = srv.hits

        srv.reset()
        t_bare = asyncio.run(bare_litellm(srv, requests, args.concurrency))

        ar_res = run_autorubric(srv, df, rubric, args.concurrency)

        print(
            f"{args.items} submissions x {args.criteria} criteria = {n_calls} calls; latency "
            f"{args.latency * 1000:.0f} ms; "
            f"concurrency {args.concurrency}"
        )
        print(f"  rubrictools grade     {t_rt:7.2f} s  {n_calls / t_rt:8.1f} calls/s  ({rt_hits} HTTP requests)")
        print(
            f"  rubrictools direct    {t_direct:7.2f} s  {n_calls / t_direct:8.1f} calls/s  ({direct_hits} "
            f"HTTP requests; "
            "transport='direct', OpenAI-compatible endpoints)"
        )
        print(f"  bare litellm          {t_bare:7.2f} s  {n_calls / t_bare:8.1f} calls/s")
        if ar_res is None:
            print("  autorubric evaluate   (not installed)")
        else:
            t_ar, hits = ar_res
            print(f"  autorubric evaluate   {t_ar:7.2f} s  {n_calls / t_ar:8.1f} calls/s  ({hits} HTTP requests)")
            print(
                f"  rubrictools / autorubric calls/s: {t_ar / t_rt:.2f}x (litellm transport), "
                f"{t_ar / t_direct:.2f}x (direct transport)"
            )
        print(
            f"  rubrictools / bare litellm calls/s: {t_bare / t_rt:.2f}x (litellm transport), "
            f"{t_bare / t_direct:.2f}x (direct)"
        )

        # fully cached re-run of many pairs
        items = max(1, args.cached_pairs // args.criteria)
        big, _ = make_inputs(items, args.criteria)
        with tempfile.TemporaryDirectory() as d:
            cache = Path(d) / "c.sqlite"
            srv.latency = 0.0
            rt.grade(
                big, rubric, model=MODEL, api_base=srv.url, api_key=KEY, cache=cache, progress=False, max_concurrency=64
            )
            srv.reset()
            t0 = time.perf_counter()
            again = rt.grade(big, rubric, model=MODEL, api_base=srv.url, api_key=KEY, cache=cache, progress=False)
            t_cache = time.perf_counter() - t0
        print(
            f"cached re-run of {again.height:,} pairs: {t_cache:.2f} s, {srv.hits} calls, all cached: "
            f"{bool(again['cached'].all())}"
        )


if __name__ == "__main__":
    main()
