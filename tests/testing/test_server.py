"""rubrictools.testing.FakeLLMServer leaves nothing behind when it stops."""

from __future__ import annotations

import gc
import json
import urllib.error
import urllib.request
import warnings
from concurrent.futures import ThreadPoolExecutor

import pytest

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
    with FakeLLMServer(slots=1) as srv, ThreadPoolExecutor(4) as pool:
        srv.hold(1)  # the first request takes the one slot and keeps it until released
        asked = [pool.submit(_ask, srv.url) for _ in range(4)]
        assert srv.arrived(4).wait(60)
        assert (srv.in_flight, srv.held, srv.hits, srv.answers) == (4, 1, 0, 0)  # three wait in line
        assert srv.release() == 1
        answers = [f.result(timeout=60) for f in asked]
        assert all(a["choices"][0]["message"]["content"] for a in answers)
        assert (srv.peak_serving, srv.peak_in_flight, srv.hits, srv.answers) == (1, 4, 4, 4)


def test_held_requests_wait_for_release_oldest_first() -> None:
    with FakeLLMServer() as srv, ThreadPoolExecutor(5) as pool:
        srv.hold(3, after=2)  # two answered as usual, then three held; the sixth is not held
        first = [pool.submit(_ask, srv.url) for _ in range(2)]
        assert [f.result(timeout=60)["object"] for f in first] == ["chat.completion"] * 2
        later = [pool.submit(_ask, srv.url) for _ in range(3)]
        assert srv.arrived(5).wait(60) and srv.held == 3 and srv.answers == 2
        assert _ask(srv.url)["object"] == "chat.completion"  # past the hold's three: answered at once
        assert srv.answers == 3 and not srv.answered(4).is_set()
        assert srv.release(2) == 2 and srv.answered(5).wait(60)
        assert srv.held == 1 and srv.answers == 5
        assert srv.release(5) == 1  # only what is held
        assert srv.answered(6).wait(60) and all(f.result(timeout=60) for f in later)
        assert (srv.arrivals, srv.answers, srv.hits, srv.in_flight) == (6, 6, 6, 0)


def test_reset_and_stop_let_held_requests_go_uncounted() -> None:
    with ThreadPoolExecutor(2) as pool:  # outside the server: stop() comes first
        with FakeLLMServer() as srv:
            srv.hold()
            asked = pool.submit(_ask, srv.url)
            assert srv.arrived(1).wait(60)
            srv.reset()  # the held request goes (a 503); the counts start again and nothing more is held
            with pytest.raises(urllib.error.HTTPError, match="503"):
                asked.result(timeout=60)
            assert _ask(srv.url)["object"] == "chat.completion"
            assert (srv.arrivals, srv.answers, srv.hits, srv.held) == (1, 1, 1, 0)
            srv.hold()
            asked = pool.submit(_ask, srv.url)
            assert srv.arrived(2).wait(60)
        with pytest.raises(OSError):  # stop() let it go: a 503, or a closed connection, never a hang
            asked.result(timeout=60)
