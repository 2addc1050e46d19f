"""Run records: written by grade/grade_pairs, listed, loaded, re-made from the cache with no call."""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.records import store

from ..fake_server import judge_from
from .test_grading import MODEL, SECRET, df, rubric, server  # noqa: F401 - shared fixtures


def _grade(df, rubric, server, tmp_path, **kw):
    kw = judge_from(
        {"model": MODEL, "cache": tmp_path / "c.sqlite", "progress": False, **kw}, api_base=server.url, api_key=SECRET
    )
    kw.setdefault("record", tmp_path / "runs")
    return rt.grade(df, rubric, column="text", id_column="qid", **kw)


def test_a_run_is_recorded_listed_and_loaded_without_its_key(df, rubric, server, tmp_path):
    v = _grade(df, rubric, server, tmp_path, temperature=0.3)
    listed = rt.runs(tmp_path / "runs")
    assert listed.height == 1
    row = listed.row(0, named=True)
    assert row["kind"] == "grade" and row["judges"] == [MODEL] and row["mode"] == "per_criterion"
    assert (row["rows"], row["submissions"], row["criteria"], row["errors"]) == (12, 4, 3, 0)
    assert row["prompt_tokens"] == v["prompt_tokens"].sum() and row["cost_usd"] == pytest.approx(v["cost_usd"].sum())
    run = rt.load_run(row["id"][:10], root=tmp_path / "runs")  # a unique prefix is enough
    assert run.verdicts.equals(v) and run.inputs.columns == ["qid", "text"]
    judge = run.info["judges"][0]
    assert judge["model"] == MODEL and judge["temperature"] == 0.3 and judge["api_base"] == server.url
    assert "api_key" not in judge and run.info["rubrics"] == [rubric.to_dict()]
    assert run.info["versions"]["rubrictools"] and run.info["prompt_template_version"] >= 1
    for path in Path(run.path).iterdir():  # the key is nowhere in the record
        assert SECRET.encode() not in path.read_bytes(), path
    assert SECRET not in repr(run)


def test_rerun_from_the_record_makes_no_call(df, rubric, server, tmp_path):
    _grade(df, rubric, server, tmp_path, mode="per_item")
    asked = len(server.requests)
    again = rt.rerun("last", root=tmp_path / "runs", api_key=SECRET, cache=tmp_path / "c.sqlite", progress=False,
                     record=tmp_path / "runs")  # fmt: skip
    assert len(server.requests) == asked and again["cached"].all()  # 0 calls
    first, second = (rt.load_run(i, root=tmp_path / "runs") for i in rt.runs(tmp_path / "runs")["id"])
    assert first.info["request_hash"] == second.info["request_hash"]
    assert second.info["settings"] == first.info["settings"] and second.verdicts["verdict"].equals(
        first.verdicts["verdict"]
    )


def test_record_off_and_a_store_that_cannot_be_written(df, rubric, server, tmp_path):
    _grade(df, rubric, server, tmp_path, record=False)
    assert not (tmp_path / "runs").exists()
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.warns(UserWarning, match="run record was not written"):
        v = _grade(df, rubric, server, tmp_path, record=blocker / "runs")
    assert v.height == 12  # the table is never lost to its record
    with pytest.raises(TypeError, match="record must be"):
        _grade(df, rubric, server, tmp_path, record=3)


def test_a_run_killed_while_its_record_is_written_is_not_listed(df, rubric, server, tmp_path, monkeypatch):
    real_replace = os.replace

    def killed(src, dst):  # the process dies between writing the files and publishing them
        raise KeyboardInterrupt

    monkeypatch.setattr(store.os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        _grade(df, rubric, server, tmp_path)
    monkeypatch.setattr(store.os, "replace", real_replace)
    assert rt.runs(tmp_path / "runs").height == 0 and not list((tmp_path / "runs").iterdir())
    # a SIGKILL leaves the hidden folder behind: still never listed, and the next run is
    (tmp_path / "runs" / ".tmp-20261125T000000-abcdef").mkdir()
    (tmp_path / "runs" / ".tmp-20261125T000000-abcdef" / "run.json").write_text(json.dumps({"id": "x"}))
    _grade(df, rubric, server, tmp_path)
    assert rt.runs(tmp_path / "runs").height == 1
    with pytest.raises(LookupError, match="no recorded run"):
        rt.load_run("last", root=tmp_path / "empty")
    with pytest.raises(LookupError, match="match 'zzz'"):
        rt.load_run("zzz", root=tmp_path / "runs")


def test_pairwise_runs_are_recorded_and_rerun(server, tmp_path):
    pairs = pl.DataFrame({"response_a": ["Sit, please.", "Sit."], "response_b": ["Sit.", "Sit, please."]})
    rub = rt.Rubric.from_dict([{"name": "polite", "requirement": "Says please"}])
    kw = {"cache": tmp_path / "c.sqlite", "progress": False, "record": tmp_path / "runs"}
    first = rt.grade_pairs(pairs, rub, model=rt.Judge(model=MODEL, api_base=server.url, api_key=SECRET), **kw)
    asked = len(server.requests)
    assert rt.runs(tmp_path / "runs")["kind"].to_list() == ["grade_pairs"]
    again = rt.rerun("last", root=tmp_path / "runs", api_key=SECRET, **kw)
    assert len(server.requests) == asked and again.select("id", "preferred").equals(first.select("id", "preferred"))


def test_a_scripted_run_needs_a_model_to_rerun(tmp_path):
    rub = rt.Rubric.from_dict([{"name": "a", "requirement": "Says hello"}])
    rt.grade(pl.DataFrame({"submission": ["hello"]}), rub, model=rt.ScriptedJudge(), progress=False,
             record=tmp_path)  # fmt: skip
    with pytest.raises(ValueError, match="pass model="):
        rt.rerun("last", root=tmp_path, progress=False)


def test_a_batch_job_is_recorded_when_collected(df, rubric, server, tmp_path):
    v = _grade(df, rubric, server, tmp_path, batch=True, batch_dir=tmp_path / "job", poll_interval=0.01)
    listed = rt.runs(tmp_path / "runs")
    assert listed.height == 1 and listed["rows"][0] == v.height == 12
    assert rt.load_run("last", root=tmp_path / "runs").verdicts.equals(v)


def test_a_job_collected_later_in_another_session_is_recorded_once(df, rubric, server, tmp_path):
    kw = {"model": rt.Judge(model=MODEL, api_base=server.url, api_key=SECRET), "cache": tmp_path / "c.sqlite"}
    job = rt.submit_batch(df, rubric, path=tmp_path / "job", column="text", progress=False, **kw)
    runs = tmp_path / "later-runs"
    assert rt.runs(runs).height == 0  # submitting records nothing: there is no verdict yet
    v = rt.collect_batch(tmp_path / "job", api_key=SECRET, poll_interval=0.01, progress=False, record=runs)
    listed = rt.runs(runs)
    assert listed.height == 1 and listed["rows"][0] == v.height and listed["kind"][0] == "grade"
    run = rt.load_run("last", root=runs)
    assert run.verdicts.equals(v) and run.info["created"] <= run.info["finished"]
    rt.collect_batch(job, poll_interval=0.01, progress=False, record=False)
    assert rt.runs(runs).height == 1
