"""No paid answer lost, no key leaked, no call made without credentials (issue: reliability)."""

from __future__ import annotations

import json
import sqlite3
import threading

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.judge import ResponseCache

from ..fake_server import Reply, default_script
from .test_grading import MODEL, SECRET, _reset, df, rubric, run, server  # noqa: F401 - shared fixtures


class FullDisk(ResponseCache):
    """A cache whose writes fail as on a full disk."""

    def put(self, key, model, response):  # type: ignore[no-untyped-def]
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


def test_a_rate_limit_storm_delays_calls_instead_of_failing_them(rubric, server, tmp_path):
    """A provider-wide 429 storm: the shared gate makes every call of the judge wait, so the
    storm costs few requests and no verdict (each call alone hammers it and runs out of retries)."""
    one = rubric.model_copy(update={"criteria": rubric.criteria[:1]})
    frame = pl.DataFrame({"text": [f"answer {i} is good" for i in range(600)]})
    out = {}
    server.latency = 0.02
    rt.grade(
        frame.head(1), one, model=MODEL, api_base=server.url, api_key=SECRET, column="text", cache=False, progress=False
    )  # warm-up: litellm's capability table loads once, before the timed runs
    try:
        for shared in (False, True):
            server.reset()
            judge = rt.Judge(
                model=MODEL,
                api_base=server.url,
                api_key=SECRET,
                transport="direct",
                max_concurrency=16,
                backoff_base=0.05,
                shared_backoff=shared,
            )
            timer = threading.Timer(0.3, lambda: server.storm(1.5, retry_after=0.3))
            timer.start()
            v = rt.grade(frame, one, model=judge, column="text", cache=False, progress=False)
            timer.cancel()
            out[shared] = (int(v["error"].is_not_null().sum()), server.storm_requests, v.height)
    finally:
        server.latency = 0.0
    assert out[True][0] == 0 and out[True][2] == 600, out  # nothing failed, nothing lost
    assert out[False][0] > 0, out  # alone, calls ran out of retries during the storm
    assert out[True][1] * 3 < out[False][1], out  # and the gate sent far fewer requests into it
