"""Prediction-powered estimates on 10,000 items x 5 criteria (200 human labels per criterion):
`rt.ppi_estimate` (CLT, tuned lambda) next to `ppi_py.ppi_mean_ci` called per criterion on
the same arrays (the reference implementation; it starts from arrays, so its time excludes
aligning the tables). Target: under 0.5 s without bootstrap.

Run: python benchmarks/ppi_speed.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import polars as pl

import rubrictools as rt


def tables(n_items: int = 10_000, criteria: int = 5, n_labels: int = 200) -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(0)
    v, h = [], []
    for k in range(criteria):
        truth = rng.random(n_items) < 0.3 + 0.1 * k
        judge = np.where(rng.random(n_items) < 0.8, truth, rng.random(n_items) < 0.6)
        v.append(
            pl.DataFrame({"id": np.arange(n_items), "criterion": f"c{k}", "verdict": np.where(judge, "MET", "UNMET")})
        )
        picked = rng.choice(n_items, n_labels, replace=False)
        h.append(pl.DataFrame({"id": picked, "criterion": f"c{k}", "label": np.where(truth[picked], "MET", "UNMET")}))
    return pl.concat(v), pl.concat(h)


def main() -> None:
    verdicts, human = tables()
    rt.ppi_estimate(verdicts.head(2000), human.filter(pl.col("id") < 2000))  # warm up
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        out = rt.ppi_estimate(verdicts, human)
        times.append(time.perf_counter() - t0)
    print(
        f"rt.ppi_estimate, 10,000 items x 5 criteria, CLT: median {np.median(times):.3f} s over 5 runs "
        f"(median width ratio PPI/classical {out['width_ratio'].median():.2f})"
    )
    import ppi_py

    arrays = []
    for _criterion, part in verdicts.join(human, on=["id", "criterion"], how="left").group_by("criterion"):
        f = (part["verdict"] == "MET").cast(pl.Float64).to_numpy()
        lab = part["label"].is_not_null().to_numpy()
        y = (part["label"] == "MET").cast(pl.Float64).to_numpy()
        arrays.append((y[lab], f[lab], f[~lab]))
    t0 = time.perf_counter()
    for y, f, f_u in arrays:
        ppi_py.ppi_mean_ci(y, f, f_u, alpha=0.05)
    print(f"ppi_py.ppi_mean_ci on the same 5 criteria (arrays ready): {time.perf_counter() - t0:.3f} s")
    t0 = time.perf_counter()
    rt.ppi_estimate(verdicts, human, method="bootstrap", n_boot=1000)
    print(f"rt.ppi_estimate with 1,000 bootstrap resamples: {time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    main()
