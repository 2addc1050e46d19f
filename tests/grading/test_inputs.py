"""Bad grading inputs are named before any call is made (issue: contracts at the edges)."""

from __future__ import annotations

import warnings

import pandas as pd
import polars as pl
import pytest

import rubrictools as rt

from .test_grading import MODEL, _reset, rubric, run, server  # noqa: F401 - shared fixtures


def grade(frame, rubric, server, tmp_path, **kw):
    return run(frame, rubric, server, tmp_path, cache=False, **kw)


@pytest.mark.parametrize("values", [[1, 2], [0.5, float("nan")], [True, False]], ids=["int", "nan-float", "bool"])
def test_non_text_submissions_are_refused_naming_the_column(values, rubric, server, tmp_path):
    """Before: integers were cast to text and graded; a NaN float was sent as "nan"."""
    frame = pl.DataFrame({"qid": ["a", "b"], "text": values})
    with pytest.raises(ValueError, match=r"column='text' holds \w+ values, not text.*cast"):
        grade(frame, rubric, server, tmp_path)
    assert server.hits == 0


def test_blank_submissions_are_graded_with_a_warning_naming_the_rows(rubric, server, tmp_path):
    """Before: empty and whitespace-only answers cost paid calls with no word."""
    frame = pl.DataFrame({"qid": ["a", "b", "c"], "text": ["fine answer", "", "  \n "]})
    with pytest.warns(UserWarning, match=r"2 empty or whitespace-only submission\(s\).*row 1 \(id 'b'\), row 2"):
        v = grade(frame, rubric, server, tmp_path)
    assert v.height == 9


def test_no_warning_for_ordinary_submissions(rubric, server, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        grade(pl.DataFrame({"qid": ["a"], "text": ["an answer"]}), rubric, server, tmp_path)


def test_a_turn_with_text_instead_of_content_is_refused_naming_the_turn(rubric, server, tmp_path):
    """Before: such turns reached the judge as empty turns (3 paid calls)."""
    conv = [{"role": "user", "text": "What is 2+2?"}, {"role": "assistant", "text": "4"}]
    frame = pl.DataFrame({"qid": ["a"], "text": [conv]})
    with pytest.raises(ValueError, match=r"turn 0: has no 'content' but has 'text'"):
        grade(frame, rubric, server, tmp_path)
    assert server.hits == 0


def test_a_request_over_the_context_window_is_warned_before_any_call(rubric, server, tmp_path):
    """Before: a 2 MB submission was sent whole with no word."""
    huge = "word " * 1_300_000  # ~1.3M tokens > gpt-4.1-mini's 1,047,576
    frame = pl.DataFrame({"qid": ["big", "small"], "text": [huge, "short"]})
    with pytest.warns(UserWarning, match=r"3 request\(s\) .* exceed its context window.*submission id 'big'"):
        rt.estimate_cost(frame, rubric, model=MODEL, column="text", id_column="qid")  # the plan is not built here
        rt.grade(
            frame, rubric, model="rubrictools/scripted", column="text", id_column="qid", progress=False, cache=False
        )
        grade(frame.head(1), rubric, server, tmp_path, max_cost_usd=1e-12)  # nothing sent: over budget


@pytest.mark.parametrize(
    ("values", "message"),
    [(["ok", 3], "mixes str and int values"), (["ok", "bad \ud800 x"], "invalid Unicode")],
)
def test_bad_pandas_columns_are_named(values, message, rubric, server, tmp_path):
    """Before: pyarrow's ArrowTypeError and a UnicodeEncodeError for the whole grade."""
    frame = pd.DataFrame({"qid": ["a", "b"], "text": pd.Series(values, dtype=object)})
    with pytest.raises(ValueError, match=message):
        grade(frame, rubric, server, tmp_path)
    assert server.hits == 0
