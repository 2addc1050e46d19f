"""`Judge` and `ScriptedJudge` settings are validated where they are given."""

from __future__ import annotations

import pytest

import rubrictools as rt


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), True, "2"])
def test_judge_weights_must_be_finite_positive_numbers(bad):
    with pytest.raises(ValueError, match="weight must be"):
        rt.Judge(model="openai/gpt-4.1-mini", weight=bad)
    with pytest.raises(ValueError, match="weight must be"):
        rt.ScriptedJudge(weight=bad)
    assert rt.Judge(model="openai/gpt-4.1-mini", weight=2).weight == 2.0
