"""Judges checked before any call: a model name litellm cannot route is refused, naming it."""

from __future__ import annotations

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.evolution import ProposalGate

RUBRIC = rt.Rubric.from_dict([{"name": "a", "requirement": "Says hello"}])


def test_a_model_name_without_a_provider_litellm_cannot_route_is_refused_before_any_call() -> None:
    """Before: every row became an error row carrying litellm's "LLM Provider NOT provided"."""
    df = pl.DataFrame({"submission": ["hello"]})
    with pytest.raises(ValueError, match=r"model 'nonsense' names no provider .* 'openai/nonsense'"):
        rt.grade(df, RUBRIC, model=rt.Judge(model="nonsense", api_key="sk-x"), progress=False, record=False)
    with pytest.raises(ValueError, match=r"ProposalGate model: .*'gtp-4.1-mini' names no provider"):
        ProposalGate(model=rt.Judge(model="gtp-4.1-mini", api_key="sk-x"))  # a typo, found before the run


def test_a_bare_name_litellm_knows_and_a_prefixed_name_pass_the_check() -> None:
    from rubrictools.judge.providers import require_credentials

    require_credentials([rt.Judge(model="gpt-4.1-mini", api_key="sk-x")])  # litellm infers openai
    require_credentials([rt.Judge(model="openai/my-local-model", api_key="sk-x", api_base="http://127.0.0.1:1")])
