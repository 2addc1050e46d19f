"""consistency and discrimination: rubrify's meta-metrics, checked against hand computations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rubrictools import metrics as m


def test_consistency_is_one_minus_the_mean_coefficient_of_variation() -> None:
    runs = np.array([[0.2, 0.4, 0.6], [0.5, 0.5, 0.5], [0.0, 0.0, 0.0], [0.9, np.nan, np.nan]])
    cv_first = np.std([0.2, 0.4, 0.6]) / 0.4  # the last submission has one score: left out
    assert m.consistency(runs) == pytest.approx(1 - (cv_first + 0 + 0) / 3)
    assert m.consistency([[0.0, 0.2], [0.5, 0.5]]) == pytest.approx(1 - (1 + 0) / 2)  # mean 0.1: CV 1
    assert m.consistency([[0.0, 0.0, 0.9]]) == 0.0  # CV 1.41: clipped at 0
    assert math.isnan(m.consistency([[0.5, np.nan]]))
    with pytest.raises(ValueError, match=r"at least 2 runs, got shape \(3,\)"):
        m.consistency([0.1, 0.2, 0.3])


def test_discrimination_is_the_normalised_entropy_of_the_scores() -> None:
    scores = [0.05, 0.15, 0.15, 0.95]  # bins of 0.5: [0, 0.5) holds 3, [0.5, 1] holds 1
    p = np.array([0.75, 0.25])
    assert m.discrimination(scores, bins=2) == pytest.approx(-(p * np.log(p)).sum() / np.log(2))
    assert m.discrimination([1.0, 1.0, 0.0, 0.0], bins=2) == pytest.approx(1.0)  # the top edge in the last bin
    assert m.discrimination([3, 3, 4], levels=[1, 2, 3, 4, 5]) == pytest.approx(
        -(2 / 3 * np.log(2 / 3) + 1 / 3 * np.log(1 / 3)) / np.log(5)
    )
    with pytest.raises(ValueError, match=r"scores \[1.5\] are outside \[low, high\]"):
        m.discrimination([0.2, 1.5])
    with pytest.raises(ValueError, match=r"scores \[6.0\] are not among the levels"):
        m.discrimination([6], levels=[1, 2, 3, 4, 5])
    with pytest.raises(ValueError, match="bins must be an int >= 2"):
        m.discrimination([0.2], bins=1)


def test_bad_inputs_are_named() -> None:
    with pytest.raises(ValueError, match="levels must not repeat a value"):
        m.discrimination([1, 2], levels=[1, 1, 2])
    with pytest.raises(ValueError, match="pass levels= or bins=/low=/high=, not both"):
        m.discrimination([1, 2], levels=[1, 2], bins=5)
    with pytest.raises(ValueError, match=r"one score per submission \(1-D\), got shape \(2, 2\)"):
        m.discrimination([[0.1, 0.9], [0.2, 0.3]])
    with pytest.raises(ValueError, match="scores must be numbers"):
        m.discrimination(["a"])
    with pytest.raises(ValueError, match="every row as long"):
        m.consistency([[0.1, 0.2], [0.3]])
