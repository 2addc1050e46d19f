"""`rubrictools.charts.base`: the checks every public chart shares."""

from __future__ import annotations

import inspect

import pytest

import rubrictools as rt


@pytest.mark.parametrize(
    "chart",
    ["confusion", "score_distributions", "met_rates", "reliability", "before_after", "forest", "verdicts",
     "leaderboard", "win_matrix", "position_bias", "ppi_widths"],
)  # fmt: skip
def test_every_chart_refuses_a_blank_title_before_reading_its_data(chart: str) -> None:
    # "" used to fall back to the default title in some charts and reach altair in others
    with pytest.raises(ValueError, match="title must be a non-blank string"):
        fn = getattr(rt.charts, chart)
        positional = [p for p in inspect.signature(fn).parameters.values() if p.kind is p.POSITIONAL_OR_KEYWORD]
        fn(*[None for p in positional if p.default is p.empty], title="  ")
