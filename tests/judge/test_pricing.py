"""Prices: an unknown model is said out loud, once, with the closest priced name."""

from __future__ import annotations

import warnings

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.judge import pricing

RUBRIC = rt.Rubric.from_dict([{"name": "a", "requirement": "Says hello"}])
DF = pl.DataFrame({"submission": ["hi", "yo"]})


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.setattr(pricing, "_WARNED", set())


def test_a_typo_in_the_model_name_warns_once_naming_it_and_the_closest_price():
    msg = r"no price for model 'openai/gpt-4\.1-mnii' \(did you mean 'gpt-4\.1-mini'\?\)"
    with pytest.warns(UserWarning, match=msg):
        est = rt.estimate_cost(DF, RUBRIC, model="openai/gpt-4.1-mnii")
    assert est["cost_usd"].is_null().all()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rt.estimate_cost(DF, RUBRIC, model="openai/gpt-4.1-mnii")  # once per model


def test_grading_warns_too_and_the_message_says_how_to_register_a_price():
    with pytest.warns(UserWarning, match=r"litellm\.register_model") as rec:
        v = rt.grade(
            DF,
            RUBRIC,
            model=rt.Judge(
                model="openai/gpt-4.1-mnii",
                api_key="sk-x",
                litellm_kwargs={"mock_response": '{"verdict": "MET", "explanation": "x"}'},
            ),
            cache=False,
            progress=False,
        )
    assert v["cost_usd"].is_null().all() and v["error"].null_count() == 2
    assert "sk-x" not in str(rec[0].message)


def test_known_models_and_servers_on_this_machine_are_quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rt.estimate_cost(DF, RUBRIC, model="openai/gpt-4.1-mini")
        rt.estimate_cost(DF, RUBRIC, model=rt.Judge(model="openai/smollm2", api_base="http://127.0.0.1:8765/v1"))
