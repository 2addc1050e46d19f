"""Cached and cache-written prompt tokens read from the usage blocks providers really send.

The shapes are the documented ones: OpenAI's chat-completion ``usage`` with
``prompt_tokens_details.cached_tokens`` (its prompt-caching guide's example: 2,006 prompt
tokens of which 1,920 cached), sent verbatim by the fake server through both transports; and
Anthropic's Messages ``usage`` (``input_tokens``, ``cache_creation_input_tokens``,
``cache_read_input_tokens``, ``output_tokens``) as litellm's own Anthropic code turns it into
the object our litellm transport receives. Each is priced at the model's cached-input and
cache-write prices.
"""

from __future__ import annotations

import json

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.judge.pricing import cache_prices, token_cost, unit_prices
from rubrictools.judge.result import usage_details
from rubrictools.testing import FakeLLMServer, Reply

OPENAI_USAGE = {
    "prompt_tokens": 2006,
    "completion_tokens": 300,
    "total_tokens": 2306,
    "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
    "completion_tokens_details": {
        "reasoning_tokens": 0,
        "audio_tokens": 0,
        "accepted_prediction_tokens": 0,
        "rejected_prediction_tokens": 0,
    },
}


def _openai_body(request: dict) -> Reply:
    answer = json.dumps({"verdict": "MET", "explanation": "ok"})
    return Reply(
        body=json.dumps(
            {
                "id": "chatcmpl-recorded",
                "object": "chat.completion",
                "created": 1730000000,
                "model": "gpt-4.1-mini-2025-04-14",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": answer, "refusal": None, "annotations": []},
                        "logprobs": None,
                        "finish_reason": "stop",
                    }
                ],
                "usage": OPENAI_USAGE,
                "service_tier": "default",
                "system_fingerprint": "fp_recorded",
            }
        )
    )


@pytest.mark.parametrize("transport", ["direct", "litellm"])
def test_openai_cached_tokens_reach_the_verdict_table_and_are_priced_at_the_cached_rate(transport: str) -> None:
    rubric = rt.Rubric.from_dict([{"name": "a", "requirement": "Says hello"}])
    with FakeLLMServer(script=_openai_body) as srv:
        judge = rt.Judge(model="openai/gpt-4.1-mini", api_base=srv.url, api_key="sk-test", transport=transport)
        v = rt.grade(pl.DataFrame({"submission": ["hi"]}), rubric, model=judge, cache=False, progress=False)
    row = v.row(0, named=True)
    assert (row["prompt_tokens"], row["cached_tokens"], row["completion_tokens"]) == (2006, 1920, 300)
    p_in, p_out = unit_prices("openai/gpt-4.1-mini")  # type: ignore[misc]  # reason: the model is priced
    p_read = cache_prices("openai/gpt-4.1-mini")[0]
    assert p_read is not None and p_read < p_in
    assert row["cost_usd"] == pytest.approx(86 * p_in + 1920 * p_read + 300 * p_out)
    used = rt.usage(v).row(0, named=True)
    assert used["prompt_cache_tokens"] == 1920 and used["prompt_cache_share"] == pytest.approx(1920 / 2006)


def _anthropic_usage(native: dict) -> object:
    litellm = pytest.importorskip("litellm")
    assert litellm is not None
    from litellm.llms.anthropic.chat.transformation import AnthropicConfig

    return AnthropicConfig().calculate_usage(native, None)


def test_anthropic_cache_writes_and_reads_as_litellm_hands_them_over(monkeypatch) -> None:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    model = "anthropic/claude-haiku-4-5"
    prices, (p_read, p_write) = unit_prices(model), cache_prices(model)
    assert prices is not None and p_read is not None and p_write is not None
    # the first request writes the shared prefix to the cache, the next reads it
    write = _anthropic_usage(
        {"input_tokens": 21, "cache_creation_input_tokens": 1800, "cache_read_input_tokens": 0, "output_tokens": 90}
    )
    read = _anthropic_usage(
        {"input_tokens": 21, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 1800, "output_tokens": 90}
    )
    for usage, cached, written in ((write, 0, 1800), (read, 1800, 0)):
        d = usage_details({}, usage)
        assert (d["cached_tokens"], d["cache_write_tokens"]) == (cached, written)
        prompt = usage.prompt_tokens  # type: ignore[attr-defined]  # reason: litellm's Usage object
        assert prompt == 21 + 1800  # litellm counts cached and written tokens in the prompt
        cost = token_cost(prices, prompt, 90, cached_tokens=cached, cache_write_tokens=written,
                          cache_prices=(p_read, p_write))  # fmt: skip
        assert cost == pytest.approx(21 * prices[0] + cached * p_read + written * p_write + 90 * prices[1])
    assert p_write > prices[0] > p_read  # writing costs more than plain input, reading less
