"""A disk that fills while grading streams to parquet: no paid answer lost, in this process or
the next, and every error names the disk (issue 45)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.grading import streaming
from rubrictools.judge import CachedResponse, CacheWriteError, ResponseCache

from .test_grading import df, rubric, run, server  # noqa: F401 - shared fixtures

SCENARIO = Path(__file__).with_name("disk_full_scenario.py")


def _on_a_small_disk(tmp_path: Path, filler: int) -> list[dict]:
    """The scenario on a real 2 MiB tmpfs, mounted in a private mount namespace (skips where
    this machine allows none)."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) to mount a small tmpfs")
    disk = tmp_path / "disk"
    disk.mkdir()
    script = f'mount -t tmpfs -o size=2m tmpfs "{disk}" && exec "{sys.executable}" "{SCENARIO}" "{disk}" {filler}'
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", f'mount -t tmpfs -o size=2m tmpfs "{disk}"'])
    if probe.returncode:
        pytest.skip("this machine allows no private mount namespace (unshare -rm) for a small tmpfs")
    got = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=600)
    assert got.returncode == 0, got.stderr[-3000:]
    return json.loads(got.stdout)


@pytest.mark.parametrize("filler", [1_850_000, 1_500_000])
def test_a_disk_that_fills_loses_no_answer_across_processes(tmp_path, filler):
    """Before: polars' ComputeError escaped, the cache warned "cannot rollback - no transaction
    is active", and 75 of 250 answers were asked again by the next process."""
    first, second = _on_a_small_disk(tmp_path, filler)
    err = first["error"]
    assert err["type"] == "PartWriteError" and err["errno"] == 28, err
    assert "the disk holding" in err["message"] and "free of 2.0 MiB" in err["message"]
    assert first["part_rows"] > 0
    said = " ".join(first["warnings"])
    assert "cannot rollback" not in said
    if first["calls"] < 250 and filler > 1_500_000:  # the cache's disk filled: it said so and stopped calling
        assert "the disk holding" in said and "no more calls are made" in said
    assert second["error"] is None and second["rows"] == second["answered"] == 250, second
    assert first["calls"] + second["calls"] == 250  # not one answer asked twice


def test_a_cache_on_a_full_disk_keeps_its_answers_in_its_reserve_for_the_next_process(tmp_path, monkeypatch):
    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path)
    cache.put("before", "m", CachedResponse("kept in the database", 1, 1, 0.0))
    monkeypatch.setattr(ResponseCache, "_write", _full)
    with pytest.raises(
        CacheWriteError, match=r"the disk holding .*: .* free of .*1 answer\(s\) written to its reserve"
    ):
        cache.put("k1", "m", CachedResponse("answer one", 3, 4, 0.5, '{"x": 1}'))
    with pytest.raises(CacheWriteError, match="2 answer"):
        cache.put("k2", "m", CachedResponse("answer two", 1, 1, None))
    assert set(cache.get_many(["k1", "k2"])) == {"k1", "k2"}  # this process still reads them
    assert cache.flush() == 0  # none is only in memory
    reserves = list(tmp_path.glob("c.sqlite.reserve-*"))
    assert len(reserves) == 1
    monkeypatch.undo()
    code = (
        "import sys; from rubrictools.judge import ResponseCache; c = ResponseCache(sys.argv[1]); "
        "g = c.get_many(['before', 'k1', 'k2']); print(sorted(g), g['k1'].extra, g['k1'].cost_usd)"
    )
    cache.close()
    got = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    assert got.stdout.split() == ["['before',", "'k1',", "'k2']", '{"x":', "1}", "0.5"]
    assert not list(tmp_path.glob("c.sqlite.reserve-*"))  # moved into the database, then deleted


def test_a_reserve_still_held_by_a_live_cache_is_not_read_by_another(tmp_path, monkeypatch):
    path = tmp_path / "c.sqlite"
    a = ResponseCache(path)
    monkeypatch.setattr(ResponseCache, "_write", _full)
    with pytest.raises(CacheWriteError):
        a.put("k", "m", CachedResponse("x", 1, 1, 0.0))
    monkeypatch.undo()
    reserves = set(tmp_path.glob("c.sqlite.reserve-*"))
    b = ResponseCache(path)  # a's reserve is locked: b leaves it alone and makes its own
    assert reserves <= set(tmp_path.glob("c.sqlite.reserve-*"))
    b.close()
    a.close()  # a keeps its file (it holds an answer the database does not)
    c = ResponseCache(path)
    assert "k" in c.get_many(["k"]) and len(c) == 1
    c.close()
    assert not list(tmp_path.glob("c.sqlite.reserve-*"))


def test_an_empty_reserve_is_deleted_when_its_cache_closes(tmp_path):
    c = ResponseCache(tmp_path / "c.sqlite")
    assert len(list(tmp_path.glob("c.sqlite.reserve-*"))) == 1
    c.close()
    assert not list(tmp_path.glob("c.sqlite.reserve-*"))


def test_a_full_disk_stops_the_paid_calls_and_the_rest_become_cache_unwritable_rows(tmp_path, server, monkeypatch):
    monkeypatch.setattr(ResponseCache, "_write", _full)
    big = pl.DataFrame({"qid": [f"q{i}" for i in range(40)], "text": [f"answer {i}" for i in range(40)]})
    rubric = rt.Rubric([rt.Criterion(name="good", requirement="It is good.")])
    judge = rt.Judge(model="openai/fake", api_base=server.url, api_key="sk-fake", max_concurrency=1)
    with pytest.warns(RuntimeWarning, match="no more calls are made"):
        v = rt.grade(big, rubric, column="text", id_column="qid", model=judge, cache=tmp_path / "c.sqlite")
    assert server.hits == 1 and v["error_kind"].to_list() == [None] + ["cache_unwritable"] * 39
    assert "cannot be written" in v["error"][1] and "re-run" in v["error"][1]
    monkeypatch.undo()
    again = rt.grade(big, rubric, column="text", id_column="qid", model=judge, cache=tmp_path / "c.sqlite")
    assert server.hits == 40 and again["error"].null_count() == 40  # the kept answer was not asked again


def test_polars_reporting_a_full_disk_becomes_a_part_write_error(df, rubric, server, tmp_path, monkeypatch):
    def refuse(self, path, *a, **k):  # type: ignore[no-untyped-def]
        raise pl.exceptions.ComputeError("parquet: underlying IO error: No space left on device (os error 28)")

    monkeypatch.setattr(pl.DataFrame, "write_parquet", refuse)
    with pytest.raises(streaming.PartWriteError, match=r"the disk holding .*out \(mounted at") as err:
        run(df, rubric, server, tmp_path, output=tmp_path / "out")
    assert err.value.errno == 28 and err.value.verdicts.height > 0
    assert not list((tmp_path / "out").glob("*.tmp"))


def test_a_polars_error_that_is_not_the_disk_is_not_disguised(df, rubric, server, tmp_path, monkeypatch):
    def refuse(self, path, *a, **k):  # type: ignore[no-untyped-def]
        raise pl.exceptions.ComputeError("some other failure")

    monkeypatch.setattr(pl.DataFrame, "write_parquet", refuse)
    with pytest.raises(pl.exceptions.ComputeError, match="some other failure"):
        run(df, rubric, server, tmp_path, output=tmp_path / "out")


def _full(self, rows):  # type: ignore[no-untyped-def]
    raise sqlite3.OperationalError("database or disk is full")


def test_later_slices_of_a_streamed_run_make_no_paid_call_once_the_cache_cannot_write(tmp_path, server, monkeypatch):
    """Before: each new slice started paying again (max_concurrency more calls per slice)."""
    state = {"writes": 0}
    real = ResponseCache._write

    def write(self, rows):  # type: ignore[no-untyped-def]
        state["writes"] += 1
        if state["writes"] > 3:
            raise sqlite3.OperationalError("database or disk is full")
        return real(self, rows)

    monkeypatch.setattr(ResponseCache, "_write", write)
    frame = pl.DataFrame({"qid": [f"q{i}" for i in range(40)], "text": [f"answer {i}" for i in range(40)]})
    rubric = rt.Rubric([rt.Criterion(name="good", requirement="It is good.")])
    judge = rt.Judge(model="openai/fake", api_base=server.url, api_key="sk-fake", max_concurrency=1)
    before = server.hits
    with pytest.warns(RuntimeWarning, match="cannot be written"):
        out = rt.grade_to_parquet(
            frame, rubric, column="text", id_column="qid", model=judge, batch_size=10, output=tmp_path / "out",
            cache=tmp_path / "c.sqlite", progress=False,
        ).collect()  # fmt: skip
    made = server.hits - before
    assert made <= 4  # the calls before the first failed write, and the one whose write failed
    assert out.filter(pl.col("error_kind") == "cache_unwritable").height == 40 - made


def test_a_manifest_that_cannot_be_written_is_named_before_any_call(tmp_path, server, monkeypatch):
    from pathlib import Path as P

    real = P.write_text

    def full(self, *a, **k):  # type: ignore[no-untyped-def]
        if self.name.endswith(".json.tmp"):
            raise OSError(28, "No space left on device")
        return real(self, *a, **k)

    monkeypatch.setattr(P, "write_text", full)
    frame = pl.DataFrame({"qid": ["a"], "text": ["x"]})
    rubric = rt.Rubric([rt.Criterion(name="good", requirement="It is good.")])
    judge = rt.Judge(model="openai/fake", api_base=server.url, api_key="sk-fake")
    before = server.hits
    with pytest.raises(OSError, match=r"could not write .*_manifest.json: the disk holding .*no call was made"):
        rt.grade_to_parquet(frame, rubric, column="text", id_column="qid", model=judge, output=tmp_path / "out",
                            cache=False, progress=False)  # fmt: skip
    assert server.hits == before and not list((tmp_path / "out").glob("*.tmp"))
