"""Session-wide test set-up for tests/, the docstring examples and the notebooks (nbmake).

Run records (``grade(record=True)``, the default) go to a temporary store for the whole
session (``RUBRICTOOLS_RUNS``, inherited by notebook kernels), not into the checkout.

jupyter_client can block forever while closing a finished notebook's kernel client: its
``stop_channels`` ends in ``zmq.Context.term()``, which waits for every socket of the context
and sometimes never returns (jupyter/jupyter_client#771; seen here as a notebook run that
finished all its cells and then hung). The channels are stopped in a helper thread, bounded
in time; a context that will not terminate is abandoned, and the process exit reclaims it.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
import threading

import jupyter_client.client

# Offline: litellm reads its bundled cost map, and tiktoken (Inspect AI's mockllm counts tokens
# with it) reads the encodings litellm ships instead of downloading them.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
_litellm = importlib.util.find_spec("litellm")
if _litellm is not None and _litellm.submodule_search_locations:
    _tokenizers = os.path.join(next(iter(_litellm.submodule_search_locations)), "litellm_core_utils", "tokenizers")
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", _tokenizers)
os.environ.setdefault("RUBRICTOOLS_RUNS", tempfile.mkdtemp(prefix="rubrictools-runs-"))

_STOP_SECONDS = 20.0
_stop_channels = jupyter_client.client.KernelClient.stop_channels


def _bounded_stop_channels(self: jupyter_client.client.KernelClient) -> None:
    worker = threading.Thread(target=_stop_channels, args=(self,), name="stop-kernel-channels", daemon=True)
    worker.start()
    worker.join(_STOP_SECONDS)


jupyter_client.client.KernelClient.stop_channels = _bounded_stop_channels  # type: ignore[method-assign]
