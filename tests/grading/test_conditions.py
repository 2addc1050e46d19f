"""Conditional criteria (``applies_when``): asked only where their condition holds, a
``NOT_APPLICABLE`` row elsewhere that no scoring strategy counts, in every mode."""

from __future__ import annotations

import warnings

import polars as pl
import pytest

import rubrictools as rt

from ..fake_server import judge_from, submission_text
from .test_grading import MODEL, SECRET, _reset, server  # noqa: F401 - fixtures

RUBRIC = rt.Rubric.from_dict(
    [
        {"name": "clear", "weight": 5, "requirement": "Is clear"},
        {"name": "prices", "weight": 3, "requirement": "Quotes prices", "applies_when": {"genre": ["travel"]}},
        {
            "name": "sources",
            "weight": 2,
            "requirement": "Cites sources",
            "applies_when": {"genre": ["news", "science"]},
        },
    ]
)
DF = pl.DataFrame(
    {
        "id": [1, 2, 3, 4],
        "submission": ["good trip", "good story", "bad recipe", "good"],
        "genre": ["travel", "news", "food", None],
    }
)


def grade(server, **kw):
    kw = judge_from({"model": MODEL, "cache": False, "progress": False, **kw}, api_base=server.url, api_key=SECRET)
    return rt.grade(DF, RUBRIC, id_column="id", **kw)


def test_only_applicable_criteria_are_asked_and_the_rest_are_not_applicable_rows(server):
    v = grade(server)
    asked = sorted(
        (submission_text(r), r["messages"][1]["content"].split("Requirement: ")[1].split("\n")[0])
        for r in server.requests
    )
    assert asked == [
        ("bad recipe", "Is clear"),
        ("good", "Is clear"),
        ("good story", "Cites sources"),
        ("good story", "Is clear"),
        ("good trip", "Is clear"),
        ("good trip", "Quotes prices"),
    ]
    na = v.filter(pl.col("verdict") == "NOT_APPLICABLE")
    assert sorted(na.select("id", "criterion").rows()) == [
        (1, "sources"),
        (2, "prices"),
        (3, "prices"),
        (3, "sources"),
        (4, "prices"),
        (4, "sources"),
    ]
    assert (na["judge"] == "rule").all() and na["value"].null_count() == 6 and na["error"].null_count() == 6
    assert (
        na.filter(pl.col("id") == 3)["explanation"].to_list()[0]
        == "not applicable: applies when genre is one of ['travel']"
    )
    assert v.group_by("id").len().sort("id")["len"].to_list() == [3, 3, 3, 3]  # every criterion has a row


@pytest.mark.parametrize("strategy", ["skip", "zero", "partial", "worst", "fail"])
def test_not_applicable_rows_are_never_scored(server, strategy):
    v = grade(server)
    s = rt.score(v, RUBRIC, cannot_assess=strategy).sort("id")
    # 1: clear MET (5) + prices MET (3) of 8; 2: clear + sources MET of 7; 3: clear UNMET of 5; 4: clear MET of 5
    assert s["score"].to_list() == [1.0, 1.0, 0.0, 1.0]
    assert s["cannot_assess_count"].to_list() == [0, 0, 0, 0]
    assert s["raw_score"].to_list() == [8.0, 7.0, 0.0, 5.0]


@pytest.mark.parametrize("mode", ["per_item", "holistic"])
def test_other_modes_are_shown_only_the_applicable_criteria(server, mode):
    v = grade(server, mode=mode)
    shown = [r["messages"][1]["content"] for r in server.requests]
    assert len(shown) == 4
    travel = next(t for t in shown if "good trip" in t)
    assert "Quotes prices" in travel and "Cites sources" not in travel
    food = next(t for t in shown if "bad recipe" in t)
    assert "Quotes prices" not in food and "Cites sources" not in food
    assert v.filter(pl.col("verdict") == "NOT_APPLICABLE").height == 6
    s = rt.score(v, RUBRIC).sort("id")
    assert s["error"].null_count() == 4 and s["score"].null_count() == 0


def test_bad_conditions_fail_before_any_call(server):
    with pytest.raises(ValueError, match="criterion 'prices': field 'applies_when' names the column 'genre'"):
        rt.grade(
            DF.drop("genre"), RUBRIC, model=rt.Judge(model=MODEL, api_base=server.url, api_key=SECRET), progress=False
        )
    assert server.hits == 0
    with pytest.raises(ValueError, match="applies_when must be a mapping"):
        rt.Rubric.from_dict([{"requirement": "x", "applies_when": ["genre"]}])
    with pytest.raises(ValueError, match="non-empty list of values"):
        rt.Rubric.from_dict([{"requirement": "x", "applies_when": {"genre": []}}])
    with pytest.raises(ValueError, match="pairwise grading compares"):
        rt.grade_pairs(
            DF.with_columns(pl.col("submission").alias("b")),
            RUBRIC,
            a="submission",
            b="b",
            model=rt.Judge(model=MODEL, api_base=server.url, api_key=SECRET),
            progress=False,
        )


def test_conditions_round_trip_and_rubrify_genres_load_as_conditions():
    assert rt.Rubric.from_dict(RUBRIC.to_dict()) == RUBRIC
    assert RUBRIC["sources"].applies_when == {"genre": ("news", "science")}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a genre is no longer a dropped part
        r = rt.Rubric.from_rubrify(
            {"criteria": [{"id": "C1", "title": "Clear"}, {"id": "T1", "title": "Itinerary", "genre": "travel"}]}
        )
    assert r["T1"].applies_when == {"genre": ("travel",)} and r["C1"].applies_when is None


def test_the_scripted_judge_and_rules_respect_conditions():
    rubric = rt.Rubric.from_dict(
        [
            {"name": "short", "rule": {"max_words": 3}, "applies_when": {"genre": ["news"]}},
            {"name": "good", "requirement": "Says good"},
        ]
    )
    v = rt.grade(
        DF,
        rubric,
        model=rt.ScriptedJudge(rule=lambda t, c: "MET" if "good" in t else "UNMET"),
        id_column="id",
        progress=False,
    )
    assert v.filter(pl.col("criterion") == "short").sort("id")["verdict"].to_list() == [
        "NOT_APPLICABLE",
        "MET",
        "NOT_APPLICABLE",
        "NOT_APPLICABLE",
    ]
