"""`rubrictools.charts.reliability`: the reliability diagram's checks on its inputs."""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest

import rubrictools as rt


def test_reliability_says_how_many_items_it_left_out() -> None:
    with pytest.warns(UserWarning, match=r"2 of 5 items have no outcome or probability \(NaN or null\)"):
        rt.charts.reliability([1, 0, 1, 1, 0], [0.9, np.nan, 0.8, None, 0.1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rt.charts.reliability(np.array([1, 0, 1, 1]), pl.Series([0.9, 0.3, 0.8, 0.4]))


def test_reliability_refuses_nothing_to_draw_and_a_non_integer_bin_count() -> None:
    for y, p in (([], []), ([1, 0], [np.nan, np.nan])):
        with (
            pytest.raises(ValueError, match="no item has both an outcome and a probability"),
            warnings.catch_warnings(),
        ):
            warnings.simplefilter("ignore")
            rt.charts.reliability(y, p)
    for bad in (2.5, 0, True, "3"):
        with pytest.raises(ValueError, match=f"n_bins must be an int >= 1, got {bad!r}"):
            rt.charts.reliability([1, 0], [0.8, 0.3], n_bins=bad)  # type: ignore[arg-type]  # reason: bad input on purpose
