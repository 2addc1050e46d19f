"""A reasoning model's trace (``reasoning_content``) and its cached / reasoning token counts are
kept in the verdict table through every path: both transports, the cache, per-item rows,
corrective retries and provider batch jobs."""

from __future__ import annotations

import polars as pl
import pytest

import rubrictools as rt

from ..fake_server import Reply, default_script
from .test_grading import MODEL, SECRET, _reset, df, rubric, run, server  # noqa: F401 - fixtures


def thinking(req):
    return Reply(
        content=default_script(req), reasoning="Let me weigh the answer.", cached_tokens=8, reasoning_tokens=12
    )


@pytest.mark.parametrize("transport", ["direct", "litellm"])
def test_trace_and_token_details_reach_the_verdict_table_and_survive_the_cache(df, rubric, server, tmp_path, transport):
    server.script = thinking
    v = run(df, rubric, server, tmp_path, transport=transport)
    assert (v["reasoning"] == "Let me weigh the answer.").all()
    assert v["cached_tokens"].to_list() == [8] * v.height and v["reasoning_tokens"].to_list() == [12] * v.height
    again = run(df, rubric, server, tmp_path, transport=transport)  # every answer from the cache
    assert again["cached"].all() and again.select("reasoning", "cached_tokens", "reasoning_tokens").equals(
        v.select("reasoning", "cached_tokens", "reasoning_tokens")
    )


def test_plain_replies_leave_the_columns_null(df, rubric, server, tmp_path):
    v = run(df, rubric, server, tmp_path)
    assert {"reasoning", "cached_tokens", "reasoning_tokens"} <= set(v.columns)
    assert v["reasoning"].null_count() == v.height and v["reasoning_tokens"].null_count() == v.height


def test_per_item_trace_stands_once_and_tokens_are_shared(df, rubric, server, tmp_path):
    server.script = lambda req: Reply(content=default_script(req), reasoning="one trace", reasoning_tokens=10)
    v = run(df.head(1), rubric, server, tmp_path, mode="per_item")
    assert v["reasoning"].to_list() == ["one trace", None, None]
    assert v["reasoning_tokens"].sum() == 10  # split over the call's 3 rows, nothing lost or doubled


def test_a_corrective_retry_keeps_the_trace_of_the_reply_used_and_sums_tokens(df, rubric, server, tmp_path):
    one = rubric.model_copy(update={"criteria": rubric.criteria[:1]})
    replies = iter(
        [
            Reply(content='{"verdict": "Yes"}', reasoning="first thoughts", reasoning_tokens=5),
            Reply(content='{"verdict": "MET", "explanation": "ok"}', reasoning="second thoughts", reasoning_tokens=7),
        ]
    )
    server.script = lambda req: next(replies)
    v = run(df.head(1), one, server, tmp_path)
    assert v["verdict"].item() == "MET" and v["reasoning"].item() == "second thoughts"
    assert v["reasoning_tokens"].item() == 12  # both replies were paid for


def test_batch_jobs_keep_the_trace(df, rubric, server, tmp_path):
    server.script = thinking
    v = run(df, rubric, server, tmp_path, batch=True, batch_dir=tmp_path / "job", poll_interval=0.01)
    assert (v["reasoning"] == "Let me weigh the answer.").all() and (v["cached_tokens"] == 8).all()


def test_ensemble_rows_carry_no_trace_of_their_own(df, rubric, server, tmp_path):
    server.script = thinking
    judges = [rt.Judge(model=MODEL, name=n, api_base=server.url, api_key=SECRET) for n in ("a", "b")]
    v = run(df.head(1), rubric, server, tmp_path, model=judges)
    ens = v.filter(pl.col("judge") == "ensemble")
    assert ens.height == 3 and ens["reasoning"].null_count() == 3
    assert v.filter(pl.col("judge") != "ensemble")["reasoning"].null_count() == 0


def test_the_cache_keeps_exactly_what_a_reply_carries():
    from rubrictools.judge.result import REPLY_DETAILS, usage_details

    assert tuple(usage_details({}, {})) == REPLY_DETAILS
