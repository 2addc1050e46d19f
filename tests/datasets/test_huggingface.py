"""rt.datasets.read_huggingface / load_huggingface on data sets made in the test (offline)."""

from __future__ import annotations

import polars as pl
import pytest

import rubrictools as rt

datasets = pytest.importorskip("datasets")

ROWS = {
    "id": ["a", "b", "c"],
    "submission": ["Thanks, it is 4.", "4", "No idea."],
    "ann_polite": ["MET", "UNMET", "UNMET"],
    "bob_polite": ["MET", None, "UNMET"],
    "ann_correct": ["MET", "MET", "UNMET"],
}


def saved(tmp_path, ds):
    folder = tmp_path / "saved"
    ds.save_to_disk(str(folder))
    return folder


def test_a_saved_dataset_reads_as_the_same_table(tmp_path):
    ds = datasets.Dataset.from_dict(ROWS, info=datasets.DatasetInfo(description="demo set", license="MIT"))
    frame = rt.datasets.read_huggingface(saved(tmp_path, ds))
    assert frame.equals(pl.DataFrame(ROWS))
    assert rt.datasets.read_huggingface(str(saved(tmp_path, ds))).equals(frame)  # str or Path


def test_a_saved_dataset_dict_needs_a_split_when_it_has_several(tmp_path):
    dd = datasets.DatasetDict({"train": datasets.Dataset.from_dict(ROWS), "test": datasets.Dataset.from_dict(ROWS)})
    folder = saved(tmp_path, dd)
    with pytest.raises(ValueError, match=r"has splits \['train', 'test'\]: choose one with split="):
        rt.datasets.read_huggingface(folder)
    with pytest.raises(ValueError, match="'dev' is not a split"):
        rt.datasets.read_huggingface(folder, split="dev")
    assert rt.datasets.read_huggingface(folder, split="test").height == 3


def test_local_data_files_read_through_load_dataset(tmp_path):
    path = tmp_path / "rows.jsonl"
    pl.DataFrame(ROWS).write_ndjson(path)
    frame = rt.datasets.read_huggingface(str(path))  # one file: load_dataset's single 'train' split
    assert frame.select("id", "submission").equals(pl.DataFrame(ROWS).select("id", "submission"))


def test_a_rubric_graded_set_gives_labels_for_agreement(tmp_path):
    ds = datasets.Dataset.from_dict(ROWS, info=datasets.DatasetInfo(description="demo set", license="MIT"))
    rubric = rt.Rubric.from_dict(
        [{"name": "polite", "requirement": "Is polite"}, {"name": "correct", "requirement": "Says 4"}]
    )
    loaded = rt.datasets.load_huggingface(saved(tmp_path, ds), criteria=rubric)
    assert loaded.rubric == rubric and loaded.submissions.columns == ["id", "submission"]
    assert loaded.human.height == 8  # bob's empty cell is left out
    assert loaded.card["licence"] == "MIT" and loaded.card["contents"] == "demo set"
    verdicts = rt.grade(
        loaded.submissions, rubric, model=rt.ScriptedJudge(), progress=False, record=False, id_column="id"
    )
    table = rt.agreement(verdicts, loaded.human, rubric, n_resamples=0)
    assert {"polite", "correct"} <= set(table["criterion"])


@pytest.mark.parametrize(
    ("source", "kwargs", "error", "match"),
    [
        (None, {}, TypeError, "source must be"),
        ("", {}, TypeError, "source must be"),
        (3, {}, TypeError, "source must be"),
    ],
)
def test_bad_sources_are_named(source, kwargs, error, match):
    with pytest.raises(error, match=match):
        rt.datasets.read_huggingface(source, **kwargs)


def test_bad_label_settings_are_named(tmp_path):
    folder = saved(tmp_path, datasets.Dataset.from_dict(ROWS))
    with pytest.raises(ValueError, match="id_column='ticket' is not a column"):
        rt.datasets.load_huggingface(folder, criteria=["polite"], id_column="ticket")
    with pytest.raises(ValueError, match=r"no column is named \{rater\}_\{criterion\} for criteria \['tone'\]"):
        rt.datasets.load_huggingface(folder, criteria=["tone"])
    with pytest.raises(ValueError, match="config= and revision= choose a hub version"):
        rt.datasets.read_huggingface(folder, revision="main")
    with pytest.raises(ValueError, match="holds one split"):
        rt.datasets.read_huggingface(folder, split="train")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        rt.datasets.read_huggingface(tmp_path / "missing")


def test_repeated_ids_are_refused(tmp_path):
    rows = {**ROWS, "id": ["a", "a", "c"]}
    with pytest.raises(ValueError, match="repeated values"):
        rt.datasets.load_huggingface(saved(tmp_path, datasets.Dataset.from_dict(rows)), criteria=["polite"])


def test_a_file_of_an_unknown_kind_is_refused(tmp_path):
    path = tmp_path / "rows.xlsx"
    path.write_bytes(b"not a table")
    with pytest.raises(ValueError, match=r"cannot read a '\.xlsx' file"):
        rt.datasets.read_huggingface(path)


def test_round_two_inputs_are_named_or_warned(tmp_path):
    folder = saved(tmp_path, datasets.Dataset.from_dict(ROWS))
    one = rt.datasets.load_huggingface(folder, criteria="polite", raters="ann")  # a bare string is one name
    assert one.human.height == 3 and set(one.human["rater"]) == {"ann"}
    assert "ann_polite" not in one.submissions.columns and "bob_polite" in one.submissions.columns  # not read
    with pytest.warns(UserWarning, match=r"no labels for criteria \['tone'\]"):
        rt.datasets.load_huggingface(folder, criteria=["polite", "tone"])
    nulls = saved(tmp_path / "n", datasets.Dataset.from_dict({**ROWS, "id": ["a", None, None]}))
    with pytest.raises(ValueError, match="empty on 2 row"):
        rt.datasets.load_huggingface(nulls, criteria=["polite"])
    path = tmp_path / "rows.jsonl"
    pl.DataFrame(ROWS).write_ndjson(path)
    with pytest.raises(ValueError, match="is a local file"):
        rt.datasets.read_huggingface(path, revision="main")
    empty = saved(tmp_path / "e", datasets.Dataset.from_dict({"id": [], "submission": []}))
    with pytest.raises(ValueError, match="no rows"):
        rt.datasets.read_huggingface(empty)
