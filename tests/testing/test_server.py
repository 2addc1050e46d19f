"""rubrictools.testing.FakeLLMServer leaves nothing behind when it stops."""

from __future__ import annotations

import gc
import json
import urllib.error
import urllib.request
import warnings
from concurrent.futures import ThreadPoolExecutor

from rubrictools.testing import FakeLLMServer


def test_a_stopped_server_leaves_no_loop_or_socket_open() -> None:
    with FakeLLMServer() as srv:
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "good"}]}).encode()
        req = urllib.request.Request(
            f"{srv.url}/chat/completions", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            assert resp.status == 200
    del srv  # the server object goes; whatever it did not close is now garbage
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []


def _ask(url: str) -> dict:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "good"}]}).encode()
    req = urllib.request.Request(f"{url}/chat/completions", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def test_a_one_slot_server_answers_one_request_at_a_time_and_queues_the_rest() -> None:
    with FakeLLMServer(latency=0.1, slots=1) as srv, ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(_ask, [srv.url] * 4))
        assert all(a["choices"][0]["message"]["content"] for a in answers)
        assert srv.peak_serving == 1
        assert srv.peak_in_flight > 1  # the others waited in line, inside the server


def test_props_reports_the_slots_only_when_asked_to() -> None:
    for report, expected in ((True, {"total_slots": 3}), (False, None)):
        with FakeLLMServer(slots=3, report_slots=report) as srv:
            root = srv.url.removesuffix("/v1")
            try:
                with urllib.request.urlopen(f"{root}/props", timeout=10) as resp:
                    got = json.loads(resp.read())
            except urllib.error.HTTPError as e:
                got = None
                assert e.code == 404
        assert (None if got is None else {"total_slots": got["total_slots"]}) == expected
