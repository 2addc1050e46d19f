"""Error rows say what failed: the provider, the judge's answer, the budget, or the data."""

from __future__ import annotations

import polars as pl

import rubrictools as rt
from rubrictools.judge import ERROR_KINDS
from rubrictools.testing import FakeLLMServer, Reply

from .test_grading import MODEL, SECRET

RUBRIC = rt.Rubric.from_dict([{"name": "good", "requirement": "The answer is good"}])


def _grade(server, df, tmp_path, model=MODEL, **kw):
    return rt.grade(
        df,
        RUBRIC,
        model=rt.Judge(model=model, api_base=server.url, api_key=SECRET, max_retries=0, backoff_base=0.0),
        cache=False,
        progress=False,
        record=False,
        **kw,
    )


def script(request):
    text = request["messages"][-1]["content"]
    if "DOWN" in text:
        return Reply(status=400)
    if "GARBLED" in text:
        return "I think it is fine, really."
    if "SILENT" in text:
        return Reply(content="")
    return '{"verdict": "MET", "explanation": "ok"}'


def test_each_failure_has_its_kind(tmp_path) -> None:
    df = pl.DataFrame({"submission": ["fine", "DOWN", "GARBLED", "SILENT", None]})
    with FakeLLMServer(script=script) as server:
        v = _grade(server, df, tmp_path, on_null="error_row")
    kinds = dict(zip(v["id"].to_list(), v["error_kind"].to_list(), strict=True))
    assert kinds == {0: None, 1: "provider", 2: "parse", 3: "empty_reply", 4: "input"}
    assert set(kinds.values()) - {None} <= set(ERROR_KINDS)
    both = rt.grade(df.head(3), RUBRIC, model=[rt.ScriptedJudge(name="a"), rt.ScriptedJudge(name="b")],
                    progress=False, record=False)  # fmt: skip
    assert both.filter(pl.col("judge") == "ensemble")["error_kind"].null_count() == 3  # nothing failed


def test_a_spent_budget_is_its_own_kind(tmp_path) -> None:
    df = pl.DataFrame({"submission": ["fine"] * 3})
    with FakeLLMServer(script=script) as server:
        import litellm  # the fake model has no price: give it one, so a budget can be enforced

        priced = "openai/fake-judge-with-a-price"  # its own name: other tests keep an unpriced fake model
        litellm.register_model({priced: {"input_cost_per_token": 1e-3, "output_cost_per_token": 1e-3,
                                         "litellm_provider": "openai", "mode": "chat"}})  # fmt: skip
        v = _grade(server, df, tmp_path, model=priced, max_cost_usd=0.0)
    assert v["error_kind"].to_list() == ["budget"] * 3
