"""A loopback OpenAI-compatible server (chat, files, batches) for offline tests and demos.

``with FakeLLMServer() as srv:`` serves on 127.0.0.1 at ``srv.url``: scripted verdicts (by
default MET when the graded text contains "good"; pairwise: the response containing it),
delays, HTTP 429 with ``Retry-After``, 500s, timeouts, malformed JSON and wrong labels, and
the provider batch API. It records every request, so tests count calls. It is a stand-in, not a model.

``with LocalModelServer() as srv:`` is the real thing in miniature: a small model
(SmolLM2-135M) on llama-cpp-python's server, with the ``[local]`` extra.
"""

from __future__ import annotations

from rubrictools.testing.local import LocalModelServer, gemma3_gguf, local_model_available, smollm2_gguf
from rubrictools.testing.scripts import (
    Reply,
    criterion_name,
    default_script,
    fake_logprobs,
    pair_answer,
    response_texts,
    submission_text,
    user_text,
)
from rubrictools.testing.server import FakeLLMServer

__all__ = [
    "FakeLLMServer",
    "LocalModelServer",
    "Reply",
    "criterion_name",
    "default_script",
    "fake_logprobs",
    "gemma3_gguf",
    "local_model_available",
    "pair_answer",
    "response_texts",
    "smollm2_gguf",
    "submission_text",
    "user_text",
]
