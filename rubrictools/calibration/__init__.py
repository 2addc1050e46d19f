"""Judge calibration: predict what people would say from the judge's answer distributions.

Inputs are tidy tables:

* ``distributions``: the judge's probability for every allowed label,
  ``id, criterion, label, prob`` (one row per label; rows of one (id, criterion) are
  normalised to sum to 1);
* ``human``: the long label table ``id, criterion, rater, label`` (as for
  :func:`rubrictools.agreement`).

Models:

* ``"multinomial"`` (LLM-Rubric style, Hashemi et al. 2024): a softmax over the target's
  labels whose input is the concatenation of the judge's distributions on *all* criteria,
  with shared weights plus rater-specific deviations,
  ``logits = x (W + W_r)^T + b + b_r``, fitted by L-BFGS on the mean cross-entropy with L2
  penalties ``l2 |W|^2`` and ``l2_rater (|W_r|^2 + |b_r|^2)``. Predictions are per rater, or
  for the "average rater" (shared parameters only). ``init=`` a fitted calibrator fine-tunes
  it on new data, penalising ``anchor |W - W_0|^2``.
* ``"platt"`` / ``"isotonic"`` (binary targets): map the judge's probability of the positive
  label on the target criterion to a calibrated probability (logistic fit on the logit, or
  the pool-adjacent-violators monotone fit).

Evaluation: :func:`cross_validate` (by submission; ``tune=True`` chooses the penalties by
a nested search with :func:`tune`) and :func:`evaluate` (a fitted calibrator on another
set), both next to the judge's uncalibrated baselines.

>>> import polars as pl
>>> probs = [0.9, 0.1, 0.4, 0.6]
>>> d = pl.DataFrame({"id": [1, 1, 2, 2], "criterion": "q", "label": ["MET", "UNMET"] * 2, "prob": probs})
>>> h = pl.DataFrame({"id": [1, 2], "criterion": "q", "rater": "a", "label": ["MET", "UNMET"]})
>>> cal = fit(d, h, target="q", model="platt")
>>> cal.predict(d)["p_MET"].round(2).to_list()
[1.0, 0.01]
"""

from __future__ import annotations

from rubrictools.calibration.evaluation import DEFAULT_GRID, REPORT_METRICS, cross_validate, evaluate, tune
from rubrictools.calibration.fitting import fit
from rubrictools.calibration.model import Calibrator, distributions_from_verdicts, load, predict

__all__ = [
    "DEFAULT_GRID",
    "REPORT_METRICS",
    "Calibrator",
    "cross_validate",
    "distributions_from_verdicts",
    "evaluate",
    "fit",
    "load",
    "predict",
    "tune",
]
