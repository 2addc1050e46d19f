"""Inspect AI runs offline: a model under evaluation that replays given answers (Inspect's own
``mockllm/model``, with token usage set so it counts nothing) and a log folder per test."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai.model import ChatMessage, GenerateConfig, ModelOutput, ModelUsage, get_model
from inspect_ai.tool import ToolChoice, ToolInfo

Answer = Callable[[str], str]


def replay(name: str, answer: Answer):
    """Inspect's mock provider as model ``mockllm/<name>``, answering ``answer(last user text)``."""

    def output(messages: list[ChatMessage], tools: list[ToolInfo], choice: ToolChoice, config: GenerateConfig):
        user = [m for m in messages if m.role == "user"][-1].text
        out = ModelOutput.from_content(model=name, content=answer(user))
        out.usage = ModelUsage(input_tokens=len(user.split()), output_tokens=3, total_tokens=len(user.split()) + 3)
        return out

    return get_model(f"mockllm/{name}", custom_outputs=output, memoize=False)


@pytest.fixture
def logs(tmp_path):
    return str(tmp_path / "logs")
