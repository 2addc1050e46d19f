"""How well does the judge agree with people, and people with each other? With honest intervals.

* :func:`agreement` joins a verdict table with human labels and returns one row per group
  (criterion, by default) and metric, with a cluster-bootstrap interval;
* :func:`inter_rater` measures agreement among several human raters (the ceiling a judge
  can be expected to reach);
* :func:`labels_from_wide` turns a wide label sheet (a column per rater and criterion) into
  the long table the others read;
* :func:`judge_kappas` gives Cohen's kappa between every pair of judges (weighted for
  ordinal criteria);
* :func:`compare` bootstraps the difference of a metric between two judges (or rubrics)
  on the same items, with an interval and a p-value.

Human labels are a long DataFrame ``id, criterion, label[, rater]``. Labels are matched to
the rubric's options case- and space-insensitively; without a rubric they are read as
binary (MET/UNMET), numeric (ordinal, e.g. 1-5 ratings) or nominal strings.

All three share one resampling plan (:mod:`~rubrictools.human_agreement.estimate`): submissions
(``id``) are drawn with replacement (optionally within strata), the same draws serve every
criterion and metric, and metrics are evaluated from sufficient statistics for all resamples
at once (:mod:`rubrictools.metrics.resampling`). Modules, in pipeline order: ``labels`` ->
``pairs`` -> ``kernels`` -> ``estimate`` -> ``judge`` / ``raters`` / ``compare``.
"""

from __future__ import annotations

from rubrictools.human_agreement.catalog import CRITERION_METRICS, INTER_RATER_METRICS, SCORE, SCORE_METRICS
from rubrictools.human_agreement.comparison import compare
from rubrictools.human_agreement.judge import agreement
from rubrictools.human_agreement.judge_pairs import judge_kappas
from rubrictools.human_agreement.labels import human_frame
from rubrictools.human_agreement.pairs import criterion_pairs, score_pairs
from rubrictools.human_agreement.raters import inter_rater
from rubrictools.human_agreement.wide import labels_from_wide

__all__ = [
    "CRITERION_METRICS",
    "INTER_RATER_METRICS",
    "SCORE",
    "SCORE_METRICS",
    "agreement",
    "compare",
    "criterion_pairs",
    "human_frame",
    "inter_rater",
    "judge_kappas",
    "labels_from_wide",
    "score_pairs",
]
