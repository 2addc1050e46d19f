from __future__ import annotations

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.frames import to_polars
from rubrictools.verdicts import VERDICT_SCHEMA, empty_verdicts


@pytest.fixture
def rubric():
    return rt.Rubric.from_dict(
        [
            {"name": "a", "requirement": "x"},
            {
                "name": "q",
                "requirement": "y",
                "weight": 4,
                "options": [{"label": "Low", "value": 0}, {"label": "High", "value": 1}, {"label": "N/A", "na": True}],
            },
        ]
    )


def test_completes_schema_and_canonicalises_labels(rubric):
    v = rt.validate_verdicts(
        pl.DataFrame({"id": [1, 1], "criterion": ["a", "q"], "verdict": [" met", "high "]}), rubric
    )
    for col, dt in VERDICT_SCHEMA.items():
        assert col in v.columns
        if dt is not None:
            assert v.schema[col] == dt
    assert v["verdict"].to_list() == ["MET", "High"]
    assert v["value"].to_list() == [1.0, 1.0]
    assert v["weight"].to_list() == [10.0, 4.0]


def test_error_rows_lose_their_verdict_and_na_has_null_value(rubric):
    v = rt.validate_verdicts(
        pl.DataFrame({"id": [1, 1], "criterion": ["a", "q"], "verdict": ["MET", "n/a"], "error": ["timeout", None]}),
        rubric,
    )
    assert v["verdict"].to_list() == [None, "N/A"]
    assert v["value"].to_list() == [None, None]


def test_rows_without_verdict_or_error_are_rejected(rubric):
    with pytest.raises(ValueError, match="neither a verdict nor an error"):
        rt.validate_verdicts(
            pl.DataFrame(
                {"id": [1], "criterion": ["a"], "verdict": [None]},
                schema={"id": pl.Int64, "criterion": pl.String, "verdict": pl.String},
            ),
            rubric,
        )


def test_without_rubric_needs_weights_and_derives_binary_values():
    with pytest.raises(ValueError, match="needs a 'weight'"):
        rt.validate_verdicts(pl.DataFrame({"id": [1], "criterion": ["a"], "verdict": ["MET"]}))
    v = rt.validate_verdicts(
        pl.DataFrame({"id": [1, 1], "criterion": ["a", "b"], "verdict": ["met", "unmet"], "weight": [1.0, -2.0]})
    )
    assert v["value"].to_list() == [1.0, 0.0]
    assert v["verdict"].to_list() == ["MET", "UNMET"]
    assert v["worst_value"].to_list() == [0.0, 1.0]


def test_bad_types_and_inputs():
    with pytest.raises(ValueError, match="wrong type"):
        rt.validate_verdicts(
            pl.DataFrame({"id": [1], "criterion": ["a"], "verdict": ["MET"], "weight": [1.0], "value": ["lots"]})
        )
    with pytest.raises(TypeError, match="polars or pandas"):
        to_polars([1, 2, 3])
    with pytest.raises(ValueError, match="value must be in"):
        rt.validate_verdicts(
            pl.DataFrame({"id": [1], "criterion": ["a"], "verdict": ["x"], "weight": [1.0], "value": [1.5]})
        )


def test_lazy_and_empty():
    lf = pl.LazyFrame({"id": [1], "criterion": ["a"], "verdict": ["MET"], "weight": [1.0]})
    assert rt.validate_verdicts(lf).height == 1
    e = empty_verdicts()
    assert e.height == 0 and list(e.columns) == list(VERDICT_SCHEMA)
