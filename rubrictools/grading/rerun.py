"""`rerun`: grade a recorded run's inputs again, with its recorded rubric, judges and options."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from rubrictools.grading.api import grade
from rubrictools.grading.options import PAIR_OPTIONS, SINGLE_OPTIONS, CacheSetting
from rubrictools.grading.pair_api import grade_pairs
from rubrictools.judge import Judge
from rubrictools.records import Run, load_run
from rubrictools.rubric import Rubric

__all__ = ["rerun"]


def _judges(run: Run, api_key: str | None) -> list[Judge]:
    settings = run.info.get("judges", [])
    scripted = [j["label"] for j in settings if j.get("scripted") or j.get("custom")]
    if scripted:
        raise ValueError(
            f"run {run.id} was graded by scripted or custom judges {scripted}, whose rules are Python code a "
            "record cannot keep: pass model= to rerun it"
        )
    key = {"api_key": api_key} if api_key is not None else {}
    return [Judge.model_validate({**{k: v for k, v in j.items() if k != "label"}, **key}) for j in settings]


def rerun(
    run: str | Run,
    *,
    root: str | Path | None = None,
    model: Any = None,
    api_key: str | None = None,
    cache: CacheSetting = True,
    progress: bool = True,
    record: bool | str | Path = True,
) -> pl.DataFrame:
    """Grade a recorded run again: its inputs, rubric, few-shot examples, options and judges.

    With the response cache that answered the run, nothing is asked again: the same
    requests have the same keys. A pairwise run is graded again with
    :func:`rubrictools.grade_pairs`.

    Parameters
    ----------
    run
        A :class:`~rubrictools.records.Run`, or a run id (or a unique prefix, or ``"last"``) in
        the store at ``root``.
    root
        The run store to look ``run`` up in (``None``: where ``record=True`` writes,
        ``$RUBRICTOOLS_RUNS`` or ``./rubrictools-runs``).
    model
        Judges that replace the recorded ones (required for a run graded by a scripted or
        custom judge). ``None``: the judges are rebuilt from their recorded settings.
    api_key
        The key of the rebuilt judges (``None``: the provider's environment variable), as it
        was never recorded.
    cache, progress
        As in :func:`rubrictools.grade`: the response cache (``True``: the default one) and a
        progress bar.
    record
        Record the new grading as a new run (``True``: the default store; a folder path; or
        ``False``).

    Returns
    -------
    polars.DataFrame
        The new verdict table (a preference table for a pairwise run).

    Example
    -------
    >>> import tempfile, polars as pl, rubrictools as rt
    >>> store = tempfile.mkdtemp()
    >>> rubric = rt.Rubric.from_dict([{"name": "greets", "requirement": "Says hello"}])
    >>> v = rt.grade(pl.DataFrame({"submission": ["hello"]}), rubric, model=rt.ScriptedJudge(), progress=False,
    ...              record=store)
    >>> again = rt.rerun("last", root=store, model=rt.ScriptedJudge(), progress=False, record=store)
    >>> again["verdict"].to_list(), rt.runs(store).height
    (['MET'], 2)
    """
    r = run if isinstance(run, Run) else load_run(run, root=root)
    settings = dict(r.info["settings"])
    judges = model if model is not None else _judges(r, api_key)
    rubric = Rubric.from_dict(r.rubric) if r.rubric is not None else None
    common: dict[str, Any] = {"model": judges, "cache": cache, "progress": progress, "record": record}
    if r.info.get("kind") == "grade_pairs":
        pair = {k: settings.pop(k) for k in PAIR_OPTIONS}
        systems = tuple(pair["systems"]) if pair["systems"] is not None else None
        for unused in SINGLE_OPTIONS:
            settings.pop(unused, None)
        a, b = settings.pop("column"), pair["pair_column"]
        out = grade_pairs(
            r.inputs,
            rubric,
            a=a,
            b=b,
            systems=systems,
            swap=pair["swap"],
            inconsistent=pair["inconsistent"],
            ties=pair["ties"],
            **settings,
            **common,
        )
        assert isinstance(out, pl.DataFrame)
        return out
    for name in PAIR_OPTIONS:
        settings.pop(name, None)
    return grade(r.inputs, rubric, examples=r.examples, **settings, **common)
