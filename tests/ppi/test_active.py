"""choose_to_label: an uncertainty draw that chooses nothing says so."""

from __future__ import annotations

import warnings

import polars as pl
import pytest

import rubrictools as rt

V = pl.DataFrame({"id": [i for i in range(40) for _ in range(2)], "criterion": "c", "judge": ["a", "b"] * 40,
                  "verdict": ["MET", "UNMET"] * 40})  # fmt: skip


def test_an_empty_uncertainty_draw_warns_with_its_chance() -> None:
    """Before: k=1 of 40 returned an empty table for about one seed in three, without a word."""
    empty = []
    for seed in range(30):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = rt.choose_to_label(V, 1, seed=seed)
        said = [w for w in caught if "chose no item" in str(w.message)]
        assert bool(said) == (out.height == 0), seed  # a warning exactly when nothing came back
        if out.height == 0:
            empty.append(seed)
    assert empty  # with pi = 1/40 each, P(none) = 36%: some of 30 seeds draw nothing
    with pytest.warns(UserWarning, match=r"chance of none is 36\.\d%"):
        rt.choose_to_label(V, 1, seed=empty[0])
