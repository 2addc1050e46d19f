"""A damaged run record is named, never silently skipped or mistaken for another run."""

from __future__ import annotations

import os

import polars as pl
import pytest

import rubrictools as rt

RUBRIC = rt.Rubric.from_dict([{"name": "greets", "requirement": "Says hello"}])
JUDGE = rt.ScriptedJudge(rule=lambda t, c: "MET" if "hello" in t else "UNMET")


def _two_runs(root) -> tuple[str, str]:
    df = pl.DataFrame({"submission": ["hello", "bye"]})
    rt.grade(df, RUBRIC, model=JUDGE, progress=False, record=root)
    rt.grade(df.head(1), RUBRIC, model=JUDGE, progress=False, record=root)
    older, newer = rt.runs(root)["id"].to_list()
    os.utime(root / older, (1_000_000, 1_000_000))  # folder ages set, not left to the clock
    os.utime(root / newer, (2_000_000, 2_000_000))
    return older, newer


def test_a_truncated_record_is_named_by_runs_and_load_run(tmp_path) -> None:
    older, newer = _two_runs(tmp_path)
    manifest = tmp_path / newer / "run.json"
    manifest.write_text(manifest.read_text()[:40])  # a crash or a full disk mid-write
    os.utime(tmp_path / newer, (2_000_000, 2_000_000))
    with pytest.warns(UserWarning, match=rf"1 run record\(s\) could not be read .*{newer}/run.json \(JSONDecodeError"):
        listed = rt.runs(tmp_path)
    assert listed["id"].to_list() == [older]
    with pytest.raises(LookupError, match=rf"run '{newer}': its record .*run.json is damaged \(JSONDecodeError"):
        rt.load_run(newer, root=tmp_path)
    with pytest.warns(UserWarning, match=rf"newest record .*{newer}/run.json is damaged; returning '{older}'"):
        assert rt.load_run("last", root=tmp_path).id == older


def test_a_manifest_without_its_fields_is_damaged_too(tmp_path) -> None:
    _, newer = _two_runs(tmp_path)
    (tmp_path / newer / "run.json").write_text('{"kind": "grade"}')
    with pytest.warns(UserWarning, match="not a run manifest"):
        assert rt.runs(tmp_path).height == 1


def test_a_record_missing_its_tables_is_named(tmp_path) -> None:
    _, newer = _two_runs(tmp_path)
    (tmp_path / newer / "verdicts.parquet").unlink()
    with pytest.warns(UserWarning, match=r"verdicts.parquet missing"):
        assert rt.runs(tmp_path).height == 1
    with pytest.raises(LookupError, match=rf"run '{newer}': its record .* is damaged .*verdicts.parquet missing"):
        rt.load_run(newer, root=tmp_path)


def test_a_truncated_table_is_named(tmp_path) -> None:
    _, newer = _two_runs(tmp_path)
    table = tmp_path / newer / "verdicts.parquet"
    table.write_bytes(table.read_bytes()[:50])
    with pytest.raises(LookupError, match=rf"run '{newer}': its record's verdicts.parquet cannot be read"):
        rt.load_run(newer, root=tmp_path)


def test_a_store_that_does_not_exist_says_so(tmp_path) -> None:
    with pytest.warns(UserWarning, match="no run store at .*nope"):
        assert rt.runs(tmp_path / "nope").height == 0
