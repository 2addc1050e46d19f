"""Median wall time of `python -c "import X"` for rubrictools and the peer libraries.

Run: python benchmarks/import_time.py [--runs 7]
Target (issue 3): rubrictools under 0.3 s on this machine.
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


if __name__ == "__main__":
    main()
