"""Streaming at scale against the loopback fake server: calls/s, peak memory, resume cost.

The parent process runs the fake server (low latency); each grading run is a child process, so
its peak RSS is the grader's alone. Three measurements:

1. a streaming run (``grade(parquet, output=dir, batch_size=B)``) over N submissions x 3 LLM
   criteria: wall time, calls/s, peak RSS;
2. the same at N/4 submissions: peak RSS should not grow with N (flat memory);
3. a run killed with SIGKILL part-way, then resumed: calls repeated (should be 0) and the
   resume's wall time.

With ``--engine ray``: the same N x 3 criteria through ``rt.ray.grade`` on a local Ray instance
(``--workers`` grader actors, cluster-wide ``--concurrency``), then the re-run after an
interrupt (``overwrite=True``: the per-node cache answers every call). With ``--engine batch``:
``rt.submit_batch`` + ``collect`` through the fake server's batch API (request files built,
uploaded, answered, downloaded and turned into verdicts).

Run: python benchmarks/scale.py [--n 100000 --batch 5000 --concurrency 64 --latency 0.002 --transport direct]
     python benchmarks/scale.py --engine ray --n 100000 --workers 2 --concurrency 128
     python benchmarks/scale.py --engine batch --n 100000 [--slice-rows 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MODEL = "openai/gpt-4.1-mini"
RUBRIC = [
    {"name": "good", "requirement": "The answer is good"},
    {"name": "clear", "requirement": "The answer is clear", "weight": 5},
    {"name": "rude", "requirement": "The answer is rude", "weight": -5},
]


def child(args: argparse.Namespace) -> None:
    import rubrictools as rt

    t0 = time.perf_counter()
    out = rt.grade_to_parquet(
        args.input,
        rt.Rubric.from_dict(RUBRIC),
        model=rt.Judge(
            model=MODEL,
            api_base=args.url,
            api_key="sk-bench",
            max_concurrency=args.concurrency,
            transport=args.transport,
        ),
        output=args.output,
        batch_size=args.batch,
        cache=args.cache,
        progress=False,
    )
    rows = out.select(__import__("polars").len()).collect().item()
    dt = time.perf_counter() - t0
    print(json.dumps({"seconds": dt, "rows": rows, "peak_rss_mb": peak_rss_mb()}))


def peak_rss_mb() -> float:
    """This process's own peak RSS: VmHWM of its address space. ``ru_maxrss`` is not that on
    Linux: it survives fork and execve, so a child started by a large parent reports the
    parent's RSS at the fork when that is higher (what made earlier runs show 524 MB and
    1.86 GB for the second child: the parent held the fake server's request log by then)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


TRANSPORT = "litellm"


def run_child(url: str, inp: Path, out: Path, cache: Path, batch: int, conc: int) -> subprocess.Popen:
    cmd = [
        sys.executable,
        __file__,
        "--child",
        "--url",
        url,
        "--input",
        str(inp),
        "--output",
        str(out),
        "--cache",
        str(cache),
        "--batch",
        str(batch),
        "--concurrency",
        str(conc),
        "--transport",
        TRANSPORT,
    ]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=5_000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--latency", type=float, default=0.002)
    ap.add_argument("--transport", default="litellm", choices=["litellm", "direct"])
    ap.add_argument("--engine", default="stream", choices=["stream", "ray", "batch"])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--slice-rows", type=int, default=0, help="batch engine: submit_batch(..., slice_rows=N)")
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--url")
    ap.add_argument("--input")
    ap.add_argument("--output")
    ap.add_argument("--cache")
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    global TRANSPORT
    TRANSPORT = args.transport
    if args.engine == "ray":
        ray_engine(args)
        return
    if args.engine == "batch":
        batch_engine(args)
        return

    import polars as pl

    from rubrictools.testing import FakeLLMServer

    tmp = Path(tempfile.mkdtemp(prefix="rt-scale-"))
    words = ["good", "bad", "fine", "clear", "rude", "ok"]
    with FakeLLMServer(latency=args.latency) as srv:
        results = {}
        for label, n in (("full", args.n), ("quarter", args.n // 4)):
            inp = tmp / f"in-{label}.parquet"
            pl.DataFrame({"submission": [f"answer {i} is {words[i % 6]}" for i in range(n)]}).write_parquet(inp)
            srv.reset()
            p = run_child(
                srv.url, inp, tmp / f"out-{label}", tmp / f"cache-{label}.sqlite", args.batch, args.concurrency
            )
            res = json.loads(p.communicate()[0].strip().splitlines()[-1])
            res.update(calls=srv.hits, calls_per_s=srv.hits / res["seconds"], n=n)
            results[label] = res
            print(
                f"{label:>8}: {n:,} submissions x 3 criteria = {srv.hits:,} calls in {res['seconds']:.1f} s "
                f"({res['calls_per_s']:.0f} calls/s), peak RSS {res['peak_rss_mb']:.0f} MB, batch {args.batch:,}, "
                f"{args.transport} transport"
            )

        # kill part-way, then resume
        n = args.n // 4
        inp = tmp / "in-quarter.parquet"
        out, cache = tmp / "out-kill", tmp / "cache-kill.sqlite"
        srv.reset()
        p = run_child(srv.url, inp, out, cache, args.batch, args.concurrency)
        target = int(0.6 * 3 * n)
        while srv.hits < target and p.poll() is None:
            time.sleep(0.05)
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        before = srv.hits
        parts = len(list(out.glob("part-*.parquet")))
        time.sleep(0.5)
        srv.reset()
        p = run_child(srv.url, inp, out, cache, args.batch, args.concurrency)
        res = json.loads(p.communicate()[0].strip().splitlines()[-1])
        keys = [json.dumps(r["messages"], sort_keys=True) for r in srv.requests]
        print(
            f"  resume: killed after {before:,} calls ({parts} parts written); the resumed run made {srv.hits:,} calls "
            f"for the {3 * n - before:,} unanswered (+ in-flight at the kill), finished in {res['seconds']:.1f} s, "
            f"{res['rows']:,} verdict rows; distinct requests {len(set(keys)):,}"
        )
        flat = results["full"]["peak_rss_mb"] / max(results["quarter"]["peak_rss_mb"], 1)
        print(f"  memory: peak RSS at N={args.n:,} is {flat:.2f}x the peak at N={args.n // 4:,} (flat when ~1)")


def _inputs(n: int, path: Path) -> Path:
    import polars as pl

    words = ["good", "bad", "fine", "clear", "rude", "ok"]
    path.parent.mkdir(parents=True, exist_ok=True)
    pl.DataFrame({"id": range(n), "submission": [f"answer {i} is {words[i % 6]}" for i in range(n)]}).write_parquet(
        path
    )
    return path


def ray_engine(args: argparse.Namespace) -> None:
    import ray

    import rubrictools as rt
    from rubrictools.testing import FakeLLMServer

    tmp = Path(tempfile.mkdtemp(prefix="rt-scale-ray-"))
    os.environ["RUBRICTOOLS_CACHE_DIR"] = str(tmp / "cache")  # the workers' per-node caches
    src = _inputs(args.n, tmp / "in" / "answers.parquet")
    t0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    print(f"ray.init: {time.perf_counter() - t0:.1f} s")
    rubric = rt.Rubric.from_dict(RUBRIC)
    with FakeLLMServer(latency=args.latency) as srv:
        kw = dict(
            model=rt.Judge(model=MODEL, api_base=srv.url, api_key="sk-bench", transport=args.transport),
            id_column="id",
            output=tmp / "out",
            concurrency=args.concurrency,
            num_workers=args.workers,
            batch_size=args.batch,
        )
        lim = rt.ray.make_limiter(args.concurrency)
        t0 = time.perf_counter()
        lf = rt.ray.grade(str(src.parent), rubric, limiter=lim, **kw)
        dt = time.perf_counter() - t0
        rows = lf.select(__import__("polars").len()).collect().item()
        peak = ray.get(lim.stats.remote())["peak"]
        print(
            f"ray: {args.n:,} submissions x 3 criteria = {srv.hits:,} calls in {dt:.1f} s "
            f"({srv.hits / dt:.0f} calls/s), "
            f"{rows:,} verdict rows, {args.workers} grader actors, cluster-wide limit {args.concurrency} "
            f"(peak slots leased {peak}, peak requests in flight at the server {srv.peak_in_flight}), "
            f"{args.transport} transport"
        )
        srv.reset()
        t0 = time.perf_counter()
        rt.ray.grade(str(src.parent), rubric, overwrite=True, **kw).select(__import__("polars").len()).collect()
        print(
            f"ray re-run after an interrupt (overwrite=True): {srv.hits:,} calls repeated, "
            f"{time.perf_counter() - t0:.1f} s"
        )
    ray.shutdown()


def batch_engine(args: argparse.Namespace) -> None:
    """The fake provider runs in its own process, so this process's peak RSS is the client's."""
    import polars as pl

    import rubrictools as rt

    tmp = Path(tempfile.mkdtemp(prefix="rt-scale-batch-"))
    src = _inputs(args.n, tmp / "answers.parquet")
    rubric = rt.Rubric.from_dict(RUBRIC)
    server = subprocess.Popen(
        [sys.executable, "-m", "rubrictools.testing"], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    try:
        url = server.stdout.readline().strip()  # type: ignore[union-attr]
        judge = rt.Judge(model=MODEL, api_base=url, api_key="sk-bench")
        kw = dict(model=judge, id_column="id", path=tmp / "job", cache=tmp / "cache.sqlite")
        t0 = time.perf_counter()
        if args.slice_rows:
            job = rt.submit_batch(str(src), rubric, slice_rows=args.slice_rows, **kw)
        else:
            job = rt.submit_batch(pl.read_parquet(src), rubric, **kw)
        t_submit = time.perf_counter() - t0
        job.wait(poll_interval=0.05, progress=False)
        t1 = time.perf_counter()
        if args.slice_rows:
            lf = job.collect(output=tmp / "verdicts", progress=False)
            rows, cost = lf.select(pl.len(), pl.col("cost_usd").sum()).collect().row(0)
            batches = sum(len(j.rounds) for j in job.jobs)
        else:
            v = job.collect(progress=False)
            rows, cost, batches = v.height, v["cost_usd"].sum(), len(job.rounds)
        t_collect = time.perf_counter() - t1
        how = f"slices of {args.slice_rows:,} rows" if args.slice_rows else "one job"
        print(
            f"batch ({how}): {args.n:,} submissions x 3 criteria = {rows:,} requests in {batches} provider batches; "
            f"build + upload + create {t_submit:.1f} s ({rows / t_submit:,.0f} requests/s), download + verdicts "
            f"{t_collect:.1f} s ({rows / t_collect:,.0f} rows/s); cost at batch prices ${cost:.2f}; "
            f"client peak RSS {peak_rss_mb():,.0f} MB (the fake provider runs in another process)"
        )
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
