"""Faults and a rate-limit storm: no answer lost, and few requests while the provider is down.

Grades N submissions x 1 criterion against the loopback fake provider (direct transport,
defaults otherwise) while a provider-wide 429 storm (every request answered 429 with
``Retry-After``) lasts ``--storm`` seconds, starting after ``--storm-at`` seconds; 1% of the
other requests fail with a 500 and 1% with a garbled 200 body. Prints calls, HTTP requests,
error rows, rows lost (verdict rows missing from the table: must be 0) and the requests made
during the storm, with the shared gate on (rubrictools now) and off (every call backs off
alone and 429s count against ``max_retries``, as in 0.1: ``Judge(shared_backoff=False)``).

Run: python benchmarks/faults.py [--n 20000 --storm 10 --storm-at 2]
"""

from __future__ import annotations

import argparse
import os
import random
import threading
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import polars as pl

import rubrictools as rt
from rubrictools.testing import FakeLLMServer, Reply, default_script


def run(n: int, storm: float, storm_at: float, gate: bool, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    rubric = rt.Rubric.from_dict([{"name": "good", "requirement": "The answer is good"}])
    df = pl.DataFrame({"id": list(range(n)), "submission": [f"answer {i} good" for i in range(n)]})

    def script(req):  # 1% 500s and 1% garbled bodies outside the storm
        r = rng.random()
        if r < 0.01:
            return Reply(status=500)
        if r < 0.02:
            return Reply(status=200, body='{"choices": [')
        return default_script(req)

    with FakeLLMServer(script, latency=0.002) as srv:
        timer = threading.Timer(storm_at, lambda: srv.storm(storm, retry_after=1.0))
        timer.start()
        t0 = time.perf_counter()
        judge = rt.Judge(
            model="openai/gpt-4.1-mini",
            api_base=srv.url,
            api_key="sk-fake",
            transport="direct",
            max_concurrency=64,
            shared_backoff=gate,
        )
        v = rt.grade(df, rubric, model=judge, id_column="id", cache=False, progress=False, record=False)
        wall = time.perf_counter() - t0
        timer.cancel()
        storm_requests = srv.storm_requests
        hits = srv.hits
    return {
        "calls": n,
        "requests": hits,
        "error_rows": int(v["error"].is_not_null().sum()),
        "rows_lost": n - v.height,
        "requests_during_storm": storm_requests,
        "wall_s": wall,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--storm", type=float, default=10.0)
    ap.add_argument("--storm-at", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    print(
        f"{a.n:,} calls, direct transport, concurrency 64, max_retries 3; 1% 500s, 1% garbled 200s; "
        f"a {a.storm:g} s provider-wide 429 storm (Retry-After 1 s) from t = {a.storm_at:g} s"
    )
    for gate in (False, True):
        r = run(a.n, a.storm, a.storm_at, gate, a.seed)
        name = "shared gate (now)" if gate else "each call alone (0.1)"
        print(
            f"  {name:24s} requests {r['requests']:>7,}  error rows {r['error_rows']:>5,}  rows lost {r['rows_lost']}  "
            f"requests during the storm {r['requests_during_storm']:>6,}  wall {r['wall_s']:.1f} s"
        )


if __name__ == "__main__":
    main()
