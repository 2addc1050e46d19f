"""Anthropic's prompt cache needs a mark where the shared prefix ends; OpenAI's and Gemini's do not."""

from __future__ import annotations

import polars as pl

import rubrictools as rt
from rubrictools.images import Image
from rubrictools.judge.image_parts import with_images
from rubrictools.judge.prompt_cache import marks_cache, with_cache_mark
from rubrictools.judge.transport import _litellm_kwargs

RUBRIC = rt.Rubric.from_dict([{"name": "a", "requirement": "Covers point a"}, {"name": "b", "requirement": "Covers b"}])


def user_texts(text: str) -> list[str]:
    asked = rt.prompts(pl.DataFrame({"submission": [text]}), RUBRIC, model="openai/gpt-4.1-mini")
    return asked["user"].to_list()


def test_a_long_shared_part_is_marked_for_anthropic_and_left_alone_for_openai():
    user = user_texts("policy " * 1200)[0]
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": user}]
    claude = _litellm_kwargs(rt.Judge(model="anthropic/claude-sonnet-4-5"), messages, None, None, None)["messages"]
    parts = claude[-1]["content"]
    assert parts[0]["cache_control"] == {"type": "ephemeral"} and "</submission>" in parts[0]["text"]
    assert parts[1]["text"].startswith("Criterion name: a") and "cache_control" not in parts[1]
    assert "".join(p["text"] for p in parts).replace("Criterion", "\n\nCriterion", 1) == user
    gpt = _litellm_kwargs(rt.Judge(model="openai/gpt-4.1-mini"), messages, None, None, None)["messages"]
    assert gpt == messages


def test_a_short_shared_part_is_not_marked():
    messages = [{"role": "user", "content": user_texts("short answer")[0]}]
    assert with_cache_mark(messages) == messages
    assert marks_cache("bedrock/anthropic.claude-3-5-sonnet") and not marks_cache("gemini/gemini-2.5-flash")


def test_images_sit_between_the_submission_and_the_criterion_and_carry_the_mark():
    user = user_texts("policy " * 1200)[1]
    photo = Image("https://x/a.png", "0" * 64, source="column 'photo'")
    parts = with_images([{"role": "user", "content": user}], [photo])[0]["content"]
    assert [p["type"] for p in parts] == ["text", "text", "image_url", "text"]
    assert parts[0]["text"].rstrip().endswith("Grade the submission.") and parts[3]["text"].startswith(
        "Criterion name: b"
    )
    marked = with_cache_mark([{"role": "user", "content": parts}])[0]["content"]
    assert [("cache_control" in p) for p in marked] == [False, False, True, False]
