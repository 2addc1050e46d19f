"""Prompt caching by design: requests about one submission share their first part, one of them
goes first, and the provider's cache serves the rest (the fake server simulates OpenAI's)."""

from __future__ import annotations

import threading

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.judge.pricing import token_cost
from rubrictools.judge.prompts import shared_prefix
from rubrictools.testing import FakeLLMServer

MODEL = "openai/gpt-4.1-mini"
RUBRIC = rt.Rubric.from_dict([{"name": f"c{i}", "weight": 1, "requirement": f"Covers point {i}"} for i in range(4)])
LONG = [f"answer {k}: " + " ".join(["the refund policy applies to this order"] * 150) for k in range(6)]  # ~6,000 chars


def grade(texts: list[str], srv: FakeLLMServer, **kw) -> pl.DataFrame:
    judge = rt.Judge(model=MODEL, api_base=srv.url, api_key="sk-test-not-a-key", backoff_base=0.01, **kw)
    return rt.grade(pl.DataFrame({"submission": texts}), RUBRIC, model=judge, cache=False, progress=False, record=False)


def test_requests_about_one_submission_share_everything_before_the_criterion():
    asked = rt.prompts(
        pl.DataFrame({"submission": ["Hello there"], "q": ["Greet me"]}), RUBRIC, model=MODEL, query_column="q"
    )
    users = asked["user"].to_list()
    cuts = {shared_prefix(u) for u in users}
    assert len(cuts) == 1 and None not in cuts
    cut = cuts.pop()
    assert len({u[:cut] for u in users}) == 1 and len({u[cut:] for u in users}) == 4
    assert users[0][:cut].startswith("<query>") and "Criterion name: c0" in users[0][cut:]


def test_one_request_warms_the_cache_and_the_others_are_served_from_it():
    with FakeLLMServer(prompt_cache=True) as srv:
        v = grade(LONG, srv)
    assert v.height == 24 and v["error"].is_null().all()
    per = v.group_by("id").agg((pl.col("cached_tokens").fill_null(0) > 0).sum().alias("warm"), pl.len())
    assert per["warm"].to_list() == [3] * 6  # every criterion after the first of each submission
    row = v.filter(pl.col("cached_tokens") > 0).row(0, named=True)
    expected = token_cost(
        (4e-7, 1.6e-6),
        row["prompt_tokens"],
        row["completion_tokens"],
        cached_tokens=row["cached_tokens"],
        cache_prices=(1e-7, None),
    )
    assert row["cost_usd"] == pytest.approx(expected)  # cached input billed at its own price
    assert row["cost_usd"] < token_cost((4e-7, 1.6e-6), row["prompt_tokens"], row["completion_tokens"])


def test_short_submissions_are_not_held_back():
    """Nothing to cache below 1,024 tokens: every request may be in flight at once."""
    with FakeLLMServer() as srv:
        srv.hold()
        out: list[pl.DataFrame] = []
        worker = threading.Thread(target=lambda: out.append(grade(["short one", "short two"], srv)))
        worker.start()
        assert srv.arrived(8).wait(60)  # all 2 x 4 requests arrived before any answer
        srv.release()
        worker.join(60)
    assert out and out[0].height == 8


def test_long_submissions_send_one_request_each_first():
    with FakeLLMServer() as srv:
        srv.hold()
        worker = threading.Thread(target=lambda: grade(LONG[:3], srv))
        worker.start()
        assert srv.arrived(3).wait(60)
        assert srv.arrivals == 3  # the followers wait for their leader's answer
        srv.release()
        worker.join(60)
        first = [r["messages"][-1]["content"] for r in srv.requests[:3]]
    assert len({t[: shared_prefix(t)] for t in first}) == 3  # one per submission, not three of one


def test_usage_reports_the_prompt_cache_and_the_estimate_predicts_it():
    with FakeLLMServer(prompt_cache=True) as srv:
        v = grade(LONG, srv)
    u = rt.usage(v)
    assert u["prompt_cache_tokens"][0] == v["cached_tokens"].fill_null(0).sum() > 0
    assert u["prompt_cache_share"][0] == pytest.approx(u["prompt_cache_tokens"][0] / u["prompt_tokens"][0])
    est = rt.estimate_cost(pl.DataFrame({"submission": LONG}), RUBRIC, model=MODEL).row(0, named=True)
    # 3 of every 4 requests reuse their submission's prefix (1,024+ tokens, in 128-token steps)
    assert est["cached_tokens"] > 0 and est["cached_tokens"] % 128 == 0
    assert est["cached_tokens"] < 0.75 * est["prompt_tokens"]
    full = est["prompt_tokens"] * 4e-7 + est["completion_tokens"] * 1.6e-6
    assert est["cost_usd"] == pytest.approx(full - est["cached_tokens"] * (4e-7 - 1e-7))


def test_usage_leaves_the_prompt_cache_share_null_when_no_prompt_token_was_sent():
    rubric = rt.Rubric.from_dict([{"name": "a", "requirement": "Says hello"}])
    u = rt.usage(rt.grade(pl.DataFrame({"submission": ["hi"]}), rubric, model=rt.ScriptedJudge(), progress=False,
                          record=False))  # fmt: skip
    assert u["prompt_tokens"][0] == 0 and u["prompt_cache_share"][0] is None  # not NaN
    assert u.columns.index("prompt_cache_share") == u.columns.index("prompt_cache_tokens") + 1


def test_requests_with_images_also_send_one_request_each_first():
    """The image sits in the shared part (before the criterion): followers wait for their leader."""
    from .test_images import PNG, VISION

    frame = pl.DataFrame(
        {"submission": ["a photo of a red bus", "a photo of a blue car"], "photo": [PNG, PNG[:-1] + b"\x83"]},
        schema={"submission": pl.String, "photo": pl.Binary},
    )
    with FakeLLMServer() as srv:
        srv.hold()
        judge = rt.Judge(model=VISION, api_base=srv.url, api_key="sk-test-not-a-key")
        run = lambda: rt.grade(frame, RUBRIC, model=judge, image_column="photo", cache=False, progress=False,  # noqa: E731 - a thread's body
                               record=False)  # fmt: skip
        worker = threading.Thread(target=run)
        worker.start()
        assert srv.arrived(2).wait(60)
        assert srv.arrivals == 2  # one leader per submission; the other 2 x 3 wait for its answer
        srv.release()
        worker.join(60)
        assert srv.arrivals == 8
