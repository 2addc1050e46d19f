"""The response cache under concurrent creation and corruption."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path
from typing import Any

import pytest

from rubrictools.judge import CachedResponse, ResponseCache


def _create_all(paths: list[str], start: Any, results: Any) -> None:
    """In each of the racing processes: for each path, wait at the barrier until every process
    is there, then open the new cache file and write to it."""
    for path in paths:
        try:
            start.wait(60)  # all processes leave together (a broken barrier is a failure, not a hang)
            c = ResponseCache(path)
            c.put("k", "m", CachedResponse("x", 1, 1, 0.0))
            c.close()
            results.put("ok")
        except Exception as e:  # noqa: BLE001  # a child process reports any failure back to the test, which asserts none
            results.put(f"{type(e).__name__}: {e}")


def test_many_processes_can_create_the_same_new_cache_at_once(tmp_path: Path) -> None:
    ctx = mp.get_context("fork")
    start, results = ctx.Barrier(12), ctx.Queue()
    paths = [str(tmp_path / f"c{k}.sqlite") for k in range(16)]
    procs = [ctx.Process(target=_create_all, args=(paths, start, results)) for _ in range(12)]
    for proc in procs:
        proc.start()
    outcomes = [results.get(timeout=120) for _ in range(12 * 16)]
    for proc in procs:
        proc.join(60)
    assert [proc.exitcode for proc in procs] == [0] * 12
    failures = [r for r in outcomes if r != "ok"]
    assert failures == [], failures[:3]
    assert all(len(ResponseCache(path)) == 1 for path in paths)


def test_a_corrupt_cache_is_moved_aside_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "responses.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.warns(RuntimeWarning, match="unreadable") as caught:
        c = ResponseCache(path)
    c.put("k", "m", CachedResponse("x", 1, 1, 0.0))
    assert len(c) == 1
    c.close()
    aside = list(tmp_path.glob("responses.sqlite.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes().startswith(b"this is not")
    assert str(path) in str(caught[0].message) and str(aside[0]) in str(caught[0].message)


def test_batch_line_errors_are_scrubbed_of_environment_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    from rubrictools.judge.batch_api import line_result

    key = "sk-env-batch-SECRET-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    res = line_result({"custom_id": "x", "error": {"code": "bad", "message": f"key {key} rejected"}}, None)
    assert res.error is not None and key not in res.error and "***" in res.error
    body = {"error": {"message": f"bad key {key}"}}
    res = line_result({"custom_id": "y", "response": {"status_code": 401, "body": body}}, None)
    assert res.error is not None and key not in res.error


def test_a_truncated_cache_keeps_its_readable_answers(tmp_path: Path) -> None:
    """Before: a half-truncated file was moved aside whole and every answer in it asked again."""
    import sqlite3

    path = tmp_path / "c.sqlite"
    c = ResponseCache(path)
    c.put_many([(f"k{i}", "m", CachedResponse("x" * 500 + str(i), 1, 1, 0.1)) for i in range(400)])
    c.close()
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.warns(RuntimeWarning, match=r"unreadable or damaged .* with the \d+ answer\(s\) still readable"):
        again = ResponseCache(path)
    got = again.get_many(f"k{i}" for i in range(400))
    assert 150 <= len(got) < 400
    assert all(v.content == "x" * 500 + k[1:] for k, v in got.items())
    assert not list(tmp_path.glob("*.salvage*"))  # the working copy is removed


def test_request_keys_are_byte_for_byte_the_cache_keys_of_the_whole_request():
    from rubrictools.judge.cache import RequestKeys, cache_key

    long_system = 'Grade carefully: « ünïcödé », quotes " and \\ backslashes, </tags>\n' * 20
    fixed = {"model": "openai/x", "temperature": 0.0, "max_tokens": None, "response_format": {"type": "json_schema"}}
    requests = [
        [{"role": "system", "content": long_system}, {"role": "user", "content": "short é"}],
        [{"role": "system", "content": long_system}, {"role": "user", "content": "\u2028 \x00 \t line"}],
        [{"role": "user", "content": [{"type": "text", "text": "parts"}]}],  # content parts: the general path
        [{"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]}],
        [{"role": "user", "content": "x", "name": "bob"}],
    ]
    keys = RequestKeys()
    for share in ("a", "b"):
        extra = {"sample": 2} if share == "b" else {}
        for messages in requests:
            want = cache_key({**fixed, **extra, "messages": messages})
            assert keys.key(messages, share=share, fixed=lambda extra=extra: {**fixed, **extra}) == want


def _garble_a_middle_page(path: Path) -> None:
    import os
    import sqlite3

    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    data = bytearray(path.read_bytes())
    middle = (len(data) // 4096 // 2) * 4096
    data[middle : middle + 4096] = os.urandom(4096)
    path.write_bytes(bytes(data))


def test_a_garbage_page_in_the_middle_is_moved_aside_and_the_rest_salvaged(tmp_path: Path) -> None:
    """Before: the file opened, then every lookup raised "database disk image is malformed"."""
    path = tmp_path / "c.sqlite"
    c = ResponseCache(path)
    c.put_many([(f"k{i}", "m", CachedResponse("x" * 500 + str(i), 1, 1, 0.1)) for i in range(400)])
    c.close()
    _garble_a_middle_page(path)
    again = ResponseCache(path)
    with pytest.warns(RuntimeWarning, match=r"damaged .* moved it to .*corrupt-.* with the \d+ answer") as caught:
        got = again.get_many(f"k{i}" for i in range(400))
    assert 350 <= len(got) < 400
    assert all(v.content == "x" * 500 + k[1:] for k, v in got.items())
    assert caught[0].filename == __file__  # the warning points at the caller's line
    assert len(list(tmp_path.glob("c.sqlite.corrupt-*"))) == 1
    assert len(again) == len(got)  # the salvaged answers are in the new file


def test_grading_over_a_damaged_cache_asks_only_the_answers_it_lost(tmp_path: Path) -> None:
    import polars as pl

    import rubrictools as rt
    from rubrictools.testing import FakeLLMServer

    df = pl.DataFrame({"text": [f"answer number {i} " + "words " * 40 for i in range(150)]})
    rubric = rt.Rubric([rt.Criterion(name="good", requirement="It is good.")])
    with FakeLLMServer() as srv:
        judge = rt.Judge(model="openai/fake", api_base=srv.url, api_key="sk-fake")
        rt.grade(df, rubric, column="text", model=judge, cache=tmp_path / "c.sqlite", progress=False)
        _garble_a_middle_page(tmp_path / "c.sqlite")
        with pytest.warns(RuntimeWarning, match="damaged") as caught:
            v = rt.grade(df, rubric, column="text", model=judge, cache=tmp_path / "c.sqlite", progress=False)
        assert v["error"].null_count() == 150
        import re

        kept = int(re.search(r"with the (\d+) answer", str(caught[0].message)).group(1))  # type: ignore[union-attr]  # reason: the warning was matched above
        assert 100 <= kept <= 150 and srv.hits == 150 + (150 - kept)  # only what the garbage page held is asked again


def _cache_with(path: Path, n: int) -> None:
    import sqlite3

    c = ResponseCache(path)
    c.put_many([(f"k{i}", "m", CachedResponse("x" * 500 + str(i), 1, 1, 0.1)) for i in range(n)])
    c.close()
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()


@pytest.mark.parametrize("page", [1, 2, 10])
def test_garbage_on_any_page_costs_only_the_answers_on_it(tmp_path: Path, page: int) -> None:
    """Before: garbage on the table's root page (page 2) salvaged 0 of 440, and a bad leaf also
    cost the rows of the next healthy page."""
    import os

    path = tmp_path / "c.sqlite"
    _cache_with(path, 440)
    data = bytearray(path.read_bytes())
    data[(page - 1) * 4096 : page * 4096] = os.urandom(4096)
    path.write_bytes(bytes(data))
    with pytest.warns(RuntimeWarning, match="damaged"):
        got = ResponseCache(path).get_many(f"k{i}" for i in range(440))
    assert len(got) >= 440 - 8  # at most one page of about 7 answers
    assert all(v.content == "x" * 500 + k[1:] for k, v in got.items())


def test_answers_in_the_write_ahead_log_are_salvaged_too(tmp_path: Path) -> None:
    import os

    path = tmp_path / "c.sqlite"
    _cache_with(path, 50)
    live = ResponseCache(path)
    live.put_many([(f"w{i}", "m", CachedResponse("only in the WAL", 1, 1, 0.0)) for i in range(30)])
    data = bytearray(path.read_bytes())
    data[4096:8192] = os.urandom(4096)  # the database file's table page: the WAL holds the newer ones
    path.write_bytes(bytes(data))
    with pytest.warns(RuntimeWarning, match="damaged"):
        got = ResponseCache(path).get_many([f"w{i}" for i in range(30)])
    assert len(got) == 30


def _open_and_count(path: str, start: Any, results: Any) -> None:
    import warnings

    start.wait(60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = ResponseCache(path)
        results.put(len(c.get_many(f"k{i}" for i in range(400))))


def test_two_processes_repairing_one_damaged_cache_keep_its_answers(tmp_path: Path) -> None:
    """Before: both renamed the file in the same second; the second rename overwrote the
    damaged original with the first's new file and 0 answers were salvaged."""
    path = tmp_path / "c.sqlite"
    _cache_with(path, 400)
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    ctx = mp.get_context("fork")
    start, results = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=_open_and_count, args=(str(path), start, results)) for _ in range(4)]
    for proc in procs:
        proc.start()
    counts = [results.get(timeout=120) for _ in procs]
    for proc in procs:
        proc.join(60)
    assert len(set(counts)) == 1 and counts[0] >= 150, counts  # every process sees the same salvaged answers
    assert len(list(tmp_path.glob("c.sqlite.corrupt-*[0-9a-f]"))) == 1  # repaired once


def test_a_healthy_cache_that_cannot_be_opened_is_named_and_left_alone(tmp_path: Path, monkeypatch) -> None:
    """Before: a full disk, a read-only file or too many open files at open renamed a healthy
    cache '.corrupt' and started an empty one."""
    import sqlite3

    from rubrictools.judge import cache as cache_module

    path = tmp_path / "c.sqlite"
    _cache_with(path, 5)
    for reason in ("database or disk is full", "attempt to write a readonly database", "unable to open database file"):
        monkeypatch.setattr(
            cache_module, "_connect", lambda p, r=reason, **k: (_ for _ in ()).throw(sqlite3.OperationalError(r))
        )
        with pytest.raises(sqlite3.OperationalError, match=rf"response cache {path} cannot be opened .*left as it is"):
            ResponseCache(path)
        assert not list(tmp_path.glob("*.corrupt-*"))
    monkeypatch.undo()
    assert len(ResponseCache(path)) == 5


def test_a_folder_given_as_the_cache_is_refused_and_never_renamed(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="is a folder; name a file in it"):
        ResponseCache(tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_a_damaged_reserve_gives_what_it_holds_and_says_so(tmp_path: Path, monkeypatch) -> None:
    """Before: a reserve with a null answer made every later open fail; a truncated or
    overwritten one was read or dropped without a word."""
    import sqlite3

    path = tmp_path / "c.sqlite"
    c = ResponseCache(path)
    monkeypatch.setattr(
        ResponseCache,
        "_write",
        lambda self, rows: (_ for _ in ()).throw(sqlite3.OperationalError("database or disk is full")),
    )
    for i in range(4):
        with pytest.raises(OSError):
            c.put(f"k{i}", "m", CachedResponse(f"answer {i}", 1, 1, 0.0))
    monkeypatch.undo()
    reserve = next(tmp_path.glob("c.sqlite.reserve-*"))
    c.close()
    data = bytearray(reserve.read_bytes())
    cut = data.index(b"answer 2")  # the third record is cut in the middle
    data[cut:] = b"\xff" * (len(data) - cut)
    reserve.write_bytes(bytes(data))
    from rubrictools.judge import cache as cache_module

    cache_module._UNSAVED.clear()  # as in a new process: only the reserve file holds them
    with pytest.warns(RuntimeWarning, match=rf"damaged response cache reserve.*{reserve.name} \(2 answer\(s\) read"):
        again = ResponseCache(path)
    assert set(again.get_many([f"k{i}" for i in range(4)])) == {"k0", "k1"}
    assert not reserve.exists()
    assert len(list(tmp_path.glob("c.sqlite.reserve-damaged-*"))) == 1  # kept for a look, never read again


def test_a_short_file_with_a_write_ahead_log_is_not_called_damaged(tmp_path: Path) -> None:
    """Before: the header's page count was compared with the file's size even while the WAL
    held pages, a false 'damaged' that moved healthy caches aside (and lost answers)."""
    from rubrictools.judge.cache_repair import truncated

    path = tmp_path / "c.sqlite"
    _cache_with(path, 100)
    path.write_bytes(path.read_bytes()[:8192])
    assert truncated(path)
    path.with_name("c.sqlite-wal").write_bytes(b"x" * 100)
    assert not truncated(path)


def test_a_damaged_cache_that_cannot_be_rebuilt_is_left_in_place(tmp_path: Path) -> None:
    """Before: on a full disk the damaged file was moved aside and an empty one put in its
    place, so the next run never read the answers it still held."""
    from rubrictools.judge.cache_repair import replace_damaged

    path = tmp_path / "c.sqlite"
    _cache_with(path, 10)
    before = path.read_bytes()

    def no_room(new: Path) -> None:
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match=r"could not be repaired .* left as it is"):
        replace_damaged(path, no_room)
    assert (
        path.read_bytes() == before and not list(tmp_path.glob("*.corrupt-*")) and not list(tmp_path.glob("*.repair-*"))
    )


def test_damage_found_on_write_is_repaired_and_the_answer_written(tmp_path: Path, monkeypatch) -> None:
    """Before: a cache whose damage showed only on write blocked every later run."""
    import sqlite3

    path = tmp_path / "c.sqlite"
    _cache_with(path, 5)
    c = ResponseCache(path)
    real = ResponseCache._write_once
    calls = {"n": 0}

    def damaged_once(self, rows):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 1:
            raise sqlite3.DatabaseError("database disk image is malformed")
        return real(self, rows)

    monkeypatch.setattr(ResponseCache, "_write_once", damaged_once)
    with pytest.warns(RuntimeWarning, match="damaged"):
        c.put("new", "m", CachedResponse("written after the repair", 1, 1, 0.0))
    assert len(c.get_many(["new", "k0", "k4"])) == 3


def test_reserves_are_found_by_exact_name_only(tmp_path: Path, monkeypatch) -> None:
    """Before: 'c[1].sqlite' never found its own reserve and took 'c1.sqlite''s; a user's file
    named like a reserve was deleted."""
    import sqlite3

    (tmp_path / "c.sqlite.reserve-notes.txt").write_text("mine")
    for name in ("c[1].sqlite", "c1.sqlite"):
        c = ResponseCache(tmp_path / name)
        monkeypatch.setattr(
            ResponseCache,
            "_write",
            lambda self, rows: (_ for _ in ()).throw(sqlite3.OperationalError("database or disk is full")),
        )
        with pytest.raises(OSError):
            c.put(f"{name}-k", "m", CachedResponse("x", 1, 1, 0.0))
        monkeypatch.undo()
        c.close()
    from rubrictools.judge import cache as cache_module

    cache_module._UNSAVED.clear()  # as in a new process
    for name in ("c[1].sqlite", "c1.sqlite"):
        assert list(ResponseCache(tmp_path / name).get_many([f"{name}-k"])) == [f"{name}-k"]
    ResponseCache(tmp_path / "c.sqlite").close()
    assert (tmp_path / "c.sqlite.reserve-notes.txt").read_text() == "mine"
