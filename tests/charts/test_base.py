"""`rubrictools.charts.base`: the checks every public chart shares."""

from __future__ import annotations

import inspect

import pytest

import rubrictools as rt

TITLED = sorted(
    name for name in rt.charts.__all__
    if name != "table" and callable(fn := getattr(rt.charts, name)) and not isinstance(fn, type)
    and "title" in inspect.signature(fn).parameters
)  # fmt: skip
"""Every public chart with a title (``table`` has its own, string-only check)."""


def test_the_titled_charts_are_found() -> None:
    assert {"confusion", "forest", "reliability", "rubric_tree", "run_comparison", "ppi_widths"} <= set(TITLED)


@pytest.mark.parametrize("chart", TITLED)
def test_every_chart_refuses_a_blank_title_before_reading_its_data(chart: str) -> None:
    # "" used to fall back to the default title in some charts and reach altair in others
    with pytest.raises(ValueError, match="title must be a non-blank string"):
        fn = getattr(rt.charts, chart)
        positional = [p for p in inspect.signature(fn).parameters.values() if p.kind is p.POSITIONAL_OR_KEYWORD]
        fn(*[None for p in positional if p.default is p.empty], title="  ")
