"""Grading throughput against the loopback fake server, side by side in one run.

200 submissions x 5 criteria (1,000 calls), server latency 50 ms, concurrency 50; the fake
server runs in a process of its own (``python -m rubrictools.testing``), so each client's CPU
time is its own. Each client runs --runs times; the figures are medians with their range:

  * rubrictools `grade` with its defaults (the direct transport for this endpoint)
  * rubrictools `grade(transport="litellm")`
  * bare `litellm.acompletion` under a semaphore, sending the identical requests (the
    ceiling for any litellm client: no parsing, cost or verdict rows)
  * autorubric `evaluate` (when installed)

for each: wall time, calls/s, the physical limit's share (calls x latency / concurrency over
the wall time) and the client's CPU milliseconds per call. Then a fully cached re-run of
10,000 (item, criterion) pairs: wall and CPU time, 0 calls.

Run: python benchmarks/grading_throughput.py [--items 200 --criteria 5 --latency 0.05 --concurrency 50 --runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import polars as pl
from timing import measure  # a sibling script: benchmarks/ is on sys.path when this runs

import rubrictools as rt
from rubrictools.testing import default_script

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

    plan = build_plan(df, rubric, GradeOptions(model=[rt.Judge(model=MODEL, api_base="x")], id_column="id"))
    return [(c.messages, c.response_format) for c in plan.calls]


async def bare_litellm(url: str, requests: list[tuple[list[dict], dict | None]], concurrency: int) -> float:
    """Plain litellm.acompletion under a semaphore: no parsing, no cost, no rows (the ceiling)."""
    import litellm

    sem = asyncio.Semaphore(concurrency)

    async def one(messages: list[dict], fmt: dict | None) -> None:
        async with sem:
            await litellm.acompletion(
                model=MODEL,
                api_base=url,
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


def autorubric_runner(url: str, df: pl.DataFrame, rubric: rt.Rubric, concurrency: int) -> Callable[[], None] | None:
    try:
        import autorubric as ar
        from autorubric.graders import CriterionGrader
    except ImportError:
        return None
    ar_rubric = ar.Rubric([ar.Criterion(name=c.name, weight=c.weight, requirement=c.requirement) for c in rubric])
    ds = ar.RubricDataset(prompt="benchmark", rubric=ar_rubric)
    for s in df["submission"]:
        ds.add_item(submission=s, description="b")
    cfg = ar.LLMConfig(model=MODEL, api_base=url, api_key=KEY, max_parallel_requests=concurrency, cache_enabled=False)
    grader = CriterionGrader(llm_config=cfg)

    def run() -> None:
        with tempfile.TemporaryDirectory() as d:
            asyncio.run(ar.evaluate(ds, grader, show_progress=False, experiments_dir=d, resume=False))

    return run


SERVE = """
import sys, time
sys.path.insert(0, sys.argv[1])
from grading_throughput import script
from rubrictools.testing import FakeLLMServer
srv = FakeLLMServer(script, latency=float(sys.argv[2])).start()
print(srv.url, flush=True)
time.sleep(10**6)
"""


@contextmanager
def server_process(latency: float) -> Iterator[str]:
    """The fake server (answering with :func:`script`) in a process of its own; its URL."""
    here = str(Path(__file__).resolve().parent)
    proc = subprocess.Popen([sys.executable, "-c", SERVE, here, str(latency)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait(30)


def show(name: str, wall: list[float], cpu: list[float], calls: int, limit: float) -> float:
    w = statistics.median(wall)
    print(
        f"  {name:<34} {calls / w:8.1f} calls/s ({calls / max(wall):.0f}-{calls / min(wall):.0f})  "
        f"wall {w:6.2f} s = {w / limit:4.2f}x the limit  "
        f"client CPU {statistics.median(cpu) / calls * 1000:5.3f} ms/call"
    )
    return w


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--items", type=int, default=200)
    ap.add_argument("--criteria", type=int, default=5)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--concurrency", type=int, default=50)
    ap.add_argument("--cached-pairs", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    df, rubric = make_inputs(args.items, args.criteria)
    n_calls = args.items * args.criteria
    limit = n_calls * args.latency / args.concurrency
    print(
        f"{args.items} submissions x {args.criteria} criteria = {n_calls} calls; latency {args.latency * 1000:.0f} ms; "
        f"concurrency {args.concurrency}; physical limit {limit:.2f} s; median of {args.runs} (range)"
    )
    with server_process(args.latency) as url:
        common = {"cache": False, "progress": False, "record": False}

        def judge(transport: str = "auto", concurrency: int = 16) -> Any:
            return rt.Judge(model=MODEL, api_base=url, api_key=KEY, max_concurrency=concurrency, transport=transport)

        def grade(transport: str) -> Callable[[], None]:
            def run() -> None:
                v = rt.grade(df, rubric, model=judge(transport, args.concurrency), **common)
                assert v["error"].null_count() == v.height, v["error"].drop_nulls().head(3)

            return run

        for transport in ("auto", "litellm"):  # warm-up: imports, clients
            rt.grade(df.head(2), rubric, model=judge(transport), **common)
        requests = identical_requests(df, rubric)
        asyncio.run(bare_litellm(url, requests[:5], 5))
        w_direct = show("rubrictools grade (default: direct)", *measure(grade("auto"), args.runs), n_calls, limit)
        w_lite = show('rubrictools grade(transport="litellm")', *measure(grade("litellm"), args.runs), n_calls, limit)
        w_bare = show(
            "bare litellm.acompletion",
            *measure(lambda: asyncio.run(bare_litellm(url, requests, args.concurrency)), args.runs),
            n_calls,
            limit,
        )
        ar_run = autorubric_runner(url, df, rubric, args.concurrency)
        if ar_run is None:
            print("  autorubric evaluate: not installed")
        else:
            w_ar = show("autorubric evaluate", *measure(ar_run, args.runs), n_calls, limit)
            print(
                f"  rubrictools default / autorubric calls/s: {w_ar / w_direct:.2f}x "
                f"(litellm transport {w_ar / w_lite:.2f}x)"
            )
        print(f"  rubrictools default / bare litellm calls/s: {w_bare / w_direct:.2f}x")

        items = max(1, args.cached_pairs // args.criteria)
        big, _ = make_inputs(items, args.criteria)
        with tempfile.TemporaryDirectory() as d:
            cached = {**common, "cache": Path(d) / "c.sqlite"}
            rt.grade(big, rubric, model=judge(concurrency=64), **cached)
            outs: list[pl.DataFrame] = []
            wall, cpu = measure(lambda: outs.append(rt.grade(big, rubric, model=judge(), **cached)), args.runs)
        again = outs[-1]
        print(
            f"cached re-run of {again.height:,} pairs: wall {statistics.median(wall):.2f} s ({min(wall):.2f}-"
            f"{max(wall):.2f}), CPU {statistics.median(cpu):.2f} s; all cached: {bool(again['cached'].all())}"
        )


if __name__ == "__main__":
    main()
