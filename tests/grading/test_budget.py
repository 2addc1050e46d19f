"""``max_cost_usd`` is a hard cap: a request is sent only when its worst-case cost fits."""

from __future__ import annotations

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.grading.budget import Budget, reply_cap
from rubrictools.judge import Judge

from .test_grading import MODEL, _reset, df, rubric, run, server  # noqa: F401 - shared fixtures


def test_a_budget_too_small_for_one_request_sends_nothing(df, rubric, server, tmp_path):
    v = run(df, rubric, server, tmp_path, max_cost_usd=1e-9, max_concurrency=1)
    assert v.height == 12 and server.hits == 0
    assert v["error"].str.starts_with("budget exceeded").all()


@pytest.mark.parametrize("concurrency", [1, 16])
def test_spend_never_exceeds_the_budget_at_any_concurrency(df, rubric, server, tmp_path, concurrency):
    """Before the fix, 1e-5 dollars made 16 calls at concurrency 16 (all of them in flight
    before the first answer was counted)."""
    one = run(df.head(1), rubric, server, tmp_path / "probe", cache=False)
    per_call = one["cost_usd"].max()
    limit = 2e-3
    server.reset()
    big = pl.DataFrame({"qid": [f"q{i}" for i in range(40)], "text": [f"answer number {i}" for i in range(40)]})
    v = run(big, rubric, server, tmp_path, max_cost_usd=limit, max_concurrency=concurrency, cache=False)
    spent = v["cost_usd"].sum()
    assert spent <= limit, (spent, limit)
    assert 1 <= server.hits < v.height  # some calls fit, the rest were never sent
    assert server.hits * per_call <= limit * 1.01
    stopped = v.filter(pl.col("error").str.starts_with("budget exceeded"))
    assert stopped.height == v.height - server.hits
    assert stopped["attempts"].sum() == 0


def test_the_reservation_is_released_when_the_answer_is_cheaper():
    judge = Judge(model=MODEL)
    b = Budget(1.0)
    msgs = [{"role": "user", "content": "hello there"}]
    held = b.reserve(judge, msgs, 250, 1)
    assert held is not None and held > 0 and b.reserved == pytest.approx(held)
    b.settle(held, held / 10)
    assert b.reserved == 0 and b.spent == pytest.approx(held / 10)
    # three samples reserve three replies
    assert b.worst_case(judge, msgs, 250, 3) > b.worst_case(judge, msgs, 250, 1)
    assert Budget(None).reserve(judge, msgs, None, 1) == 0.0


def test_an_uncapped_reply_is_bounded_by_the_model_output_limit():
    assert reply_cap(MODEL, 99) == 99
    assert reply_cap(MODEL, None) is not None and reply_cap(MODEL, None) > 1000
    assert reply_cap("openai/no-such-model-xyz", None) is None


def test_a_model_without_a_price_and_a_budget_refuses_to_start_saying_how(df, rubric, server, tmp_path):
    with pytest.raises(ValueError, match=r"no price for model 'openai/unknown-model-xyz'.*register_model"):
        run(df, rubric, server, tmp_path, model="openai/unknown-model-xyz", max_cost_usd=1.0)
    assert server.hits == 0


def test_a_misspelt_model_on_a_local_base_gets_a_did_you_mean(df, rubric, server, tmp_path):
    with pytest.warns(UserWarning, match="did you mean 'gpt-4.1-mini'"):
        run(df.head(1), rubric, server, tmp_path, model="openai/gpt-4.1-mnii", cache=False)
    rt.grade  # noqa: B018 - the public entry point stays importable


@pytest.mark.parametrize("concurrency", [1, 16, 64])
def test_the_budget_is_spent_not_only_kept(df, rubric, server, tmp_path, concurrency):
    """A request that does not fit while others hold reservations waits for them to settle:
    the run spends its budget to within one request's worst case, never past it. Before, a
    budget worth ~530 calls sent 16 at concurrency 40 (0.08 of it spent)."""
    one_crit = rubric.model_copy(update={"criteria": rubric.criteria[:1]})
    frame = pl.DataFrame({"qid": [f"q{i}" for i in range(600)], "text": [f"answer {i} is good" for i in range(600)]})
    probe = run(frame.head(1), one_crit, server, tmp_path / "probe", cache=False)
    per_call = probe["cost_usd"].item()
    judge = Judge(model=MODEL, api_base=server.url, api_key="k")
    call = rt.prompts(frame.head(1), one_crit, model=judge, column="text", id_column="qid")
    worst = Budget(1.0).worst_case(judge, call["messages"][0].to_list(), int(call["max_tokens"][0]), 1)
    limit = max(15 * worst, 100 * per_call)  # worth >= 100 calls, and 15 worst cases
    assert frame.height * per_call > limit  # more work than money: the budget decides
    server.reset()
    v = run(frame, one_crit, server, tmp_path, max_cost_usd=limit, max_concurrency=concurrency, cache=False)
    spent = v["cost_usd"].sum()
    assert spent <= limit and spent >= limit - worst, (spent, limit, worst)
    assert spent / limit >= 0.9
    assert v.filter(pl.col("error").str.starts_with("budget exceeded"))["attempts"].sum() == 0
