"""Median wall time of `python -c "import X"` for rubrictools and the peer libraries, and of a
fresh process that grades 2 rows against a local OpenAI-compatible server.

Run: python benchmarks/import_time.py [--runs 7]
Targets: `import rubrictools` under 0.3 s (issue 3); a cold grade on a local server under 1 s,
with no litellm module imported (issue 37). The cold grade runs against the loopback fake
server started in the same process; "through litellm" is the same grade with
`transport="litellm"`, which needs litellm's import, as every call through litellm does.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import time


def median_import_time(module: str, runs: int, code: str | None = None) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code or f"import {module}"], check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


COLD_GRADE = """
import sys, polars as pl, rubrictools as rt
from rubrictools.testing import FakeLLMServer
with FakeLLMServer() as srv:
    judge = rt.Judge(model=sys.argv[2], api_base=srv.url, api_key="sk-local", transport=sys.argv[1])
    v = rt.grade(pl.DataFrame({"a": ["good", "bad"]}), rt.Rubric.from_dict([{"name": "x", "requirement": "good?"}]),
                 column="a", model=judge, progress=False, cache=False, record=False)
assert v["error"].null_count() == 2
print(any(m == "litellm" or m.startswith("litellm.") for m in sys.modules))
"""


def cold_grade(transport: str, runs: int, model: str) -> tuple[list[float], str]:
    times, loaded = [], ""
    for _ in range(runs):
        t0 = time.perf_counter()
        cmd = [sys.executable, "-c", COLD_GRADE, transport, model]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        loaded = out.stdout.strip()
    return sorted(times), loaded


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    baseline = median_import_time("sys", args.runs)
    print(f"python startup (import sys)     {baseline:7.3f} s")
    for mod in ["rubrictools", "rubric", "autorubric", "litellm"]:
        if importlib.util.find_spec(mod) is None:
            print(f"import {mod:<24} (not installed)")
            continue
        t = median_import_time(mod, args.runs)
        print(f"import {mod:<24} {t:7.3f} s  (median of {args.runs})")
    # What a first cell really pays: the rubric model and scoring (pydantic + polars).
    t = median_import_time("", args.runs, "import rubrictools as rt; rt.Rubric; rt.score")
    print(f"import rubrictools + Rubric + score {t:5.3f} s  (loads pydantic and polars; still no litellm)")
    # an unpriced local model name, and a priced one (its price read from litellm's bundled table)
    for model, transport in (
        ("openai/smollm2", "auto"),
        ("openai/gpt-4.1-mini", "auto"),
        ("openai/smollm2", "litellm"),
    ):
        times, loaded = cold_grade(transport, args.runs, model)
        print(
            f"cold grade, 2 rows, {model:<20} transport={transport!r:<9} {statistics.median(times):6.3f} s "
            f"(median of {args.runs}, {times[0]:.3f}-{times[-1]:.3f}); litellm imported: {loaded}"
        )


if __name__ == "__main__":
    main()
