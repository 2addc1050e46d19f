"""Time `rt.score` on a large verdict table.

Run: python benchmarks/score_speed.py [--rows 1000000]
Target (issue 3): 1,000,000 verdict rows scored in under 2 s.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import polars as pl

import rubrictools as rt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rubric = rt.Rubric.from_dict(
        [
            {"name": "a", "weight": 10, "requirement": "x"},
            {"name": "b", "weight": 5, "requirement": "y"},
            {"name": "c", "weight": -15, "requirement": "z"},
            {
                "name": "d",
                "weight": 4,
                "requirement": "w",
                "options": [
                    {"label": "lo", "value": 0},
                    {"label": "mid", "value": 0.5},
                    {"label": "hi", "value": 1},
                    {"label": "n/a", "na": True},
                ],
            },
            {"name": "e", "weight": 2, "requirement": "v"},
        ]
    )
    k = len(rubric)
    n = args.rows // k
    rng = np.random.default_rng(0)
    binary = np.array(["MET", "UNMET", "CANNOT_ASSESS"])
    opts = np.array(["lo", "mid", "hi", "n/a"])
    cols = []
    for name in rubric.names:
        labels = opts[rng.integers(0, 4, n)] if name == "d" else binary[rng.choice(3, n, p=[0.5, 0.45, 0.05])]
        cols.append(labels)
    verdicts = pl.DataFrame(
        {
            "id": np.repeat(np.arange(n), k),
            "criterion": np.tile(np.array(rubric.names), n),
            "verdict": np.stack(cols, axis=1).reshape(-1),
        }
    )
    print(f"verdict rows: {verdicts.height:,} ({n:,} submissions x {k} criteria)")
    best = float("inf")
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        out = rt.score(verdicts, rubric)
        best = min(best, time.perf_counter() - t0)
    print(
        f"rt.score: best of {args.repeats}: {best:.3f} s  ({verdicts.height / best / 1e6:.2f} M rows/s); "
        f"mean score {out['score'].mean():.4f}"
    )
    pre = rt.validate_verdicts(verdicts, rubric)
    t0 = time.perf_counter()
    rt.score(pre.drop("worst_value"))
    print(f"rt.score on a completed table (weights from the table): {time.perf_counter() - t0:.3f} s")


if __name__ == "__main__":
    main()
