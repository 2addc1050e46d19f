"""A local server at its own pace: a one-slot server at default concurrency ends with no error
row, the judge's limit follows the server's queue, an empty reply is said to be one.

The fake server answers one chat request at a time with ``slots=1`` (as llama-cpp-python's
server does), each after ``latency`` seconds, the rest waiting in line: with the default 16 in
flight and each taking longer than ``timeout / 16``, requests time out in *our* queue.
"""

from __future__ import annotations

import random
import statistics
import warnings

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.grading.executor import EMPTY_ERROR
from rubrictools.judge import slots
from rubrictools.testing import FakeLLMServer, Reply, default_script

RUBRIC = rt.Rubric.from_dict([{"name": "a", "requirement": "Is it good?"}, {"name": "b", "requirement": "Is it fine?"}])


def frame(n: int) -> pl.DataFrame:
    return pl.DataFrame({"answer": [f"a good answer number {i}" for i in range(n)]})


def grade(srv: FakeLLMServer, n: int, **judge: object) -> pl.DataFrame:
    j = rt.Judge(model="openai/fake-local", api_base=srv.url, api_key="sk-local", **judge)  # type: ignore[arg-type]  # test settings
    return rt.grade(frame(n), RUBRIC, column="answer", model=j, cache=False, progress=False)


def test_a_one_slot_server_at_default_concurrency_ends_with_no_error_row():
    # 16 x 0.25 s = 4 s of queue against a 2 s timeout
    with FakeLLMServer(latency=0.25, slots=1) as srv:
        v = grade(srv, 20, timeout=2.0)
        assert v["error"].null_count() == v.height, v["error"].drop_nulls().head(3).to_list()
        assert (v["verdict"] == "MET").all()
        # the requests that timed out in our queue were retried without spending max_retries
        assert len(srv.requests) > v.height


def test_the_same_run_without_adaptive_concurrency_times_out_and_says_why():
    with FakeLLMServer(latency=0.25, slots=1) as srv:
        v = grade(srv, 20, timeout=2.0, adaptive_concurrency=False)
    errors = v["error"].drop_nulls()
    assert errors.len() > 0
    assert errors.str.contains("no answer within 2 s").all()
    # each says what the timeout measured: mostly the wait behind our own other requests
    company = errors.str.contains(r"other request\(s\) of this judge were in flight")
    assert (company | errors.str.contains("sent alone")).all()
    assert company.sum() > errors.len() / 2
    assert errors.filter(company).str.contains("set max_concurrency= to the server's slots").all()


def test_a_timeout_of_a_request_sent_alone_blames_the_server():
    with FakeLLMServer(latency=1.0) as srv:
        v = grade(srv, 1, timeout=0.3, max_concurrency=1, max_retries=0)
    assert v["error"].str.contains("sent alone: the server took longer than timeout=0.3 s").all()


def test_latency_that_climbs_while_throughput_does_not_lowers_the_limit():
    with FakeLLMServer(latency=0.04, slots=1) as srv:
        v = grade(srv, 40, timeout=300)
        seen = srv.in_flight_seen
    assert v["error"].null_count() == v.height
    assert max(seen[:16]) == 16  # it started at max_concurrency
    # and ended near the one slot the server has: the pace settles at ceil(2 p), where p, the
    # parallelism it measures, carries the client's own overhead in every latency (1.0-1.5 idle
    # here, up to 1.9 on a loaded CI machine, which once gave 4): 2-4 in flight, from 16
    assert statistics.median(seen[-30:]) <= 4


def test_a_parallel_server_keeps_the_concurrency():
    def uneven(body):
        out = default_script(body)
        return Reply(content=out if isinstance(out, str) else out.content, delay=random.uniform(0.04, 0.12))

    with FakeLLMServer(uneven) as srv:
        v = grade(srv, 40, timeout=300)
        seen = srv.in_flight_seen
    assert v["error"].null_count() == v.height
    assert statistics.median(seen[16:64]) >= 12


def test_a_server_that_reports_its_slots_is_never_sent_more():
    slots._MEMO.clear()
    with FakeLLMServer(latency=0.02, slots=2, report_slots=True) as srv:
        v = grade(srv, 12)
        assert slots.server_slots(rt.Judge(model="openai/fake-local", api_base=srv.url)) == 2
        assert srv.peak_in_flight <= 2
    assert v["error"].null_count() == v.height


def test_a_server_that_does_not_report_slots_is_asked_once():
    slots._MEMO.clear()
    with FakeLLMServer() as srv:
        j = rt.Judge(model="openai/fake-local", api_base=srv.url)
        assert slots.server_slots(j) is None
        assert slots.server_slots(j) is None
    assert srv.url.removesuffix("/v1") in slots._MEMO
    assert slots.server_slots(rt.Judge(model="openai/gpt-4.1-mini")) is None  # a provider: never asked


def test_an_empty_reply_is_its_own_error_said_once_per_run():
    with FakeLLMServer(lambda body: Reply(content="")) as srv:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            v = grade(srv, 3)
        assert len(srv.requests) == v.height  # no corrective turn: it would get nothing again
    assert (v["error"] == EMPTY_ERROR).all()
    assert "check its chat template" in EMPTY_ERROR and "chat_format" in EMPTY_ERROR
    said = [w for w in caught if "returned nothing" in str(w.message)]
    assert len(said) == 1 and str(said[0].message).startswith(f"{v.height} call(s)")


def test_an_empty_reply_that_cost_tokens_is_a_parse_problem_as_before():
    # a reasoning model whose visible reply is empty spent tokens: a corrective turn may help
    with FakeLLMServer(lambda body: Reply(content="", reasoning_tokens=40)) as srv:
        srv.script = lambda body: Reply(content=" ", reasoning_tokens=40)
        v = grade(srv, 1)
    assert not (v["error"] == EMPTY_ERROR).any()


@pytest.mark.parametrize("flag", [None, "gemma"])
def test_the_local_server_takes_its_chat_format_and_extra_arguments(flag, tmp_path):
    gguf = tmp_path / "m.gguf"
    srv = rt.testing.LocalModelServer(model_path=gguf, chat_format=flag, server_args=["--n_threads", "2"])
    cmd = srv.command()
    assert cmd[cmd.index("--model") + 1] == str(gguf)
    assert cmd[-2:] == ["--n_threads", "2"]
    assert ("--chat_format" in cmd) is (flag is not None)
    if flag:
        assert cmd[cmd.index("--chat_format") + 1] == "gemma"
