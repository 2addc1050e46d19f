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


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("timeout", 0),
        ("timeout", -1.0),
        ("timeout", float("nan")),
        ("temperature", -2.0),
        ("temperature", 3.5),
        ("temperature", float("inf")),
        ("backoff_base", -1.0),
        ("max_rate_limit_retries", -1),
    ],
)
def test_judge_settings_out_of_range_are_refused_naming_the_field(field, value) -> None:
    """Before: timeout=0 was accepted and temperature=-2 sent with every call."""
    with pytest.raises(ValueError, match=field):
        rt.Judge(model="openai/gpt-4.1-mini", **{field: value})
    rt.Judge(model="openai/gpt-4.1-mini", timeout=0.5, temperature=2.0)  # the edges are fine
