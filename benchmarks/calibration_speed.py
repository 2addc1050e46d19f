"""Nested cross-validation of a calibrator: rubrictools beside scikit-learn on the same design.

Data: LLM-Rubric's real dialogues (223 Q0 ratings, 13 raters, GPT-3.5's distributions on 9
questions: 36 inputs). Workload, as notebook 06's ``cross_validate(tune=True)``: 10 outer
folds, in each a 5-fold inner search over 5 penalties, then a refit: 260 fits.

* rubrictools: ``rt.calibrate.cross_validate(..., tune=True)``: softmax over the 4 labels
  on ``[x, x per rater, rater]`` (518 columns), the shared and per-rater weights penalised
  apart, L-BFGS.
* scikit-learn: ``cross_val_predict(GridSearchCV(LogisticRegression(lbfgs), C grid, cv=5),
  cv=10)`` on the same 518 columns (one penalty on every weight: the nearest model it has).

The nested rows are the notebook's workload, not one objective: rubrictools' shared penalty
(1e-3) is weaker than the tuned per-rater one, which takes L-BFGS about twice the steps of
scikit-learn's single penalty at its looser default tolerance. The "same objective" rows fit
one penalty on every weight, ``a |w|^2`` (``l2 = l2_rater = a``; scikit-learn's ``C = 1 / (2
n a)``), to the same gradient tolerance, 10 folds for each of 5 values: like for like.
Both with one BLAS thread (the matrices are small). Median of 3 runs, with min-max.

    python benchmarks/calibration_speed.py [runs]
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import polars as pl
from threadpoolctl import threadpool_limits
from timing import timed

import rubrictools as rt
from rubrictools.calibration.fitting import examples


def _sklearn_design() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    real = rt.datasets.load("llm_rubric_real")
    ex = examples(real.tables["distributions"], real.human, target="Q0")
    raters = sorted(set(ex.rater.tolist()))
    r = np.array([raters.index(v) for v in ex.rater])
    n, d = ex.x.shape
    per_rater = np.zeros((n, len(raters) * d))
    for j in range(len(raters)):
        per_rater[r == j, j * d : (j + 1) * d] = ex.x[r == j]
    design = np.hstack([ex.x, per_rater, np.eye(len(raters))[r]])
    ids = ex.table["id"].to_numpy()
    return design, ex.label.astype(str), ids


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV, GroupKFold, cross_val_predict

    real = rt.datasets.load("llm_rubric_real")
    d, h = real.tables["distributions"], real.human
    x, y, ids = _sklearn_design()

    grid = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
    folds = GroupKFold(10)

    def ours_nested() -> None:
        rt.calibrate.cross_validate(d, h, target="Q0", folds=10, seed=0, n_resamples=0, tune=True, progress=False)

    def ours_nested_workers() -> None:
        rt.calibrate.cross_validate(
            d, h, target="Q0", folds=10, seed=0, n_resamples=0, tune=True, progress=False, n_jobs=-1
        )

    def sklearn_nested_workers() -> None:
        inner = GridSearchCV(
            LogisticRegression(max_iter=500), {"C": [1 / (2 * len(y) * a) for a in grid]}, cv=5, scoring="neg_log_loss"
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            cross_val_predict(inner, x, y, cv=folds, groups=ids, method="predict_proba", n_jobs=-1)

    def sklearn_nested() -> None:
        inner = GridSearchCV(
            LogisticRegression(max_iter=500), {"C": [1 / (2 * len(y) * a) for a in grid]}, cv=5, scoring="neg_log_loss"
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            cross_val_predict(inner, x, y, cv=folds, groups=ids, method="predict_proba")

    def ours_same() -> None:
        for a in grid:
            rt.calibrate.cross_validate(
                d, h, target="Q0", folds=10, seed=0, n_resamples=0, l2=a, l2_rater=a, progress=False
            )

    def sklearn_same() -> None:
        for a in grid:  # sklearn's penalty |w|^2 / (2 C n) is a |w|^2 at C = 1 / (2 n a); gtol = tol
            model = LogisticRegression(C=1 / (2 * len(y) * a), tol=1e-5, max_iter=500)
            cross_val_predict(model, x, y, cv=folds, groups=ids, method="predict_proba")

    work = (
        ("nested (notebook 06): rubrictools, l2=1e-3 shared, l2_rater tuned", ours_nested),
        ("nested: scikit-learn GridSearchCV over C (one penalty, tol 1e-4)", sklearn_nested),
        ("same objective and gtol 1e-5, 10 folds x 5 penalties: rubrictools", ours_same),
        ("same objective and gtol 1e-5, 10 folds x 5 penalties: scikit-learn", sklearn_same),
    )
    parallel = (
        ("nested, n_jobs=-1 (one worker process per CPU, workers warm): rubrictools", ours_nested_workers),
        ("nested, n_jobs=-1 (one worker process per CPU, workers warm): scikit-learn", sklearn_nested_workers),
    )
    rows = []
    with threadpool_limits(limits=1, user_api="blas"):
        for name, run in work:
            med, lo, hi = timed(run, runs)
            rows.append({"what": name, "median s": round(med, 2), "min s": round(lo, 2), "max s": round(hi, 2)})
    for name, run in parallel:
        run()  # start the workers (both use joblib's reusable pool): the figure is the work, not their start
        med, lo, hi = timed(run, runs)
        rows.append({"what": name, "median s": round(med, 2), "min s": round(lo, 2), "max s": round(hi, 2)})
    with pl.Config(fmt_str_lengths=80, tbl_width_chars=140):
        print(pl.DataFrame(rows))
    print(f"nested, scikit-learn / rubrictools: {rows[1]['median s'] / rows[0]['median s']:.2f}x")
    print(f"same objective, scikit-learn / rubrictools: {rows[3]['median s'] / rows[2]['median s']:.2f}x")
    print(f"nested with worker processes, scikit-learn / rubrictools: {rows[5]['median s'] / rows[4]['median s']:.2f}x")


if __name__ == "__main__":
    main()
