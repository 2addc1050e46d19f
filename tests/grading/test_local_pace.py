"""A local server at its own pace: requests that time out behind our own are retried free and
the run ends with no error row, the judge's limit follows the server's queue, an empty reply
is said to be one.

Timeouts come from :meth:`FakeLLMServer.hold` (the server answers none of the held requests
until the test releases them), never from a latency raced against a timeout, so they happen on
a fast machine and a loaded one alike and the counts are exact. Where the judge reads the
server's pace from latency and throughput (:mod:`rubrictools.judge.pace`), a run goes through
the real executor, throttle and retries against a simulated server on a virtual clock
(:func:`simulate`): what a busy machine adds to each request would otherwise be read as the
server's pace, and the limit it settles at would be the machine's.
"""

from __future__ import annotations

import asyncio
import random
import types
import warnings
from concurrent.futures import ThreadPoolExecutor

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.grading.executor import EMPTY_ERROR
from rubrictools.judge import retry, slots, throttle, transport
from rubrictools.judge.result import CallResult
from rubrictools.testing import FakeLLMServer, Reply, default_script

RUBRIC = rt.Rubric.from_dict([{"name": "a", "requirement": "Is it good?"}, {"name": "b", "requirement": "Is it fine?"}])


def frame(n: int) -> pl.DataFrame:
    return pl.DataFrame({"answer": [f"a good answer number {i}" for i in range(n)]})


def grade(srv: FakeLLMServer, n: int, **judge: object) -> pl.DataFrame:
    j = rt.Judge(model="openai/fake-local", api_base=srv.url, api_key="sk-local", **judge)  # type: ignore[arg-type]  # test settings
    return rt.grade(frame(n), RUBRIC, column="answer", model=j, cache=False, progress=False)


def test_requests_timed_out_behind_our_own_are_retried_and_the_run_ends_with_no_error_row():
    # the first 16 requests (the default max_concurrency) are never answered: each times out
    with FakeLLMServer() as srv:
        srv.hold(16)
        v = grade(srv, 20, timeout=2.0)
        assert (srv.arrivals, srv.answers, srv.held) == (56, 40, 16)  # 40 calls, the 16 held asked again
    assert v["error"].null_count() == v.height, v["error"].drop_nulls().head(3).to_list()
    assert (v["verdict"] == "MET").all()
    assert v["attempts"].sort().to_list() == [1] * 24 + [2] * 16


def test_a_timeout_behind_our_own_requests_costs_no_retry():
    # only the first request was sent alone: its timeout is the server's, charged to max_retries=0;
    # the other 15 waited behind ours: they are retried, free
    with FakeLLMServer() as srv:
        srv.hold(16)
        v = grade(srv, 20, timeout=2.0, max_retries=0)
        assert (srv.arrivals, srv.answers) == (55, 39)
    errors = v["error"].drop_nulls()
    assert errors.len() == 1 and "sent alone" in errors[0]


def test_the_same_run_without_adaptive_concurrency_times_out_and_says_why():
    with FakeLLMServer() as srv:
        srv.hold(16)
        v = grade(srv, 8, timeout=2.0, adaptive_concurrency=False, max_retries=0)  # 16 calls, all held
        assert (srv.arrivals, srv.answers) == (16, 0)
    errors = v["error"].drop_nulls()
    assert errors.len() == 16
    assert errors.str.contains("no answer within 2 s").all()
    # each says what the timeout measured: the wait behind our own other requests, but for the first
    company = errors.str.contains(r"other request\(s\) of this judge were in flight")
    assert company.sum() == 15 and errors.filter(~company).str.contains("sent alone").all()
    assert errors.filter(company).str.contains("set max_concurrency= to the server's slots").all()


def test_a_timeout_of_a_request_sent_alone_blames_the_server():
    with FakeLLMServer() as srv:
        srv.hold()  # never answered
        v = grade(srv, 1, timeout=0.3, max_concurrency=1, max_retries=0)
    assert v.height == 2
    assert v["error"].str.contains("sent alone: the server took longer than timeout=0.3 s").all()


class VirtualClockLoop(asyncio.SelectorEventLoop):
    """An event loop on a virtual clock: when no task can run, the clock jumps to the next timer.
    A sleep takes no wall time, and what happens when is the same on every machine, loaded or not."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0
        select = self._selector.select  # the loop's own selector

        def jump(timeout: float | None = None) -> list:
            ready = select(0)
            if not ready and timeout is None:  # only a worker thread can wake the loop: wait for it
                ready = select(30)
                assert ready, "the simulation is stuck: every task waits and no timer is set"
            elif not ready:
                self.now += timeout
            return ready

        self._selector.select = jump

    def time(self) -> float:
        return self.now


def simulate(monkeypatch, service, *, at_once: int | None, rows: int) -> list[int]:
    """``rt.agrade`` of ``rows`` rows (two criteria: 2 calls a row) by a judge with default
    settings, through the real executor, throttle, pace and retries, against a simulated server
    that answers request ``k`` after ``service(k)`` seconds of its own, ``at_once`` at a time
    (None: all at once), on a virtual clock. The requests in the server as each one arrived."""
    loop = VirtualClockLoop()
    clock = types.SimpleNamespace(monotonic=loop.time, perf_counter=loop.time)
    monkeypatch.setattr(throttle, "time", clock)  # the judge reads latency and throughput on it
    monkeypatch.setattr(retry, "time", clock)
    seen: list[int] = []
    state: dict = {"in_flight": 0, "gate": None}

    def simulated(judge, payload):  # stands in for one HTTP request (either transport)
        async def send():
            k = len(seen)
            state["in_flight"] += 1
            seen.append(state["in_flight"])
            try:
                if state["gate"] is None:
                    await asyncio.sleep(service(k))
                else:
                    async with state["gate"]:
                        await asyncio.sleep(service(k))
            finally:
                state["in_flight"] -= 1
            return CallResult(content=default_script({"messages": payload["messages"]}))

        return send

    monkeypatch.setattr(transport, "_direct_sender", simulated)
    monkeypatch.setattr(transport, "_litellm_sender", simulated)
    base = "http://127.0.0.1:9/v1"
    monkeypatch.setitem(slots._MEMO, slots.server_root(base), None)  # it does not say
    judge = rt.Judge(model="openai/fake-local", api_base=base, api_key="sk-local", structured_output="json_schema")

    async def main() -> pl.DataFrame:
        state["gate"] = asyncio.Semaphore(at_once) if at_once else None
        return await rt.agrade(
            frame(rows), RUBRIC, column="answer", model=judge, cache=False, progress=False, record=False
        )

    try:
        v = loop.run_until_complete(main())
    finally:
        loop.close()
    assert v["error"].null_count() == v.height and len(seen) == v.height
    return seen


def test_latency_that_climbs_while_throughput_does_not_lowers_the_limit(monkeypatch):
    # a one-slot server, 0.1 s a request; no client overhead in the readings: p is exactly 1
    seen = simulate(monkeypatch, lambda k: 0.1, at_once=1, rows=24)
    assert seen[:16] == list(range(1, 17))  # it started at max_concurrency, all 16 waiting in line
    # and ended at ceil(2 p) = 2 in flight: one answered, one waiting
    assert seen[-16:] == [2] * 16


def test_a_parallel_server_keeps_the_concurrency(monkeypatch):
    rng = random.Random(7)  # uneven service times, the same on every run
    times = [rng.uniform(0.2, 0.4) for _ in range(80)]
    seen = simulate(monkeypatch, times.__getitem__, at_once=None, rows=40)
    # latency at most twice the fastest, and throughput rises with what is sent: no queue is read,
    # and every slot freed is taken again at once, to the last call
    assert seen == list(range(1, 17)) + [16] * 64


def test_a_server_that_reports_its_slots_is_never_sent_more():
    slots._MEMO.clear()
    with ThreadPoolExecutor(1) as pool, FakeLLMServer(latency=0.02, slots=2, report_slots=True) as srv:
        srv.hold(2)  # the first two wait together: both slots are used, for sure
        graded = pool.submit(grade, srv, 12)
        assert srv.arrived(2).wait(60)
        srv.release()
        v = graded.result(timeout=120)
        assert slots.server_slots(rt.Judge(model="openai/fake-local", api_base=srv.url)) == 2
        assert srv.peak_in_flight == 2 and srv.arrivals == 24
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
