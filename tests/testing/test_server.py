"""rubrictools.testing.FakeLLMServer leaves nothing behind when it stops."""

from __future__ import annotations

import gc
import json
import urllib.request
import warnings

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
