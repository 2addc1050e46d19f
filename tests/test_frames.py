"""Inputs as polars: a Hugging Face datasets.Dataset is graded as it is, no conversion by the user."""

from __future__ import annotations

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.frames import to_polars

datasets = pytest.importorskip("datasets")


def test_a_hugging_face_dataset_is_graded_and_scored_as_it_is() -> None:
    ds = datasets.Dataset.from_dict({"id": [1, 2, 3], "answer": ["hello there", "go away", "hello again"]})
    rubric = rt.Rubric.from_dict([{"name": "greets", "requirement": "Says hello"}])
    judge = rt.ScriptedJudge(rule=lambda text, c: "MET" if "hello" in text else "UNMET")
    v = rt.grade(ds, rubric, model=judge, column="answer", id_column="id", progress=False, record=False)
    assert v.select("id", "verdict").rows() == [(1, "MET"), (2, "UNMET"), (3, "MET")]
    human = datasets.Dataset.from_dict({"id": [1, 2, 3], "criterion": ["greets"] * 3, "label": ["MET", "MET", "MET"]})
    assert rt.agreement(v, human, rubric, metrics=["accuracy"], n_resamples=0)["value"][0] == pytest.approx(2 / 3)


def test_a_selection_or_shuffle_is_honoured_and_splits_are_refused_clearly() -> None:
    ds = datasets.Dataset.from_dict({"x": list(range(10))})
    assert to_polars(ds.select([7, 2])).get_column("x").to_list() == [7, 2]
    assert to_polars(ds.shuffle(seed=0))["x"].sort().to_list() == list(range(10))
    both = datasets.DatasetDict({"train": ds, "test": ds})
    with pytest.raises(TypeError, match=r"df: a DatasetDict holds several splits \(\['train', 'test'\]\); pass one"):
        to_polars(both)
    with pytest.raises(TypeError, match="streaming IterableDataset"):
        to_polars(ds.to_iterable_dataset())
    assert isinstance(to_polars(ds), pl.DataFrame)
