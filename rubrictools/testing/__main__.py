"""``python -m rubrictools.testing [latency]``: serve the fake provider for manual experiments and subprocess tests."""

from __future__ import annotations

import sys
import time

from rubrictools.testing.server import FakeLLMServer

latency = float(sys.argv[1]) if len(sys.argv) > 1 else 0.0
srv = FakeLLMServer(latency=latency).start()
print(srv.url, flush=True)
try:
    while True:
        time.sleep(3600)
except KeyboardInterrupt:
    srv.stop()
