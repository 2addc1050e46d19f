"""How many requests a local server answers at once, where it says so.

llama.cpp's own server (``llama-server``) reports its parallel slots: ``GET /props`` carries
``total_slots`` and ``GET /slots`` lists them. A judge on such a server starts its concurrency
there (:class:`~rubrictools.judge.throttle.Throttle` ``start=``) instead of sending
``max_concurrency`` requests to be queued. Servers that do not say (OpenAI, vLLM, Ollama,
llama-cpp-python's server) leave the start at ``max_concurrency``, and the throttle finds their
pace from latency and timeouts. Asked once per server in a process, with a short timeout.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from rubrictools.judge.config import Judge
from rubrictools.judge.providers import custom_endpoint, request_headers

__all__ = ["server_root", "server_slots"]

_MEMO: dict[str, int | None] = {}
_LOCK = threading.Lock()
ASK_TIMEOUT_S = 2.0


def server_root(api_base: str) -> str:
    """The server's root URL: ``api_base`` without its trailing ``/v1``.

    >>> server_root("http://127.0.0.1:8080/v1/")
    'http://127.0.0.1:8080'
    """
    base = api_base.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


def _get(url: str, headers: dict[str, str]) -> Any:
    """The JSON at ``url``, None when the server cannot give it (no such path, not JSON, down)."""
    import urllib.request  # only for a custom server (keeps `import rubrictools` fast)

    req = urllib.request.Request(url, headers=headers, method="GET")
    try:
        with urllib.request.urlopen(req, timeout=ASK_TIMEOUT_S) as r:  # the user's own api_base
            return json.loads(r.read())
    except (OSError, ValueError):
        return None


def _total_slots(props: Any) -> int | None:
    n = props.get("total_slots") if isinstance(props, dict) else None
    return n if isinstance(n, int) and not isinstance(n, bool) and n >= 1 else None


def server_slots(judge: Judge) -> int | None:
    """The number of requests ``judge``'s server answers at once, when it reports it
    (``total_slots`` of llama.cpp's ``/props``, else the length of its ``/slots``); None for
    a provider, a server that does not say, or one that cannot be reached."""
    if not custom_endpoint(judge) or judge.api_base is None:
        return None
    root = server_root(judge.api_base)
    with _LOCK:
        if root in _MEMO:
            return _MEMO[root]
    headers = {k: v for k, v in request_headers(judge).items() if k != "Content-Type"}
    n = _total_slots(_get(root + "/props", headers))
    if n is None:
        slots = _get(root + "/slots", headers)
        n = len(slots) if isinstance(slots, list) and slots else None
    with _LOCK:
        _MEMO[root] = n
    return n
