"""LLM-Rubric calibration experiment: what rubrictools' calibrator reaches under cross-validation.

Target: overall satisfaction (Q0) of the real dialogues (223 ratings, 13 judges). Inputs:
GPT-3.5's answer distributions on all 9 rubric questions. 10-fold cross-validation by
dialogue; baselines are the judge's own Q0 distribution (expected value, argmax). Also the
same with pre-training on the synthetic dialogues (662 ratings, 24 judges) and fine-tuning,
and with the rater penalty chosen by a 5-fold inner CV inside each training fold (nested).
``rmse_affine`` is each method's RMSE floor, ``s * sqrt(1 - r^2)``: no rescaling of its
predictions does better. The repository's own synthetic-to-real protocol is in
``llm_rubric_protocol.py``.

    python benchmarks/calibration.py
"""

from __future__ import annotations

import time

import numpy as np
import polars as pl

import rubrictools as rt

PAPER = "LLM-Rubric paper (Hashemi et al. 2024): calibrated RMSE < 0.5 on real data"


def main() -> None:
    real = rt.datasets.load("llm_rubric_real")
    syn = rt.datasets.load("llm_rubric_synth")
    rows = []
    runs = (
        ("real only", None, False),
        ("pre-trained on synthetic", (syn.tables["distributions"], syn.human), False),
        ("real only, penalty tuned by nested CV", None, True),
    )
    for label, pretrain, tune in runs:
        t0 = time.perf_counter()
        metrics, _ = rt.calibrate.cross_validate(
            real.tables["distributions"],
            real.human,
            target="Q0",
            folds=10,
            seed=0,
            n_resamples=1000,
            pretrain=pretrain,
            tune=tune,
        )
        dt = time.perf_counter() - t0
        for r in metrics.iter_rows(named=True):
            if r["method"] == "calibrated" or label == "real only":
                name = f"calibrated ({label})" if r["method"] == "calibrated" else f"baseline: {r['method']}"
                rows.append({"method": name, "metric": r["metric"], "value": r["value"]})
        print(f"{label}: 10-fold CV with 1,000-resample CIs in {dt:.1f} s")
    table = pl.DataFrame(rows).pivot(on="metric", index="method", values="value")
    with pl.Config(tbl_rows=20, tbl_cols=10, float_precision=4, fmt_str_lengths=50, tbl_width_chars=140):
        print(table)
    s = float(real.human.filter(pl.col("criterion") == "Q0")["label"].to_numpy().std())
    print(f"{PAPER}; on these ratings (sd {s:.4f}) that needs Pearson >= {np.sqrt(1 - 0.25 / s**2):.3f}")


if __name__ == "__main__":
    main()
