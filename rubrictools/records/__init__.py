"""Run records: what produced a verdict table, kept beside the table.

Every ``rt.grade`` / ``rt.agrade`` / ``rt.grade_pairs`` call records a run (``record=False``
turns it off): an id, when it ran and for how long, the rubric (content and hash), each
judge's settings (never a key), the prompt template version and a hash of every request sent,
package versions, counts, tokens, cost, the inputs and the verdict table. :func:`runs` lists
them as a DataFrame, :func:`load_run` gives one back, :func:`rubrictools.rerun` grades its
inputs again with its settings (the response cache answers: no call repeated), and
:func:`rubrictools.compare_runs` compares two.

Where: ``record=True`` writes under ``$RUBRICTOOLS_RUNS`` when set, else
``./rubrictools-runs`` (the project folder); ``record="some/dir"`` writes there.

Storage: one folder per run holding ``run.json`` (the manifest), ``verdicts.parquet`` and
``inputs.parquet``. Plain files rather than SQLite or DuckDB: polars reads them directly
(``pl.scan_parquet("rubrictools-runs/*/verdicts.parquet")``), nothing else needs installing,
a run is deleted or shared by moving its folder, and a record appears atomically: it is
written in a hidden ``.tmp-<id>`` folder that is renamed into place only when complete, so
a killed run leaves no half-written record in the list.
"""

from __future__ import annotations

from rubrictools.records.store import RUNS_ENV, Run, load_run, runs, runs_dir, write_run

__all__ = ["RUNS_ENV", "Run", "load_run", "runs", "runs_dir", "write_run"]
