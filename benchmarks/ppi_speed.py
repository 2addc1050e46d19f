"""Prediction-powered estimates on 10,000 items x 5 criteria (200 human labels per criterion) and on
200,000 items x 1 and 5 criteria (1,000 labels each): `rt.ppi_estimate` (CLT, tuned lambda) next to
`ppi_py.ppi_mean_ci` called per criterion,
starting from the same two tables (the join and the arrays included, as a user of ppi-python
would do it). Medians of 7 runs with their range.

Run: python benchmarks/ppi_speed.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import polars as pl
from timing import timed  # a sibling script: benchmarks/ is on sys.path when this runs

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


def ppi_python_from_tables(verdicts: pl.DataFrame, human: pl.DataFrame) -> list[tuple[float, float]]:
    """ppi-python's ``ppi_mean_ci`` per criterion, starting from the same two tables: the join
    and the arrays it needs, then the reference implementation."""
    import ppi_py

    out = []
    for _criterion, part in verdicts.join(human, on=["id", "criterion"], how="left").group_by("criterion"):
        f = (part["verdict"] == "MET").cast(pl.Float64).to_numpy()
        lab = part["label"].is_not_null().to_numpy()
        y = (part["label"] == "MET").cast(pl.Float64).to_numpy()
        out.append(ppi_py.ppi_mean_ci(y[lab], f[lab], f[~lab], alpha=0.05))
    return out


def side_by_side(n_items: int, criteria: int, n_labels: int) -> None:
    """Ours and ppi-python's from the same two tables, medians of 7 runs with their range."""
    verdicts, human = tables(n_items, criteria, n_labels)
    out = rt.ppi_estimate(verdicts, human)  # warm up
    ours = timed(lambda: rt.ppi_estimate(verdicts, human), runs=7)
    size = f"{n_items:,} items x {criteria} criteri{'on' if criteria == 1 else 'a'}, {n_labels:,} labels each"
    print(
        f"{size}: rt.ppi_estimate (CLT) median {ours[0] * 1000:.1f} ms ({ours[1] * 1000:.1f}-{ours[2] * 1000:.1f}; "
        f"median width ratio PPI/classical {out['width_ratio'].median():.2f})"
    )
    try:
        import ppi_py  # noqa: F401  # the peer is optional
    except ImportError:
        print("  ppi-python not installed (the [peers] extra)")
        return
    peer = timed(lambda: ppi_python_from_tables(verdicts, human), runs=7)
    print(
        f"  ppi_py.ppi_mean_ci per criterion, from the same tables (join included): median {peer[0] * 1000:.1f} ms "
        f"({peer[1] * 1000:.1f}-{peer[2] * 1000:.1f}); ppi-python takes {peer[0] / ours[0]:.2f}x our time"
    )


def main() -> None:
    side_by_side(10_000, 5, 200)
    side_by_side(200_000, 1, 1_000)
    side_by_side(200_000, 5, 1_000)
    verdicts, human = tables()
    boot = timed(lambda: rt.ppi_estimate(verdicts, human, method="bootstrap", n_resamples=1000), runs=3)
    print(
        f"rt.ppi_estimate on 10,000 items x 5 criteria with 1,000 bootstrap resamples: "
        f"median {boot[0]:.2f} s ({boot[1]:.2f}-{boot[2]:.2f})"
    )


if __name__ == "__main__":
    main()
