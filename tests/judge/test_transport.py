"""The direct OpenAI-compatible transport: same rows, retries, cache keys and costs as litellm."""

from __future__ import annotations

import json
import time

import pytest

import rubrictools as rt

from ..fake_server import Reply
from ..grading.test_grading import SECRET, _reset, df, rubric, run, server  # noqa: F401 - shared fixtures


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
    t0 = time.perf_counter()
    v = direct(df.head(1), one, server, tmp_path, backoff_base=0.0, cache=False)
    assert time.perf_counter() - t0 >= 0.45 and server.hits == 2 and v["error"][0] is None
    server.reset()
    server.inject(Reply(status=400, body='{"error": "bad request"}'))
    v = direct(df.head(1), one, server, tmp_path, cache=False)
    assert server.hits == 1 and "HTTP 400" in v["error"][0]  # not retryable


def test_timeouts_and_distributions(df, rubric, server, tmp_path):
    one = rubric.model_copy(update={"criteria": rubric.criteria[:1]})
    server.latency = 1.0
    v = direct(df.head(1), one, server, tmp_path, timeout=0.2, max_retries=1, cache=False)
    assert v["error"][0].startswith("TimeoutError") and server.hits == 2
    server.latency = 0.0
    server.reset()
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
