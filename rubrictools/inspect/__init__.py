"""Inspect AI interop (the ``[inspect]`` extra): rubrics as Inspect scorers, Inspect logs as tables.

- :func:`rubric_scorer`: an Inspect ``Scorer`` that grades each sample with rubrictools' judges
  (cache, retries, budget) and records every criterion's verdict in the log;
- :func:`read_log`: Inspect eval logs (``.eval`` or ``.json``, files, folders or ``EvalLog``
  objects) as one table, a row per sample x scorer, for leaderboards and run comparisons;
- :func:`read_verdicts`: the per-criterion verdicts :func:`rubric_scorer` recorded, as a
  verdict table for :func:`rubrictools.score`, :func:`rubrictools.agreement` and
  :func:`rubrictools.ppi_estimate`;
- :func:`read_rubric`: the rubric a :func:`rubric_scorer` graded with, as the log recorded it.

Inspect AI is imported only when one of these runs.
"""

from __future__ import annotations

from rubrictools.inspect.logs import read_log, read_rubric, read_verdicts
from rubrictools.inspect.scorer import rubric_scorer

__all__ = ["read_log", "read_rubric", "read_verdicts", "rubric_scorer"]
