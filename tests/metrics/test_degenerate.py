"""Degenerate inputs give NaN (or a clear error), never a crash or a made-up number."""

from __future__ import annotations

import math
import pickle

import numpy as np
import polars as pl
import pytest

from rubrictools import metrics as m


def nan(x: float) -> bool:
    return math.isnan(float(x))


def test_one_class_only() -> None:
    y = ["MET"] * 5
    assert m.accuracy(y, y) == 1.0
    assert nan(m.cohen_kappa(y, y))
    assert nan(m.mcc(y, y))
    assert nan(m.gwet_ac1(y, y))  # a single category: AC1 needs K >= 2
    assert m.gwet_ac1(y, y, labels=["MET", "UNMET"]) == 1.0
    assert nan(m.fleiss_kappa([[1, 1], [1, 1]]))
    assert nan(m.krippendorff_alpha([[1, 1], [1, 1]]))
    assert nan(m.pearson([1, 1, 1], [1, 2, 3]))
    assert nan(m.spearman([1, 1, 1], [1, 2, 3]))
    assert nan(m.kendall([1, 1, 1], [1, 2, 3]))


def test_all_missing_and_empty() -> None:
    none = [None, None, None]
    assert nan(m.accuracy(none, ["MET"] * 3))
    assert nan(m.cohen_kappa([], []))
    assert nan(m.rmse([np.nan, np.nan], [1.0, 2.0]))
    assert nan(m.rmse_affine([np.nan, np.nan], [1.0, 2.0]))
    # constant scores: the best affine map is the mean; constant truth: a perfect fit
    assert m.rmse_affine([1.0, 2.0, 3.0], [5.0, 5.0, 5.0]) == pytest.approx(np.std([1.0, 2.0, 3.0]))
    assert m.rmse_affine([2.0, 2.0, 2.0], [1.0, 5.0, 3.0]) == 0.0
    assert nan(m.wasserstein([], [1.0]))
    assert nan(m.js_divergence([None], ["MET"]))
    assert nan(m.krippendorff_alpha([[None, None], [None, None]]))
    assert nan(m.percent_agreement([[1, None], [2, None]]))  # no unit rated twice


def test_n_equals_one_and_single_rater() -> None:
    assert m.accuracy(["MET"], ["UNMET"]) == 0.0
    assert nan(m.pearson([1.0], [2.0]))
    assert nan(m.mean_bias([1.0], [2.0]).pvalue)
    assert nan(m.fleiss_kappa([[1], [2], [1]]))
    with pytest.raises(ValueError, match="two raters"):
        m.icc([[1.0], [2.0]])


def test_missing_values_drop_pairs_or_raise() -> None:
    t = pl.Series([1, None, 0, 1])
    p = [1, 1, None, 0]
    assert m.accuracy(t, p) == 0.5
    with pytest.raises(ValueError, match="missing"):
        m.accuracy(t, p, nan_policy="raise")
    assert m.pearson([1.0, 2.0, np.nan, 4.0], [1.0, 2.0, 3.0, 5.0]) == pytest.approx(m.pearson([1, 2, 4], [1, 2, 5]))


def test_clear_errors() -> None:
    with pytest.raises(ValueError, match="different lengths"):
        m.accuracy([1, 2], [1])
    with pytest.raises(ValueError, match="not in labels"):
        m.cohen_kappa([1, 2], [1, 3], labels=[1, 2])
    with pytest.raises(ValueError, match="at most 2 labels"):
        m.precision([0, 1, 2], [0, 1, 2], pos_label=1)
    with pytest.raises(ValueError, match="exactly one"):
        m.fleiss_kappa([[1, 2]], counts=[[1, 1]])
    with pytest.raises(ValueError, match="numeric"):
        m.pearson(["a", "b"], [1, 2])
    with pytest.raises(ValueError, match="kind"):
        m.icc([[1, 2], [3, 4]], kind="ICC9")


def test_estimate_behaves_like_a_float_and_pickles() -> None:
    e = m.pearson([1, 2, 3, 4], [1, 3, 2, 4])
    assert isinstance(e, float) and f"{e:.1f}" == "0.8"
    assert 0 < e.pvalue < 1 and e.n == 4
    back = pickle.loads(pickle.dumps(e))
    assert back == e and back.pvalue == e.pvalue
    with pytest.raises(AttributeError, match="has no attribute"):
        _ = e.nonexistent
    assert "pvalue" in repr(e)
