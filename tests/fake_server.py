"""The loopback fake server lives in :mod:`rubrictools.testing` (users test their own pipelines
with it too); the test suite imports it from here."""

from rubrictools.testing import (  # noqa: F401
    FakeLLMServer,
    Reply,
    criterion_name,
    default_script,
    fake_logprobs,
    submission_text,
    user_text,
)
