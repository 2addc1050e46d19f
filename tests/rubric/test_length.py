"""Length penalties on {thinking, output} submissions: which part is counted, and how."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import rubrictools as rt

SUBS = pl.DataFrame(
    {
        "id": [1, 2, 3],
        "submission": [
            {"thinking": "let me think about it", "output": "42"},
            {"thinking": None, "output": "forty two"},
            {"thinking": "hmm", "output": None},
        ],
    }
)


@pytest.mark.parametrize(
    ("part", "expected"),
    [("all", [6, 2, 1]), ("output", [1, 2, 0]), ("thinking", [5, 0, 1]), ("OUTPUT_ONLY", [1, 2, 0])],
)
def test_each_part_is_counted_and_missing_parts_are_empty(part: str, expected: list[int]) -> None:
    assert rt.word_count(SUBS, id_column="id", part=part)["length"].to_list() == expected


def test_a_string_column_is_all_output_and_count_fn_counts_anything() -> None:
    df = pl.DataFrame({"key": ["a"], "answer": ["one two three"]})
    assert rt.word_count(df, column="answer", id_column="key", part="thinking")["length"].to_list() == [0]
    chars = rt.word_count(SUBS, id_column="id", part="output", count_fn=len)
    assert chars.rows() == [(1, 2, "output"), (2, 9, "output"), (3, 0, "output")]


def test_the_penalty_scores_the_part_asked_for() -> None:
    rubric = rt.Rubric.from_dict([{"name": "a", "requirement": "r"}])
    v = pl.DataFrame({"id": [1, 2, 3], "criterion": "a", "verdict": "MET"})
    pen = rt.LengthPenalty(free_budget=1, max_cap=5, penalty_at_cap=0.5, exponent=1, penalty_type="THINKING_ONLY")
    out = rt.score(v, rubric, length_penalty=pen, lengths=rt.word_count(SUBS, id_column="id", part=pen.penalty_type))
    assert out["length_penalty"].to_list() == [0.5, 0.0, 0.0]
    assert out["score"].to_list() == [0.5, 1.0, 1.0]
    # before: penalty_type was stored and ignored by rt.score; now the submissions are counted on it ...
    direct = rt.score(v, rubric, length_penalty=pen, lengths=SUBS)
    assert direct["length_penalty"].to_list() == [0.5, 0.0, 0.0]
    # ... and counts of another part are refused, naming both
    with pytest.raises(
        ValueError, match=r"count part\(s\) \['all'\] but the length penalty's penalty_type is 'thinking'"
    ):
        rt.score(v, rubric, length_penalty=pen, lengths=rt.word_count(SUBS, id_column="id"))


def test_ids_default_to_the_row_index_as_grade_numbers_them_and_nothing_is_not_zero_words() -> None:
    """Before: id_column defaulted to "id" (grade uses the row index) and a null answer counted 0 words."""
    df = pl.DataFrame({"answer": ["one two three", None, "four"]})
    rubric = rt.Rubric.from_dict([{"name": "a", "requirement": "r"}])
    judge = rt.ScriptedJudge(rule=lambda text, c: "MET")
    v = df.pipe(rt.grade, rubric, model=judge, column="answer", on_null="error_row", progress=False)
    counts = rt.word_count(df, column="answer")
    assert counts["id"].to_list() == sorted(v["id"].unique().to_list()) == [0, 1, 2]
    assert counts["length"].to_list() == [3, None, 1]
    pen = rt.LengthPenalty(free_budget=1, max_cap=5, penalty_at_cap=0.5, exponent=1, penalty_type="OUTPUT_ONLY")
    with pytest.raises(ValueError, match=r"no length for submission id\(s\) \[1\] \(missing, or a null submission\)"):
        rt.score(v, rubric, length_penalty=pen, lengths=rt.word_count(df, column="answer", part="output"))
    with pytest.raises(ValueError, match="id_column='k' has null or duplicate ids"):
        rt.word_count(df.with_columns(pl.lit("x").alias("k")), column="answer", id_column="k")


def test_bad_inputs_name_the_field() -> None:
    with pytest.raises(ValueError, match="part must be one of"):
        rt.word_count(SUBS, part="reasoning")
    with pytest.raises(ValueError, match="penalty_type must be one of"):
        rt.LengthPenalty(penalty_type="EVERYTHING")
    with pytest.raises(ValueError, match="column='text' is not a column"):
        rt.word_count(SUBS, column="text")
    with pytest.raises(ValueError, match="struct without 'thinking' or 'output'"):
        rt.word_count(pl.DataFrame({"id": [1], "submission": [{"x": "y"}]}))
    with pytest.raises(ValueError, match="must hold text"):
        rt.word_count(pl.DataFrame({"id": [1], "submission": [3]}))


@pytest.mark.peers
@pytest.mark.parametrize("part", ["ALL", "OUTPUT_ONLY", "THINKING_ONLY"])
def test_matches_autorubric_compute_length_penalty(part: str) -> None:
    ar = pytest.importorskip("autorubric")
    rng = np.random.default_rng(0)
    words = np.array(["a", "bb", "ccc", "dd\tdd", " ", "e\nf"])
    rows = [
        {
            "thinking": " ".join(rng.choice(words, rng.integers(0, 40))),
            "output": " ".join(rng.choice(words, rng.integers(0, 40))),
        }
        for _ in range(300)
    ]
    df = pl.DataFrame({"id": range(300), "submission": rows})
    for count_fn in (None, len):
        config = dict(free_budget=10, max_cap=50, penalty_at_cap=0.7, exponent=1.3)
        theirs = [
            ar.compute_length_penalty(r, ar.LengthPenalty(**config, penalty_type=part, count_fn=count_fn)) for r in rows
        ]
        ours = rt.LengthPenalty(**config, penalty_type=part)
        got = ours.penalty(rt.word_count(df, part=ours.penalty_type, count_fn=count_fn)["length"].to_numpy())
        np.testing.assert_allclose(got, theirs, atol=1e-12)
