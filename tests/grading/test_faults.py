"""No paid answer lost, no key leaked, no call made without credentials (issue: reliability)."""

from __future__ import annotations

import json
import sqlite3

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.judge import ResponseCache

from ..fake_server import FakeLLMServer, Reply, default_script
from .test_grading import MODEL, SECRET, _reset, df, rubric, run, server  # noqa: F401 - shared fixtures


class FullDisk(ResponseCache):
    """A cache whose writes fail as on a full disk."""

    def _write(self, rows):  # type: ignore[no-untyped-def]
        raise sqlite3.OperationalError("database or disk is full")


def test_a_failing_cache_write_never_costs_the_verdict(df, rubric, server, tmp_path):
    store = FullDisk(tmp_path / "c.sqlite")
    with pytest.warns(RuntimeWarning, match="cache write failed") as caught:
        v = run(df, rubric, server, tmp_path, cache=store)
    assert v["error"].null_count() == v.height and v["verdict"].null_count() == 0
    assert sum("cache write failed" in str(w.message) for w in caught) == 1  # warned once
    assert server.hits == v.height  # each answer asked once, none thrown away


def test_a_garbled_200_body_is_retried_by_both_transports(df, rubric, server, tmp_path):
    for transport in ("direct", "litellm"):
        server.faults.extend([Reply(status=200, body='{"choices": [{"mess')])
        v = run(df.head(1), rubric, server, tmp_path / transport, transport=transport, cache=False)
        assert v["error"].null_count() == v.height, (transport, v["error"].to_list())
        assert v["attempts"].max() == 2, transport


def test_keys_from_the_environment_never_reach_the_error_column(df, rubric, server, tmp_path, monkeypatch):
    env_key = "sk-env-SECRET-abcdef0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", env_key)

    def echo(request):  # a provider that echoes the key it was sent
        return Reply(status=400, body=json.dumps({"error": {"message": f"bad request for key {env_key}"}}))

    server.script = echo
    for transport in ("direct", "litellm"):
        v = run(df.head(1), rubric, server, tmp_path / transport, transport=transport, api_key=None, cache=False)
        errors = " ".join(v["error"].to_list())
        assert "bad request" in errors and env_key not in errors and "***" in errors, transport
        assert env_key not in " ".join(x or "" for x in v["raw_response"].to_list())
    server.script = default_script


def test_the_direct_transport_sends_the_environment_key(df, rubric, server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-key-for-direct-0001")
    v = run(df.head(1), rubric, server, tmp_path, transport="direct", api_key=None, cache=False)
    assert v["error"].null_count() == v.height
    assert server.headers_seen[-1].get("Authorization") == "Bearer sk-env-key-for-direct-0001"


def test_a_missing_key_fails_before_any_call_naming_the_variable(df, rubric, server, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        rt.grade(df, rubric, model=MODEL, column="text", id_column="qid", cache=False, progress=False)
    assert server.hits == 0


@pytest.mark.parametrize(
    ("status", "message"),
    [(401, "Incorrect API key provided"), (500, "Missing credentials. Please pass an `api_key`")],
)
def test_an_authentication_error_is_never_retried(df, rubric, server, tmp_path, status, message):
    server.script = lambda req: Reply(status=status, body=json.dumps({"error": {"message": message}}))
    for transport in ("direct", "litellm"):
        v = run(df.head(1), rubric, server, tmp_path / transport, transport=transport, cache=False, max_retries=3)
        assert v["attempts"].to_list() == [1] * v.height and v["error"].is_not_null().all(), transport
    server.script = default_script


def test_python_object_columns_get_a_clear_error(rubric):
    frame = pl.DataFrame({"text": pl.Series([object(), object()], dtype=pl.Object)})
    with pytest.raises(ValueError, match="column='text' holds Python objects"):
        rt.grade(frame, rubric, model=rt.ScriptedJudge(), column="text", progress=False)


def test_lone_surrogates_in_pandas_input_name_the_column_and_row(rubric):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"text": pd.Series(["fine", "bad \ud800 text"], dtype=object)})
    with pytest.raises(ValueError, match=r"column 'text', row 1"):
        rt.grade(frame, rubric, model=rt.ScriptedJudge(), column="text", progress=False)


def test_a_rate_limit_storm_delays_calls_instead_of_failing_them(rubric, tmp_path):
    """A provider-wide 429 storm: the shared gate makes every call of the judge wait, so the
    storm costs few requests and no verdict (each call alone hammers it and is lost).

    The storm lasts less than the Retry-After it sends: behind the shared gate, closed from the
    first 429 the judge reads until well after the storm, only the requests already in flight
    (at most ``max_concurrency``) meet it, however fast or slow the machine. Alone, each 429
    frees a slot that the next call takes straight into the storm. ``max_retries=0`` makes the
    cost exact: alone, each 429 is one call lost; behind the gate, 429s are not charged."""
    one = rubric.model_copy(update={"criteria": rubric.criteria[:1]})
    frame = pl.DataFrame({"text": [f"answer {i} is good" for i in range(600)]})
    out = {}
    for shared in (False, True):
        with FakeLLMServer(latency=0.02) as srv:  # its own server, no request of another test in it
            judge = rt.Judge(
                model=MODEL,
                api_base=srv.url,
                api_key=SECRET,
                transport="direct",
                max_concurrency=16,
                adaptive_concurrency=False,  # the limit moves for 429s only, not for latency read on this machine
                max_retries=0,
                backoff_base=0.05,
                shared_backoff=shared,
            )
            srv.storm(1.8, retry_after=2.0, after_requests=60)  # from the 60th request on, mid-run
            v = rt.grade(frame, one, model=judge, column="text", cache=False, progress=False)
            out[shared] = (int(v["error"].is_not_null().sum()), srv.storm_requests, v.height)
    assert out[True][0] == 0 and out[True][2] == 600, out  # nothing failed, nothing lost
    assert out[False][0] == out[False][1], out  # alone, every request the storm refused was a call lost
    assert 0 < out[True][1] <= 16 < out[False][1], out  # behind the gate, only what was in flight met it


def test_an_authentication_failure_stops_the_judge_with_no_more_requests(rubric, server, tmp_path):
    """Before: a 401 on every call sent 60 requests for 60 calls."""
    server.script = lambda request: Reply(status=401, body=json.dumps({"error": {"message": "Incorrect API key"}}))
    many = pl.DataFrame({"qid": [f"q{i}" for i in range(20)], "text": [f"answer {i}" for i in range(20)]})
    v = run(many, rubric, server, tmp_path, max_concurrency=4, cache=False)
    assert v.height == 60 and v["verdict"].null_count() == 60
    assert server.hits <= 4  # at most the requests already in flight when the first 401 came back
    stopped = v.filter(
        pl.col("error").str.starts_with("not sent: an earlier request of this judge failed authentication")
    )
    assert stopped.height == 60 - server.hits and stopped["attempts"].sum() == 0
    assert SECRET not in " ".join(v["error"].to_list())


def test_a_reply_about_another_criterion_is_a_parse_problem_corrected_once(df, rubric, server, tmp_path):
    """Before: ``{"criterion": "other", "verdict": "MET"}`` was recorded as the asked criterion's verdict."""

    def elsewhere(request):
        if len(request["messages"]) > 2:  # the corrective turn: now about the right criterion
            return json.dumps({"verdict": "UNMET", "explanation": "second look"})
        return json.dumps({"criterion": "other", "verdict": "MET", "explanation": "about something else"})

    server.script = elsewhere
    v = run(df, rubric, server, tmp_path, cache=False)
    assert v["error"].null_count() == v.height and (v["verdict"] == "UNMET").all()
    assert server.hits == 2 * v.height
    fix = next(r for r in server.requests if len(r["messages"]) > 2)["messages"][-1]["content"]
    assert "reply is about criterion 'other'" in fix

    server.reset()
    server.script = lambda request: json.dumps({"criterion": "other", "verdict": "MET", "explanation": "x"})
    v = run(df.head(1), rubric, server, tmp_path, cache=False)
    assert v["verdict"].null_count() == v.height and v["error"].str.contains("is about criterion 'other'").all()
    # naming the asked criterion (as written or as the prompt showed it) is fine
    server.reset()
    server.script = lambda request: json.dumps({"criterion": "GOOD", "verdict": "MET", "explanation": "x"})
    v = run(df.head(1), rt.Rubric.from_dict([{"name": "good", "requirement": "r"}]), server, tmp_path, cache=False)
    assert v["error"].null_count() == 1 and server.hits == 1


def test_per_item_names_that_need_escaping_match_as_the_judge_saw_them(df, server, tmp_path):
    """Before: the judge echoed ``a &lt;b&gt; &amp; &lt;/submission&gt;`` and every row failed 'omitted'."""
    name = "a <b> & </submission>"
    rubric = rt.Rubric.from_dict([{"name": name, "requirement": "r1"}, {"name": "plain", "requirement": "r2"}])
    escaped = "a &lt;b&gt; &amp; &lt;/submission&gt;"
    calls = []

    def echo_escaped(request):  # answers the escaped name, and never "plain"
        calls.append(request)
        return json.dumps({"verdicts": [{"criterion": escaped, "verdict": "MET", "explanation": "ok"}]})

    server.script = echo_escaped
    v = run(df.head(2), rubric, server, tmp_path, mode="per_item", cache=False)
    mine = v.filter(pl.col("criterion") == name)
    assert mine["error"].null_count() == 2 and (mine["verdict"] == "MET").all()
    # "plain" is omitted: the corrective turn names the problem but never carries a raw name
    assert all(name not in m["content"] for r in calls for m in r["messages"])
    fixes = [r["messages"][-1]["content"] for r in calls if len(r["messages"]) > 2]
    assert fixes and all(name not in f for f in fixes)


def test_a_key_echoed_by_a_batch_provider_is_scrubbed_from_rows_and_files(df, rubric, server, tmp_path):
    key = "sk-batch-ECHOED-0123456789abcdef"
    body = json.dumps({"error": {"message": f"Incorrect API key provided: {key}", "code": "invalid_api_key"}})
    server.script = lambda request: Reply(status=401, body=body)
    job = rt.submit_batch(
        df.head(1),
        rubric,
        model=rt.Judge(model=MODEL, api_base=server.url, api_key=key),
        column="text",
        id_column="qid",
        path=tmp_path / "job",
        cache=tmp_path / "c.sqlite",
    )
    v = job.collect(poll_interval=0.01, progress=False)
    errors = " ".join(v["error"].to_list())
    assert "Incorrect API key provided: ***" in errors and key not in errors
    files = list((tmp_path / "job").rglob("*"))
    assert any(f.name.startswith("errors-") for f in files)
    for f in files:
        if f.is_file():
            assert key.encode() not in f.read_bytes(), f.name


def test_a_full_disk_under_the_cache_and_the_output_loses_no_answer(df, rubric, server, tmp_path, monkeypatch):
    """Before: of 250 answered calls 77 were asked again on resume (not cached, part not written)."""
    from rubrictools.grading import streaming

    full = {"on": True}
    real_write, real_part = ResponseCache._write, streaming._write_part

    def write(self, rows):  # type: ignore[no-untyped-def]
        if full["on"]:
            raise sqlite3.OperationalError("database or disk is full")
        return real_write(self, rows)

    def part(v, path):  # type: ignore[no-untyped-def]
        if full["on"]:
            raise streaming.PartWriteError(path, OSError(28, "No space left on device"), v)
        return real_part(v, path)

    monkeypatch.setattr(ResponseCache, "_write", write)
    monkeypatch.setattr(streaming, "_write_part", part)
    cache = tmp_path / "c.sqlite"
    with pytest.warns(RuntimeWarning, match="cache write failed"), pytest.raises(OSError, match="re-run") as err:
        run(df, rubric, server, tmp_path, cache=cache, output=tmp_path / "out", batch_size=2)
    assert err.value.verdicts.height == 6 and err.value.verdicts["error"].null_count() == 6
    asked = server.hits
    assert asked == 6
    full["on"] = False  # space freed: the same session re-runs
    v = run(df, rubric, server, tmp_path, cache=cache, output=tmp_path / "out", batch_size=2).collect()
    assert v.height == 12 and v["error"].null_count() == 12
    assert server.hits == asked + 6  # only the second part's calls were new: no answer asked twice
    assert len(ResponseCache(cache)) == 12  # and the kept answers reached the file
