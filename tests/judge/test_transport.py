"""The direct OpenAI-compatible transport: same rows, retries, cache keys and costs as litellm."""

from __future__ import annotations

import json

import pytest

import rubrictools as rt

from ..fake_server import FakeLLMServer, Reply
from ..grading.test_grading import SECRET, _reset, df, fake_judge, rubric, run, server  # noqa: F401 - shared fixtures


def direct(df, rubric, server, tmp_path, **kw):
    return run(df, rubric, server, tmp_path, transport="direct", **kw)


def test_same_rows_as_litellm_and_shared_cache(df, rubric, server, tmp_path):
    a = run(df, rubric, server, tmp_path, cache=False)
    b = direct(df, rubric, server, tmp_path, cache=False)
    keep = [
        "id",
        "criterion",
        "verdict",
        "value",
        "explanation",
        "error",
        "prompt_tokens",
        "completion_tokens",
        "cost_usd",
    ]
    assert a.select(keep).equals(b.select(keep))
    assert b["cost_usd"].min() > 0  # priced from litellm's table
    req = server.requests[-1]
    assert req["model"] == "gpt-4.1-mini" and "response_format" in req and req["temperature"] == 0.0
    assert server.headers_seen[-1]["Authorization"] == f"Bearer {SECRET}"
    # one cache serves both transports: a direct run after a litellm run makes no call
    run(df, rubric, server, tmp_path)
    server.reset()
    c = direct(df, rubric, server, tmp_path)
    assert server.hits == 0 and c["cached"].all()


def test_retry_bound_retry_after_and_no_key_in_errors(df, rubric, server, tmp_path):
    one = rubric.model_copy(update={"criteria": rubric.criteria[:1]})
    server.inject(*[Reply(status=500, body=json.dumps({"error": {"message": f"boom {SECRET}"}}))] * 10)
    v = direct(df.head(1), one, server, tmp_path, max_retries=2, cache=False)
    assert server.hits == 3 and v["attempts"][0] == 3 and "HTTP 500" in v["error"][0]
    assert SECRET not in v["error"][0] and SECRET not in (v["raw_response"][0] or "")
    server.reset()
    server.inject(Reply(status=429, headers={"Retry-After": "0.5"}))
    v = direct(df.head(1), one, server, tmp_path, backoff_base=0.0, cache=False)
    assert server.hits == 2 and v["error"][0] is None
    first, retry = server.arrived_at
    assert retry - first >= 0.5  # no sooner than the server asked (a floor: a slow machine only adds to it)
    server.reset()
    server.inject(Reply(status=400, body='{"error": "bad request"}'))
    v = direct(df.head(1), one, server, tmp_path, cache=False)
    assert server.hits == 1 and "HTTP 400" in v["error"][0]  # not retryable


def test_timeouts_and_distributions(df, rubric, server, tmp_path):
    one = rubric.model_copy(update={"criteria": rubric.criteria[:1]})
    with FakeLLMServer() as srv:  # its own server: the held requests are answered only when it stops
        srv.hold()  # no request is answered: every attempt times out, however fast or slow the machine
        judge = fake_judge(srv, transport="direct", timeout=1.0, max_retries=1)
        v = run(df.head(1), one, srv, tmp_path, model=judge, cache=False)
        assert srv.arrived(2).wait(60) and (srv.arrivals, srv.answers) == (2, 0)
    assert v["error"][0].startswith("TimeoutError") and v["attempts"].to_list() == [2]
    server.script = lambda req: Reply(
        content=json.dumps({"verdict": "MET", "explanation": "x"}), label_probs={"MET": 0.7, "UNMET": 0.3}
    )
    v = direct(df.head(2), one, server, tmp_path, distribution=True, cache=False)
    dist = {d["label"]: d["prob"] for d in v["distribution"][0]}
    assert v["distribution_source"][0] == "logprobs" and dist["MET"] == pytest.approx(0.7, abs=1e-6)


def test_direct_transport_is_validated():
    with pytest.raises(ValueError):
        rt.Judge(model="openai/x", transport="grpc")
    assert (
        rt.Judge(model="openai/x", transport="direct").request_identity()
        == rt.Judge(model="openai/x").request_identity()
    )
