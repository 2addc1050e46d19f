"""Images reach the judge: through both transports, labelled, keyed by digest, refused for text-only models."""

from __future__ import annotations

import base64
import json

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.judge import ResponseCache
from rubrictools.testing.scripts import request_image_urls

from ..fake_server import judge_from
from .test_grading import SECRET, server  # noqa: F401 - shared fixture

# a real 64 x 48 PNG (so token counters can read its size)
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000400000003008020000002e29eb480000005249444154789cedcf310d00"
    "2000c0304008fea5200b111c0dc9aa609b67eff1b3a5035e35a035a035a035a035a035a035a035a035a035a035a035a0"
    "35a035a035a035a035a035a035a035a035a035a035a05daf170164d97111de0000000049454e44ae426082"
)
OTHER = PNG[:-20] + bytes(reversed(PNG[-20:-12])) + PNG[-12:]
VISION = "openai/gpt-4o-mini"  # litellm: supports_vision
RUBRIC = rt.Rubric.from_dict([{"name": "red", "requirement": "The photo shows something red"}])


def _frame(images: list[bytes | None]) -> pl.DataFrame:
    return pl.DataFrame(
        {"id": [f"p{i}" for i in range(len(images))], "caption": ["a good photo"] * len(images), "photo": images},
        schema={"id": pl.String, "caption": pl.String, "photo": pl.Binary},
    )


def _grade(df, server, tmp_path, **kw):
    base = {"model": VISION, "cache": tmp_path / "c.sqlite"}
    common = {"progress": False, "record": False, "column": "caption", "id_column": "id", "image_column": "photo"}
    return rt.grade(df, RUBRIC, **judge_from({**base, **common, **kw}, api_base=server.url, api_key=SECRET))


@pytest.mark.parametrize("transport", ["direct", "litellm"])
def test_the_image_bytes_reach_the_server_labelled(server, tmp_path, transport) -> None:
    before = len(server.requests)
    v = _grade(_frame([PNG, None]), server, tmp_path / transport, transport=transport)
    assert v["error"].null_count() == 2
    sent = server.requests[before:]
    with_image = [r for r in sent if request_image_urls(r)]
    assert len(sent) == 2 and len(with_image) == 1  # the row without a photo sends text only
    (url,) = request_image_urls(with_image[0])
    assert base64.b64decode(url.partition(",")[2]) == PNG and url.startswith("data:image/png;base64,")
    texts = [p["text"] for p in with_image[0]["messages"][-1]["content"] if p["type"] == "text"]
    assert "a good photo" in texts[0] and texts[1] == "Image 1 of the submission (column 'photo'):"


def test_keys_hold_the_digest_so_same_bytes_hit_and_other_bytes_miss(server, tmp_path) -> None:
    _grade(_frame([PNG]), server, tmp_path)
    asked = len(server.requests)
    again = _grade(_frame([PNG]), server, tmp_path)
    assert len(server.requests) == asked and again["cached"].all()
    _grade(_frame([OTHER]), server, tmp_path)
    assert len(server.requests) == asked + 1  # one changed image: one new call
    keys = list(ResponseCache(tmp_path / "c.sqlite").keys())
    assert len(keys) == 2
    p = rt.prompts(
        _frame([PNG]),
        RUBRIC,
        model=rt.Judge(model=VISION, api_base=server.url),
        column="caption",
        id_column="id",
        image_column="photo",
    )
    assert p["cache_key"][0] in keys and p["images"][0].to_list() == [__import__("hashlib").sha256(PNG).hexdigest()]
    assert "[image: image/png, 0.1 KB, sha256 " in p["user"][0] and base64.b64encode(PNG).decode() not in p["user"][0]


def test_a_text_only_model_is_refused_before_any_call(server, tmp_path) -> None:
    before = len(server.requests)
    with pytest.raises(ValueError, match=r"'openai/gpt-3.5-turbo' does not take images"):
        _grade(_frame([PNG]), server, tmp_path, model="openai/gpt-3.5-turbo")
    assert len(server.requests) == before
    with pytest.warns(UserWarning, match="does not know whether 'openai/fake-judge' takes images"):
        _grade(_frame([PNG]), server, tmp_path, model="openai/fake-judge")
    with pytest.raises(ValueError, match=r"image_column 'photo': row 0 \(id 'p0'\): .*not a PNG"):
        _grade(_frame([b"not an image"]), server, tmp_path)


def test_conversation_images_and_the_scripted_judge(server, tmp_path) -> None:
    uri = "data:image/png;base64," + base64.b64encode(PNG).decode()
    conv = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "Is it red?"}, {"type": "image_url", "image_url": {"url": uri}}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Yes, it is a good red square."}]},
    ]  # a polars column: every turn's content in the same (parts) form
    df = pl.DataFrame({"chat": [conv]})
    before = len(server.requests)
    v = rt.grade(
        df,
        RUBRIC,
        model=rt.Judge(model=VISION, api_base=server.url, api_key=SECRET),
        column="chat",
        cache=False,
        progress=False,
        record=False,
    )
    assert v["verdict"].to_list() == ["MET"]
    (req,) = server.requests[before:]
    parts = req["messages"][-1]["content"]
    assert "[image 1]" in parts[0]["text"] and parts[1]["text"] == "Image 1 of the submission (turn 1, user):"
    scripted = rt.grade(df, RUBRIC, model=rt.ScriptedJudge(), column="chat", progress=False, record=False)
    assert scripted["error"].null_count() == 1  # the offline judge accepts image parts too


def test_pairwise_refuses_images_and_estimates_count_them() -> None:
    uri = "data:image/png;base64," + base64.b64encode(PNG).decode()
    with_image = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": uri}}]},
                  {"role": "assistant", "content": [{"type": "text", "text": "red"}]}]  # fmt: skip
    pairs = pl.DataFrame({"response_a": [with_image], "response_b": [with_image]})
    with pytest.raises(ValueError, match="pairwise grading does not show images"):
        rt.grade_pairs(pairs, RUBRIC, model=rt.ScriptedJudge(), progress=False, record=False)
    plain = rt.estimate_cost(_frame([None]), RUBRIC, model=VISION, column="caption", image_column="photo")
    pictured = rt.estimate_cost(_frame([PNG]), RUBRIC, model=VISION, column="caption", image_column="photo")
    assert pictured["prompt_tokens"][0] > plain["prompt_tokens"][0] + 20
    assert json.dumps(pictured.to_dicts())  # a plain table
